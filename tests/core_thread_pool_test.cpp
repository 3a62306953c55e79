// ThreadPool: every item of a job runs exactly once, on a thread index in range and its own,
// whatever the job size (the static split below 8 items per thread, the guided claims above it, the
// contiguous split when asked), across many back-to-back jobs (workers that start a job while
// spinning) and after the workers fell asleep (when the caller often claims every item before a
// worker wakes, and the worker must then stay out of that job); run_on_each_thread runs once on
// every thread, each on its own OS thread.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "core/thread_pool.h"

namespace nextn {
namespace {

// The claims [begin, end) of one job of n items, in any order: each must be a non-empty range
// inside [0, n), and together they must cover every item exactly once.
struct Claims {
    explicit Claims(int64_t n) : n(n), hits(static_cast<size_t>(n)) {}
    void add(int64_t begin, int64_t end) {
        calls.fetch_add(1);
        if (begin < 0 || end > n || begin >= end) bad_range = true;
        for (int64_t i = begin; i < end; ++i) hits[size_t(i)].fetch_add(1);
    }
    void expect_each_item_once() const {
        ASSERT_FALSE(bad_range.load()) << "n=" << n;
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(1, hits[size_t(i)].load()) << "n=" << n << " item " << i;
    }
    const int64_t n;
    std::vector<std::atomic<int>> hits;
    std::atomic<int> calls{0};
    std::atomic<bool> bad_range{false};
};

// Sleeps in 1 ms steps until done() holds or 10 s pass; false when time ran out, so a test
// whose awaited event never comes fails instead of hanging.
template <class Done>
bool wait_until(Done done) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done()) {
        if (std::chrono::steady_clock::now() > give_up) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

// Runs one job of n items and checks each ran once, on a thread index in range that is its
// thread's own: callers index per-thread scratch with it, so within a job one index must never
// run on two OS threads, nor two claims of one index at the same time.
void expect_each_item_once(ThreadPool& pool, int64_t n) {
    Claims claims(n);
    std::atomic<bool> bad_thread{false}, shared_index{false};
    std::vector<std::atomic<bool>> in_use(static_cast<size_t>(pool.size()));  // [threads]
    std::mutex owners_mutex;
    std::map<int, std::thread::id> owners;  // index -> the OS thread that ran it in this job
    pool.run_indexed(n, [&](int thread, int64_t begin, int64_t end) {
        if (thread < 0 || thread >= pool.size()) {
            bad_thread = true;
            return;
        }
        if (in_use[size_t(thread)].exchange(true)) shared_index = true;
        {
            std::lock_guard<std::mutex> lock(owners_mutex);
            const auto [it, fresh] = owners.emplace(thread, std::this_thread::get_id());
            if (!fresh && it->second != std::this_thread::get_id()) shared_index = true;
        }
        claims.add(begin, end);
        in_use[size_t(thread)] = false;
    });
    ASSERT_FALSE(bad_thread.load()) << "n=" << n;
    ASSERT_FALSE(shared_index.load()) << "n=" << n << ": one thread index ran on two OS threads";
    claims.expect_each_item_once();
}

TEST(ThreadPool, EveryItemRunsOnceForAnyJobSize) {
    for (int threads : {1, 2, 3, 4}) {
        ThreadPool pool(threads);
        for (int64_t n : {1, 2, 3, 7, 15, 16, 17, 31, 32, 33, 64, 100, 1000, 4099})
            expect_each_item_once(pool, n);
    }
}

// Split::Contiguous: every item once, in at most one range per thread, each at most
// ceil(n / threads) long and starting at a multiple of it (the narrow matmuls' one stretch of
// rows per thread), whatever the job size.
TEST(ThreadPool, ContiguousSplitGivesEachThreadOneRange) {
    for (int threads : {1, 2, 3, 4}) {
        ThreadPool pool(threads);
        for (int64_t n : {1, 2, 3, 7, 16, 17, 33, 100, 1000, 4099}) {
            const int64_t per = (n + threads - 1) / threads;
            Claims claims(n);
            std::atomic<bool> not_one_range{false};  // a claim not at a multiple of per, or longer
            pool.run(
                n,
                [&](int64_t begin, int64_t end) {
                    if (begin % per != 0 || end - begin > per) not_one_range = true;
                    claims.add(begin, end);
                },
                ThreadPool::Split::Contiguous);
            ASSERT_FALSE(not_one_range.load()) << "threads=" << threads << " n=" << n;
            EXPECT_LE(claims.calls.load(), threads) << "n=" << n;
            claims.expect_each_item_once();
        }
    }
}

// Two threads, 160 items (ranges [0, 80) and [80, 160)): whoever claims the first seven eighths
// of range r sleeps there until another thread has run items of that range's tail (its last 10),
// which only a thief can reach while the owner sleeps. Without sharing, the wait times out.
void expect_a_thief_takes_the_tail_of_range(int64_t r) {
    ThreadPool pool(2);
    Claims claims(160);
    const int64_t start = 80 * r, tail = start + 70, end_of_range = start + 80;
    std::atomic<bool> tail_stolen{false}, timed_out{false};
    pool.run(
        160,
        [&](int64_t begin, int64_t end) {
            claims.add(begin, end);
            if (begin >= tail && begin < end_of_range) tail_stolen = true;
            if (begin == start) timed_out = !wait_until([&] { return tail_stolen.load(); });
        },
        ThreadPool::Split::ContiguousSharedTails);
    EXPECT_FALSE(timed_out.load())
        << "no thread took range " << r << "'s tail while its owner was held up";
    claims.expect_each_item_once();
}

// Split::ContiguousSharedTails: every item once, each claim inside one of the contiguous ranges
// (ceil(n / threads) long), whatever the job size; and a thread held up inside its first claim
// does not hold up the job's end: the others take the rest of its range.
TEST(ThreadPool, SharedTailsClaimInsideTheRangesAndHelpASlowThread) {
    for (int threads : {1, 2, 3, 4}) {
        ThreadPool pool(threads);
        for (int64_t n : {1, 2, 3, 7, 8, 9, 16, 17, 33, 100, 1000, 4099}) {
            const int64_t per = (n + threads - 1) / threads;
            Claims claims(n);
            std::atomic<bool> crosses{false};  // a claim reaching past its range
            pool.run(
                n,
                [&](int64_t begin, int64_t end) {
                    if (begin / per != (end - 1) / per) crosses = true;
                    claims.add(begin, end);
                },
                ThreadPool::Split::ContiguousSharedTails);
            ASSERT_FALSE(crosses.load()) << "threads=" << threads << " n=" << n;
            claims.expect_each_item_once();
        }
    }
    expect_a_thief_takes_the_tail_of_range(0);
}

TEST(ThreadPool, ManyBackToBackJobs) {
    ThreadPool pool(2);
    std::atomic<int64_t> total{0};
    for (int job = 0; job < 20000; ++job) {
        const int64_t n = 1 + job % 70;
        pool.run(n, [&](int64_t begin, int64_t end) { total.fetch_add(end - begin); });
    }
    int64_t want = 0;
    for (int job = 0; job < 20000; ++job) want += 1 + job % 70;
    EXPECT_EQ(want, total.load());
}

TEST(ThreadPool, JobsAfterTheWorkersSleep) {
    ThreadPool pool(2);
    for (int round = 0; round < 3; ++round) {
        // Longer than the workers' spin: they wait on the condition variable.
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        expect_each_item_once(pool, 257);
    }
}

// Runs fn on each thread and checks: every index once, each on a distinct OS thread.
void expect_each_thread_once(ThreadPool& pool) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(pool.size()));
    std::mutex mutex;
    std::set<std::thread::id> ids;
    std::atomic<bool> bad_index{false};
    pool.run_on_each_thread([&](int thread) {
        if (thread < 0 || thread >= pool.size()) {
            bad_index = true;
            return;
        }
        hits[size_t(thread)].fetch_add(1);
        std::lock_guard<std::mutex> lock(mutex);
        ids.insert(std::this_thread::get_id());
    });
    ASSERT_FALSE(bad_index.load());
    for (int t = 0; t < pool.size(); ++t) ASSERT_EQ(1, hits[size_t(t)].load()) << "thread " << t;
    EXPECT_EQ(size_t(pool.size()), ids.size());
}

