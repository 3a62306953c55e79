// Gated full attention (architecture spec §6): per-head [query | gate] q_proj rows, q/k (1+w)
// RMSNorm before partial NeoX RoPE, GQA over a position-indexed KV cache, sigmoid output gate.
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "model/ops.h"
#include "model/qwen35.h"

namespace nextn {

void Qwen35Model::attention(const LayerWeights& lw, AttentionCache& cache, ForwardScratch& s,
                            const float* xn, int64_t T, int64_t pos0, float* out) const {
    const ModelConfig& c = config_;
    const KernelTable& kt = kernels_;
    const int64_t Nq = c.n_q_heads, Nkv = c.n_kv_heads, D = c.head_dim;
    const int64_t group = Nq / Nkv, half_rot = c.rotary_dims / 2;
    if (pos0 + T > cache.capacity)
        fail("attention: positions up to ", pos0 + T, " exceed the cache of ", cache.capacity);
    float* qg = ForwardScratch::take(s.qg, size_t(T * Nq * 2 * D));  // [T, Nq, 2D] query | gate
    float* k = ForwardScratch::take(s.attn_k, size_t(T * Nkv * D));  // [T, Nkv, D]
    float* v = ForwardScratch::take(s.attn_v, size_t(T * Nkv * D));  // [T, Nkv, D]
    float* rope_cos = ForwardScratch::take(s.rope_cos, size_t(half_rot));
    float* rope_sin = ForwardScratch::take(s.rope_sin, size_t(half_rot));
    matmul(kt, lw.q_proj, xn, T, qg, pool_);
    matmul(kt, lw.k_proj, xn, T, k, pool_);
    matmul(kt, lw.v_proj, xn, T, v, pool_);
    kt.rmsnorm(k, lw.k_norm.data(), T * Nkv, D, c.rms_eps, k);

    for (int64_t t = 0; t < T; ++t) {
        const int64_t pos = pos0 + t;
        ops::rope_angles(rope_inv_freq_, pos, rope_cos, rope_sin);
        for (int64_t h = 0; h < Nq; ++h) {
            float* q = qg + (t * Nq + h) * 2 * D;
            kt.rmsnorm(q, lw.q_norm.data(), 1, D, c.rms_eps, q);
            ops::rope_neox(q, half_rot, rope_cos, rope_sin);
            kt.sigmoid(q + D, q + D, D);  // the output gate, used after attention
        }
        for (int64_t h = 0; h < Nkv; ++h) ops::rope_neox(k + (t * Nkv + h) * D, half_rot, rope_cos, rope_sin);
        std::memcpy(cache.k.data() + pos * Nkv * D, k + t * Nkv * D, size_t(Nkv * D) * sizeof(float));
        std::memcpy(cache.v.data() + pos * Nkv * D, v + t * Nkv * D, size_t(Nkv * D) * sizeof(float));
    }

    // Each (token, head) pair attends to positions [0, pos] with a running (online) softmax, so
    // it needs no score buffer; the order of the sum depends only on the pair itself.
    float* attn = ForwardScratch::take(s.attn, size_t(T * Nq * D));  // [T, Nq, D]
    const float scale = 1.0f / std::sqrt(float(D));
    pool_.run(T * Nq, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) {
            const int64_t t = i / Nq, h = i % Nq, kvh = h / group;
            const int64_t n_ctx = pos0 + t + 1;
            const float* q = qg + (t * Nq + h) * 2 * D;
            float* o = attn + (t * Nq + h) * D;
            for (int64_t d = 0; d < D; ++d) o[d] = 0.0f;
            float max_score = -INFINITY, sum = 0.0f;
            for (int64_t p = 0; p < n_ctx; ++p) {
                const float* kp = cache.k.data() + (p * Nkv + kvh) * D;
                float dot = 0.0f;
                for (int64_t d = 0; d < D; ++d) dot += q[d] * kp[d];
                const float score = dot * scale;
                if (score > max_score) {  // rescale what was accumulated under the old maximum
                    const float r = std::exp(max_score - score);
                    sum *= r;
                    for (int64_t d = 0; d < D; ++d) o[d] *= r;
                    max_score = score;
                }
                const float w = std::exp(score - max_score);
                sum += w;
                const float* vp = cache.v.data() + (p * Nkv + kvh) * D;
                for (int64_t d = 0; d < D; ++d) o[d] += w * vp[d];
            }
            const float* gate = q + D;  // already sigmoid(gate)
            const float inv = 1.0f / sum;
            for (int64_t d = 0; d < D; ++d) o[d] *= inv * gate[d];
        }
    });
    matmul(kt, lw.o_proj, attn, T, out, pool_);
}

}  // namespace nextn
