// Gated-DeltaNet recurrence on NEON: ref::gdn_recurrence_heads' operations (kernels.h), four
// value columns e at a time. Each element still takes its fused multiply-adds over d in order,
// so every bit matches the reference; Dv % 4 tail columns run the reference's scalar steps.
#include <arm_neon.h>

#include <cmath>

#include "kernels/arm/arm_kernels.h"
#include "kernels/ref/ref.h"

namespace nextn::arm::neon {

void gdn_recurrence_heads(const float* state_in, float* state_out, int64_t out_stride,
                          const float* q, const float* k, const float* v, const float* g,
                          const float* beta, int64_t T, int Hk, int Hv, int Dk, int Dv,
                          bool tiled_heads, float* out, int j0, int j1) {
    const int64_t head_size = int64_t(Dk) * Dv;
    const int whole = Dv / 4 * 4;
    struct Acc;
    float* acc = ref::thread_buffer<float, Acc>(size_t(Dv));  // [Dv] mem, then delta
    for (int64_t t = 0; t < T; ++t) {
        const float* src = t == 0 ? state_in : state_out + (t - 1) * out_stride;
        float* dst = state_out + t * out_stride;
        for (int j = j0; j < j1; ++j) {
            const ref::GdnToken tk =
                ref::gdn_token(q, k, v, g, beta, out, t, j, Hk, Hv, Dk, Dv, tiled_heads);
            const float *qj = tk.q, *kj = tk.k, *vj = tk.v;
            const float decay = tk.decay, b = tk.beta;
            const float* S0 = src + j * head_size;  // [Dk, Dv]
            float* S1 = dst + j * head_size;        // [Dk, Dv]
            float* oj = tk.out;                     // [Dv]
            // mem[e] = sum_d decayed S[d, e] * k[d]
            for (int e = 0; e < Dv; ++e) acc[e] = 0.0f;
            for (int d = 0; d < Dk; ++d) {
                const float32x4_t kd = vdupq_n_f32(kj[d]);
                const float* s0 = S0 + d * Dv;
                float* s1 = S1 + d * Dv;
                for (int e = 0; e < whole; e += 4) {
                    const float32x4_t s = vmulq_n_f32(vld1q_f32(s0 + e), decay);
                    vst1q_f32(s1 + e, s);
                    vst1q_f32(acc + e, vfmaq_f32(vld1q_f32(acc + e), s, kd));
                }
                for (int e = whole; e < Dv; ++e) {
                    const float s = s0[e] * decay;
                    s1[e] = s;
                    acc[e] = std::fma(s, kj[d], acc[e]);
                }
            }
            for (int e = 0; e < Dv; ++e) acc[e] = (vj[e] - acc[e]) * b;  // delta
            // S[d, e] += k[d] * delta[e];  out[e] = sum_d S[d, e] * q[d]
            for (int e = 0; e < Dv; ++e) oj[e] = 0.0f;
            for (int d = 0; d < Dk; ++d) {
                const float32x4_t kd = vdupq_n_f32(kj[d]), qd = vdupq_n_f32(qj[d]);
                float* s1 = S1 + d * Dv;
                for (int e = 0; e < whole; e += 4) {
                    const float32x4_t s = vfmaq_f32(vld1q_f32(s1 + e), kd, vld1q_f32(acc + e));
                    vst1q_f32(s1 + e, s);
                    vst1q_f32(oj + e, vfmaq_f32(vld1q_f32(oj + e), s, qd));
                }
                for (int e = whole; e < Dv; ++e) {
                    const float s = std::fma(kj[d], acc[e], s1[e]);
                    s1[e] = s;
                    oj[e] = std::fma(s, qj[d], oj[e]);
                }
            }
        }
    }
}

}  // namespace nextn::arm::neon
