// nextn inspect MODEL: what was found in a checkpoint, without running it.
#include <algorithm>
#include <iostream>
#include <map>
#include <string>
#include <utility>

#include "cli/commands.h"
#include "core/cpu_info.h"
#include "core/memory_info.h"
#include "core/thread_pool.h"
#include "kernels/kernels.h"

namespace nextn::cli {

namespace {

// The tensor group a canonical name belongs to, for the quantization table (quantizers treat
// groups differently: MLX keeps routers at 8 bits, llama.cpp's Q4_K_M keeps some FFN downs
// at Q6_K, norms stay float everywhere).
std::string tensor_group(const std::string& name) {
    const bool mtp = name.rfind("mtp.", 0) == 0;
    const std::string prefix = mtp ? "MTP " : "";
    auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
    if (name == "embed_tokens.weight") return "embedding";
    if (name == "lm_head.weight") return "lm head";
    if (has("norm")) return prefix + "norms";
    if (has("linear_attn.conv1d") || has("A_log") || has("linear_attn.A") || has("dt_bias"))
        return "GDN conv, decay";
    if (has("linear_attn.")) return "GDN projections";
    if (has("self_attn.")) return prefix + "attention";
    if (has("mlp.experts.")) return prefix + "routed experts";
    if (has("mlp.shared_expert_gate")) return prefix + "shared-expert gate";
    if (has("mlp.shared_expert.")) return prefix + "shared expert";
    if (has("mlp.gate.weight")) return prefix + "router";
    if (has("mlp.")) return prefix + "dense FFN";
    if (mtp && has("fc.")) return "MTP fc";
    return "other";
}

std::string tensor_type_label(const RawTensor& t) {
    if (t.dtype == DType::MLX_AFFINE)
        return "MLX " + std::to_string(t.bits) + "-bit g" + std::to_string(t.group_size);
    return dtype_name(t.dtype);
}

}  // namespace

int cmd_inspect(const std::vector<std::string>& argv) {
    std::vector<FlagSpec> specs = {
        {"no-mtp", "", false, "do not load the MTP head"},
        {"draft-model", "", true, "attach a separate MTP drafter", "PATH"},
        {"f32-activations", "", false,
         "show the weights as held for f32 activations (no int8-dot repacking)"},
        {"bf16-activations", "", false,
         "show the weights as held for bf16 activations (bf16 matrices as bf16-dot, where the CPU "
         "has AVX512_BF16)"},
        {"help", "h", false, "show this help"},
    };
    Args a(specs, argv);
    if (a.has("help")) {
        std::cout << "usage: nextn inspect MODEL [options]\n\n" << Args::help_text(specs);
        return 0;
    }
    if (a.positional().size() != 1) throw UsageError("expected exactly one MODEL path");
    refuse_contradicting_load_flags(a);  // as run, chat and bench do (model_options_from)
    LoadOptions lo;
    lo.load_mtp = !a.has("no-mtp");
    lo.draft_model = a.str("draft-model");
    Checkpoint ck = load_checkpoint(a.positional()[0], lo);
    ck.config.gdn_tiled_heads = ck.gdn_tiled_heads;
    const ModelConfig& c = ck.config;
    ThreadPool pool;  // binding converts the weights, as a load does: on every core
    BindOptions bo;
    bo.load_mtp = lo.load_mtp;
    bo.int8_activations = !a.has("f32-activations");
    bo.bf16_activations = a.has("bf16-activations");
    bo.pool = &pool;
    bo.progress = progress_printer("reading " + a.positional()[0], 1.0);
    ModelWeights w = bind_weights(ck, bo);  // validates every shape

    std::map<std::string, int64_t> dtype_counts;
    int64_t params = 0, mtp_params = 0;
    for (const auto& [name, t] : ck.tensors) {
        dtype_counts[dtype_name(t.dtype)]++;
        params += t.numel();
        if (name.rfind("mtp.", 0) == 0) mtp_params += t.numel();
    }
    std::cout << "path:            " << ck.path << "\n"
              << "format:          " << ck.format << "\n"
              << "architecture:    " << c.architecture << "\n"
              << "vocab:           " << c.vocab_size << "\n"
              << "hidden:          " << c.hidden_size << "\n"
              << "layers:          " << c.n_layers << " (";
    for (int i = 0; i < c.n_layers; ++i) std::cout << (c.is_linear[size_t(i)] ? "L" : "A");
    std::cout << "; L = Gated DeltaNet, A = full attention)\n"
              << "attention:       " << c.n_q_heads << " q heads, " << c.n_kv_heads
              << " kv heads, head_dim " << c.head_dim << ", rotary dims " << c.rotary_dims
              << ", rope_theta " << c.rope_theta << "\n"
              << "gated deltanet:  " << c.gdn_k_heads << " k heads x " << c.gdn_k_dim << ", "
              << c.gdn_v_heads << " v heads x " << c.gdn_v_dim << ", conv " << c.conv_kernel
              << ", head order " << (c.gdn_tiled_heads ? "tiled (GGUF)" : "grouped (HF)") << "\n";
    if (c.moe) {
        std::cout << "ffn:             MoE " << c.n_experts << " experts, top " << c.n_experts_used
                  << ", expert width " << c.expert_ffn_size << ", shared expert "
                  << c.shared_expert_ffn_size << "\n";
    } else {
        std::cout << "ffn:             dense SwiGLU, width " << c.ffn_size << "\n";
    }
    std::cout << "lm head:         " << (c.tied_embeddings ? "tied to embeddings" : "separate")
              << "\n"
              << "mtp head:        " << ck.mtp_source
              << (w.mtp.present ? "" : " (plain decoding)") << "\n"
              << "parameters:      " << params << " (MTP " << mtp_params << ")\n"
              << "tensor types:   ";
    for (const auto& [t, n] : dtype_counts) std::cout << " " << t << " x" << n;
    // The counts are of the tensors the model reads: a file's stacked or fused expert tensor is
    // one per expert here, so on MoE files they exceed the file's own count (the format note
    // below gives a GGUF's).
    if (c.moe) std::cout << " (experts counted one tensor each)";
    std::cout << "\n";
    // What the kernels will read: the file's types kept, repacked or widened to f32.
    std::map<std::string, int64_t> held;
    size_t held_bytes = 0;
    // The const overload: a tied embedding is the LM head's bytes, counted once.
    for_each_matrix(std::as_const(w), [&](const WeightMatrix& m) {
        held[wtype_name(m.type)]++;
        held_bytes += m.nbytes();
    });
    std::string held_list;
    for (const auto& [t, n] : held)
        held_list += (held_list.empty() ? "" : ", ") + t + " x" + std::to_string(n);
    std::cout << "weights held as: " << held_list << " (matrices, as the kernels read them)\n";
    // What the matrices take in memory as held, and at least with each --quant type, next to
    // what the machine has: the numbers a user needs to pick a type that fits.
    std::cout << "weight memory:   " << size_text(held_bytes) << " as held; with --quant";
    for (WType q : {WType::BF16, WType::Q8_0, WType::Q4_0}) {
        BindOptions as_q = bo;
        as_q.matrix_type = q;
        std::cout << (q == WType::BF16 ? " " : ", ") << (q == WType::Q4_0 ? "q4" : wtype_name(q))
                  << " >= " << size_text(bound_matrix_bytes_at_least(ck, as_q));
    }
    const MemoryInfo memory = read_memory_info();
    if (memory.available > 0) std::cout << " (MemAvailable here: " << size_text(memory.available) << ")";
    std::cout << "\n";
    // group -> type label -> tensor count
    std::map<std::string, std::map<std::string, int64_t>> groups;
    for (const auto& [name, t] : ck.tensors) groups[tensor_group(name)][tensor_type_label(t)]++;
    std::cout << "quantization by tensor group:\n";
    for (const auto& [group, types] : groups) {
        std::string line = "  " + group;
        line.resize(std::max<size_t>(line.size() + 1, 26), ' ');
        for (const auto& [label, n] : types) line += " " + label + " x" + std::to_string(n);
        std::cout << line << "\n";
    }
    const std::string fetch = narrow_fetch_summary(kernels());
    std::cout
              << "tokenizer:       " << (ck.tokenizer_dir.empty() ? (ck.format == "gguf" ? "GGUF metadata" : "none") : ck.tokenizer_dir + "/tokenizer.json") << "\n"
              << "kernels:         " << kernels().isa
              << (kernels().bf16_dot_fast ? " (with the AVX512_BF16 bf16 dot product: --bf16-activations)"
                                          : "")
              << (kernels().amx_from_width > 0
                      ? " (AMX int8 tiles for Q4_0 / Q8_0 row-group matmuls from width " + std::to_string(kernels().amx_from_width) + ")"
                      : std::string())
              << (fetch.empty() ? std::string() : " (decode-width matmuls prefetch: " + fetch + ")")
              << "\n"
              << "cpu:             " << cpu_model_name() << "\n";
    for (const auto& note : ck.notes) std::cout << "note:            " << note << "\n";
    if (!w.unused_tensors.empty()) {
        std::cout << "unused tensors:  " << w.unused_tensors.size() << "\n";
        for (const auto& n : w.unused_tensors) std::cout << "  " << n << "\n";
    }
    return 0;
}

}  // namespace nextn::cli
