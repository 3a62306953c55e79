// NEON norms, activations, the causal conv, RoPE, softmax, attention's key scores and value
// sums, the Gated DeltaNet recurrence and the read probe: the shared templates (simd/vec_ops.h,
// simd/key_scores.h) over NeonIsa, as the x86 tables run them over theirs.
#include "kernels/arm/arm_kernels.h"
#include "kernels/arm/isa_neon.h"
#include "kernels/simd/key_scores.h"
#include "kernels/simd/vec_ops.h"

namespace nextn::arm::neon {

void rmsnorm(const float* x, const float* w, int64_t n_rows, int64_t d, float eps, float* y) {
    simd::rmsnorm<NeonIsa>(x, w, n_rows, d, eps, y);
}
void l2norm(const float* x, int64_t n_rows, int64_t d, float eps, float* y) {
    simd::l2norm<NeonIsa>(x, n_rows, d, eps, y);
}
void silu(const float* x, float* y, int64_t n) { simd::silu<NeonIsa>(x, y, n); }
void sigmoid(const float* x, float* y, int64_t n) { simd::sigmoid<NeonIsa>(x, y, n); }
void swiglu(const float* gate, const float* up, float* y, int64_t n) {
    simd::swiglu<NeonIsa>(gate, up, y, n);
}
void softmax(float* x, int64_t n_rows, int64_t d) { simd::softmax<NeonIsa>(x, n_rows, d); }
void causal_conv(const float* x, const float* w, int64_t ld, int64_t T, int64_t C, int K,
                 float* out, int64_t ld_out) {
    simd::causal_conv<NeonIsa>(x, w, ld, T, C, K, out, ld_out);
}
void rope_neox(float* x, int64_t n, int64_t stride, int64_t half, const float* cos,
               const float* sin) {
    simd::rope_neox<NeonIsa>(x, n, stride, half, cos, sin);
}
void key_scores(WType type, const uint8_t* tiles, int64_t n, const float* q, int64_t R, int64_t d,
                float* out, int64_t ldo) {
    simd::key_scores_of_type<NeonIsa>(type, tiles, n, q, R, d, out, ldo);
}
void weighted_rows(const float* p, int64_t ldp, int64_t G, const float* v, int64_t ldv, int64_t n,
                   int64_t d, float* out, bool accumulate) {
    simd::weighted_rows<NeonIsa, NeonDecodeF32>(p, ldp, G, reinterpret_cast<const uint8_t*>(v),
                                                ldv * 4, n, d, out, accumulate);
}
void weighted_rows_f16(const float* p, int64_t ldp, int64_t G, const uint16_t* v, int64_t ldv,
                       int64_t n, int64_t d, float* out, bool accumulate) {
    simd::weighted_rows<NeonIsa, NeonDecodeF16>(p, ldp, G, reinterpret_cast<const uint8_t*>(v),
                                                ldv * 2, n, d, out, accumulate);
}
void weighted_rows_q8_0(const float* p, int64_t ldp, int64_t G, const uint8_t* v, int64_t ldv_bytes,
                        int64_t n, int64_t d, float* out, bool accumulate) {
    simd::weighted_rows<NeonIsa, NeonDecodeQ8_0>(p, ldp, G, v, ldv_bytes, n, d, out, accumulate);
}
float stream_sum(const float* x, int64_t n) { return simd::stream_sum<NeonIsa>(x, n); }

void gdn_recurrence_heads(const float* state_in, float* state_out, int64_t out_stride,
                          const float* q, const float* k, const float* v, const float* g,
                          const float* beta, int64_t T, int Hk, int Hv, int Dk, int Dv,
                          bool tiled_heads, float* out, int j0, int j1) {
    simd::gdn_recurrence_heads<NeonIsa>(state_in, state_out, out_stride, q, k, v, g, beta, T, Hk,
                                        Hv, Dk, Dv, tiled_heads, out, j0, j1);
}

}  // namespace nextn::arm::neon
