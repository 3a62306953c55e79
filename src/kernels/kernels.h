#pragma once
// The kernel dispatch table: one set of function pointers chosen once at start-up from the
// CPU's features (or NEXTN_ISA). The scalar reference (ref/) is always built and is the oracle
// every faster variant is tested against.
//
// Seam for other back-ends: this header is ISA-neutral. An ISA contributes a KernelTable from
// its own translation units (x86/avx2, x86/avxvnni, x86/avx512, assembled in x86/x86_tables.cpp;
// arm/neon and arm/dotprod, in arm/arm_tables.cpp; cuda/ later) and registers it in dispatch.cpp's
// candidate list with its CPU-feature check, guarded by whether CMakeLists.txt builds its folder
// (NEXTN_X86_KERNELS, NEXTN_ARM_KERNELS). Nothing here may assume one ISA.
//
// Batch invariance: for every kernel, the arithmetic that produces one output element (its
// reduction order) depends only on that element's inputs, never on the batch width n, the
// element's position in the batch, or the thread count. Greedy speculative decoding relies on
// this to produce bit-identical tokens. (Different ISAs may round differently from each other.)
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "kernels/weight.h"

namespace nextn {

class ThreadPool;
struct QuantizedColumns;
struct Bf16Columns;

struct KernelTable {
    const char* isa = "scalar";

    // y[j, r] = sum_k W[r, k] * x[j, k] for rows r in [r0, r1), batch j in [0, n).
    // x: [n, w.cols], y: [n, ldy]. One call handles one thread's share of rows. W is read from
    // memory once for any n (16-row chunks stay in cache); each weight block is decoded once per
    // group of up to 6 (avx512) / 4 (avx2) columns.
    void (*gemm_rows)(const WeightMatrix& w, const float* x, int64_t n, float* y, int64_t ldy,
                      int64_t r0, int64_t r1) = nullptr;

    // Int8-dot weights (Q8_0X, Q4_0X, Q4_1X, Q4_1FX, Q8_1FX, Q6_KX, and the row-group types
    // Q4_0R, Q8_0R, Q4_KR, Q5_KR, Q6_KR) times
    // int8-quantized activations (kernels/int8_dot.h) for rows [r0, r1): y[j, r], y: [n, ldy].
    // Bit-identical to ref::gemm_i8_rows. `int8_dot_fast` says whether this table has a vector
    // int8 dot product (only then are block weights repacked to the chunked or row-group types at load).
    void (*gemm_i8_rows)(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy,
                         int64_t r0, int64_t r1) = nullptr;
    // Quantizes columns [j0, j1) of x [n, cols] for gemm_i8_rows; bit-identical to
    // ref::quantize_columns.
    void (*quantize_columns)(const float* x, int64_t cols, QuantizedColumns& out, int64_t j0,
                             int64_t j1) = nullptr;
    bool int8_dot_fast = false;
    // The types held in 16-row groups at load (Q4_0 as Q4_0R, Q8_0 as Q8_0R, GGUF Q4_K as Q4_KR,
    // Q5_K as Q5_KR, Q6_K as Q6_KR: kernels/row_groups.h) rather than chunked, where gemm_i8_rows
    // has a fast kernel for them. Every table multiplies the row-group types (the scalar one with
    // its reference), so a matrix built for one table runs on any. The avx2, avxvnni, avx512,
    // neon and dotprod tables have that kernel; NEXTN_Q4_0_LAYOUT, NEXTN_Q8_0_LAYOUT,
    // NEXTN_Q4_K_LAYOUT, NEXTN_Q5_K_LAYOUT and NEXTN_Q6_K_LAYOUT (rows or chunked) choose
    // (kernels/dispatch.cpp has the defaults).
    RowGroupLayouts row_groups;
    // From this many columns on, the row-group types go through AMX int8 tiles (same bits); 0: no
    // AMX (the CPU or OS lacks it, another table, or NEXTN_AMX is not "on": off by default).
    int64_t amx_from_width = 0;
    // Whether a narrow matmul (a decode step or a verify: kernels/matmul.cpp) splits its rows as
    // ThreadPool::Split::ContiguousSharedTails rather than Contiguous. Set where it was measured
    // faster: the avx512 table on Zen 5 (matmul.cpp has the runs; on a Xeon a split like it had
    // measured slower).
    bool share_narrow_tails = false;
    // How this table's decode-width row-group matmuls prefetch their weights ("cursor" or
    // "group streams": x86/avx512/gemm_row_groups_avx512.cpp; empty where a table has no such
    // choice), and a table of the same bits that prefetches the other way. Where that is set,
    // the model times the two against each other while it decodes and runs each forward shape
    // on the faster (model/kernel_chooser.h): the avx512 table on AMD, where the faster way
    // changes with the memory's state from minute to minute. NEXTN_ROW_GROUP_FETCH=cursor or
    // streams fixes one way instead; auto (the default) is the above, and group streams off AMD.
    // (On Zen 5 the "group streams" way reads Q4_0R and Q8_0R products up to a few columns as one
    // stream a group with no software prefetch: RowGroupFetch::HardwareStream.)
    const char* narrow_fetch = "";
    const KernelTable* timed_alternative = nullptr;

