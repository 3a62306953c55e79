#include "model/synthetic.h"

#include "core/memory_info.h"
#include "kernels/int8_dot.h"

#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "core/half.h"
#include "kernels/quant.h"
#include "kernels/quant_k.h"

namespace nextn {

namespace {

// ---- shapes of the released checkpoints ------------------------------------------------------

// What differs between the releases; the rest is common to all (see synthetic_config).
// Source: the checkpoints' config.json as recorded in docs/qwen35-architecture.md §1.3
// (cross-checked with the SLIME launch scripts for 0.8B and 35B-A3B). The dense rows are copied
// in tools/synthetic_gguf/synthetic_gguf.py; tests/cli/synthetic_gguf_shapes.py keeps them equal.
struct ReleaseShape {
    const char* name;
    int layers;
    int64_t hidden;
    int64_t ffn;  // dense SwiGLU width (0 for MoE)
    int q_heads, kv_heads;
    int gdn_k_heads, gdn_v_heads;
    int experts, experts_used;
    int64_t expert_ffn, shared_expert_ffn;
    bool tied;
};

constexpr ReleaseShape kReleases[] = {
    {"qwen3.5-0.8b", 24, 1024, 3584, 8, 2, 16, 16, 0, 0, 0, 0, true},
    {"qwen3.5-2b", 24, 2048, 6144, 8, 2, 16, 16, 0, 0, 0, 0, true},
    {"qwen3.5-9b", 32, 4096, 12288, 16, 4, 16, 32, 0, 0, 0, 0, false},
    {"qwen3.5-35b-a3b", 40, 2048, 0, 16, 2, 16, 32, 256, 8, 512, 512, false},
};

// ---- seeded values ---------------------------------------------------------------------------

uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// One seed per tensor from its canonical name, so values do not depend on the build order.
uint64_t tensor_seed(uint64_t seed, const std::string& name) {
    uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a
    for (unsigned char ch : name) h = (h ^ ch) * 0x100000001B3ull;
    uint64_t s = h ^ seed;
    return splitmix64(s);
}

// Row `row` of a tensor: n values uniform in [lo, hi), from the row's own stream (so any thread
// can produce any row).
void uniform_row(uint64_t seed, int64_t row, float lo, float hi, int64_t n, float* out) {
    uint64_t state = seed ^ (uint64_t(row) * 0xD1B54A32D192ED03ull);
    const float step = (hi - lo) * (1.0f / 16777216.0f);  // 24-bit uniforms
    int64_t i = 0;
    for (; i + 1 < n; i += 2) {
        const uint64_t x = splitmix64(state);
        out[i] = lo + step * float(uint32_t(x) >> 8);
        out[i + 1] = lo + step * float(uint32_t(x >> 32) >> 8);
    }
    if (i < n) out[i] = lo + step * float(uint32_t(splitmix64(state)) >> 8);
}

// Uniform with standard deviation `std`: half-width std * sqrt(3).
void centred_row(uint64_t seed, int64_t row, float std, int64_t n, float* out) {
    const float a = std * 1.7320508f;
    uniform_row(seed, row, -a, a, n, out);
}

// ---- the model builder -----------------------------------------------------------------------

// Walks every tensor of a config once. A dry run only counts (synthetic_size); a real run
// builds. Both go through the same calls, so the estimate is the allocation.
class Builder {
public:
    Builder(const ModelConfig& c, const SyntheticOptions& o, ThreadPool* pool, bool dry_run)
        : c_(c), o_(o), pool_(pool), dry_run_(dry_run) {}

    SyntheticSize size;
    size_t total_bytes = 0;  // for progress; 0 when unknown

    // Uniform with std 1/sqrt(fan_in), fan_in = cols (the input features of y = x·Wᵀ).
    WeightMatrix random(const std::string& name, int64_t rows, int64_t cols,
                        bool routed_expert = false) {
        const uint64_t seed = tensor_seed(o_.seed, name);
        const float std = 1.0f / std::sqrt(float(cols));
        return filled(name, rows, cols, routed_expert, [seed, std, cols](int64_t r, float* out) {
            centred_row(seed, r, std, cols, out);
        });
    }

