#include "core/thread_pool.h"

#include <algorithm>
#include <chrono>

namespace nextn {

namespace {

// A pause hint inside spin loops (frees pipeline resources for the sibling hyperthread).
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

// How long an idle worker spins before it sleeps: long enough to bridge the serial work between
// the matmuls of a decode step (norms, small ops), short enough not to steal a core from other
// processes when the machine is oversubscribed (2 ms measured no faster on decode and made
// parallel test runs 5x slower).
constexpr auto kWorkerSpin = std::chrono::microseconds(100);

}  // namespace

ThreadPool::ThreadPool(int n_threads) {
    if (n_threads <= 0) n_threads = int(std::max(1u, std::thread::hardware_concurrency()));
    n_threads_ = n_threads;
    range_left_ = std::make_unique<std::atomic<uint64_t>[]>(size_t(n_threads_));
    for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
        job_.store(((generation_of(job_.load()) + 1) << kGenerationShift) | kClosed);
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
}

void ThreadPool::run_share(int index) {
    if (on_each_thread_) {
        thunk_(ctx_, index, index, index + 1);
        return;
    }
    if (split_ == Split::ContiguousSharedTails) return run_shared_tails(index);
    constexpr int64_t kChunksPerThread = 8;
    if (split_ == Split::Contiguous || n_items_ < kChunksPerThread * n_threads_) {
        // Static: one range per thread, claimed in turn (a late thread's range goes to whoever
        // is free).
        const int64_t per = (n_items_ + n_threads_ - 1) / n_threads_;
        for (;;) {
            const int64_t begin = next_item_.fetch_add(1, std::memory_order_relaxed) * per;
            if (begin >= n_items_) return;
            thunk_(ctx_, index, begin, std::min(n_items_, begin + per));
        }
    }
    // Guided: each claim takes a share of what is left, so the claims shrink towards the end
    // and the threads finish together (equal claims of 1/(8 * threads) of the job left one
    // thread idle for half a claim on average: about 3% of a decode step's matmul time).
    const int64_t min_claim = std::max<int64_t>(1, n_items_ / (4 * kChunksPerThread * n_threads_));
    int64_t begin = next_item_.load(std::memory_order_relaxed);
    for (;;) {
        if (begin >= n_items_) return;
        const int64_t claim = std::max(min_claim, (n_items_ - begin) / (2 * n_threads_));
        if (!next_item_.compare_exchange_weak(begin, begin + claim, std::memory_order_relaxed))
            continue;  // begin now holds the current cursor
        thunk_(ctx_, index, begin, std::min(n_items_, begin + claim));
        begin = next_item_.load(std::memory_order_relaxed);
    }
}

void ThreadPool::run_shared_tails(int index) {
    auto claim = [&](int64_t range, bool from_back, bool first) {
        std::atomic<uint64_t>& left = range_left_[size_t(range)];
        uint64_t now = left.load(std::memory_order_relaxed);
        for (;;) {
            const int64_t front = int64_t(now >> 32), end = int64_t(now & 0xffffffffu);
            if (front >= end) return false;
            const int64_t n = end - front;
            const int64_t take = first ? n - n / 8 : std::max<int64_t>(1, n / 2);
            const int64_t begin = from_back ? end - take : front;
            const uint64_t after = from_back ? (uint64_t(front) << 32) | uint64_t(end - take)
                                             : (uint64_t(front + take) << 32) | uint64_t(end);
            if (!left.compare_exchange_weak(now, after, std::memory_order_relaxed)) continue;
            thunk_(ctx_, index, begin, begin + take);
            return true;
        }
    };
    // Own ranges first, claimed in turn as Contiguous claims them, each from its front.
    for (;;) {
        const int64_t range = next_item_.fetch_add(1, std::memory_order_relaxed);
        if (range >= n_threads_) break;
        bool first = true;
        while (claim(range, /*from_back=*/false, first)) first = false;
    }
    // Then what the others have left, from the back.
    for (int64_t range = 0; range < n_threads_; ++range)
        while (claim(range, /*from_back=*/true, /*first=*/false)) continue;
}

void ThreadPool::dispatch(int64_t n_items, Thunk thunk, void* ctx, bool on_each_thread, Split split) {
    if (n_items <= 0) return;
    if (n_threads_ == 1 || n_items == 1) {
        thunk(ctx, 0, 0, n_items);
        return;
    }
    {
        std::lock_guard<std::mutex> lock(mutex_);
        thunk_ = thunk;
        ctx_ = ctx;
        n_items_ = n_items;
        on_each_thread_ = on_each_thread;
        split_ = split;
        next_item_.store(0, std::memory_order_relaxed);
        finished_.store(0, std::memory_order_relaxed);
        // The shared tails' ranges hold 32-bit item indices; a larger job splits as Contiguous.
        if (split_ == Split::ContiguousSharedTails && n_items >= (int64_t(1) << 31))
            split_ = Split::Contiguous;
        if (split_ == Split::ContiguousSharedTails) {
            const int64_t per = (n_items + n_threads_ - 1) / n_threads_;
            for (int64_t r = 0; r < n_threads_; ++r) {
                const uint64_t front = uint64_t(std::min(n_items, r * per)),
                               end = uint64_t(std::min(n_items, (r + 1) * per));
                range_left_[size_t(r)].store((front << 32) | end, std::memory_order_relaxed);
            }
        }
        // A new generation, open, no worker inside: the last job ended with none inside.
        job_.store((generation_of(job_.load(std::memory_order_relaxed)) + 1) << kGenerationShift,
                   std::memory_order_release);
    }
    wake_.notify_all();
    run_share(0);
    // Every item is claimed now. A job on each thread waits for every worker; any other closes
    // itself to workers still on their way and waits for those inside, which finish quickly for
    // decode-sized jobs: spin before yielding the core.
    auto done = [&] {
        if (on_each_thread) return finished_.load(std::memory_order_acquire) == n_threads_ - 1;
        return (job_.load(std::memory_order_acquire) & kJoinedMask) == 0;
    };
    if (!on_each_thread) job_.fetch_or(kClosed, std::memory_order_acq_rel);
    for (int spins = 0; !done(); ++spins) {
        if (spins > 20000) {
            std::this_thread::yield();
        } else {
            cpu_relax();
        }
    }
}

void ThreadPool::worker_loop(int index) {
    uint64_t seen = 0;  // the generation of the last job this thread looked at
    for (;;) {
        // Spin for back-to-back jobs (checking the clock only every 256 spins), then sleep.
        // A job seen while spinning starts at once, without the mutex: dispatch() bumps the
        // generation while it still holds the mutex, and taking it here could park this thread
        // on the lock and make the caller's unlock a wake-up (measured over width-4 verifies of
        // the 0.8B: the caller's wait at the end of a matmul fell from 3.6 to 2.6 us on average,
        // at an attention job from 13 to 6.5 us).
        auto new_job = [&] { return generation_of(job_.load(std::memory_order_acquire)) != seen; };
        const auto spin_until = std::chrono::steady_clock::now() + kWorkerSpin;
        bool started = false;
        for (int spins = 1; !started; ++spins) {
            started = new_job();
            cpu_relax();
            if (spins % 256 == 0 && std::chrono::steady_clock::now() > spin_until) break;
        }
        if (!started) {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, new_job);
        }
        uint64_t job = job_.load(std::memory_order_acquire);
        seen = generation_of(job);
        if (stopping_.load()) return;
        // Join unless the caller has closed the job (it claimed every item while this thread
        // was waking). A failed exchange reloads `job`: another worker joined, or the caller
        // closed it.
        while (!(job & kClosed) && generation_of(job) == seen) {
            if (job_.compare_exchange_weak(job, job + 1, std::memory_order_acq_rel,
                                           std::memory_order_acquire)) {
                // Read before leaving: once no worker is inside, the caller may set up the next job.
                const bool each = on_each_thread_;
                run_share(index);
                job_.fetch_sub(1, std::memory_order_release);
                if (each) finished_.fetch_add(1, std::memory_order_release);
                break;
            }
        }
    }
}

}  // namespace nextn
