#pragma once
// A persistent pool of worker threads. run(n, fn) covers [0, n) with calls fn(begin, end), the
// calling thread taking part. Small jobs (n < 8 per thread) are split into one contiguous range
// per thread, and so are larger ones run with Split::Contiguous; other large ones are claimed
// from a shared counter in shrinking chunks (each a share of what is left, run_share), so a
// thread that started late or runs slower takes fewer and the threads finish together. Either
// way the ranges are claimed, never assigned: a worker that has not yet woken when the others
// have claimed everything never joins that job, and the caller
// waits only for workers inside it (on a VM a sleeping worker's wake-up took 1-4 ms, and the
// caller sat out those milliseconds after doing the whole job alone). Each item is handled by
// exactly one call, and what an item computes never depends on which thread ran it, so kernels
// that write disjoint outputs stay bitwise reproducible for any thread count and any schedule.
// run_on_each_thread is the exception for measurements: every thread runs, and the caller waits
// for all of them.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace nextn {

class ThreadPool {
public:
    explicit ThreadPool(int n_threads = 0);  // 0: one per core
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return n_threads_; }

    // How run() hands out a job of many items. Guided: shrinking claims (above). Contiguous: one
    // range per thread, claimed in turn as small jobs' are (a late thread's range still goes to
    // whoever is free; a thread slowed part-way is not helped). The narrow matmuls of decode and
    // verify want it: each thread then streams its rows in one call per matrix, and a call's
    // prefetch stops at its end, so the guided schedule's many short calls each started cold and
    // drained their prefetch early (matmul.cpp has the measurements). ContiguousSharedTails:
    // the same ranges, but a range's owner first claims all of it but its last eighth, then
    // halves of what is left, and a thread done with its own ranges takes halves from the back
    // of the others': a thread slowed part-way (on a VM, at random) is helped at the end, for a
    // few more calls per range.
    enum class Split { Guided, Contiguous, ContiguousSharedTails };

    template <class Fn>
    void run(int64_t n_items, Fn&& fn, Split split = Split::Guided) {
        auto thunk = [](void* ctx, int, int64_t begin, int64_t end) {
            (*static_cast<std::remove_reference_t<Fn>*>(ctx))(begin, end);
        };
        dispatch(n_items, thunk, &fn, /*on_each_thread=*/false, split);
    }

    // The same, also passing the thread's index in [0, size()), for per-thread scratch.
    template <class Fn>
    void run_indexed(int64_t n_items, Fn&& fn) {
        auto thunk = [](void* ctx, int thread, int64_t begin, int64_t end) {
            (*static_cast<std::remove_reference_t<Fn>*>(ctx))(thread, begin, end);
        };
        dispatch(n_items, thunk, &fn);
    }

    // fn(thread) once on each of the size() threads (the caller's index is 0), returning when
    // all have run: the read-bandwidth and compute probes, which must load every core.
    template <class Fn>
    void run_on_each_thread(Fn&& fn) {
        auto thunk = [](void* ctx, int thread, int64_t, int64_t) {
            (*static_cast<std::remove_reference_t<Fn>*>(ctx))(thread);
        };
        dispatch(n_threads_, thunk, &fn, /*on_each_thread=*/true);
    }

private:
    using Thunk = void (*)(void*, int, int64_t, int64_t);
    void dispatch(int64_t n_items, Thunk thunk, void* ctx, bool on_each_thread = false,
                  Split split = Split::Guided);
    void worker_loop(int index);
    void run_share(int index);
    void run_shared_tails(int index);
    // job_'s fields: the job's generation (bits 17 and up), whether it is closed to workers that
    // have not joined it (bit 16), and how many workers are inside it (bits 0-15).
    static constexpr uint64_t kJoinedMask = 0xffff, kClosed = uint64_t(1) << 16;
    static constexpr int kGenerationShift = 17;
    static uint64_t generation_of(uint64_t job) { return job >> kGenerationShift; }

    int n_threads_ = 1;
    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::atomic<uint64_t> job_{0};
    std::atomic<int> finished_{0};       // workers done with a run_on_each_thread job
    std::atomic<int64_t> next_item_{0};  // first item (guided) or range (static) not yet claimed
    std::atomic<bool> stopping_{false};
    // [n_threads_] ContiguousSharedTails: each range's unclaimed items, [front, end) as front << 32
    // | end (one word, so that the owner's claims from the front and the others' from the back
    // meet without a lock).
    std::unique_ptr<std::atomic<uint64_t>[]> range_left_;
    // The job being run; written by dispatch() before the generation bump (whose release a
    // worker's acquire of the new generation pairs with), unchanged until the job is done.
    Thunk thunk_ = nullptr;
    void* ctx_ = nullptr;
    int64_t n_items_ = 0;
    bool on_each_thread_ = false;
    Split split_ = Split::Guided;
};

// pool->run(n, fn) when a pool is given, else fn(0, n) on the calling thread (load-time work
// that may or may not have a pool).
template <class Fn>
void run_on(ThreadPool* pool, int64_t n_items, Fn&& fn) {
    if (pool) {
        pool->run(n_items, fn);
    } else {
        fn(int64_t(0), n_items);
    }
}

// The same for run_indexed (fn(0, 0, n) without a pool).
template <class Fn>
void run_indexed_on(ThreadPool* pool, int64_t n_items, Fn&& fn) {
    if (pool) {
        pool->run_indexed(n_items, fn);
    } else {
        fn(0, int64_t(0), n_items);
    }
}

}  // namespace nextn
