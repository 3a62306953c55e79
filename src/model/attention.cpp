// Gated full attention (architecture spec §6): per-head [query | gate] q_proj rows, q/k (1+w)
// RMSNorm before partial NeoX RoPE, GQA over a position-indexed KV cache, sigmoid output gate.
#include <cmath>
#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "kernels/quant.h"
#include "model/ops.h"
#include "model/qwen35.h"

namespace nextn {

namespace {

// One head's keys or values at one position [D] into the cache row at dst, in the cache's type
// (f16: rounded to nearest even, once).
void store_kv_row(const AttentionCache& cache, uint8_t* dst, const float* src) {
    if (cache.type == KvCacheType::F32) {
        std::memcpy(dst, src, cache.row_bytes());
        return;
    }
    uint16_t* h = reinterpret_cast<uint16_t*>(dst);
    for (int64_t i = 0; i < cache.head_dim; ++i) h[i] = f32_to_f16(src[i]);
}

}  // namespace

void Qwen35Model::attention(const LayerWeights& lw, AttentionCache& cache, ForwardScratch& s,
                            const float* xn, int64_t T, int64_t pos0, float* out) const {
    const ModelConfig& c = config_;
    const KernelTable& kt = *kernels_;
    const int64_t Nq = c.n_q_heads, Nkv = c.n_kv_heads, D = c.head_dim;
    const int64_t group = Nq / Nkv, half_rot = c.rotary_dims / 2;
    if (pos0 + T > cache.capacity)
        fail("attention: positions up to ", pos0 + T, " exceed the cache of ", cache.capacity);
    float* qg = ForwardScratch::take(s.qg, size_t(T * Nq * 2 * D));  // [T, Nq, 2D] query | gate
    float* k = ForwardScratch::take(s.attn_k, size_t(T * Nkv * D));  // [T, Nkv, D]
    float* v = ForwardScratch::take(s.attn_v, size_t(T * Nkv * D));  // [T, Nkv, D]
    float* rope_cos = ForwardScratch::take(s.rope_cos, size_t(half_rot));
    float* rope_sin = ForwardScratch::take(s.rope_sin, size_t(half_rot));
    matmul_shared_input(kt, {{&lw.q_proj, qg}, {&lw.k_proj, k}, {&lw.v_proj, v}}, xn, T, pool_);
    kt.rmsnorm(k, lw.k_norm.data(), T * Nkv, D, c.rms_eps, k);

    for (int64_t t = 0; t < T; ++t) {
        const int64_t pos = pos0 + t;
        ops::rope_angles(rope_inv_freq_, pos, rope_cos, rope_sin);
        for (int64_t h = 0; h < Nq; ++h) {
            float* q = qg + (t * Nq + h) * 2 * D;
            kt.rmsnorm(q, lw.q_norm.data(), 1, D, c.rms_eps, q);
            kt.rope_neox(q, 1, 0, half_rot, rope_cos, rope_sin);
            kt.sigmoid(q + D, q + D, D);  // the output gate, used after attention
        }
        kt.rope_neox(k + t * Nkv * D, Nkv, D, half_rot, rope_cos, rope_sin);
        for (int64_t h = 0; h < Nkv; ++h) {
            store_kv_row(cache, cache.k_at(h, pos), k + (t * Nkv + h) * D);
            store_kv_row(cache, cache.v_at(h, pos), v + (t * Nkv + h) * D);
        }
    }

    // Work item (token t, kv head): its `group` query heads score positions [0, pos] with one
    // GEMM over the K cache rows (each K row read once for the whole group), softmax per head,
    // then sum the V rows. Every score and output depends only on its own token and head, so a
    // token gets the same bits in a decode step and inside a verify batch.
    float* attn = ForwardScratch::take(s.attn, size_t(T * Nq * D));  // [T, Nq, D]
    const float scale = 1.0f / std::sqrt(float(D));
    const bool f16_cache = cache.type == KvCacheType::F16;
    // Per thread: queries [group, D] and scores [group, n_ctx <= capacity]. Sized for the whole
    // cache the first time, not for this step's context: growing it with the context would
    // reallocate inside the decode loop. Zero pages: only the part the context reaches is backed.
    const int64_t per_thread = group * D + group * cache.capacity;
    const size_t scratch_floats = size_t(pool_.size() * per_thread);
    if (s.attn_scores.size() < scratch_floats) s.attn_scores = ZeroPagesBuffer(scratch_floats);
    float* thread_scratch = s.attn_scores.data();
    pool_.run_indexed(T * Nkv, [&](int thread, int64_t i0, int64_t i1) {
        float* qs = thread_scratch + thread * per_thread;  // [group, D]
        float* scores = qs + group * D;                     // [group, n_ctx]
        for (int64_t i = i0; i < i1; ++i) {
            const int64_t t = i / Nkv, kvh = i % Nkv, n_ctx = pos0 + t + 1;
            for (int64_t g = 0; g < group; ++g) {
                const float* q = qg + (t * Nq + kvh * group + g) * 2 * D;
                for (int64_t d = 0; d < D; ++d) qs[g * D + d] = q[d] * scale;
            }
            WeightMatrix keys;  // rows = positions of this kv head, contiguous in the cache
            keys.type = f16_cache ? WType::F16 : WType::F32;
            keys.rows = n_ctx;
            keys.cols = D;
            keys.data = cache.k_at(kvh, 0);
            keys.row_bytes = cache.row_bytes();
            kt.gemm_rows(keys, qs, group, scores, n_ctx, 0, n_ctx);
            kt.softmax(scores, group, n_ctx);
            // The group's heads are adjacent in attn ([group, D]): one call for all of them.
            float* og = attn + (t * Nq + kvh * group) * D;  // [group, D]
            const uint8_t* values = cache.v_at(kvh, 0);
            if (f16_cache)
                kt.weighted_rows_f16(scores, n_ctx, group, reinterpret_cast<const uint16_t*>(values),
                                     D, n_ctx, D, og);
            else
                kt.weighted_rows(scores, n_ctx, group, reinterpret_cast<const float*>(values), D,
                                 n_ctx, D, og);
            for (int64_t g = 0; g < group; ++g) {
                float* __restrict o = og + g * D;
                const float* gate = qg + (t * Nq + kvh * group + g) * 2 * D + D;  // sigmoid(gate)
                for (int64_t d = 0; d < D; ++d) o[d] *= gate[d];
            }
        }
    });
    matmul(kt, lw.o_proj, attn, T, out, pool_);
}

}  // namespace nextn