TEST(ThreadPool, RunOnEachThreadRunsEveryThreadOnce) {
    for (int threads : {1, 2, 3, 4}) {
        ThreadPool pool(threads);
        expect_each_thread_once(pool);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the workers asleep
        expect_each_thread_once(pool);
        // Between jobs that workers may have stayed out of.
        for (int job = 0; job < 200; ++job) {
            expect_each_item_once(pool, 1 + job % 40);
            if (job % 10 == 0) expect_each_thread_once(pool);
        }
    }
}

TEST(ThreadPool, JobsRightAfterTheWorkersWake) {
    // Each job starts while the workers are still waking from the previous sleep: the caller
    // may have claimed every item by the time a worker arrives, which must then skip the job
    // (and never run a later job's items as the old one's).
    ThreadPool pool(4);
    for (int round = 0; round < 20; ++round) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        for (int64_t n : {1, 2, 5, 16, 40}) expect_each_item_once(pool, n);
    }
}

// ThreadPool(n <= 0) means one thread per core (thread_pool.h: "0: one per core"); a negative
// count is treated the same, never as a pool of no threads (which would divide by zero when
// splitting a job).
TEST(ThreadPool, ZeroOrNegativeThreadsMeansOnePerCore) {
    const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
    for (int n : {0, -1}) {
        ThreadPool pool(n);
        EXPECT_EQ(pool.size(), cores) << n;
        expect_each_item_once(pool, 100);
    }
}