    // BF16D weights times activations rounded to bf16 (kernels/bf16_dot.h) for rows [r0, r1):
    // x: its n columns (round_columns_bf16), y: [n, ldy]. Bit-identical to ref::gemm_bf16_rows.
    // `bf16_dot_fast` says whether this table has the CPU's bf16 dot product (only then are
    // BF16 weights held as BF16D, and only when bf16 activations are asked for).
    void (*gemm_bf16_rows)(const WeightMatrix& w, const Bf16Columns& x, float* y, int64_t ldy,
                           int64_t r0, int64_t r1) = nullptr;
    bool bf16_dot_fast = false;

    // y[i, :] = x[i, :] * rsqrt(mean(x[i, :]^2) + eps) * w     x, y: [n_rows, d]; w: [d]
    // (y may equal x.)
    void (*rmsnorm)(const float* x, const float* w, int64_t n_rows, int64_t d, float eps,
                    float* y) = nullptr;
    // y[i, :] = x[i, :] * rsqrt(sum(x[i, :]^2) + eps)           x, y: [n_rows, d]
    void (*l2norm)(const float* x, int64_t n_rows, int64_t d, float eps, float* y) = nullptr;
    // Elementwise over n values (y may equal x): silu(x) = x * sigmoid(x).
    void (*silu)(const float* x, float* y, int64_t n) = nullptr;
    void (*sigmoid)(const float* x, float* y, int64_t n) = nullptr;
    // y = silu(gate) * up (SwiGLU), n values; y may equal gate or up.
    void (*swiglu)(const float* gate, const float* up, float* y, int64_t n) = nullptr;
    // In place, per row: x = exp(x - max) / sum.                  x: [n_rows, d]
    void (*softmax)(float* x, int64_t n_rows, int64_t d) = nullptr;
    // Attention's scores over keys held in tiles of kKeyTile positions (kernels/key_tiles.h;
    // type F32, F16 or Q8_0):
    //   out[r * ldo + pos] = sum over e in [0, d) of q[r * d + e] * key(pos, e)
    // for pos in [0, n), r in [0, R); q: [R, d]. F32 and F16: each score starts at 0 and takes
    // one fused multiply-add per e, in order. Q8_0: each query row is rounded to Q8_0 as the
    // keys are (quantize_queries_q8_0), and each score starts at 0 and takes, per 32-value block
    // b in order, fma(float(dot_b), key_scale_b * query_scale_b, score), dot_b the exact integer
    // dot product of the block's codes and the scales their f16 values. Every ISA gives the
    // reference's bits, whatever R, n or the tile a position sits in.
    void (*key_scores)(WType type, const uint8_t* tiles, int64_t n, const float* q, int64_t R,
                       int64_t d, float* out, int64_t ldo) = nullptr;
    // Attention's probability-weighted sum of value rows:
    //   out[g, :] = sum over pos in [0, n) of p[g * ldp + pos] * v[pos * ldv + :]
    // for g in [0, G); out: [G, d]. Each output element starts at 0 (accumulate: at out's
    // value, the sum over earlier positions) and takes one fused multiply-add per position, in
    // position order, so every ISA gives the reference's bits, and a sum split into two calls
    // at any position (the second accumulating) gives the bits of one call.
    void (*weighted_rows)(const float* p, int64_t ldp, int64_t G, const float* v, int64_t ldv,
                          int64_t n, int64_t d, float* out, bool accumulate) = nullptr;
    // The same over value rows of IEEE half floats (an f16 KV cache), ldv in halves: each value
    // is widened to f32 (exact) and then takes the same fused multiply-add, so every ISA again
    // gives the reference's bits.
    void (*weighted_rows_f16)(const float* p, int64_t ldp, int64_t G, const uint16_t* v, int64_t ldv,
                              int64_t n, int64_t d, float* out, bool accumulate) = nullptr;
    // The same over value rows of Q8_0 blocks (a q8_0 KV cache): d % 32 == 0, each row d / 32
    // blocks, rows ldv_bytes apart. A value is d_block * code, which f32 holds exactly (an f16
    // scale's 11 significant bits times 8), then the same fused multiply-add: every ISA gives
    // the reference's bits, and those are weighted_rows' on the dequantized rows.
    void (*weighted_rows_q8_0)(const float* p, int64_t ldp, int64_t G, const uint8_t* v,
                               int64_t ldv_bytes, int64_t n, int64_t d, float* out,
                               bool accumulate) = nullptr;
    // Gated DeltaNet's causal depthwise conv over a window of rows:
    //   out[t, c] = sum over j in [0, K) of w[j, c] * x[t + j, c]
    // x: [T + K - 1, C] (the K - 1 rows before the run, then the run's T); w: [K, C] (tap K-1
    // multiplies the current row); out: [T, C]; x's and w's rows ld floats apart, out's ld_out
    // (C channels of wider rows: a slice of the channels). Each output starts at 0 and adds the
    // products in tap order, each rounded on its own (no fused multiply-add): every ISA gives
    // the reference's bits, and a value never depends on T or on which channels run with it.
    void (*causal_conv)(const float* x, const float* w, int64_t ld, int64_t T, int64_t C, int K,
                        float* out, int64_t ld_out) = nullptr;
    // NeoX rotary embedding, in place, on n vectors x + h * stride (h in [0, n)): for i < half,
    //   (a, b) = (x[i], x[i + half]);  x[i] = a*cos[i] - b*sin[i];  x[i + half] = b*cos[i] + a*sin[i]
    // each product and sum rounded on its own (no fused multiply-add), in every ISA.
    void (*rope_neox)(float* x, int64_t n, int64_t stride, int64_t half, const float* cos,
                      const float* sin) = nullptr;