    // Matrix `name` (its type: o.matrix_type, or q4_k_m_type) from fill's rows.
    WeightMatrix filled(const std::string& name, int64_t rows, int64_t cols, bool routed_expert, const RowFill& fill) {
        const WType type = stored_weight_type(o_.q4_k_m ? q4_k_m_type(c_, o_, name) : o_.matrix_type, cols);
        count(rows * cols, wtype_matrix_bytes(type, rows, cols), routed_expert);
        if (dry_run_) return {};
        WeightMatrix w = build_weight(rows, cols, type, pool_, fill);
        report();
        return w;
    }

    std::vector<float> uniform(const std::string& name, int64_t n, float lo, float hi) {
        count(n, size_t(n) * sizeof(float), false);
        if (dry_run_) return {};
        std::vector<float> v(static_cast<size_t>(n));
        uniform_row(tensor_seed(o_.seed, name), 0, lo, hi, n, v.data());
        report();
        return v;
    }

    // A (1+w) norm multiplier around 1.
    std::vector<float> norm(const std::string& name, int64_t n) {
        return uniform(name, n, 0.9f, 1.1f);
    }

    FfnWeights ffn(const std::string& p) {
        FfnWeights f;
        const int64_t H = c_.hidden_size;
        f.moe = c_.moe;
        if (!c_.moe) {
            f.gate = random(p + "mlp.gate_proj.weight", c_.ffn_size, H);
            f.up = random(p + "mlp.up_proj.weight", c_.ffn_size, H);
            f.down = random(p + "mlp.down_proj.weight", H, c_.ffn_size);
            return f;
        }
        const int64_t I = c_.expert_ffn_size;
        f.router = random(p + "mlp.gate.weight", c_.n_experts, H);
        for (int e = 0; e < c_.n_experts; ++e) {
            const std::string ep = p + "mlp.experts." + std::to_string(e) + ".";
            ExpertWeights ew;
            ew.gate = random(ep + "gate_proj.weight", I, H, true);
            ew.up = random(ep + "up_proj.weight", I, H, true);
            ew.down = random(ep + "down_proj.weight", H, I, true);
            f.experts.push_back(std::move(ew));
        }
        if (c_.shared_expert_ffn_size > 0) {
            const int64_t Is = c_.shared_expert_ffn_size;
            f.shared_gate = random(p + "mlp.shared_expert.gate_proj.weight", Is, H);
            f.shared_up = random(p + "mlp.shared_expert.up_proj.weight", Is, H);
            f.shared_down = random(p + "mlp.shared_expert.down_proj.weight", H, Is);
            f.shared_expert_gate = random(p + "mlp.shared_expert_gate.weight", 1, H);
        }
        return f;
    }

    void attention(const std::string& p, LayerWeights& l) {
        const int64_t H = c_.hidden_size, D = c_.head_dim;
        l.q_proj = random(p + "self_attn.q_proj.weight", int64_t(c_.n_q_heads) * 2 * D, H);
        l.k_proj = random(p + "self_attn.k_proj.weight", int64_t(c_.n_kv_heads) * D, H);
        l.v_proj = random(p + "self_attn.v_proj.weight", int64_t(c_.n_kv_heads) * D, H);
        l.o_proj = random(p + "self_attn.o_proj.weight", H, int64_t(c_.n_q_heads) * D);
        l.q_norm = norm(p + "self_attn.q_norm.weight", D);
        l.k_norm = norm(p + "self_attn.k_norm.weight", D);
    }

