// Gated full attention (architecture spec §6): per-head [query | gate] q_proj rows, q/k (1+w)
// RMSNorm before partial NeoX RoPE, GQA over a position-indexed KV cache, sigmoid output gate.
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "kernels/kernels.h"
#include "model/ops.h"
#include "model/qwen35.h"

namespace nextn {

void Qwen35Model::attention(const LayerWeights& lw, AttentionCache& cache, const float* xn,
                            int64_t T, int64_t pos0, float* out) const {
    const ModelConfig& c = config_;
    const int64_t Nq = c.n_q_heads, Nkv = c.n_kv_heads, D = c.head_dim;
    const int64_t group = Nq / Nkv;
    if (pos0 + T > cache.capacity)
        fail("attention: positions up to ", pos0 + T, " exceed the cache of ", cache.capacity);
    std::vector<float> qg(size_t(T * Nq * 2 * D));  // [T, Nq, 2D]: query | gate per head
    std::vector<float> k(size_t(T * Nkv * D));      // [T, Nkv, D]
    std::vector<float> v(size_t(T * Nkv * D));      // [T, Nkv, D]
    matmul(lw.q_proj, xn, T, qg.data(), pool_);
    matmul(lw.k_proj, xn, T, k.data(), pool_);
    matmul(lw.v_proj, xn, T, v.data(), pool_);

    for (int64_t t = 0; t < T; ++t) {
        const int64_t pos = pos0 + t;
        for (int64_t h = 0; h < Nq; ++h) {
            float* q = qg.data() + (t * Nq + h) * 2 * D;
            ops::rmsnorm(q, lw.q_norm.data(), D, c.rms_eps, q);
            ops::rope_neox(q, c.rotary_dims, pos, c.rope_theta);
        }
        for (int64_t h = 0; h < Nkv; ++h) {
            float* kh = k.data() + (t * Nkv + h) * D;
            ops::rmsnorm(kh, lw.k_norm.data(), D, c.rms_eps, kh);
            ops::rope_neox(kh, c.rotary_dims, pos, c.rope_theta);
        }
        std::memcpy(cache.k.data() + pos * Nkv * D, k.data() + t * Nkv * D,
                    size_t(Nkv * D) * sizeof(float));
        std::memcpy(cache.v.data() + pos * Nkv * D, v.data() + t * Nkv * D,
                    size_t(Nkv * D) * sizeof(float));
    }

    // Each (token, head) pair attends to positions [0, pos]: independent work items.
    std::vector<float> attn(size_t(T * Nq * D));  // [T, Nq, D]
    const float scale = 1.0f / std::sqrt(float(D));
    pool_.run(T * Nq, [&](int64_t i0, int64_t i1) {
        std::vector<float> scores(size_t(pos0 + T));
        for (int64_t i = i0; i < i1; ++i) {
            const int64_t t = i / Nq, h = i % Nq, kvh = h / group;
            const int64_t n_ctx = pos0 + t + 1;
            const float* q = qg.data() + (t * Nq + h) * 2 * D;
            for (int64_t p = 0; p < n_ctx; ++p) {
                const float* kp = cache.k.data() + (p * Nkv + kvh) * D;
                float dot = 0.0f;
                for (int64_t d = 0; d < D; ++d) dot += q[d] * kp[d];
                scores[size_t(p)] = dot * scale;
            }
            ops::softmax(scores.data(), n_ctx);
            float* o = attn.data() + (t * Nq + h) * D;
            for (int64_t d = 0; d < D; ++d) o[d] = 0.0f;
            for (int64_t p = 0; p < n_ctx; ++p) {
                const float* vp = cache.v.data() + (p * Nkv + kvh) * D;
                const float w = scores[size_t(p)];
                for (int64_t d = 0; d < D; ++d) o[d] += w * vp[d];
            }
            const float* gate = q + D;
            for (int64_t d = 0; d < D; ++d) o[d] *= ops::sigmoid(gate[d]);
        }
    });
    matmul(lw.o_proj, attn.data(), T, out, pool_);
}

}  // namespace nextn
