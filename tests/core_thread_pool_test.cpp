// ThreadPool: every item of a job runs exactly once, on a thread index in range, whatever the job
// size (the static split below 8 items per thread, the guided claims above it), across many
// back-to-back jobs (workers that start a job while spinning) and after the workers fell asleep.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "core/thread_pool.h"

namespace nextn {
namespace {

// Runs one job of n items and checks each ran once, in order-free claims of [begin, end).
void expect_each_item_once(ThreadPool& pool, int64_t n) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    std::atomic<bool> bad_range{false};
    pool.run_indexed(n, [&](int thread, int64_t begin, int64_t end) {
        if (thread < 0 || thread >= pool.size() || begin < 0 || end > n || begin >= end)
            bad_range = true;
        for (int64_t i = begin; i < end; ++i) hits[size_t(i)].fetch_add(1);
    });
    ASSERT_FALSE(bad_range.load()) << "n=" << n;
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(1, hits[size_t(i)].load()) << "n=" << n << " item " << i;
}

TEST(ThreadPool, EveryItemRunsOnceForAnyJobSize) {
    for (int threads : {1, 2, 3, 4}) {
        ThreadPool pool(threads);
        for (int64_t n : {1, 2, 3, 7, 15, 16, 17, 31, 32, 33, 64, 100, 1000, 4099})
            expect_each_item_once(pool, n);
    }
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

}  // namespace
}  // namespace nextn
