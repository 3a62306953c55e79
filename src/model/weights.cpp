#include "model/weights.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.h"
#include "core/memory_info.h"
#include "formats/dequant.h"
#include "kernels/int8_dot.h"
#include "kernels/kernels.h"
#include "kernels/row_groups.h"

namespace nextn {

bool int8_kernels_in_use(bool int8_activations) {
    return int8_activations && kernels().int8_dot_fast;
}

bool bf16_dot_in_use(bool bf16_activations) {
    return bf16_activations && kernels().bf16_dot_fast;
}

WType kernel_storage_type(WType t, bool int8_activations, bool bf16_activations) {
    if (t == WType::BF16) return bf16_dot_in_use(bf16_activations) ? WType::BF16D : t;
    return int8_kernels_in_use(int8_activations) ? int8_dot_type_for(t, kernels().row_groups) : t;
}

std::vector<float> conv_taps_first(const std::vector<float>& w, int64_t channels, int K) {
    if (w.size() != size_t(channels * K)) fail("conv weight of ", w.size(), " values is not [", channels, ", ", K, "]");
    std::vector<float> out(w.size());
    for (int64_t c = 0; c < channels; ++c)
        for (int j = 0; j < K; ++j) out[size_t(j * channels + c)] = w[size_t(c * K + j)];
    return out;
}

namespace {

// Tracks which canonical tensors were bound, so inspect can list the rest.
class Binder {
public:
    Binder(const Checkpoint& ck, const BindOptions& options) : ck_(ck), options_(options) {
        for (const auto& [name, t] : ck.tensors) total_bytes_ += t.nbytes;
    }

    const RawTensor& raw(const std::string& name) {
        used_.insert(name);
        return ck_.require(name);
    }
    bool has(const std::string& name) const { return ck_.find(name) != nullptr; }

    WeightMatrix matrix(const std::string& name, int64_t rows, int64_t cols) {
        const RawTensor& t = raw(name);
        WeightMatrix w = convert(t, rows, cols);
        bound(t);
        return w;
    }

    std::vector<float> vec(const std::string& name, int64_t n) {
        const RawTensor& t = raw(name);
        if (t.numel() != n)
            fail(t.file, ": tensor '", t.name, "' has shape ", t.shape_str(), ", expected ", n,
                 " values");
        std::vector<float> v = tensor_to_f32(t);
        bound(t);
        return v;
    }

    void finished() const {
        if (options_.progress) options_.progress(total_bytes_, total_bytes_);
    }

    // A (1+w) norm: adds 1 unless the file already stores the shifted value.
    std::vector<float> shifted_norm(const std::string& name, int64_t n) {
        std::vector<float> w = vec(name, n);
        if (!ck_.norms_already_shifted.count(name))
            for (float& x : w) x += 1.0f;
        return w;
    }

    std::vector<std::string> unused() const {
        std::vector<std::string> out;
        for (const auto& [name, t] : ck_.tensors)
            if (!used_.count(name)) out.push_back(name);
        return out;
    }

private:
    void bound(const RawTensor& t) {
        bound_bytes_ += t.nbytes;
        if (options_.progress) options_.progress(std::min(bound_bytes_, total_bytes_), total_bytes_);
    }