    void gated_deltanet(const std::string& p, LayerWeights& l) {
        const int64_t H = c_.hidden_size, Hv = c_.gdn_v_heads;
        const int64_t conv_dim = c_.gdn_conv_dim(), vdim = c_.gdn_value_dim();
        l.in_qkv = random(p + "linear_attn.in_proj_qkv.weight", conv_dim, H);
        l.in_z = random(p + "linear_attn.in_proj_z.weight", vdim, H);
        l.in_b = random(p + "linear_attn.in_proj_b.weight", Hv, H);
        l.in_a = random(p + "linear_attn.in_proj_a.weight", Hv, H);
        l.out_proj = random(p + "linear_attn.out_proj.weight", H, vdim);
        // Depthwise conv, fan_in = kernel width.
        const float conv_half = 1.7320508f / std::sqrt(float(c_.conv_kernel));
        l.conv = uniform(p + "linear_attn.conv1d.weight", conv_dim * c_.conv_kernel, -conv_half,
                         conv_half);
        if (!l.conv.empty()) l.conv = conv_taps_first(l.conv, conv_dim, c_.conv_kernel);  // dry run: empty
        // HF init: A ~ U[0, 16] (here [1, 16]: every head decays), stored as -A; dt_bias =
        // softplus⁻¹(dt) for dt log-uniform in [1e-3, 1e-1].
        l.neg_exp_a = uniform(p + "linear_attn.A_log", Hv, 1.0f, 16.0f);
        for (float& a : l.neg_exp_a) a = -a;
        l.dt_bias = uniform(p + "linear_attn.dt_bias", Hv, std::log(1e-3f), std::log(1e-1f));
        for (float& b : l.dt_bias) {
            const float dt = std::exp(b);
            b = dt + std::log(-std::expm1(-dt));
        }
        l.gdn_norm = norm(p + "linear_attn.norm.weight", c_.gdn_v_dim);
    }

    LayerWeights layer(const std::string& p, bool linear) {
        LayerWeights l;
        l.linear = linear;
        l.input_norm = norm(p + "input_layernorm.weight", c_.hidden_size);
        l.post_norm = norm(p + "post_attention_layernorm.weight", c_.hidden_size);
        if (linear) {
            gated_deltanet(p, l);
        } else {
            attention(p, l);
        }
        l.ffn = ffn(p);
        return l;
    }

private:
    void count(int64_t params, size_t bytes, bool routed_expert) {
        size.params += params;
        if (routed_expert) size.routed_expert_params += params;
        size.bytes += bytes;
    }
    void report() const {
        if (o_.progress) o_.progress(size.bytes, total_bytes);
    }

    const ModelConfig& c_;
    const SyntheticOptions& o_;
    ThreadPool* pool_;
    bool dry_run_;
};

// The draft-perfect token map (draft Perfect only). With every residual branch zeroed, the
// trunk's logits at a position holding token t are L·(n ⊙ rmsnorm(e_t)), L the LM head, e the
// embedding, n the final norm. Embedding rows are e_v = r_v + α_v·u: r_v random, u one shared
// random direction of the same scale (|u| ≈ |r_v| = R), α_v = 3 inside P = [0, K), 1 outside.
//   Tied head (L = e): for t in P the self-logit ≈ (1 + 9)R² beats every other row of P (≈ 9R²),
//   so t repeats; for t outside P the rows of P score ≈ 3R² against the self-logit ≈ 2R², so
//   the next token enters P.
//   Untied head: row v < K is e_{(v - 1) mod K}, the rest random, so t in P predicts
//   (t + 1) mod K: a cycle through P (distinct tokens, so MoE routing varies as in real text).
// The winner leads by about R²; the runner-up's noise is a few dot products of independent
// random vectors, each of std ≈ R²/sqrt(H), so ≈ 0.4R² at worst over 4096 rows at H = 1024.
// Every token after the prompt's last therefore lies in P with a wide margin: a draft head
// limited to a vocabulary prefix that covers P, or quantized differently, still agrees.
class PerfectTokenMap {
public:
    PerfectTokenMap(const ModelConfig& c, uint64_t seed)
        : H_(c.hidden_size),
          K_(perfect_token_range(c)),
          std_(1.0f / std::sqrt(float(c.hidden_size))),
          seed_(tensor_seed(seed, "embed_tokens.weight")),
          lm_seed_(tensor_seed(seed, "lm_head.weight")),
          u_(static_cast<size_t>(c.hidden_size)) {
        centred_row(tensor_seed(seed, "perfect.shared_direction"), 0, std_, H_, u_.data());
    }

