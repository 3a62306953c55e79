#pragma once
// Machine measurements for `nextn bench` and bench/kernels_bench.cpp: sustained read bandwidth,
// the cores' compute peak, and the cost of one small-N GEMM per width (the verify cost curve
// cost(N)/cost(1)).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kernels/kernels.h"

namespace nextn {

class ThreadPool;

// The read probe's buffer: four times the last-level cache the CPU reports and at least
// kReadProbeTargetBytes, at most kReadProbeMaxBytes, and no more than a quarter of the memory
// available (never below kReadProbeBytes). A buffer read over and over that is not far larger
// than the cache is partly served by it. On the 2-core Emerald-Rapids-class Xeon VM (260 MB of
// L3 reported), probes of 256, 545 (twice the L3) and 1024 MB, taken in turn 25 times: 33.7-42.2,
// 29.3-42.8 and 29.4-34.2 GB/s; the 1 GB probe read 33.3-34.2 in all but one turn, and 2 GB read
// what 1 GB did. A VM reports its host's whole cache, so a multiple of that covers whatever share
// of it the VM gets.
constexpr size_t kReadProbeBytes = size_t(256) << 20;
constexpr size_t kReadProbeTargetBytes = size_t(1) << 30;
constexpr size_t kReadProbeMaxBytes = size_t(4) << 30;
size_t read_probe_bytes_for(size_t last_level_cache_bytes, size_t available_bytes);
// The largest cache the CPU reports (sysconf: L3, else L2), 0 where it reports none. On a VM,
// the host's whole cache, not the VM's share of it.
size_t reported_last_level_cache_bytes();
// read_probe_bytes_for this machine (that cache, /proc/meminfo's MemAvailable).
size_t read_probe_bytes();

// Sustained read bandwidth in GB/s (10^9 bytes/s) on all pool threads, over buffer_bytes (far
// larger than the caches): the better of (a) stream_sum over each thread's share, best of 10
// passes, and (b) an f32 matrix-vector product through matmul (bandwidth-bound: one FMA per
// 4 bytes), whose prefetched row tiles stream faster than (a) on some machines. Takes ~1 s
// plus the time to touch a new buffer (ReadProbe keeps one for repeated probes).
double measure_read_bandwidth_gbs(ThreadPool& pool, size_t buffer_bytes = read_probe_bytes());
double measure_read_bandwidth_gbs(const KernelTable& k, ThreadPool& pool,
                                  size_t buffer_bytes = read_probe_bytes());

// The read probe's memory, touched once and read by every probe taken through it: `nextn
// bench` probes five times. Each probe had allocated and touched its own buffers (a 2 GB
// stream buffer, then 2 GB of matrix copies), which on the 2-core Zen 5 VM, whose page faults
// are slow, took 5-10 s a probe, most of a bench run. One buffer serves both probes: (a) reads
// it as each thread's share, (b) as [2048, 6144] f32 matrices laid end to end (its values are
// 1.0, which time as any others do). Huge pages where the system grants them, as the weights
// have.
class ReadProbe {
  public:
    // A buffer of buffer_bytes, and at least two of (b)'s matrices.
    ReadProbe(ThreadPool& pool, size_t buffer_bytes);
    // measure_read_bandwidth_gbs over the first `bytes` of the buffer (at most its size): (a)
    // reads those bytes, (b) as many of its matrices as cover max(bytes, 64 MB), at least two.
    double measure_gbs(const KernelTable& k, size_t bytes) const;
    double measure_gbs(const KernelTable& k) const { return measure_gbs(k, bytes_); }
    size_t bytes() const { return bytes_; }

  private:
    ThreadPool& pool_;
    size_t bytes_;
    std::shared_ptr<void> memory_;        // [max(bytes_, 2 matrices)] floats, all 1.0
    std::vector<WeightMatrix> matrices_;  // (b)'s views into memory_, end to end
};

// Which multiply-adds a compute peak counts: int8 dot products (the int8-activation matmuls)
// or f32 fused multiply-adds (f32 activations).
enum class PeakKind { Int8, F32, Bf16 };
const char* peak_kind_name(PeakKind kind);  // "int8", "f32", "bf16"
// What the probe of `kind` runs: "int8 dot products", "fused multiply-adds", "bf16 dot products".
const char* peak_probe_name(PeakKind kind);

// The cores' compute peak in operations per second (a multiply-add counts as 2) on all pool
// threads at once: the table's int8_peak_probe or fma_peak_probe, each thread its own chains,
// calls of at least min_call_seconds (so the pool's wake-up is noise), the fastest of 10.
double measure_compute_peak_ops(const KernelTable& k, ThreadPool& pool, PeakKind kind,
                                double min_call_seconds = 0.01);

struct GemmCost {
    WType type = WType::F32;
    int64_t rows = 0, cols = 0;
    size_t weight_bytes = 0;      // bytes of one weight matrix
    std::vector<double> seconds;  // seconds[n - 1]: one matmul of width n (best of repeats)

    double ratio(int n) const { return seconds[size_t(n - 1)] / seconds[0]; }  // cost(n)/cost(1)
    double gbs(int n) const { return double(weight_bytes) / seconds[size_t(n - 1)] / 1e9; }
};

// Times matmul of a random [rows, cols] weight of `type` for widths 1..max_n on the pool,
// cycling through enough copies of the weight (>= rotate_bytes in all) that every call streams
// it from memory as a decode step does. Each call is timed alone and the fastest kept (the
// unpreempted one on a shared machine); each width runs for about min_seconds in all.
GemmCost measure_gemm_cost(const KernelTable& k, WType type, int64_t rows, int64_t cols,
                           int max_n, ThreadPool& pool, double min_seconds = 0.1,
                           size_t rotate_bytes = size_t(1024) << 20);
// The timing loop of measure_gemm_cost over given matrices (all of one shape and type), cycled
// through in order.
GemmCost time_rotating_gemm(const KernelTable& k, std::span<const WeightMatrix> weights, int max_n,
                            ThreadPool& pool, double min_seconds);

}  // namespace nextn
