// Scalar reference Gated-DeltaNet recurrence. The per-element operation sequence (one fused
// multiply-add per term, sums over d in increasing order, the decayed state rounded to f32
// before the update adds to it) is the contract the vector versions reproduce bit for bit.
#include <cmath>

#include "kernels/ref/ref.h"

namespace nextn::ref {

void gdn_recurrence_heads(const float* state_in, float* state_out, int64_t out_stride,
                          const float* q, const float* k, const float* v, const float* g,
                          const float* beta, int64_t T, int Hk, int Hv, int Dk, int Dv,
                          bool tiled_heads, float* out, int j0, int j1) {
    const int64_t head_size = int64_t(Dk) * Dv;
    struct Acc;
    float* acc = thread_buffer<float, Acc>(size_t(Dv));  // [Dv] mem, then delta, then out
    for (int64_t t = 0; t < T; ++t) {
        const float* src = t == 0 ? state_in : state_out + (t - 1) * out_stride;
        float* dst = state_out + t * out_stride;
        for (int j = j0; j < j1; ++j) {
            const GdnToken tk = gdn_token(q, k, v, g, beta, out, t, j, Hk, Hv, Dk, Dv, tiled_heads);
            const float *qj = tk.q, *kj = tk.k, *vj = tk.v;
            const float decay = tk.decay, b = tk.beta;
            const float* S0 = src + j * head_size;  // [Dk, Dv]
            float* S1 = dst + j * head_size;        // [Dk, Dv]
            float* oj = tk.out;                     // [Dv]
            for (int e = 0; e < Dv; ++e) acc[e] = 0.0f;
            for (int d = 0; d < Dk; ++d) {
                for (int e = 0; e < Dv; ++e) {
                    const float s = S0[d * Dv + e] * decay;
                    S1[d * Dv + e] = s;
                    acc[e] = std::fma(s, kj[d], acc[e]);
                }
            }
            for (int e = 0; e < Dv; ++e) acc[e] = (vj[e] - acc[e]) * b;  // delta
            for (int e = 0; e < Dv; ++e) oj[e] = 0.0f;
            for (int d = 0; d < Dk; ++d) {
                for (int e = 0; e < Dv; ++e) {
                    const float s = std::fma(kj[d], acc[e], S1[d * Dv + e]);
                    S1[d * Dv + e] = s;
                    oj[e] = std::fma(s, qj[d], oj[e]);
                }
            }
        }
    }
}

}  // namespace nextn::ref
