#include "kernels/measure.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>

#include <unistd.h>

#include "core/error.h"
#include "core/memory_info.h"
#include "core/thread_pool.h"

namespace nextn {

namespace {

// The f32 matrix-vector probe's matrix (ReadProbe's (b)): 50 MB, rows of 24 KB.
constexpr int64_t kMatvecRows = 2048;
constexpr int64_t kMatvecCols = 6144;

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

size_t read_probe_bytes_for(size_t last_level_cache_bytes, size_t available_bytes) {
    const size_t wanted = std::clamp(4 * last_level_cache_bytes, kReadProbeTargetBytes, kReadProbeMaxBytes);
    return std::max(kReadProbeBytes, std::min(wanted, available_bytes / 4));
}

size_t reported_last_level_cache_bytes() {
    long cache = 0;  // sysconf gives 0 or -1 where it does not know (non-x86, some VMs)
    for (int name : {_SC_LEVEL3_CACHE_SIZE, _SC_LEVEL2_CACHE_SIZE})
        if (cache <= 0) cache = sysconf(name);
    return cache > 0 ? size_t(cache) : 0;
}

size_t read_probe_bytes() {
    const size_t available = read_memory_info().available;  // 0 where unknown: no limit then
    return read_probe_bytes_for(reported_last_level_cache_bytes(), available > 0 ? available : SIZE_MAX);
}

double measure_read_bandwidth_gbs(ThreadPool& pool, size_t buffer_bytes) {
    return measure_read_bandwidth_gbs(kernels(), pool, buffer_bytes);
}

double measure_read_bandwidth_gbs(const KernelTable& k, ThreadPool& pool, size_t buffer_bytes) {
    return ReadProbe(pool, buffer_bytes).measure_gbs(k);
}

ReadProbe::ReadProbe(ThreadPool& pool, size_t buffer_bytes) : pool_(pool), bytes_(buffer_bytes) {
    const size_t matrix_bytes = size_t(kMatvecRows * kMatvecCols) * sizeof(float);
    const size_t n_matrices = std::max<size_t>(2, buffer_bytes / matrix_bytes);
    const size_t floats = std::max(buffer_bytes, n_matrices * matrix_bytes) / sizeof(float);
    memory_ = allocate_weight_memory(floats * sizeof(float), "read probe buffer", /*zeroed=*/false);
    float* values = static_cast<float*>(memory_.get());
    // Touched once, each of the pool's threads writing a share of it at the same time.
    pool_.run_on_each_thread([&](int i) {
        const size_t per = floats / size_t(pool_.size());
        const size_t end = i + 1 == pool_.size() ? floats : (size_t(i) + 1) * per;
        std::fill(values + size_t(i) * per, values + end, 1.0f);
    });
    for (size_t m = 0; m < n_matrices; ++m) {
        WeightMatrix w;
        w.rows = kMatvecRows;
        w.cols = kMatvecCols;
        w.row_bytes = size_t(kMatvecCols) * sizeof(float);
        w.data =
            reinterpret_cast<const uint8_t*>(values) + m * matrix_bytes;  // a view: memory_ owns it
        matrices_.push_back(w);
    }
}

double ReadProbe::measure_gbs(const KernelTable& k, size_t bytes) const {
    bytes = std::min(bytes, bytes_);
    const int threads = pool_.size();
    const int64_t per = int64_t(bytes / sizeof(float)) / threads / 64 * 64;
    if (per <= 0) fail("read probe: a buffer of ", bytes, " bytes too small for ", threads, " threads");
    const float* buffer = static_cast<const float*>(memory_.get());
    double best = 0.0;
    std::vector<float> sums(size_t(threads), 0.0f);
    // A small buffer is read several times a rep, 64 MB in all: one pass over a few MB takes
    // tens of microseconds, about what waking the pool costs, and a 3.5 MB buffer (a tiny
    // model's weights, cache-served) had read slower than the 1 GB probe.
    const size_t read_bytes = size_t(per * threads) * sizeof(float);
    const int passes = int(std::max<size_t>(1, (size_t(64) << 20) / read_bytes));
    for (int rep = 0; rep < 10; ++rep) {
        const auto t0 = std::chrono::steady_clock::now();
        pool_.run_on_each_thread([&](int i) {
            for (int p = 0; p < passes; ++p) sums[size_t(i)] += k.stream_sum(buffer + i * per, per);
        });
        best = std::max(best, double(read_bytes) * passes / seconds_since(t0) / 1e9);
    }
    volatile float sink = sums[0];  // the sums are the point of the reads
    (void)sink;
    // Second probe: an f32 matrix-vector product (one FMA per 4 bytes read, so never
    // compute-bound) over the same amount of memory. Its row-tile pattern with prefetch can
    // stream faster than the plain probe; the better of the two is the machine's rate.
    const size_t matrix_bytes = matrices_[0].nbytes();
    const size_t rotated = std::max(bytes, size_t(64) << 20);
    const size_t n =
        std::clamp<size_t>((rotated + matrix_bytes - 1) / matrix_bytes, 2, matrices_.size());
    const GemmCost matvec = time_rotating_gemm(k, std::span(matrices_.data(), n), 1, pool_, 0.2);
    return std::max(best, matvec.gbs(1));
}

const char* peak_kind_name(PeakKind kind) {
    switch (kind) {
        case PeakKind::Int8: return "int8";
        case PeakKind::Bf16: return "bf16";
        case PeakKind::F32: break;
    }
    return "f32";
}

const char* peak_probe_name(PeakKind kind) {
    switch (kind) {
        case PeakKind::Int8: return "int8 dot products";
        case PeakKind::Bf16: return "bf16 dot products";
        case PeakKind::F32: break;
    }
    return "fused multiply-adds";
}

double measure_compute_peak_ops(const KernelTable& k, ThreadPool& pool, PeakKind kind,
                                double min_call_seconds) {
    constexpr int C = kPeakProbeChains;
    const int threads = pool.size();
    // Small codes (|a * b| <= 6, four to a lane) keep 2^24 repetitions' sums well inside int32.
    std::vector<uint8_t> a(size_t(C * 64));
    std::vector<int8_t> b(64);
    std::vector<float> af(size_t(C * 16)), bf(16);
    for (size_t i = 0; i < a.size(); ++i) a[i] = uint8_t(i % 3 + 1);
    for (size_t i = 0; i < b.size(); ++i) b[i] = int8_t(int(i % 5) - 2);
    for (size_t i = 0; i < af.size(); ++i) af[i] = 0.5f + float(i % 7) / 16.0f;
    for (size_t i = 0; i < bf.size(); ++i) bf[i] = 1.0f / 1024.0f;
    std::vector<int32_t> acc(size_t(threads * C * 16), 0);  // [threads, chains, 16]
    std::vector<float> accf(size_t(threads * C * 16), 0.0f);
    // bf16 operands near 1 and 2^-10: 2^24 repetitions stay finite and normal.
    std::vector<uint16_t> ab(size_t(C * 32)), bb(32, 0x3a80);
    for (size_t i = 0; i < ab.size(); ++i) ab[i] = uint16_t(0x3f00 + i % 7);
    auto call = [&](int thread, int64_t reps) {
        if (kind == PeakKind::Int8)
            k.int8_peak_probe(a.data(), b.data(), reps, acc.data() + thread * C * 16);
        else if (kind == PeakKind::Bf16)
            k.bf16_peak_probe(ab.data(), bb.data(), reps, accf.data() + thread * C * 16);
        else
            k.fma_peak_probe(af.data(), bf.data(), reps, accf.data() + thread * C * 16);
    };
    // Repetitions for one call of min_call_seconds on one thread (doubling from a short try).
    int64_t reps = 1024;
    constexpr int64_t kMaxReps = int64_t(1) << 24;
    for (;;) {
        const auto t0 = std::chrono::steady_clock::now();
        call(0, reps);
        if (seconds_since(t0) >= min_call_seconds || reps >= kMaxReps) break;
        reps *= 2;
    }
    // The fastest of 10: one trial of a shared VM's two vCPUs ran at half the rate of the next
    // (a thread descheduled for it), and a low peak would overstate what reaches it.
    double best = 1e30;
    for (int trial = 0; trial < 10; ++trial) {
        std::fill(acc.begin(), acc.end(), 0);
        const auto t0 = std::chrono::steady_clock::now();
        pool.run_on_each_thread([&](int i) { call(i, reps); });
        best = std::min(best, seconds_since(t0));
    }
    const double macs_per_rep = double(C) * (kind == PeakKind::Int8 ? 64.0 : kind == PeakKind::Bf16 ? 32.0 : 16.0);
    volatile int32_t sink = acc[0];  // the sums are the point of the work
    volatile float sinkf = accf[0];
    (void)sink;
    (void)sinkf;
    return 2.0 * macs_per_rep * double(reps) * double(threads) / best;
}

GemmCost measure_gemm_cost(const KernelTable& k, WType type, int64_t rows, int64_t cols,
                           int max_n, ThreadPool& pool, double min_seconds, size_t rotate_bytes) {
    if (max_n < 1) fail("measure_gemm_cost: max_n must be >= 1");
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> values(size_t(rows * cols));
    for (float& v : values) v = dist(rng);
    // One quantization, then byte copies: enough weights that none stays in cache.
    std::vector<WeightMatrix> weights{make_weight_f32(values.data(), rows, cols, type)};
    const size_t bytes = weights[0].nbytes();
    const size_t copies = std::max<size_t>(2, (rotate_bytes + bytes - 1) / bytes);
    values.clear();
    values.shrink_to_fit();
    while (weights.size() < copies) weights.push_back(clone_weight(weights[0]));
    return time_rotating_gemm(k, weights, max_n, pool, min_seconds);
}

GemmCost time_rotating_gemm(const KernelTable& k, std::span<const WeightMatrix> weights, int max_n,
                            ThreadPool& pool, double min_seconds) {
    if (max_n < 1) fail("time_rotating_gemm: max_n must be >= 1");
    if (weights.empty()) fail("time_rotating_gemm: no weights");
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    const int64_t rows = weights[0].rows, cols = weights[0].cols;
    std::vector<float> x(size_t(max_n * cols)), y(size_t(max_n * rows));  // [n, cols], [n, rows]
    for (float& v : x) v = dist(rng);
    GemmCost cost;
    cost.type = weights[0].type;
    cost.rows = rows;
    cost.cols = cols;
    cost.weight_bytes = weights[0].nbytes();
    cost.seconds.assign(size_t(max_n), 0.0);
    size_t next = 0;
    auto one_call = [&](int n) {
        matmul(k, weights[next], x.data(), n, y.data(), pool);
        next = (next + 1) % weights.size();
    };
    for (size_t i = 0; i < weights.size(); ++i) one_call(1);  // warm up pages and threads
    // Each call timed on its own and the fastest kept: on a shared machine the minimum is the
    // run that was not preempted. Widths interleave so slow phases hit all of them alike.
    for (int rep = 0; rep < 3; ++rep) {
        for (int n = 1; n <= max_n; ++n) {
            const auto start = std::chrono::steady_clock::now();
            int64_t calls = 0;
            double& best = cost.seconds[size_t(n - 1)];
            do {
                const auto t0 = std::chrono::steady_clock::now();
                one_call(n);
                const double s = seconds_since(t0);
                best = best == 0.0 ? s : std::min(best, s);
                ++calls;
            } while (seconds_since(start) < min_seconds / 3 || calls < int64_t(weights.size()));
        }
    }
    return cost;
}

}  // namespace nextn
