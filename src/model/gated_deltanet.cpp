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
    const KernelTable& kt = kernels_;
    const int Hk = c.gdn_k_heads, Hv = c.gdn_v_heads, Dk = c.gdn_k_dim, Dv = c.gdn_v_dim;
    const int64_t C = c.gdn_conv_dim(), K = c.conv_kernel, key_dim = c.gdn_key_dim();
    const int64_t vdim = c.gdn_value_dim();

    // [K-1 + T, C]: the conv's input window, committed history first.
    float* window = ForwardScratch::take(s.window, size_t((K - 1 + T) * C));
    std::memcpy(window, rec.conv.data(), size_t((K - 1) * C) * sizeof(float));
    float* qkv = window + (K - 1) * C;                           // [T, C] raw projections
    float* z = ForwardScratch::take(s.z, size_t(T * vdim));      // [T, Hv, Dv]
    float* b = ForwardScratch::take(s.b, size_t(T * Hv));        // [T, Hv]
    float* a = ForwardScratch::take(s.a, size_t(T * Hv));        // [T, Hv]
    matmul_shared_input(kt, {{&lw.in_qkv, qkv}, {&lw.in_z, z}, {&lw.in_b, b}, {&lw.in_a, a}}, xn, T,
                        pool_);

    // Causal depthwise conv + SiLU; tap K-1 multiplies the current token.
    float* conv_out = ForwardScratch::take(s.conv_out, size_t(T * C));  // [T, C] = q | k | v
    kt.causal_conv(window, lw.conv.data(), T, C, int(K), conv_out);
    kt.silu(conv_out, conv_out, T * C);
    // Split and normalise: q, k [T, Hk, Dk]; v [T, Hv, Dv]. A run left open writes the
    // recurrence inputs (q, k, v, g, beta) straight into the buffers commit() re-runs from
    // (cache/sequence_state.h); T <= max_width, their size.
    auto input = [&](std::vector<float>& scratch, std::vector<float>& pending, int64_t per_position) {
        return keep_open ? pending.data() : ForwardScratch::take(scratch, size_t(T * per_position));
    };
    float* q = input(s.q, rec.pending_q, key_dim);
    float* k = input(s.k, rec.pending_k, key_dim);
    float* v = input(s.v, rec.pending_v, vdim);
    for (int64_t t = 0; t < T; ++t) {
        const float* row = conv_out + t * C;
        std::memcpy(q + t * key_dim, row, size_t(key_dim) * sizeof(float));
        std::memcpy(k + t * key_dim, row + key_dim, size_t(key_dim) * sizeof(float));
        std::memcpy(v + t * vdim, row + 2 * key_dim, size_t(vdim) * sizeof(float));
    }
    kt.l2norm(q, T * Hk, Dk, 1e-6f, q);
    kt.l2norm(k, T * Hk, Dk, 1e-6f, k);
    const float q_scale = 1.0f / std::sqrt(float(Dk));
    for (int64_t i = 0; i < T * key_dim; ++i) q[i] *= q_scale;
    float* beta = input(s.beta, rec.pending_beta, Hv);  // [T, Hv]
    float* g = input(s.g, rec.pending_g, Hv);           // [T, Hv] log-decay
    kt.sigmoid(b, beta, T * Hv);
    for (int64_t t = 0; t < T; ++t)
        for (int j = 0; j < Hv; ++j)
            g[t * Hv + j] = lw.neg_exp_a[size_t(j)] * ops::softplus(a[t * Hv + j] + lw.dt_bias[size_t(j)]);

    float* o = ForwardScratch::take(s.o, size_t(T * vdim));  // [T, Hv, Dv]
    float* state_in = rec.state();
    if (keep_open) {
        // Positions stay uncommitted: the run ends in the spare slot; the raw qkv rows are kept
        // for commit()'s conv state (the recurrence inputs already sit in rec.pending_*).
        gdn_recurrence(kt, state_in, rec.spare(), 0, q, k, v, g, beta, T, Hk, Hv, Dk, Dv,
                       c.gdn_tiled_heads, o, pool_);
        std::memcpy(rec.pending_qkv.data(), qkv, size_t(T * C) * sizeof(float));
    } else {
        gdn_recurrence(kt, state_in, state_in, 0, q, k, v, g, beta, T, Hk, Hv, Dk, Dv,
                       c.gdn_tiled_heads, o, pool_);
        std::memcpy(rec.conv.data(), window + T * C, size_t((K - 1) * C) * sizeof(float));
    }
    // Gated RMSNorm per value head: rmsnorm(o) * w * silu(z).
    kt.rmsnorm(o, lw.gdn_norm.data(), T * Hv, Dv, c.rms_eps, o);
    kt.swiglu(z, o, o, T * vdim);
    matmul(kt, lw.out_proj, o, T, out, pool_);
}

}  // namespace nextn
