// Gated DeltaNet linear attention (architecture spec §5): causal depthwise conv over raw qkv,
// l2-normalised q/k, delta-rule recurrence with fp32 state, gated RMSNorm, out_proj.
#include <cmath>
#include <cstring>

#include "kernels/kernels.h"
#include "model/ops.h"
#include "model/qwen35.h"

namespace nextn {

namespace {

// The recurrence for T tokens. Token t reads the state from (t == 0 ? state_in : state_out +
// (t-1)*out_stride) and writes it to state_out + t*out_stride; out_stride 0 runs in place.
// Each value column e of each head is independent, which is what makes in-place safe.
// state: [Hv, Dk, Dv]; q, k: [T, Hk, Dk]; v, out: [T, Hv, Dv]; g, beta: [T, Hv].
void gdn_recurrence_scalar(const float* state_in, float* state_out, int64_t out_stride,
                           const float* q, const float* k, const float* v, const float* g,
                           const float* beta, int64_t T, int Hk, int Hv, int Dk, int Dv,
                           bool tiled_heads, float* out) {
    const int ratio = Hv / Hk;
    for (int64_t t = 0; t < T; ++t) {
        const float* src = t == 0 ? state_in : state_out + (t - 1) * out_stride;
        float* dst = state_out + t * out_stride;
        for (int j = 0; j < Hv; ++j) {
            const int kh = tiled_heads ? j % Hk : j / ratio;
            const float* qj = q + (t * Hk + kh) * Dk;
            const float* kj = k + (t * Hk + kh) * Dk;
            const float* vj = v + (t * Hv + j) * Dv;
            const float decay = std::exp(g[t * Hv + j]);
            const float b = beta[t * Hv + j];
            const float* S0 = src + int64_t(j) * Dk * Dv;
            float* S1 = dst + int64_t(j) * Dk * Dv;
            float* oj = out + (t * Hv + j) * Dv;
            for (int e = 0; e < Dv; ++e) {
                float mem = 0.0f;
                for (int d = 0; d < Dk; ++d) mem += S0[d * Dv + e] * decay * kj[d];
                const float delta = (vj[e] - mem) * b;
                float o = 0.0f;
                for (int d = 0; d < Dk; ++d) {
                    const float s = S0[d * Dv + e] * decay + kj[d] * delta;
                    S1[d * Dv + e] = s;
                    o += s * qj[d];
                }
                oj[e] = o;
            }
        }
    }
}

}  // namespace

void Qwen35Model::gated_deltanet(const LayerWeights& lw, RecurrentState& rec, const float* xn,
                                 int64_t T, bool snapshots, float* out) const {
    const ModelConfig& c = config_;
    const int Hk = c.gdn_k_heads, Hv = c.gdn_v_heads, Dk = c.gdn_k_dim, Dv = c.gdn_v_dim;
    const int64_t C = c.gdn_conv_dim(), K = c.conv_kernel, key_dim = c.gdn_key_dim();
    const int64_t vdim = c.gdn_value_dim();

    // [K-1 + T, C]: the conv's input window, committed history first.
    std::vector<float> window(size_t((K - 1 + T) * C));
    std::memcpy(window.data(), rec.conv.data(), size_t((K - 1) * C) * sizeof(float));
    float* qkv = window.data() + (K - 1) * C;  // [T, C] raw projections
    std::vector<float> z(size_t(T * vdim)), b(size_t(T * Hv)), a(size_t(T * Hv));
    matmul(lw.in_qkv, xn, T, qkv, pool_);
    matmul(lw.in_z, xn, T, z.data(), pool_);
    matmul(lw.in_b, xn, T, b.data(), pool_);
    matmul(lw.in_a, xn, T, a.data(), pool_);

    // Causal depthwise conv + SiLU; tap K-1 multiplies the current token.
    std::vector<float> conv_out(size_t(T * C));  // [T, C] = q | k | v
    for (int64_t t = 0; t < T; ++t) {
        for (int64_t ch = 0; ch < C; ++ch) {
            float acc = 0.0f;
            for (int64_t j = 0; j < K; ++j) acc += lw.conv[size_t(ch * K + j)] * window[size_t((t + j) * C + ch)];
            conv_out[size_t(t * C + ch)] = ops::silu(acc);
        }
    }
    // Split, normalise: q, k [T, Hk, Dk]; v [T, Hv, Dv].
    std::vector<float> q(size_t(T * key_dim)), k(size_t(T * key_dim)), v(size_t(T * vdim));
    std::vector<float> g(size_t(T * Hv)), beta(size_t(T * Hv));
    const float q_scale = 1.0f / std::sqrt(float(Dk));
    for (int64_t t = 0; t < T; ++t) {
        const float* row = conv_out.data() + t * C;
        std::memcpy(q.data() + t * key_dim, row, size_t(key_dim) * sizeof(float));
        std::memcpy(k.data() + t * key_dim, row + key_dim, size_t(key_dim) * sizeof(float));
        std::memcpy(v.data() + t * vdim, row + 2 * key_dim, size_t(vdim) * sizeof(float));
        for (int h = 0; h < Hk; ++h) {
            float* qh = q.data() + t * key_dim + h * Dk;
            float* kh = k.data() + t * key_dim + h * Dk;
            ops::l2norm(qh, Dk, 1e-6f);
            ops::l2norm(kh, Dk, 1e-6f);
            for (int d = 0; d < Dk; ++d) qh[d] *= q_scale;
        }
        for (int j = 0; j < Hv; ++j) {
            beta[size_t(t * Hv + j)] = ops::sigmoid(b[size_t(t * Hv + j)]);
            g[size_t(t * Hv + j)] =
                lw.neg_exp_a[size_t(j)] * ops::softplus(a[size_t(t * Hv + j)] + lw.dt_bias[size_t(j)]);
        }
    }

    std::vector<float> o(size_t(T * vdim));  // [T, Hv, Dv]
    float* state_in = rec.state();
    if (snapshots) {
        // Positions stay uncommitted: states go to slots 1..T, raw qkv is kept for commit().
        gdn_recurrence_scalar(state_in, rec.slot(1), rec.state_size, q.data(), k.data(), v.data(),
                              g.data(), beta.data(), T, Hk, Hv, Dk, Dv, c.gdn_tiled_heads, o.data());
        std::memcpy(rec.pending_qkv.data(), qkv, size_t(T * C) * sizeof(float));
        rec.pending = T;
    } else {
        gdn_recurrence_scalar(state_in, state_in, 0, q.data(), k.data(), v.data(), g.data(),
                              beta.data(), T, Hk, Hv, Dk, Dv, c.gdn_tiled_heads, o.data());
        std::memcpy(rec.conv.data(), window.data() + T * C, size_t((K - 1) * C) * sizeof(float));
    }
    // Gated RMSNorm per value head: rmsnorm(o) * w * silu(z).
    for (int64_t t = 0; t < T; ++t) {
        for (int j = 0; j < Hv; ++j) {
            float* oj = o.data() + t * vdim + int64_t(j) * Dv;
            const float* zj = z.data() + t * vdim + int64_t(j) * Dv;
            ops::rmsnorm(oj, lw.gdn_norm.data(), Dv, c.rms_eps, oj);
            for (int e = 0; e < Dv; ++e) oj[e] *= ops::silu(zj[e]);
        }
    }
    matmul(lw.out_proj, o.data(), T, out, pool_);
}

}  // namespace nextn
