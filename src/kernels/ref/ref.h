#pragma once
// Scalar reference kernels (plain C++, no intrinsics): the oracle for every ISA variant.
// Signatures are those of KernelTable (kernels/kernels.h).
#include <cstddef>
#include <vector>

#include "kernels/kernels.h"

namespace nextn::ref {

// Gated DeltaNet: the inputs of value head j at token t (kernels.h gdn_recurrence_heads), shared
// by every ISA's recurrence.
struct GdnToken {
    const float *q, *k, *v;
    float* out;
    float decay, beta;
};

inline GdnToken gdn_token(const float* q, const float* k, const float* v, const float* g,
                          const float* beta, float* out, int64_t t, int j, int Hk, int Hv, int Dk,
                          int Dv, bool tiled_heads) {
    const int kh = tiled_heads ? j % Hk : j / (Hv / Hk);
    return {q + (t * Hk + kh) * Dk, k + (t * Hk + kh) * Dk, v + (t * Hv + j) * Dv,
            out + (t * Hv + j) * Dv, __builtin_expf(g[t * Hv + j]), beta[t * Hv + j]};
}

// The 16 lanes of acc summed by the AVX-512 hsum tree (halves of 16, of 8, then [0,1] + [2,3],
// then 0 + 1): the order the int8-dot and bf16-dot references state, so every ISA matches them.
inline float lane_tree_sum(const float* acc) {
    float a[8], b[4];
    for (int i = 0; i < 8; ++i) a[i] = acc[i] + acc[i + 8];
    for (int i = 0; i < 4; ++i) b[i] = a[i] + a[i + 4];
    return (b[0] + b[2]) + (b[1] + b[3]);
}

// This thread's buffer of at least n values of T, kept between calls: where no SIMD table
// exists (a CPU other than x86-64) these kernels are the ones a decode runs, and a decode step
// allocates nothing once warm. `Owner` keeps each kernel's buffer apart; one call holds it at a
// time, and its contents are whatever the last call left.
template <typename T, typename Owner>
T* thread_buffer(size_t n) {
    thread_local std::vector<T> buffer;
    if (buffer.size() < n) buffer.resize(n);
    return buffer.data();
}

void gemm_rows(const WeightMatrix& w, const float* x, int64_t n, float* y, int64_t ldy,
               int64_t r0, int64_t r1);
// BF16D weights with bf16-rounded activations (kernels/bf16_dot.h).
void gemm_bf16_rows(const WeightMatrix& w, const Bf16Columns& x, float* y, int64_t ldy,
                    int64_t r0, int64_t r1);
// One lane's step of the bf16 dot product: acc plus w[1] * x[1], then plus w[0] * x[0]
// (bf16 bits; the rounding of kernels/bf16_dot.h).
float bf16_dot_pair(float acc, const uint16_t* w, const uint16_t* x);

void rmsnorm(const float* x, const float* w, int64_t n_rows, int64_t d, float eps, float* y);
void l2norm(const float* x, int64_t n_rows, int64_t d, float eps, float* y);
void silu(const float* x, float* y, int64_t n);
void sigmoid(const float* x, float* y, int64_t n);
void swiglu(const float* gate, const float* up, float* y, int64_t n);
void softmax(float* x, int64_t n_rows, int64_t d);
void key_scores(WType type, const uint8_t* tiles, int64_t n, const float* q, int64_t R, int64_t d,
                float* out, int64_t ldo);
void weighted_rows(const float* p, int64_t ldp, int64_t G, const float* v, int64_t ldv, int64_t n,
                   int64_t d, float* out, bool accumulate);
void weighted_rows_f16(const float* p, int64_t ldp, int64_t G, const uint16_t* v, int64_t ldv,
                       int64_t n, int64_t d, float* out, bool accumulate);
void weighted_rows_q8_0(const float* p, int64_t ldp, int64_t G, const uint8_t* v, int64_t ldv_bytes,
                        int64_t n, int64_t d, float* out, bool accumulate);
void causal_conv(const float* x, const float* w, int64_t ld, int64_t T, int64_t C, int K,
                 float* out, int64_t ld_out);
void rope_neox(float* x, int64_t n, int64_t stride, int64_t half, const float* cos, const float* sin);

void gdn_recurrence_heads(const float* state_in, float* state_out, int64_t out_stride,
                          const float* q, const float* k, const float* v, const float* g,
                          const float* beta, int64_t T, int Hk, int Hv, int Dk, int Dv,
                          bool tiled_heads, float* out, int j0, int j1);

float stream_sum(const float* x, int64_t n);
void int8_peak_probe(const uint8_t* a, const int8_t* b, int64_t reps, int32_t* acc);
void fma_peak_probe(const float* a, const float* b, int64_t reps, float* acc);
void bf16_peak_probe(const uint16_t* a, const uint16_t* b, int64_t reps, float* acc);

}  // namespace nextn::ref