    WeightMatrix convert(const RawTensor& t, int64_t rows, int64_t cols) {
        check_shape(t, rows, cols);
        // Affine tensors no f32-activation kernel reads in their own layout (GGUF Q4_K, Q5_K,
        // Q5_1; MLX 2..8-bit other than 4-bit with f16-exact scales, which is Q4_1) keep their
        // codes for the int8 kernels instead of widening to f32.
        const bool int8 = int8_kernels_in_use(options_.int8_activations);
        const bool int8_native = options_.matrix_type == WType::Native && int8;
        const bool affine = int8_native && affine_code_bits(t, rows, cols) != 0;
        WeightMatrix w;
        // GGUF Q4_K, Q5_K and Q6_K (a Q4_K_M file: Q4_K for most matrices, Q6_K for the output and
        // some attention V and FFN down ones, Q5_K for the Gated DeltaNet's QKV) keep their codes:
        // in 16-row groups with the file's scales where the table's kernel reads them (Q4_KR,
        // Q5_KR, Q6_KR: 4.625, 5.625, 6.5625 bits a value), else chunked (Q4_1FX, Q8_1FX, Q6_KX).
        // So does Q3_K (a Q3_K_M file's most matrices): Q3_KR, 3.5625 bits (the file's 3.4375
        // with its scales as bytes), or chunked as the Q6_K tensor with its values (Q6_KX); and
        // Q2_K: Q2_KR, the file's 2.625 bits.
        const WType k_quant = k_quant_storage_type(t.dtype, kernels().row_groups);
        if (int8_native && k_quant != WType::F32 && repack_k_quant_tensor(t, rows, cols, k_quant, w, options_.pool))
            return w;
        // GGUF IQ4_NL, IQ4_XS and MXFP4 keep their 4-bit codes for the int8 kernels, which look
        // them up in their tables (IQ4_NLR, MXFP4R: 4.5 bits a value; IQ4_XSR 4.75); with f32
        // activations, and for an MXFP4 tensor with a scale no f16 holds, IQ4_NL and MXFP4 are
        // Q8_0 (make_weight) and IQ4_XS is widened.
        if (int8_native && repack_table_codes_as_row_groups(t, rows, cols, w, options_.pool))
            return w;
        // MLX 4-bit tries Q4_1 first (f16-exact scales: a layout every kernel reads); the rest
        // repack straight from the file's codes, never through a transient f32 copy.
        const bool mlx4 = t.dtype == DType::MLX_AFFINE && t.bits == 4;
        if (affine && !mlx4 && repack_affine_for_int8_dot(t, rows, cols, w, options_.pool))
            return w;
        // make_weight lays block types out for the int8 kernels itself (int8_layout).
        w = make_weight(t, rows, cols, options_.matrix_type,
                        {options_.pool, int8, kernels().row_groups});
        if (affine && w.type == WType::F32) repack_affine_for_int8_dot(t, rows, cols, w, options_.pool);
        // BF16D keeps BF16's bytes: only the kernel that multiplies them changes.
        if (w.type == WType::BF16 && bf16_dot_in_use(options_.bf16_activations)) w.type = WType::BF16D;
        return w;
    }

    static void check_shape(const RawTensor& t, int64_t rows, int64_t cols) {
        // Accept [rows, cols] and, for single-row matrices, [cols].
        bool ok = (t.shape.size() == 2 && t.shape[0] == rows && t.shape[1] == cols) ||
                  (t.shape.size() == 1 && rows == 1 && t.shape[0] == cols);
        if (!ok)
            fail(t.file, ": tensor '", t.name, "' has shape ", t.shape_str(), ", expected [", rows,
                 ", ", cols, "]");
    }

