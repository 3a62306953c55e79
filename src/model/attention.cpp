// Gated full attention (architecture spec §6): per-head [query | gate] q_proj rows, q/k (1+w)
// RMSNorm before partial NeoX RoPE, GQA over a position-indexed KV cache, sigmoid output gate.
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "kernels/key_tiles.h"
#include "kernels/weight.h"
#include "model/ops.h"
#include "model/qwen35.h"

namespace nextn {

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
            // Each key and value rounded to the cache's type once, here (f16: to nearest even;
            // q8_0: ggml's block rounding): decode and verify then read the same bits.
            store_key_in_tile(cache.wtype(), cache.key_tile(h, pos / kKeyTile), pos % kKeyTile,
                              k + (t * Nkv + h) * D, D);
            encode_row_f32(v + (t * Nkv + h) * D, D, cache.wtype(), cache.v_at(h, pos));
        }
    }

    // Work item (block of up to kTokensPerPass tokens, kv head): the block's tokens' `group`
    // query heads each score positions [0, their own pos] with one key_scores call over the key
    // tiles (each key read once for the whole block), softmax per head, then sum the V rows: the
    // positions all of the block's tokens see in one pass for every row, then each token's own
    // last few, continuing the same chains. Batching the block's tokens is what keeps a verify
    // of k+1 tokens (and a prefill) from reading the cache k+1 times: at 8192 positions a 0.8B
    // width-5 verify cost 2.42 decode steps that way. Every score and output still depends only
    // on its own token and head (a score's reduction order is independent of the rows and
    // positions beside it, and a weighted sum split at any position gives the bits of one), so a
    // token gets the same bits in a decode step and inside a verify or prefill batch.
    constexpr int64_t kTokensPerPass = 8;
    const int64_t blocks = (T + kTokensPerPass - 1) / kTokensPerPass;
    const int64_t max_rows = kTokensPerPass * group;  // query rows of a block
    float* attn = ForwardScratch::take(s.attn, size_t(T * Nq * D));  // [T, Nq, D]
    const float scale = 1.0f / std::sqrt(float(D));
    // Per thread: queries [rows, D], their outputs [rows, D] and scores [rows, n_ctx <= capacity].
    // Sized for the whole cache the first time, not for this step's context: growing it with the
    // context would reallocate inside the decode loop. Zero pages: only the part the context
    // reaches is backed.
    const int64_t per_thread = 2 * max_rows * D + max_rows * cache.capacity;
    const size_t scratch_floats = size_t(pool_.size() * per_thread);
    if (s.attn_scores.size() < scratch_floats) s.attn_scores = ZeroPagesBuffer(scratch_floats);
    float* thread_scratch = s.attn_scores.data();
    pool_.run_indexed(blocks * Nkv, [&](int thread, int64_t i0, int64_t i1) {
        float* qs = thread_scratch + thread * per_thread;  // [rows, D] row tt * group + g
        float* os = qs + max_rows * D;                      // [rows, D]
        float* scores = os + max_rows * D;                  // [rows, n_last]
        for (int64_t i = i0; i < i1; ++i) {
            const int64_t t0 = (i / Nkv) * kTokensPerPass, kvh = i % Nkv;
            const int64_t tokens = std::min(kTokensPerPass, T - t0), rows = tokens * group;
            const int64_t n_first = pos0 + t0 + 1;       // positions every token of the block sees
            const int64_t n_last = pos0 + t0 + tokens;   // positions its last token sees
            for (int64_t tt = 0; tt < tokens; ++tt)
                for (int64_t g = 0; g < group; ++g) {
                    const float* q = qg + ((t0 + tt) * Nq + kvh * group + g) * 2 * D;
                    float* qrow = qs + (tt * group + g) * D;
                    for (int64_t d = 0; d < D; ++d) qrow[d] = q[d] * scale;
                }
            kt.key_scores(cache.wtype(), cache.key_tile(kvh, 0), n_last, qs, rows, D, scores,
                          n_last);
            // Token tt's rows: scores of positions [0, n_first + tt); the rest are positions after
            // it, unused.
            for (int64_t tt = 0; tt < tokens; ++tt)
                for (int64_t g = 0; g < group; ++g) kt.softmax(scores + (tt * group + g) * n_last, 1, n_first + tt);
            const uint8_t* values = cache.v_at(kvh, 0);
            auto weighted = [&](int64_t row0, int64_t n_rows, int64_t p0, int64_t n, bool accumulate) {
                const float* p = scores + row0 * n_last + p0;
                float* o = os + row0 * D;
                const uint8_t* v = values + size_t(p0) * cache.row_bytes();
                switch (cache.type) {
                    case KvCacheType::F32:
                        kt.weighted_rows(p, n_last, n_rows, reinterpret_cast<const float*>(v), D, n,
                                         D, o, accumulate);
                        break;
                    case KvCacheType::F16:
                        kt.weighted_rows_f16(p, n_last, n_rows,
                                             reinterpret_cast<const uint16_t*>(v), D, n, D, o,
                                             accumulate);
                        break;
                    case KvCacheType::Q8_0:
                        kt.weighted_rows_q8_0(p, n_last, n_rows, v, int64_t(cache.row_bytes()), n,
                                              D, o, accumulate);
                        break;
                }
            };
            weighted(0, rows, 0, n_first, false);
            for (int64_t tt = 1; tt < tokens; ++tt) weighted(tt * group, group, n_first, tt, true);
            for (int64_t tt = 0; tt < tokens; ++tt)
                for (int64_t g = 0; g < group; ++g) {
                    const int64_t head = (t0 + tt) * Nq + kvh * group + g;
                    const float* __restrict o = os + (tt * group + g) * D;
                    const float* gate = qg + head * 2 * D + D;  // sigmoid(gate)
                    float* __restrict a = attn + head * D;
                    for (int64_t d = 0; d < D; ++d) a[d] = o[d] * gate[d];
                }
        }
    });
    matmul(kt, lw.o_proj, attn, T, out, pool_);
}

}  // namespace nextn