    void embed_row(int64_t v, float* out) const {
        centred_row(seed_, v, std_, H_, out);
        const float alpha = v < K_ ? 3.0f : 1.0f;
        for (int64_t i = 0; i < H_; ++i) out[i] += alpha * u_[size_t(i)];
    }
    void lm_head_row(int64_t v, float* out) const {
        if (v < K_) {
            embed_row((v + K_ - 1) % K_, out);
        } else {
            centred_row(lm_seed_, v, std_, H_, out);
        }
    }

private:
    int64_t H_, K_;
    float std_;
    uint64_t seed_, lm_seed_;
    std::vector<float> u_;
};

ModelWeights build(const ModelConfig& c, const SyntheticOptions& o, Builder& b) {
    ModelWeights w;
    const int64_t H = c.hidden_size, V = c.vocab_size;
    if (o.draft == SyntheticDraft::Perfect) {
        const PerfectTokenMap map(c, o.seed);
        w.embed = b.filled("embed_tokens.weight", V, H, false, [&map](int64_t r, float* out) { map.embed_row(r, out); });
        w.lm_head = c.tied_embeddings
                        ? w.embed
                        : b.filled("lm_head.weight", V, H, false,
                                   [&map](int64_t r, float* out) { map.lm_head_row(r, out); });
    } else {
        // The embedding's fan-in is one token; 1/sqrt(H) keeps a tied head's logits near unit
        // scale (input rows are RMS-normalised before use anyway).
        const uint64_t seed = tensor_seed(o.seed, "embed_tokens.weight");
        const float std = 1.0f / std::sqrt(float(H));
        w.embed = b.filled("embed_tokens.weight", V, H, false,
                           [seed, std, H](int64_t r, float* out) { centred_row(seed, r, std, H, out); });
        w.lm_head = c.tied_embeddings ? w.embed : b.random("lm_head.weight", V, H);
    }
    w.final_norm = b.norm("norm.weight", H);
    for (int i = 0; i < c.n_layers; ++i)
        w.layers.push_back(b.layer("layers." + std::to_string(i) + ".", c.is_linear[size_t(i)]));
    if (o.draft != SyntheticDraft::None) {
        MtpWeights& m = w.mtp;
        m.present = true;
        m.pre_fc_norm_embedding = b.norm("mtp.pre_fc_norm_embedding.weight", H);
        m.pre_fc_norm_hidden = b.norm("mtp.pre_fc_norm_hidden.weight", H);
        m.norm = b.norm("mtp.norm.weight", H);
        m.fc = b.random("mtp.fc.weight", H, 2 * H);
        m.layer = b.layer("mtp.layers.0.", /*linear=*/false);
    }
    return w;
}

// A matrix of the same shape and type whose values are all zero.
WeightMatrix zero_like(const WeightMatrix& m, ThreadPool* pool) {
    const int64_t cols = m.cols;
    return build_weight(m.rows, cols, m.type, pool,
                        [cols](int64_t, float* out) { std::fill(out, out + cols, 0.0f); });
}

void zero_residual_outputs(LayerWeights& l, ThreadPool* pool) {
    WeightMatrix& mixer_out = l.linear ? l.out_proj : l.o_proj;
    mixer_out = zero_like(mixer_out, pool);
    FfnWeights& f = l.ffn;
    if (!f.moe) {
        f.down = zero_like(f.down, pool);
        return;
    }
    for (ExpertWeights& e : f.experts) e.down = zero_like(e.down, pool);
    if (!f.shared_down.empty()) f.shared_down = zero_like(f.shared_down, pool);
}

// Buffers a bench run needs beside the weights: the bandwidth probe (256 MiB), logits, caches.
constexpr size_t kWorkingBytes = size_t(512) << 20;

}  // namespace

const char* synthetic_draft_name(SyntheticDraft d) {
    switch (d) {
        case SyntheticDraft::None: return "none";
        case SyntheticDraft::Random: return "random";
        case SyntheticDraft::Perfect: return "perfect";
    }
    return "?";
}

SyntheticDraft parse_synthetic_draft(const std::string& name) {
    if (name == "none") return SyntheticDraft::None;
    if (name == "random") return SyntheticDraft::Random;
    if (name == "perfect") return SyntheticDraft::Perfect;
    fail("unknown draft variant '", name, "' (supported: random, perfect, none)");
}

std::vector<std::string> synthetic_model_names() {
    std::vector<std::string> names;
    for (const ReleaseShape& r : kReleases) names.push_back(r.name);
    return names;
}

ModelConfig synthetic_config(const std::string& name) {
    const ReleaseShape* shape = nullptr;
    for (const ReleaseShape& r : kReleases)
        if (name == r.name) shape = &r;
    if (!shape) {
        std::string valid;
        for (const std::string& n : synthetic_model_names()) valid += (valid.empty() ? "" : ", ") + n;
        fail("unknown synthetic model '", name, "' (valid: ", valid, ")");
    }
    const ReleaseShape& r = *shape;
    ModelConfig c;
    c.architecture = r.experts ? "qwen3_5_moe" : "qwen3_5";
    c.vocab_size = 248320;
    c.hidden_size = r.hidden;
    c.n_layers = r.layers;
    for (int i = 0; i < r.layers; ++i) c.is_linear.push_back((i + 1) % 4 != 0);  // interval 4
    c.n_q_heads = r.q_heads;
    c.n_kv_heads = r.kv_heads;
    c.head_dim = 256;
    c.rotary_dims = 64;  // head_dim * partial_rotary_factor 0.25
    c.rope_theta = 1e7;
    c.gdn_k_heads = r.gdn_k_heads;
    c.gdn_v_heads = r.gdn_v_heads;
    c.gdn_k_dim = 128;
    c.gdn_v_dim = 128;
    c.conv_kernel = 4;
    c.gdn_tiled_heads = false;  // HF order
    c.ffn_size = r.ffn;
    c.moe = r.experts > 0;
    c.n_experts = r.experts;
    c.n_experts_used = r.experts_used;
    c.expert_ffn_size = r.expert_ffn;
    c.shared_expert_ffn_size = r.shared_expert_ffn;
    c.rms_eps = 1e-6f;
    c.tied_embeddings = r.tied;
    c.mtp_layers = 1;
    c.eos_token_ids = {248044};
    c.max_positions = 262144;
    c.validate("synthetic model '" + name + "'");
    return c;
}

int64_t perfect_token_range(const ModelConfig& c) {
    return std::max<int64_t>(1, std::min<int64_t>(4096, c.vocab_size / 2));
}

SyntheticSize synthetic_size(const ModelConfig& c, const SyntheticOptions& o) {
    Builder b(c, o, nullptr, /*dry_run=*/true);
    build(c, o, b);
    return b.size;
}

SyntheticSize synthetic_size(const ModelConfig& c, WType type, bool with_mtp) {
    SyntheticOptions o;
    o.matrix_type = type;
    o.draft = with_mtp ? SyntheticDraft::Random : SyntheticDraft::None;
    return synthetic_size(c, o);
}

namespace {

// llama.cpp's use_more_bits: the first and last eighth of the n tensors of a kind, and every
// third one between.
bool use_more_bits(int64_t i, int64_t n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

// The layer index in "layers.N." / "mtp.layers.0." (the MTP layer: n_layers), or -1.
int64_t layer_of(const ModelConfig& c, const std::string& name) {
    if (name.rfind("mtp.layers.", 0) == 0) return c.n_layers;
    if (name.rfind("layers.", 0) != 0) return -1;
    return std::stoll(name.substr(7));
}

}  // namespace

WType q4_k_m_type(const ModelConfig& c, const SyntheticOptions& o, const std::string& name) {
    const bool mtp = o.draft != SyntheticDraft::None;
    auto has = [&name](const char* part) { return name.find(part) != std::string::npos; };
    if (name == "lm_head.weight" || (name == "embed_tokens.weight" && c.tied_embeddings))
        return o.q6_k_type;
    if (has("mlp.gate.weight") || has("shared_expert_gate")) return WType::F32;
    const int64_t layer = layer_of(c, name), layers = c.n_layers + (mtp ? 1 : 0);
    // Every layer holds one "attention V" tensor: a Gated DeltaNet layer its fused QKV, an
    // attention layer (the MTP one too) its V. So llama.cpp's count of them is the layer index.
    const bool v_like = has("linear_attn.in_proj_qkv") || has("self_attn.v_proj");
    if (layer >= 0 && (has("down_proj") || v_like))
        return use_more_bits(layer, layers) ? o.q6_k_type : o.q4_k_type;
    return o.q4_k_type;
}

ModelWeights synthetic_weights(const ModelConfig& c, const SyntheticOptions& o, ThreadPool& pool) {
    c.validate("synthetic model");
    Builder b(c, o, &pool, /*dry_run=*/false);
    b.total_bytes = synthetic_size(c, o).bytes;
    ModelWeights w = build(c, o, b);
    if (o.draft == SyntheticDraft::Perfect) make_draft_perfect(w, c, &pool);
    return w;
}

void make_draft_perfect(ModelWeights& w, const ModelConfig& c, ThreadPool* pool) {
    MtpWeights& m = w.mtp;
    if (!m.present) fail("make_draft_perfect: the model has no MTP head");
    const int64_t H = c.hidden_size;
    if (m.fc.rows != H || m.fc.cols != 2 * H)
        fail("make_draft_perfect: mtp.fc is [", m.fc.rows, ", ", m.fc.cols, "], expected [", H,
             ", ", 2 * H, "]");
    for (LayerWeights& l : w.layers) zero_residual_outputs(l, pool);
    zero_residual_outputs(m.layer, pool);
    // fc = [I | 0]: the head's residual stream starts as the normalised embedding of the token
    // it is given, and ignores the trunk's hidden.
    const int64_t cols = m.fc.cols;
    m.fc = build_weight(H, cols, m.fc.type, pool, [cols](int64_t r, float* out) {
        std::fill(out, out + cols, 0.0f);
        out[r] = 1.0f;
    });
    m.pre_fc_norm_embedding.assign(size_t(H), 1.0f);
    m.pre_fc_norm_hidden.assign(size_t(H), 1.0f);
    m.norm = w.final_norm;
}

LoadedModel load_synthetic_model(const std::string& name, const SyntheticOptions& o, int threads) {
    return load_synthetic_model(synthetic_config(name), name, o, threads);
}

LoadedModel load_synthetic_model(const ModelConfig& config, const std::string& name,
                                 const SyntheticOptions& o, int threads) {
    const bool with_mtp = o.draft != SyntheticDraft::None;
    // (A K-quant matrix is encoded whole before its repack, build_weight: the largest, the 0.8B's
    // LM head, holds 208 MB of Q6_K blocks for a moment, inside kWorkingBytes.)
    const size_t need = synthetic_size(config, o).bytes + kWorkingBytes;
    const size_t available = read_memory_info().available;
    if (available && need > available) {
        // Name the weight types that would fit, so the message says what to do.
        std::string fits;
        for (WType t : {WType::BF16, WType::Q8_0, WType::Q4_0}) {
            const size_t n = synthetic_size(config, t, with_mtp).bytes + kWorkingBytes;
            if (n <= available)
                fits += std::string(fits.empty() ? "" : ", ") + wtype_name(t) + " (" + gigabytes(n) + ")";
        }
        // The weights being built: the Q4_K_M mix ignores matrix_type.
        const std::string weights =
            o.q4_k_m ? std::string("q4_k_m") : wtype_name(stored_weight_type(o.matrix_type, kKQuantValues));
        require_memory(need, available, "synthetic " + name + " with " + weights + " weights",
                       fits.empty() ? "no weight type fits" : "these --quant types fit: " + fits);
    }
    LoadedModel lm;
    lm.pool = std::make_unique<ThreadPool>(threads);
    ModelWeights w = synthetic_weights(config, o, *lm.pool);
    lm.checkpoint.path = "synthetic:" + name;
    lm.checkpoint.format = "synthetic";
    lm.checkpoint.config = config;
    lm.checkpoint.mtp_source = synthetic_draft_name(o.draft);
    lm.model = std::make_unique<Qwen35Model>(config, std::move(w), *lm.pool);
    return lm;
}

}  // namespace nextn