    const Checkpoint& ck_;
    const BindOptions& options_;
    std::set<std::string> used_;
    size_t total_bytes_ = 0, bound_bytes_ = 0;
};

FfnWeights bind_ffn(Binder& b, const ModelConfig& c, const std::string& p) {
    FfnWeights f;
    const int64_t H = c.hidden_size;
    f.moe = c.moe;
    if (!c.moe) {
        f.gate = b.matrix(p + "mlp.gate_proj.weight", c.ffn_size, H);
        f.up = b.matrix(p + "mlp.up_proj.weight", c.ffn_size, H);
        f.down = b.matrix(p + "mlp.down_proj.weight", H, c.ffn_size);
        return f;
    }
    const int64_t I = c.expert_ffn_size;
    f.router = b.matrix(p + "mlp.gate.weight", c.n_experts, H);
    for (int e = 0; e < c.n_experts; ++e) {
        std::string ep = p + "mlp.experts." + std::to_string(e) + ".";
        ExpertWeights ew;
        ew.gate = b.matrix(ep + "gate_proj.weight", I, H);
        ew.up = b.matrix(ep + "up_proj.weight", I, H);
        ew.down = b.matrix(ep + "down_proj.weight", H, I);
        f.experts.push_back(std::move(ew));
    }
    if (c.shared_expert_ffn_size > 0) {
        const int64_t Is = c.shared_expert_ffn_size;
        f.shared_gate = b.matrix(p + "mlp.shared_expert.gate_proj.weight", Is, H);
        f.shared_up = b.matrix(p + "mlp.shared_expert.up_proj.weight", Is, H);
        f.shared_down = b.matrix(p + "mlp.shared_expert.down_proj.weight", H, Is);
        f.shared_expert_gate = b.matrix(p + "mlp.shared_expert_gate.weight", 1, H);
    }
    return f;
}

void bind_attention(Binder& b, const ModelConfig& c, const std::string& p, LayerWeights& l) {
    const int64_t H = c.hidden_size, D = c.head_dim;
    l.q_proj = b.matrix(p + "self_attn.q_proj.weight", int64_t(c.n_q_heads) * 2 * D, H);
    l.k_proj = b.matrix(p + "self_attn.k_proj.weight", int64_t(c.n_kv_heads) * D, H);
    l.v_proj = b.matrix(p + "self_attn.v_proj.weight", int64_t(c.n_kv_heads) * D, H);
    l.o_proj = b.matrix(p + "self_attn.o_proj.weight", H, int64_t(c.n_q_heads) * D);
    l.q_norm = b.shifted_norm(p + "self_attn.q_norm.weight", D);
    l.k_norm = b.shifted_norm(p + "self_attn.k_norm.weight", D);
}

void bind_gdn(Binder& b, const ModelConfig& c, const std::string& p, LayerWeights& l) {
    const int64_t H = c.hidden_size, Hv = c.gdn_v_heads;
    const int64_t conv_dim = c.gdn_conv_dim(), vdim = c.gdn_value_dim();
    l.in_qkv = b.matrix(p + "linear_attn.in_proj_qkv.weight", conv_dim, H);
    l.in_z = b.matrix(p + "linear_attn.in_proj_z.weight", vdim, H);
    l.in_b = b.matrix(p + "linear_attn.in_proj_b.weight", Hv, H);
    l.in_a = b.matrix(p + "linear_attn.in_proj_a.weight", Hv, H);
    l.out_proj = b.matrix(p + "linear_attn.out_proj.weight", H, vdim);
    l.conv = conv_taps_first(b.vec(p + "linear_attn.conv1d.weight", conv_dim * c.conv_kernel),
                             conv_dim, c.conv_kernel);
    if (b.has(p + "linear_attn.A")) {
        l.neg_exp_a = b.vec(p + "linear_attn.A", Hv);  // already -exp(A_log)
    } else {
        std::vector<float> a_log = b.vec(p + "linear_attn.A_log", Hv);
        l.neg_exp_a.resize(size_t(Hv));
        for (int64_t j = 0; j < Hv; ++j) l.neg_exp_a[j] = -std::exp(a_log[j]);
    }
    l.dt_bias = b.vec(p + "linear_attn.dt_bias", Hv);
    l.gdn_norm = b.vec(p + "linear_attn.norm.weight", c.gdn_v_dim);
}

LayerWeights bind_layer(Binder& b, const ModelConfig& c, const std::string& p, bool linear) {
    LayerWeights l;
    l.linear = linear;
    l.input_norm = b.shifted_norm(p + "input_layernorm.weight", c.hidden_size);
    l.post_norm = b.shifted_norm(p + "post_attention_layernorm.weight", c.hidden_size);
    if (linear) {
        bind_gdn(b, c, p, l);
    } else {
        bind_attention(b, c, p, l);
    }
    l.ffn = bind_ffn(b, c, p);
    return l;
}

}  // namespace

namespace {

// The traversal behind both for_each_matrix overloads (W: ModelWeights, const or not). A tied
// embedding is visited with the LM head only when `tied_embed_too`.
template <class W, class F>
void visit_matrices(W& w, bool tied_embed_too, F&& f) {
    auto visit = [&](auto& x) {
        if (!x.empty()) f(x);
    };
    auto layer = [&](auto& l) {
        for (auto* x : {&l.in_qkv, &l.in_z, &l.in_b, &l.in_a, &l.out_proj, &l.q_proj, &l.k_proj,
                        &l.v_proj, &l.o_proj, &l.ffn.gate, &l.ffn.up, &l.ffn.down, &l.ffn.router,
                        &l.ffn.shared_gate, &l.ffn.shared_up, &l.ffn.shared_down,
                        &l.ffn.shared_expert_gate})
            visit(*x);
        for (auto& e : l.ffn.experts) {
            visit(e.gate);
            visit(e.up);
            visit(e.down);
        }
    };
    if (tied_embed_too || w.embed.data != w.lm_head.data) visit(w.embed);
    visit(w.lm_head);
    for (auto& l : w.layers) layer(l);
    if (w.mtp.present) {
        visit(w.mtp.fc);
        layer(w.mtp.layer);
    }
}

}  // namespace

void for_each_matrix(const ModelWeights& w, const std::function<void(const WeightMatrix&)>& f) {
    visit_matrices(w, false, f);
}

void for_each_matrix(ModelWeights& w, const std::function<void(WeightMatrix&)>& f) {
    visit_matrices(w, true, f);
}

namespace {

// The bytes Binder::convert holds a [rows, cols] tensor kept in its own type in, at least: the
// file's, but for the types that grow on the way. With the int8 kernels GGUF Q3_K becomes Q3_KR
// (or Q6_K's codes) and IQ4_XS IQ4_XSR (f32 scales); without them the K-quants,
// Q5_1, Q2_K, Q3_K and IQ4_XS widen to f32 and IQ4_NL and MXFP4 become Q8_0.
size_t native_bytes_at_least(const RawTensor& t, int64_t rows, int64_t cols, bool int8) {
    const size_t f32_bytes = size_t(rows * cols) * 4;
    switch (t.dtype) {
        case DType::Q3_K:  // Q3_KR, or chunked the Q6_K matrix of its values
            return int8 ? wtype_matrix_bytes(k_quant_storage_type(DType::Q3_K, kernels().row_groups), rows, cols) : f32_bytes;
        case DType::IQ4_XS: return int8 ? wtype_matrix_bytes(WType::IQ4_XSR, rows, cols) : f32_bytes;
        case DType::Q2_K:
        case DType::Q4_K:
        case DType::Q5_K:
        case DType::Q6_K:
        case DType::Q5_1: return int8 ? t.nbytes : f32_bytes;
        case DType::IQ4_NL:
        case DType::MXFP4: return int8 ? t.nbytes : wtype_matrix_bytes(WType::Q8_0, rows, cols);
        default: return t.nbytes;
    }
}

}  // namespace

size_t bound_matrix_bytes_at_least(const Checkpoint& ck, const BindOptions& options) {
    const WType held = kernel_storage_type(options.matrix_type, options.int8_activations);
    size_t total = 0;
    for (const auto& [name, t] : ck.tensors) {
        // Norms, gates and the conv taps (two-dimensional in GGUF) are not matrices.
        if (t.shape.size() != 2 || name.find("conv1d") != std::string::npos) continue;
        if (!options.load_mtp && name.rfind("mtp.", 0) == 0) continue;
        if (ck.config.tied_embeddings && name == "lm_head.weight") continue;  // the embedding's
        const int64_t rows = t.shape[0], cols = t.shape[1];
        if (options.matrix_type == WType::Native) {
            total += native_bytes_at_least(t, rows, cols, int8_kernels_in_use(options.int8_activations));
            continue;
        }
        total += wtype_matrix_bytes(stored_weight_type(held, cols), rows, cols);
    }
    return total;
}

ModelWeights bind_weights(const Checkpoint& ck, const BindOptions& options) {
    // Fail before converting anything when the matrices cannot fit, rather than part-way (or
    // by the kernel's hand) after a long load.
    const MemoryInfo memory = read_memory_info();
    require_memory(bound_matrix_bytes_at_least(ck, options),
                   options.memory_budget.value_or(memory.available + memory.swap_free),
                   "loading " + ck.path +
                       (options.matrix_type == WType::Native
                            ? std::string(" in its own weight types")
                            : std::string(" with ") + wtype_name(options.matrix_type) + " weights"),
                   "a smaller --quant type (q4) needs less",
                   options.memory_budget ? "the memory budget"
                                         : "MemAvailable + SwapFree in /proc/meminfo");
    const ModelConfig& c = ck.config;
    Binder b(ck, options);
    ModelWeights w;
    const int64_t H = c.hidden_size, V = c.vocab_size;
    w.embed = b.matrix("embed_tokens.weight", V, H);
    w.lm_head = c.tied_embeddings ? w.embed : b.matrix("lm_head.weight", V, H);
    w.final_norm = b.shifted_norm("norm.weight", H);
    for (int i = 0; i < c.n_layers; ++i)
        w.layers.push_back(bind_layer(b, c, "layers." + std::to_string(i) + ".", c.is_linear[i]));
    if (options.load_mtp && b.has("mtp.fc.weight")) {
        MtpWeights& m = w.mtp;
        m.present = true;
        m.pre_fc_norm_embedding = b.shifted_norm("mtp.pre_fc_norm_embedding.weight", H);
        m.pre_fc_norm_hidden = b.shifted_norm("mtp.pre_fc_norm_hidden.weight", H);
        m.norm = b.shifted_norm("mtp.norm.weight", H);
        m.fc = b.matrix("mtp.fc.weight", H, 2 * H);
        m.layer = bind_layer(b, c, "mtp.layers.0.", /*linear=*/false);
    }
    w.unused_tensors = b.unused();
    b.finished();
    return w;
}

}  // namespace nextn