// thread_pool.h: "Small jobs (n < 8 per thread) are split into one contiguous range per thread"
// whatever split is asked for, so below 8 items per thread a Guided job too makes at most one
// claim per thread, each starting at a multiple of ceil(n / threads) and at most that long.
TEST(ThreadPool, SmallGuidedJobsTakeOneRangePerThread) {
    for (int threads : {2, 3, 4}) {
        ThreadPool pool(threads);
        for (int64_t n = 2; n < 8 * threads; ++n) {
            const int64_t per = (n + threads - 1) / threads;
            Claims claims(n);
            std::atomic<bool> not_one_range{false};
            pool.run(n, [&](int64_t begin, int64_t end) {
                if (begin % per != 0 || end - begin > per) not_one_range = true;
                claims.add(begin, end);
            });
            ASSERT_FALSE(not_one_range.load()) << "threads=" << threads << " n=" << n;
            EXPECT_LE(claims.calls.load(), threads) << "threads=" << threads << " n=" << n;
            claims.expect_each_item_once();
        }
    }
}

// Split::ContiguousSharedTails as thread_pool.h states it: "a range's owner first claims all of
// it but its last eighth". Two threads, 160 items: ranges [0, 80) and [80, 160), so each range's
// first claim is [front, front + 70) (80 - 80 / 8 = 70). The owner of range 1 waits inside its
// first claim until range 0's first claim has started, so no thief can reach range 0 before its
// owner (a thread steals only when done with its own ranges).
TEST(ThreadPool, SharedTailsOwnerFirstClaimsAllButTheLastEighth) {
    ThreadPool pool(2);
    std::mutex mutex;
    std::map<int64_t, int64_t> first_claims;  // begin -> end, for the claims at a range's front
    std::atomic<bool> range0_started{false};
    pool.run(
        160,
        [&](int64_t begin, int64_t end) {
            if (begin == 0 || begin == 80) {
                std::lock_guard<std::mutex> lock(mutex);
                first_claims[begin] = end;
            }
            if (begin == 0) range0_started = true;
            if (begin == 80) {
                wait_until([&] { return range0_started.load(); });
            }
        },
        ThreadPool::Split::ContiguousSharedTails);
    EXPECT_EQ(first_claims, (std::map<int64_t, int64_t>{{0, 70}, {80, 150}}));
}

