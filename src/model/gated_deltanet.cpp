// Gated DeltaNet linear attention (architecture spec §5): causal depthwise conv over raw qkv,
// l2-normalised q/k, delta-rule recurrence with fp32 state, gated RMSNorm, out_proj.
#include <cmath>
#include <cstring>

#include "model/ops.h"
#include "model/qwen35.h"

namespace nextn {

void Qwen35Model::gated_deltanet(const LayerWeights& lw, RecurrentState& rec, ForwardScratch& s,
                                 const float* xn, int64_t T, bool keep_open, float* out) const {
    const ModelConfig& c = config_;
    const KernelTable& kt = *kernels_;
    const int Hk = c.gdn_k_heads, Hv = c.gdn_v_heads, Dk = c.gdn_k_dim, Dv = c.gdn_v_dim;
    const int64_t C = c.gdn_conv_dim(), K = c.conv_kernel, key_dim = c.gdn_key_dim();
    const int64_t vdim = c.gdn_value_dim();

    // [K-1 + T, C]: the conv's input window, committed history first. Up to max_width tokens
    // (decode, verify) it is the layer's own conv_window, the history already in place; a longer
    // run (prefill) uses scratch, the history copied in per head below, on the pool.
    const bool own_window = (K - 1 + T) * C <= int64_t(rec.conv_window.size());
    float* window = own_window ? rec.conv_window.data()
                               : ForwardScratch::take(s.window, size_t((K - 1 + T) * C));
    float* qkv = window + (K - 1) * C;                           // [T, C] raw projections
    float* z = ForwardScratch::take(s.z, size_t(T * vdim));      // [T, Hv, Dv]
    float* b = ForwardScratch::take(s.b, size_t(T * Hv));        // [T, Hv]
    float* a = ForwardScratch::take(s.a, size_t(T * Hv));        // [T, Hv]
    matmul_shared_input(kt, {{&lw.in_qkv, qkv}, {&lw.in_z, z}, {&lw.in_b, b}, {&lw.in_a, a}}, xn, T,
                        pool_);

    // A run left open writes the recurrence inputs (q, k, v, g, beta) straight into the buffers
    // commit() re-runs from (cache/sequence_state.h); T <= max_width, their size.
    auto input = [&](std::vector<float>& scratch, std::vector<float>& pending, int64_t per_position) {
        return keep_open ? pending.data() : ForwardScratch::take(scratch, size_t(T * per_position));
    };
    float* q = input(s.q, rec.pending_q, key_dim);  // [T, Hk, Dk]
    float* k = input(s.k, rec.pending_k, key_dim);  // [T, Hk, Dk]
    float* v = input(s.v, rec.pending_v, vdim);     // [T, Hv, Dv]
    // Causal depthwise conv + SiLU (tap K-1 multiplies the current token) straight into q, k
    // and v, q and k l2-normalised (q also scaled by 1/sqrt(Dk)), one head's channels at a time
    // on the pool: heads are independent, and every value goes through the same operations it
    // would over the whole row. The conv state's bookkeeping for the same channels rides along.
    const float q_scale = 1.0f / std::sqrt(float(Dk));
    auto heads = [&](int64_t h0, int64_t h1) {  // q heads, k heads, v heads: qkv's order
        for (int64_t h = h0; h < h1; ++h) {
            const bool is_q = h < Hk, is_k = !is_q && h < 2 * Hk;
            const int64_t width = is_q || is_k ? Dk : Dv;
            const int64_t c0 = is_q || is_k ? h * Dk : 2 * key_dim + (h - 2 * Hk) * Dv;
            const int64_t ld = is_q || is_k ? key_dim : vdim;
            float* dst = is_q ? q + h * Dk : is_k ? k + (h - Hk) * Dk : v + (h - 2 * Hk) * Dv;
            if (!own_window)  // this head's channels of the committed history
                for (int64_t r = 0; r < K - 1; ++r)
                    std::memcpy(window + r * C + c0, rec.conv_window.data() + r * C + c0,
                                size_t(width) * sizeof(float));
            kt.causal_conv(window + c0, lw.conv.data() + c0, C, T, width, int(K), dst, ld);
            for (int64_t t = 0; t < T; ++t) {
                float* row = dst + t * ld;
                kt.silu(row, row, width);
                if (is_q || is_k) kt.l2norm(row, 1, Dk, 1e-6f, row);
                if (is_q)
                    for (int64_t i = 0; i < Dk; ++i) row[i] *= q_scale;
            }
            // Committed: the conv state becomes the window's last K-1 rows, moved to the front
            // of conv_window (row r from row T + r: a row is read before it is overwritten).
            // Open: the raw qkv rows stay after the history for commit().
            if (!keep_open)
                for (int64_t r = 0; r < K - 1; ++r)
                    std::memmove(rec.conv_window.data() + r * C + c0, window + (T + r) * C + c0,
                                 size_t(width) * sizeof(float));
        }
    };
    if (T * C * K < kMinParallelWork)  // a small model's layer: not worth waking the threads
        heads(0, 2 * Hk + Hv);
    else
        pool_.run(2 * Hk + Hv, heads);
    float* beta = input(s.beta, rec.pending_beta, Hv);  // [T, Hv]
    float* g = input(s.g, rec.pending_g, Hv);           // [T, Hv] log-decay
    kt.sigmoid(b, beta, T * Hv);
    for (int64_t t = 0; t < T; ++t)
        for (int j = 0; j < Hv; ++j)
            g[t * Hv + j] = lw.neg_exp_a[size_t(j)] * ops::softplus(a[t * Hv + j] + lw.dt_bias[size_t(j)]);

    float* o = ForwardScratch::take(s.o, size_t(T * vdim));  // [T, Hv, Dv]
    // Gated RMSNorm per value head, rmsnorm(o) * w * silu(z), as soon as the head's recurrence
    // is done, in the same pool job.
    auto gated_norm = [&](int j0, int j1) {
        for (int64_t t = 0; t < T; ++t) {
            float* oh = o + (t * Hv + j0) * Dv;  // [j1 - j0, Dv]
            kt.rmsnorm(oh, lw.gdn_norm.data(), j1 - j0, Dv, c.rms_eps, oh);
            kt.swiglu(z + (t * Hv + j0) * Dv, oh, oh, (j1 - j0) * Dv);
        }
    };
    // Open: positions stay uncommitted, the run ends in the spare slot (the recurrence inputs
    // and raw qkv rows sit in rec.pending_* for commit()).
    float* state_in = rec.state();
    gdn_recurrence(kt, state_in, keep_open ? rec.spare() : state_in, 0, q, k, v, g, beta, T, Hk,
                   Hv, Dk, Dv, c.gdn_tiled_heads, o, pool_, gdn_heads_done(gated_norm));
    matmul(kt, lw.out_proj, o, T, out, pool_);
}

}  // namespace nextn