    // Gated-DeltaNet recurrence, optionally writing every token's state (snapshots).
    //   state [Hv, Dk, Dv] fp32, k-major (S[j][d][e]); q, k: [T, Hk, Dk] (l2-normalised, q
    //   already scaled by Dk^-0.5); v, out: [T, Hv, Dv]; g (log-decay), beta: [T, Hv].
    //   Value head j uses key head (tiled_heads ? j % Hk : j / (Hv / Hk)).
    //   Token t reads state (t == 0 ? state_in : state_out + (t-1)*out_stride) and writes
    //   state_out + t*out_stride; out_stride == 0 runs in place (state_in may equal state_out).
    //   Per head and value column e:  S[:,e] *= exp(g);  mem = sum_d S[d,e] k[d];
    //   delta = (v[e] - mem) * beta;  S[:,e] += k * delta;  out[e] = sum_d S[d,e] q[d].
    // Sums run over d in order with fused multiply-adds, so every ISA gives the scalar
    // reference's bits, and T tokens at once equal T calls of one token.
    // This entry runs value heads [j0, j1) (all of them: 0, Hv), so callers can thread over heads.
    void (*gdn_recurrence_heads)(const float* state_in, float* state_out, int64_t out_stride,
                                 const float* q, const float* k, const float* v, const float* g,
                                 const float* beta, int64_t T, int Hk, int Hv, int Dk, int Dv,
                                 bool tiled_heads, float* out, int j0, int j1) = nullptr;

    // Sums a buffer of n floats with this ISA's widest loads, in the access pattern of a GEMM
    // tile (bandwidth measurement only; summation order unspecified).
    float (*stream_sum)(const float* x, int64_t n) = nullptr;