// The help a slow thread gets is not limited to the first range: with two threads and 160
// items, whoever claims range 1's first seven eighths (items 80-149) sleeps there until another
// thread has run items of range 1's tail (150-159), which only a thief can reach meanwhile
// (thread_pool.h: "a thread done with its own ranges takes halves from the back of the
// others'").
TEST(ThreadPool, SharedTailsHelpTheLastRangeToo) { expect_a_thief_takes_the_tail_of_range(1); }

// Thieves take halves from the back (thread_pool.h). Two threads, 160 items: whoever claims
// range 0's first seven eighths (items 0-69) sleeps there until all of range 0 has been
// claimed, and range 1's owner starts only after that first claim, so the other thread, done
// with range 1, takes range 0's last 10 items alone and from the back: half of 10 ([75, 80)),
// then half of 5 rounded down ([73, 75)), then one at a time (at least 1: [72, 73), [71, 72),
// [70, 71)).
TEST(ThreadPool, SharedTailsThievesTakeHalvesFromTheBack) {
    ThreadPool pool(2);
    std::mutex mutex;
    std::set<std::pair<int64_t, int64_t>> range0;  // the claims inside [0, 80)
    std::atomic<int64_t> range0_claimed{0};        // items of range 0 claimed so far
    std::atomic<bool> timed_out{false};
    pool.run(
        160,
        [&](int64_t begin, int64_t end) {
            if (begin < 80) {
                std::lock_guard<std::mutex> lock(mutex);
                range0.emplace(begin, end);
            }
            if (begin < 80) range0_claimed += end - begin;
            if (begin == 80) {  // range 1's owner: not before range 0's owner has claimed
                wait_until([&] { return range0_claimed.load() > 0; });
            }
            if (begin == 0) {
                timed_out = !wait_until([&] { return range0_claimed.load() >= 80; });
            }
        },
        ThreadPool::Split::ContiguousSharedTails);
    ASSERT_FALSE(timed_out.load()) << "no thread took the rest of range 0 while its owner slept";
    EXPECT_EQ(range0, (std::set<std::pair<int64_t, int64_t>>{
                          {0, 70}, {70, 71}, {71, 72}, {72, 73}, {73, 75}, {75, 80}}));
}

// The shared tails hold 32-bit item indices (thread_pool.cpp), so a job of 2^31 items or more
// must still cover every item exactly once (it is split as Contiguous). The claims are checked
// as ranges, not item by item: sorted, they must tile [0, n).
TEST(ThreadPool, SharedTailsJobBeyond32BitIndicesCoversEveryItemOnce) {
    for (int threads : {2, 3}) {
        ThreadPool pool(threads);
        for (int64_t n : {(int64_t(1) << 31) + 1, (int64_t(1) << 32) + 3}) {
            std::mutex mutex;
            std::vector<std::pair<int64_t, int64_t>> claims;
            pool.run(
                n,
                [&](int64_t begin, int64_t end) {
                    std::lock_guard<std::mutex> lock(mutex);
                    claims.emplace_back(begin, end);
                },
                ThreadPool::Split::ContiguousSharedTails);
            std::sort(claims.begin(), claims.end());
            int64_t next = 0;
            for (const auto& [begin, end] : claims) {
                ASSERT_EQ(begin, next) << "threads=" << threads << " n=" << n;
                ASSERT_LT(begin, end) << "threads=" << threads << " n=" << n;
                next = end;
            }
            EXPECT_EQ(next, n) << "threads=" << threads;
        }
    }
}

}  // namespace
}  // namespace nextn
