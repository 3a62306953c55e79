// Kernel benchmarks: read bandwidth, small-N GEMM per weight type and width, and the verify
// cost curve cost(N)/cost(1) at a decode-sized shape (2048 x 6144: a Qwen3.5-2B-like MLP
// projection), all with the dispatch-chosen ISA (NEXTN_ISA to force one) on 2 threads.
//
//   build-*/kernels_bench --benchmark_filter=Curve     # the cost curves with %-of-bandwidth
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <vector>

#include "core/thread_pool.h"
#include "formats/raw_tensor.h"
#include "kernels/int8_dot.h"
#include "kernels/kernels.h"
#include "kernels/key_tiles.h"
#include "kernels/measure.h"
#include "kernels/quant.h"
#include "kernels/quant_k.h"
#include "kernels/row_groups.h"

namespace nextn {
namespace {

constexpr int64_t kRows = 2048, kCols = 6144;
constexpr int kThreads = 2;

ThreadPool& pool() {
    static ThreadPool p(kThreads);
    return p;
}

double bandwidth_gbs() {
    static const double gbs = measure_read_bandwidth_gbs(pool());
    return gbs;
}

const WType kTypes[] = {WType::F32,   WType::BF16,  WType::F16,  WType::Q8_0, WType::Q4_0,
                        WType::Q4_1,  WType::Q8_0X, WType::Q4_0X, WType::Q4_1X};
// (Q4_1FX, the Q4_K holder, runs the Q4_1X loop with f32 scale loads; it has no f32 builder.)

void BM_ReadBandwidth(benchmark::State& state) {
    double gbs = 0.0;
    for (auto _ : state) gbs = measure_read_bandwidth_gbs(pool());  // over read_probe_bytes()
    state.counters["GB/s"] = gbs;
    state.SetLabel(kernels().isa);
}
BENCHMARK(BM_ReadBandwidth)->Iterations(1)->Unit(benchmark::kMillisecond);

// The cores' compute peak on the pool's threads (measure_compute_peak_ops; argument 0: int8 dot
// products, 1: f32 fused multiply-adds), the ceiling bench's prefill figure divides by.
void BM_ComputePeak(benchmark::State& state) {
    const PeakKind kind = state.range(0) == 0 ? PeakKind::Int8 : PeakKind::F32;
    double ops = 0.0;
    for (auto _ : state) ops = measure_compute_peak_ops(kernels(), pool(), kind);
    state.counters["Gops/s"] = ops / 1e9;
    state.SetLabel(std::string(kernels().isa) + " " + peak_kind_name(kind));
}
BENCHMARK(BM_ComputePeak)->Arg(0)->Arg(1)->Iterations(1)->Unit(benchmark::kMillisecond);

// n values uniform in [lo, hi), seeded.
std::vector<float> uniform_values(size_t n, uint32_t seed, float lo, float hi) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
}

// The fastest of a benchmark's calls, each timed alone: on a shared VM the mean moves 20-40%
// from run to run with the neighbours' load, the fastest call of cache-resident work 1-2% in
// back-to-back runs (a busier spell moves it too).
class FastestCall {
public:
    template <class Fn>
    void time(Fn&& fn) {
        const auto t0 = std::chrono::steady_clock::now();
        fn();
        seconds_ = std::min(seconds_, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    double seconds() const { return seconds_; }  // the fastest call so far
    // Counters fastest_us and fastest_GB/s (bytes: what one call streams).
    void report(benchmark::State& state, size_t bytes) const {
        state.counters["fastest_us"] = seconds_ * 1e6;
        state.counters["fastest_GB/s"] = double(bytes) / seconds_ / 1e9;
    }

private:
    double seconds_ = 1e30;
};

// Times matmuls of width n with w, rotating copies of it through rotated_bytes (by default as many
// bytes as the read probe reads: at least 1 GB, far beyond the last-level cache, so that none
// stays in cache); GB/s counts w's bytes, pct_bw that as a share of the measured read bandwidth.
// Returns the bytes rotated.
size_t time_matmuls(benchmark::State& state, WeightMatrix w, int n, size_t rotated_bytes = 0) {
    std::vector<WeightMatrix> weights{std::move(w)};
    if (rotated_bytes == 0)
        rotated_bytes = read_probe_bytes();  // once: it shrinks as copies take memory
    while (weights.size() * weights[0].nbytes() < rotated_bytes)
        weights.push_back(clone_weight(weights[0]));
    const WeightMatrix& first = weights[0];
    const std::vector<float> x = uniform_values(size_t(n * first.cols), 2, -1.0f, 1.0f);
    std::vector<float> y(size_t(n * first.rows));
    size_t next = 0;
    FastestCall fastest;
    for (auto _ : state) {
        fastest.time([&] { matmul(weights[next], x.data(), n, y.data(), pool()); });
        next = (next + 1) % weights.size();
        benchmark::ClobberMemory();
    }
    const double gb = double(first.nbytes()) * double(state.iterations()) / 1e9;
    state.counters["GB/s"] = benchmark::Counter(gb, benchmark::Counter::kIsRate);
    state.counters["pct_bw"] = benchmark::Counter(100.0 * gb / bandwidth_gbs(), benchmark::Counter::kIsRate);
    fastest.report(state, first.nbytes());
    state.SetLabel(std::string(kernels().isa) + " " + wtype_name(first.type));
    return weights.size() * first.nbytes();
}

// [rows, cols] uniform(-1, 1) values as `type`.
WeightMatrix random_weight(int64_t rows, int64_t cols, WType type) {
    const std::vector<float> values = uniform_values(size_t(rows * cols), 1, -1.0f, 1.0f);
    return make_weight_f32(values.data(), rows, cols, type);
}

// One matmul of width N on a weight that does not stay in cache (copies rotated).
void BM_Gemm(benchmark::State& state) {
    time_matmuls(state, random_weight(kRows, kCols, kTypes[state.range(0)]), int(state.range(1)));
}
BENCHMARK(BM_Gemm)
    ->ArgsProduct({{0, 1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 4, 8, 16}})
    ->Unit(benchmark::kMicrosecond)
    ->MinTime(0.3);

// Short rows (1024 values: a Qwen3.5-0.8B LM head or projection input, two int8-dot chunks
// per row), q8_0 and q4_0 in their int8-dot layouts, 32768 rows, width N: where the per-row
// work and the prefetch distance matter more than on the long rows of BM_Gemm.
void BM_GemmShortRows(benchmark::State& state) {
    const WType type = state.range(0) == 8 ? WType::Q8_0X : state.range(0) == 4 ? WType::Q4_0X : WType::F32;
    time_matmuls(state, random_weight(32768, 1024, type), int(state.range(1)));
}
BENCHMARK(BM_GemmShortRows)->ArgsProduct({{8, 4, 32}, {1, 4}})->Unit(benchmark::kMicrosecond)->MinTime(0.3);

// The same short-row matmul on a weight small enough to stay in L2 (1024 x 1024, half per thread), no copies
// rotated: the kernel's compute ceiling. Where this is not well above the memory rate of
// BM_GemmShortRows, decode is bound by the kernel's instructions, not by memory.
void BM_GemmCached(benchmark::State& state) {
    const WType type = state.range(0) == 8 ? WType::Q8_0X : WType::Q4_0X;
    const WeightMatrix w = random_weight(1024, 1024, type);
    const int n = int(state.range(1));
    std::vector<float> x(size_t(n * w.cols), 0.5f), y(size_t(n * w.rows));
    FastestCall fastest;
    for (auto _ : state) {
        fastest.time([&] { matmul(w, x.data(), n, y.data(), pool()); });
        benchmark::ClobberMemory();
    }
    const double gb = double(w.nbytes()) * double(state.iterations()) / 1e9;
    state.counters["GB/s"] = benchmark::Counter(gb, benchmark::Counter::kIsRate);
    fastest.report(state, w.nbytes());
    state.SetLabel(std::string(kernels().isa) + " " + wtype_name(w.type));
}
BENCHMARK(BM_GemmCached)->ArgsProduct({{8, 4}, {1, 4}})->Unit(benchmark::kMicrosecond)->MinTime(0.3);

// Whether a decode's matmul keeps up with faster memory: width-N products of a 3584 x 1024 matrix
// in 16-row groups (first argument 8: Q8_0R, 4: Q4_0R; the shape of a 0.8B FFN gate), copies
// rotated through a working set of the second argument's MB, GB/s against `probe`, the read probe
// (measure_read_bandwidth_gbs) over as many bytes. A working set the last-level cache holds
// stands in for a faster memory: on a machine whose memory reads faster than this one's (the Zen 5
// VM's swings to 75 GB/s), a kernel that falls behind the probe from cache would fall behind there.
// The 1024 MB case is BM_Gemm's situation.
void BM_RowGroupsWorkingSet(benchmark::State& state) {
    if (!kernels().int8_dot_fast) return state.SkipWithError("no int8 kernels on this ISA");
    const WType type = state.range(0) == 8 ? WType::Q8_0R : WType::Q4_0R;
    const size_t rotated = time_matmuls(state, random_weight(3584, 1024, type), int(state.range(2)),
                                        size_t(state.range(1)) << 20);
    state.counters.erase("pct_bw");  // against the 1 GB probe: `probe` is this working set's
    state.counters["probe"] = measure_read_bandwidth_gbs(pool(), rotated);
}
BENCHMARK(BM_RowGroupsWorkingSet)
    ->ArgsProduct({{8, 4}, {8, 32, 96, 1024}, {1, 4}})
    ->Unit(benchmark::kMicrosecond)
    ->MinTime(0.5);

// The int8 tiles alone on one thread, weights and activations in L1 (8 rows x 2048 values:
// 17 KB of Q8_0X, 9 KB of Q4_0X; the activations quantized once, outside the timing), width N:
// peak_pct is the multiply-adds' rate over one thread's int8 dot-product peak (peak_g, G ops/s:
// measure_compute_peak_ops on a one-thread pool, as the tiles run), so what it lacks of 100 is
// the tiles' own instructions (unpacking, scaling, reduction), not memory or the pool.
double int8_peak_one_thread() {
    static ThreadPool one(1);
    static const double ops = measure_compute_peak_ops(kernels(), one, PeakKind::Int8);
    return ops;
}

// One thread's int8 product of w (rows x cols) and n columns,
// the activations quantized once outside the timing, `calls` calls timed together (the fastest
// kept): fastest_ns a call, and peak_pct, the multiply-adds' rate over int8_peak_one_thread.
void time_int8_tiles(benchmark::State& state, const WeightMatrix& w, int64_t n, int calls) {
    const KernelTable& k = kernels();
    if (!k.int8_dot_fast) return state.SkipWithError("no int8 kernels on this ISA");
    const int64_t rows = w.rows, cols = w.cols;
    const std::vector<float> x = uniform_values(size_t(n * cols), 3, -1.0f, 1.0f);
    QuantizedColumns q;
    resize_columns(n, cols, q);
    k.quantize_columns(x.data(), cols, q, 0, n);
    std::vector<float> y(size_t(n * rows));
    FastestCall fastest;
    for (auto _ : state) {
        fastest.time([&] {
            for (int rep = 0; rep < calls; ++rep) k.gemm_i8_rows(w, q, y.data(), rows, 0, rows);
        });
        benchmark::ClobberMemory();
    }
    const double seconds = fastest.seconds() / calls;
    const double ops = 2.0 * double(rows * cols * n);
    state.counters["fastest_ns"] = seconds * 1e9;
    state.counters["peak_pct"] = 100.0 * ops / seconds / int8_peak_one_thread();
    state.counters["peak_g"] = int8_peak_one_thread() / 1e9;
    state.SetLabel(std::string(k.isa) + " " + wtype_name(w.type));
}

void BM_TilesInL1(benchmark::State& state) {
    // One call is a few hundred ns: too short to time alone.
    constexpr int kCallsTimedTogether = 64;
    if (!kernels().int8_dot_fast) return state.SkipWithError("no int8 kernels on this ISA");
    time_int8_tiles(state,
                    random_weight(8, 2048, state.range(0) == 8 ? WType::Q8_0X : WType::Q4_0X),
                    state.range(1), kCallsTimedTogether);
}
BENCHMARK(BM_TilesInL1)->ArgsProduct({{8, 4}, {1, 2, 3, 4}})->Unit(benchmark::kMicrosecond)->MinTime(0.3);

// A prefill's int8 tiles on one thread: a 1024 x 1024 matrix in 16-row groups (Q4_0R 576 KB,
// Q8_0R 1.1 MB: in L2; the tiles reread each group from L1 for every pass of columns), width N.
// peak_pct as BM_TilesInL1's.
void BM_RowGroupsPrefill(benchmark::State& state) {
    if (!kernels().int8_dot_fast) return state.SkipWithError("no int8 kernels on this ISA");
    time_int8_tiles(state,
                    random_weight(1024, 1024, state.range(0) == 8 ? WType::Q8_0R : WType::Q4_0R),
                    state.range(1), 1);
}
BENCHMARK(BM_RowGroupsPrefill)
    ->ArgsProduct({{8, 4}, {16, 128}})
    ->Unit(benchmark::kMicrosecond)
    ->MinTime(0.3);

// The fixed cost of one thread-pool job that does nothing (a decode token runs a few hundred).
void BM_PoolDispatch(benchmark::State& state) {
    int64_t items_seen = 0;
    for (auto _ : state) {
        pool().run(2, [&](int64_t begin, int64_t end) {
            if (begin == 0) items_seen += end - begin;
        });
        benchmark::ClobberMemory();
    }
    benchmark::DoNotOptimize(items_seen);
}
BENCHMARK(BM_PoolDispatch)->Unit(benchmark::kMicrosecond)->MinTime(0.3);

// [rows, cols] GGUF K-quant blocks of `dtype` (Q4_K, Q5_K or Q6_K) with random codes and
// sub-scales (super-block scale 0.001, Q4_K / Q5_K min 0.002), held as the kernels hold them:
// in 16-row groups (Q4_KR, Q5_KR, Q6_KR: the file's bits) or chunked (Q4_1FX, Q8_1FX: an f32
// scale and offset per 32 values; Q6_KX). Empty if the repack refuses.
WeightMatrix random_k_quant(DType dtype, int64_t rows, int64_t cols, bool row_groups) {
    const size_t block_bytes = size_t(dtype == DType::Q6_K   ? kQ6KBlockBytes
                                      : dtype == DType::Q5_K ? kQ5KBlockBytes
                                                             : kQ4KBlockBytes);
    std::mt19937 rng(1);
    // [rows * cols / 256] blocks
    std::vector<uint8_t> blocks(size_t(rows * cols / 256) * block_bytes);
    for (uint8_t& b : blocks) b = uint8_t(rng());
    for (size_t b = 0; b < blocks.size(); b += block_bytes) {
        const uint16_t d = f32_to_f16(0.001f), dmin = f32_to_f16(0.002f);
        if (dtype == DType::Q6_K) {
            std::memcpy(&blocks[b + 208], &d, 2);  // Q6_K's scale ends its block
        } else {
            std::memcpy(&blocks[b], &d, 2);
            std::memcpy(&blocks[b + 2], &dmin, 2);
        }
    }
    RawTensor t;
    t.name = dtype_name(dtype);
    t.dtype = dtype;
    t.shape = {rows, cols};
    t.data = blocks.data();
    t.nbytes = blocks.size();
    WeightMatrix w;  // the repacks copy: w owns its bytes
    bool made = false;
    switch (dtype) {
        case DType::Q6_K:
            made = row_groups ? repack_q6_k_as_row_groups(t, rows, cols, w)
                              : repack_q6_k_for_int8_dot(t, rows, cols, w);
            break;
        case DType::Q5_K:
            made = row_groups ? repack_q5_k_as_row_groups(t, rows, cols, w)
                              : repack_affine_for_int8_dot(t, rows, cols, w);
            break;
        default:
            made = row_groups ? repack_q4_k_as_row_groups(t, rows, cols, w)
                              : repack_affine_for_int8_dot(t, rows, cols, w);
    }
    return made ? w : WeightMatrix{};
}

// GGUF Q6_K held chunked as Q6_KX (third argument 0: 7 bits a value) or in 16-row groups as
// Q6_KR (1: the file's 6.5625), one matmul of width N as BM_Gemm; GB/s counts the bytes the
// layout streams (compare fastest_us between the layouts).
// Second argument 1: the short rows of BM_GemmShortRows (32768 x 1024), the shape of a
// Qwen3.5-0.8B LM head, which GGUF Q4_0 / Q4_K_M files store as Q6_K.
void BM_GemmQ6K(benchmark::State& state) {
    if (!kernels().int8_dot_fast) return state.SkipWithError("no int8 kernels on this ISA");
    const int64_t rows = state.range(1) ? 32768 : kRows, cols = state.range(1) ? 1024 : kCols;
    WeightMatrix w = random_k_quant(DType::Q6_K, rows, cols, state.range(2) != 0);
    if (w.empty()) return state.SkipWithError("repack");
    time_matmuls(state, std::move(w), int(state.range(0)));
}
BENCHMARK(BM_GemmQ6K)
    ->ArgsProduct({{1, 2, 4, 8}, {0}, {0, 1}})
    ->ArgsProduct({{1, 4}, {1}, {0, 1}})
    ->Unit(benchmark::kMicrosecond)
    ->MinTime(0.3);

// GGUF Q4_K (most of a Q4_K_M file; third argument 4) or Q5_K (5), held chunked as Q4_1FX /
// Q8_1FX (second argument 0: 6 / 10 bits a value) or in 16-row groups as Q4_KR / Q5_KR (1:
// 4.625 / 5.625 bits a value), one matmul of width N as BM_Gemm. GB/s counts the bytes the
// layout streams; compare fastest_us between the layouts.
void BM_GemmQ4K(benchmark::State& state) {
    if (!kernels().int8_dot_fast) return state.SkipWithError("no int8 kernels on this ISA");
    const DType dtype = state.range(2) == 5 ? DType::Q5_K : DType::Q4_K;
    WeightMatrix w = random_k_quant(dtype, kRows, kCols, state.range(1) != 0);
    if (w.empty()) return state.SkipWithError("repack");
    time_matmuls(state, std::move(w), int(state.range(0)));
}
BENCHMARK(BM_GemmQ4K)->ArgsProduct({{1, 2, 4, 8}, {0, 1}, {4, 5}})->Unit(benchmark::kMicrosecond)->MinTime(0.3);

// A Q4_K_M prefill's tiles on one thread, as BM_RowGroupsPrefill's: a 1024 x 1024 matrix of
// Q4_KR (first argument 4: 592 KB), Q5_KR (5) or Q6_KR (6: 840 KB) in 16-row groups, width N;
// peak_pct as BM_TilesInL1's (the int8 products the tiles do, over one thread's peak).
void BM_KQuantRowGroupsPrefill(benchmark::State& state) {
    if (!kernels().int8_dot_fast) return state.SkipWithError("no int8 kernels on this ISA");
    const DType dtype = state.range(0) == 6   ? DType::Q6_K
                        : state.range(0) == 5 ? DType::Q5_K
                                              : DType::Q4_K;
    const WeightMatrix w = random_k_quant(dtype, 1024, 1024, /*row_groups=*/true);
    if (w.empty()) return state.SkipWithError("repack");
    time_int8_tiles(state, w, state.range(1), 1);
}
BENCHMARK(BM_KQuantRowGroupsPrefill)
    ->ArgsProduct({{4, 5, 6}, {16, 128}})
    ->Unit(benchmark::kMicrosecond)
    ->MinTime(0.3);

// The Gated-DeltaNet recurrence of one Qwen3.5-0.8B layer (16 key and value heads of 128 x
// 128) over T tokens into another buffer, writing only the last state (decode at T = 1, a
// verify forward, commit's re-run) or every token's (snapshots); the states of 18 layers rotate
// so that none stays in cache, as in a forward.
void BM_GdnRecurrence(benchmark::State& state) {
    const int T = int(state.range(0));
    const bool snapshots = state.range(1) != 0;
    constexpr int H = 16, D = 128, kLayers = 18;
    const int64_t state_size = int64_t(H) * D * D;
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> dist(-0.1f, 0.1f);
    std::vector<std::vector<float>> states(kLayers);  // [1 + T, H, D, D] each
    for (auto& st : states) {
        st.resize(size_t((1 + T) * state_size));
        for (float& v : st) v = dist(rng);
    }
    std::vector<float> q(size_t(T * H * D)), k(q.size()), v(q.size()), out(q.size());
    std::vector<float> g(size_t(T * H), -0.05f), beta(size_t(T * H), 0.5f);
    for (auto* vec : {&q, &k, &v})
        for (float& x : *vec) x = dist(rng);
    int layer = 0;
    for (auto _ : state) {
        float* s = states[size_t(layer)].data();
        gdn_recurrence(kernels(), s, s + state_size, snapshots ? state_size : 0, q.data(), k.data(),
                       v.data(), g.data(), beta.data(), T, H, H, D, D, false, out.data(), pool());
        layer = (layer + 1) % kLayers;
        benchmark::ClobberMemory();
    }
    state.SetLabel(std::string(kernels().isa) + (snapshots ? " snapshots" : " last state only"));
}
BENCHMARK(BM_GdnRecurrence)
    ->ArgsProduct({{1, 2, 3, 5}, {0, 1}})
    ->Unit(benchmark::kMicrosecond)
    ->MinTime(0.3);

// One kv head's cache rows (n positions x 256 values, contiguous as in the head-major cache) for
// each of the 6 attention layers of a Qwen3.5-0.8B, random, as f32, f16 and q8_0 (the
// benchmarks' second argument: 0, 1, 2); the decode attention benchmarks rotate through the
// layers so that, as in a forward, none stays in cache.
struct HeadCaches {
    static constexpr int64_t kDim = 256, kLayers = 6;
    static constexpr int64_t kQ8RowBytes = kDim / kQuantBlock * int64_t(sizeof(BlockQ8_0));
    std::vector<std::vector<float>> f32;
    std::vector<std::vector<uint16_t>> f16;
    std::vector<std::vector<BlockQ8_0>> q8;
    int layer = 0;

    HeadCaches(int64_t n, uint32_t seed) : f32(kLayers), f16(kLayers), q8(kLayers) {
        std::mt19937 rng(seed);
        std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
        for (int l = 0; l < kLayers; ++l) {
            f32[size_t(l)].resize(size_t(n * kDim));
            for (float& x : f32[size_t(l)]) x = dist(rng);
            f16[size_t(l)].resize(f32[size_t(l)].size());
            for (size_t i = 0; i < f16[size_t(l)].size(); ++i) f16[size_t(l)][i] = f32_to_f16(f32[size_t(l)][i]);
            q8[size_t(l)].resize(size_t(n * kDim / kQuantBlock));
            quantize_row_q8_0(f32[size_t(l)].data(), n * kDim, q8[size_t(l)].data());
        }
    }
    void next() { layer = (layer + 1) % kLayers; }
    const uint8_t* rows(int type) const {
        const size_t l = size_t(layer);
        if (type == 2) return reinterpret_cast<const uint8_t*>(q8[l].data());
        if (type == 1) return reinterpret_cast<const uint8_t*>(f16[l].data());
        return reinterpret_cast<const uint8_t*>(f32[l].data());
    }
    static int64_t row_bytes(int type) {
        return type == 2 ? kQ8RowBytes : kDim * (type == 1 ? 2 : 4);
    }
    // GB/s counter and label for a benchmark that read n rows a call.
    static void report(benchmark::State& state, int64_t n, int type) {
        state.counters["GB/s"] =
            benchmark::Counter(double(n * row_bytes(type)) * double(state.iterations()) / 1e9,
                               benchmark::Counter::kIsRate);
        state.SetLabel(std::string(kernels().isa) + (type == 2   ? " q8_0"
                                                     : type == 1 ? " f16"
                                                                 : " f32"));
    }
};

// Attention's value sum for one kv head at a context of n positions: the 4 query heads of the
// GQA group weight the head's value rows (decode), or 20 rows (third argument 20: a width-5
// verify's block, which walks the positions in L2-sized blocks; GB/s counts the values once), or
// 32 (a prefill's block of 8 tokens).
void BM_WeightedRows(benchmark::State& state) {
    const int64_t n = state.range(0);
    const int type = int(state.range(1));
    const int64_t G = state.range(2), D = HeadCaches::kDim;
    HeadCaches v(n, 4);
    const std::vector<float> p = uniform_values(size_t(G * n), 4, 0.0f, 1.0f);
    std::vector<float> out(size_t(G * D));
    for (auto _ : state) {
        const uint8_t* rows = v.rows(type);
        if (type == 2)
            kernels().weighted_rows_q8_0(p.data(), n, G, rows, HeadCaches::kQ8RowBytes, n, D,
                                         out.data(), false);
        else if (type == 1)
            kernels().weighted_rows_f16(p.data(), n, G, reinterpret_cast<const uint16_t*>(rows), D,
                                        n, D, out.data(), false);
        else
            kernels().weighted_rows(p.data(), n, G, reinterpret_cast<const float*>(rows), D, n, D,
                                    out.data(), false);
        v.next();
        benchmark::ClobberMemory();
    }
    HeadCaches::report(state, n, type);
}
BENCHMARK(BM_WeightedRows)
    ->ArgsProduct({{512, 4096, 32768}, {0, 1, 2}, {4, 20, 32}})
    ->Unit(benchmark::kMicrosecond)
    ->MinTime(0.3);

// Attention's scores for the same kv head: the 4 query heads against the head's keys, held in
// tiles of 16 positions (kernels/key_tiles.h) as the cache holds them, one key_scores call as a
// decode step makes it (third argument 20: a width-5 verify's rows; 32: a prefill's block of 8
// tokens). GB/s counts the keys once. Session 57, Xeon, one thread, 4096 positions: the rows
// through gemm_rows took 179 / 88.6 / 103 us (f32 / f16 / q8_0) for 4 rows, 412 / 333 / 378 us
// for 20 (docs/speed-log.md has the tiles' figures).
void BM_AttentionScores(benchmark::State& state) {
    const int64_t n = state.range(0);
    const int type = int(state.range(1));
    const int64_t G = state.range(2), D = HeadCaches::kDim;
    const WType wtype = type == 2 ? WType::Q8_0 : type == 1 ? WType::F16 : WType::F32;
    HeadCaches k(n, 5);
    const size_t tile_bytes = key_tile_bytes(wtype, D);
    std::vector<std::vector<uint8_t>> tiles(HeadCaches::kLayers);  // per layer [n / 16 tiles]
    for (int64_t l = 0; l < HeadCaches::kLayers; ++l) {
        tiles[size_t(l)].resize(size_t((n + kKeyTile - 1) / kKeyTile) * tile_bytes);
        for (int64_t pos = 0; pos < n; ++pos)
            store_key_in_tile(wtype, tiles[size_t(l)].data() + size_t(pos / kKeyTile) * tile_bytes,
                              pos % kKeyTile, k.f32[size_t(l)].data() + pos * D, D);
    }
    const std::vector<float> q = uniform_values(size_t(G * D), 5, -1.0f, 1.0f);
    std::vector<float> scores(size_t(G * n));
    for (auto _ : state) {
        kernels().key_scores(wtype, tiles[size_t(k.layer)].data(), n, q.data(), G, D, scores.data(),
                             n);
        k.next();
        benchmark::ClobberMemory();
    }
    HeadCaches::report(state, n, type);
}
BENCHMARK(BM_AttentionScores)
    ->ArgsProduct({{512, 4096, 32768}, {0, 1, 2}, {4, 20, 32}})
    ->Unit(benchmark::kMicrosecond)
    ->MinTime(0.3);

// cost(N)/cost(1) for N = 1..8 and the N=1 streaming rate as a share of measured bandwidth.
void BM_VerifyCostCurve(benchmark::State& state) {
    const WType type = kTypes[state.range(0)];
    GemmCost cost;
    for (auto _ : state) cost = measure_gemm_cost(kernels(), type, kRows, kCols, 8, pool(), 0.15);
    for (int n = 2; n <= 8; ++n) state.counters["cost" + std::to_string(n)] = cost.ratio(n);
    state.counters["us1"] = cost.seconds[0] * 1e6;
    state.counters["GB/s1"] = cost.gbs(1);
    state.counters["pct_bw1"] = 100.0 * cost.gbs(1) / bandwidth_gbs();
    state.SetLabel(std::string(kernels().isa) + " " + wtype_name(type));
}
BENCHMARK(BM_VerifyCostCurve)->DenseRange(0, 8)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace nextn

BENCHMARK_MAIN();