    // Compute-peak probes (bench's prefill figure against the cores' peak): kPeakProbeChains
    // independent chains of 16 lanes, each updated `reps` times, inputs held in registers, with
    // this ISA's widest int8 dot product / fused multiply-add: the instruction throughput a
    // matmul could reach at best.
    //   int8: acc[i, l] += sum_{j<4} a[i, 4l + j] * b[4l + j]   a: [chains, 64] u8, b: [64] s8,
    //         acc: [chains, 16] s32 (64 multiply-adds per chain and rep). Exact integers: the
    //         caller keeps the sums inside int32, each pair a[2m] b[2m] + a[2m+1] b[2m+1]
    //         inside int16 (AVX2's pmaddubsw saturates there) and a below 128 (ARM's SDOT reads
    //         it as signed).
    //   f32:  acc[i, l] = fma(a[i, l], b[l], acc[i, l])          a, acc: [chains, 16], b: [16]
    //         (16 per chain and rep), each lane's chain in rep order.
    // Both give the scalar reference's bits in every ISA.
    void (*int8_peak_probe)(const uint8_t* a, const int8_t* b, int64_t reps, int32_t* acc) = nullptr;
    void (*fma_peak_probe)(const float* a, const float* b, int64_t reps, float* acc) = nullptr;
    //   bf16: acc[i, l] = the bf16 dot step (kernels/bf16_dot.h) of acc[i, l] with
    //         a[i, 2l + 1] b[2l + 1], then a[i, 2l] b[2l]   a: [chains, 32], b: [32] bf16 bits,
    //         acc: [chains, 16] (32 per chain and rep). The reference where the table has no
    //         bf16 dot product (bf16_dot_fast false).
    void (*bf16_peak_probe)(const uint16_t* a, const uint16_t* b, int64_t reps, float* acc) = nullptr;
};

// Chains per peak probe: enough independent accumulators to cover the dot product's and the
// FMA's latency on the cores we know (latency 4-5 cycles, up to 2 per cycle).
inline constexpr int kPeakProbeChains = 10;

// The table in use, chosen once: NEXTN_ISA=scalar|avx2|avxvnni|avx512 forces one (Error if unknown or
// not supported by this CPU), else the best this CPU supports.
const KernelTable& kernels();
// The scalar reference table, always available.
const KernelTable& reference_kernels();
// How `k`'s decode-width row-group matmuls prefetch, for a report: its narrow_fetch, or with a
// timed alternative "cursor or group streams, timed against each other while decoding"; empty
// where the table has no such choice.
std::string narrow_fetch_summary(const KernelTable& k);
// Names of the tables this CPU can run, best last (always starts with "scalar").
std::vector<std::string> available_isas();
// The table with this name; Error if unknown or unsupported by this CPU.
const KernelTable& kernels_for(const std::string& isa);

// y[n, w.rows] = x[n, w.cols] · Wᵀ, threaded over output rows.
void matmul(const KernelTable& k, const WeightMatrix& w, const float* x, int64_t n, float* y,
            ThreadPool& pool);
inline void matmul(const WeightMatrix& w, const float* x, int64_t n, float* y, ThreadPool& pool) {
    matmul(kernels(), w, x, n, y, pool);
}

// Several products of one input: y_i[n, w_i.rows] = x[n, cols] · W_iᵀ for every i (all W_i
// with the same cols). One activation quantization for the int8 types and one pool dispatch
// over all the matrices' rows; every output has matmul()'s bits.
struct MatmulOutput {
    const WeightMatrix* w;
    float* y;  // [n, w->rows]
};
void matmul_shared_input(const KernelTable& k, std::initializer_list<MatmulOutput> outputs,
                         const float* x, int64_t n, ThreadPool& pool);

// Several products, each with its own input, in one pool dispatch: y_i[n_i, w_i.rows] =
// x_i[n_i, w_i.cols] · W_iᵀ for every job (the routed experts of a MoE layer, each over the
// tokens sent to it, gathered into one job instead of one dispatch per matrix). Jobs with the
// same x, n and cols share one activation quantization; jobs with n == 0 are skipped. Every
// output has matmul()'s bits.
struct MatmulJob {
    const WeightMatrix* w;
    const float* x;  // [n, w->cols]
    int64_t n;
    float* y;        // [n, w->rows]
};
void matmul_batch(const KernelTable& k, std::span<const MatmulJob> jobs, ThreadPool& pool);

// Below this much work (f32-equivalent weight values, or state values for the GDN recurrence)
// waking the other threads costs more than it saves; the result is the same bits either way.
inline constexpr int64_t kMinParallelWork = 16 * 1024;

// Per-head work on the recurrence's output, fn(ctx, j0, j1) for value heads [j0, j1): a pointer
// pair rather than a std::function, whose captures would be allocated on every layer of every
// decode step.
struct GdnHeadsDone {
    void (*fn)(void* ctx, int j0, int j1) = nullptr;
    void* ctx = nullptr;
};
template <class Fn>
GdnHeadsDone gdn_heads_done(Fn& fn) {
    return {[](void* ctx, int j0, int j1) { (*static_cast<Fn*>(ctx))(j0, j1); }, &fn};
}

// gdn_recurrence split over value heads on the pool (bitwise equal to the single-thread call).
// `heads_done` (optional) runs on the same thread right after value heads [j0, j1) finish, for
// per-head work on their output inside the same pool job.
void gdn_recurrence(const KernelTable& kt, const float* state_in, float* state_out,
                    int64_t out_stride, const float* q, const float* k, const float* v,
                    const float* g, const float* beta, int64_t T, int Hk, int Hv, int Dk, int Dv,
                    bool tiled_heads, float* out, ThreadPool& pool, GdnHeadsDone heads_done = {});

}  // namespace nextn
