#include "formats/gguf_checkpoint.h"

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <utility>

#include "core/error.h"
#include "formats/drafter.h"
#include "formats/ggml_types.h"
#include "formats/mlx_weights.h"

namespace nextn {

namespace {

bool starts_with(const std::string& s, const std::string& prefix) {
    return s.rfind(prefix, 0) == 0;
}

using NamePair = std::pair<const char*, const char*>;  // {GGUF name, canonical name}

// Tensors outside the blocks.
constexpr NamePair kTopTensors[] = {
    {"token_embd.weight", "embed_tokens.weight"},
    {"output_norm.weight", "norm.weight"},
    {"output.weight", "lm_head.weight"},
};

// Per-block tensor names (after "blk.N.") -> canonical names (after "layers.N."), from
// llama.cpp's LLM_ARCH_QWEN35 / QWEN35MOE tensor table (architecture spec section 8.3).
constexpr NamePair kBlockTensors[] = {
    {"attn_norm.weight", "input_layernorm.weight"},
    {"post_attention_norm.weight", "post_attention_layernorm.weight"},
    {"attn_qkv.weight", "linear_attn.in_proj_qkv.weight"},
    {"attn_gate.weight", "linear_attn.in_proj_z.weight"},
    {"ssm_beta.weight", "linear_attn.in_proj_b.weight"},
    {"ssm_alpha.weight", "linear_attn.in_proj_a.weight"},
    {"ssm_conv1d.weight", "linear_attn.conv1d.weight"},
    {"ssm_dt.bias", "linear_attn.dt_bias"},
    {"ssm_a", "linear_attn.A"},
    {"ssm_norm.weight", "linear_attn.norm.weight"},
    {"ssm_out.weight", "linear_attn.out_proj.weight"},
    {"attn_q.weight", "self_attn.q_proj.weight"},
    {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_v.weight", "self_attn.v_proj.weight"},
    {"attn_output.weight", "self_attn.o_proj.weight"},
    {"attn_q_norm.weight", "self_attn.q_norm.weight"},
    {"attn_k_norm.weight", "self_attn.k_norm.weight"},
    {"ffn_gate.weight", "mlp.gate_proj.weight"},
    {"ffn_up.weight", "mlp.up_proj.weight"},
    {"ffn_down.weight", "mlp.down_proj.weight"},
    {"ffn_gate_inp.weight", "mlp.gate.weight"},
    {"ffn_gate_shexp.weight", "mlp.shared_expert.gate_proj.weight"},
    {"ffn_up_shexp.weight", "mlp.shared_expert.up_proj.weight"},
    {"ffn_down_shexp.weight", "mlp.shared_expert.down_proj.weight"},
    {"ffn_gate_inp_shexp.weight", "mlp.shared_expert_gate.weight"},
};

// Stacked expert tensors ([E, rows, cols]) -> per-expert projection name.
constexpr NamePair kStackedExperts[] = {
    {"ffn_gate_exps.weight", "gate_proj.weight"},
    {"ffn_up_exps.weight", "up_proj.weight"},
    {"ffn_down_exps.weight", "down_proj.weight"},
};

// The MTP block's own nextn.* tensors -> canonical mtp.* names (nextn.embed_tokens and
// nextn.shared_head_head are not used by Qwen3.5).
constexpr NamePair kNextnTensors[] = {
    {"nextn.eh_proj.weight", "mtp.fc.weight"},
    {"nextn.enorm.weight", "mtp.pre_fc_norm_embedding.weight"},
    {"nextn.hnorm.weight", "mtp.pre_fc_norm_hidden.weight"},
    {"nextn.shared_head_norm.weight", "mtp.norm.weight"},
};

// A table's canonical name for a GGUF name, or its GGUF name for a canonical one; null if none.
template <size_t N>
const char* canonical_of(const NamePair (&table)[N], const std::string& gguf) {
    for (const auto& [g, c] : table)
        if (gguf == g) return c;
    return nullptr;
}
template <size_t N>
const char* gguf_of(const NamePair (&table)[N], const std::string& canonical) {
    for (const auto& [g, c] : table)
        if (canonical == c) return g;
    return nullptr;
}

// The GGUF name of a canonical tensor (the tables above read backwards), for errors about a
// tensor the file lacks; the canonical name itself where none maps.
std::string gguf_name_of(const std::string& canonical, int n_trunk) {
    if (const char* g = gguf_of(kTopTensors, canonical)) return g;
    if (const char* g = gguf_of(kNextnTensors, canonical))
        return "blk." + std::to_string(n_trunk) + "." + g;
    // layers.N.rest -> blk.N.rest', mtp.layers.N.rest -> blk.(n_trunk + N).rest'
    const bool mtp = starts_with(canonical, "mtp.layers.");
    const size_t at = mtp ? 11 : 7;
    const size_t dot = canonical.find('.', at);
    if ((!mtp && !starts_with(canonical, "layers.")) || dot == std::string::npos) return canonical;
    const int block = (mtp ? n_trunk : 0) + std::atoi(canonical.substr(at, dot - at).c_str());
    const std::string rest = canonical.substr(dot + 1), blk = "blk." + std::to_string(block) + ".";
    if (starts_with(rest, "mlp.experts.")) {  // mlp.experts.E.<proj>: one stacked tensor
        const std::string proj = rest.substr(std::min(rest.size(), rest.find('.', 12) + 1));
        const char* g = gguf_of(kStackedExperts, proj);
        return g ? blk + g : canonical;
    }
    const char* g = gguf_of(kBlockTensors, rest);
    return g ? blk + g : canonical;
}

RawTensor raw_from_gguf(const GgufFile& g, const GgufTensorInfo& info) {
    auto dtype = ggml_type_to_dtype(info.ggml_type);
    if (!dtype)
        fail(g.path, ": unsupported GGUF tensor type ", ggml_type_name(info.ggml_type), " in ",
             info.name,
             " (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, "
             "Q6_K, IQ4_NL, IQ4_XS, MXFP4)");
    RawTensor t;
    t.name = info.name;
    t.file = g.path;
    t.dtype = *dtype;
    t.shape.assign(info.ne.rbegin(), info.ne.rend());  // PyTorch order: outermost first
    t.data = info.data;
    t.nbytes = info.nbytes;
    return t;
}

// A per-layer count that may be stored as one integer or as an array (one entry per block).
int gguf_layer_int(const GgufFile& g, const std::string& key, int layer) {
    const GgufValue* v = g.find(key);
    if (v && v->type == GgufType::ARRAY) {
        if (layer < 0 || size_t(layer) >= v->integers.size())
            fail(g.path, ": metadata array '", key, "' has no entry for block ", layer);
        return int(v->integers[size_t(layer)]);
    }
    return int(g.get_int(key));
}

ModelConfig config_from_gguf(const GgufFile& g, const std::string& arch) {
    const std::string k = arch + ".";
    ModelConfig c;
    c.architecture = arch == "qwen35moe" ? "qwen3_5_moe" : "qwen3_5";
    c.moe = arch == "qwen35moe";
    const int64_t blocks = g.get_int(k + "block_count");
    const int64_t nextn = g.get_int(k + "nextn_predict_layers", 0);
    if (blocks <= 0 || blocks > 100000 || nextn < 0 || nextn >= blocks)
        fail(g.path, ": ", k, "block_count ", blocks, " and ", k, "nextn_predict_layers ", nextn,
             " are inconsistent");
    c.n_layers = int(blocks - nextn);
    c.mtp_layers = int(nextn);
    c.hidden_size = g.get_int(k + "embedding_length");
    c.max_positions = g.get_int(k + "context_length", 0);

    // Layer kinds: explicit per-block flags if present, else every interval-th is attention.
    if (const GgufValue* r = g.find(k + "attention.recurrent_layers")) {
        if (r->type != GgufType::ARRAY || r->integers.size() < size_t(c.n_layers))
            fail(g.path, ": ", k, "attention.recurrent_layers must be an array of ", c.n_layers,
                 "+ flags");
        for (int i = 0; i < c.n_layers; ++i) c.is_linear.push_back(r->integers[size_t(i)] != 0);
    } else {
        const int64_t interval = g.get_int(k + "full_attention_interval", 4);
        if (interval <= 0) fail(g.path, ": ", k, "full_attention_interval must be positive");
        for (int i = 0; i < c.n_layers; ++i) c.is_linear.push_back((i + 1) % interval != 0);
    }
    int attn_layer = c.n_layers;  // the MTP block is always full attention
    for (int i = 0; i < c.n_layers; ++i)
        if (!c.is_linear[size_t(i)]) {
            attn_layer = i;
            break;
        }
    c.n_q_heads = gguf_layer_int(g, k + "attention.head_count", attn_layer);
    c.n_kv_heads = gguf_layer_int(g, k + "attention.head_count_kv", attn_layer);
    c.head_dim = int(g.get_int(k + "attention.key_length"));
    const int64_t value_length = g.get_int(k + "attention.value_length", c.head_dim);
    if (value_length != c.head_dim)
        fail(g.path, ": ", k, "attention.value_length ", value_length, " differs from key_length ",
             c.head_dim, " (not a Qwen3.5 model)");
    c.rotary_dims = int(g.get_int(k + "rope.dimension_count", c.head_dim));
    c.rope_theta = g.get_float(k + "rope.freq_base", 1e7);
    c.rms_eps = float(g.get_float(k + "attention.layer_norm_rms_epsilon", 1e-6));

    c.conv_kernel = int(g.get_int(k + "ssm.conv_kernel"));
    c.gdn_k_dim = int(g.get_int(k + "ssm.state_size"));
    c.gdn_k_heads = int(g.get_int(k + "ssm.group_count"));
    c.gdn_v_heads = int(g.get_int(k + "ssm.time_step_rank"));
    const int64_t inner = g.get_int(k + "ssm.inner_size");
    if (c.gdn_v_heads <= 0 || inner % c.gdn_v_heads != 0)
        fail(g.path, ": ", k, "ssm.inner_size ", inner, " is not a multiple of ", k,
             "ssm.time_step_rank ", c.gdn_v_heads);
    c.gdn_v_dim = int(inner / c.gdn_v_heads);

    if (c.moe) {
        c.n_experts = int(g.get_int(k + "expert_count"));
        c.n_experts_used = int(g.get_int(k + "expert_used_count"));
        c.expert_ffn_size = g.get_int(k + "expert_feed_forward_length");
        c.shared_expert_ffn_size = g.get_int(k + "expert_shared_feed_forward_length", 0);
    } else {
        c.ffn_size = gguf_layer_int(g, k + "feed_forward_length", 0);
    }
    // End of generation: llama.cpp's eos (and end-of-turn, when it differs).
    for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id"}) {
        int64_t id = g.get_int(key, -1);
        if (id >= 0 && (c.eos_token_ids.empty() || c.eos_token_ids[0] != id))
            c.eos_token_ids.push_back(int(id));
    }
    return c;
}

// Parses "blk.<n>.<rest>"; false for other names.
bool split_block_name(const std::string& name, int* block, std::string* rest) {
    if (!starts_with(name, "blk.")) return false;
    size_t dot = name.find('.', 4);
    if (dot == std::string::npos || dot == 4 || dot > 12) return false;
    int n = 0;
    for (size_t i = 4; i < dot; ++i) {
        if (name[i] < '0' || name[i] > '9') return false;
        n = n * 10 + (name[i] - '0');
    }
    *block = n;
    *rest = name.substr(dot + 1);
    return true;
}

}  // namespace

bool is_gguf_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    char magic[4] = {};
    in.read(magic, 4);
    if (in && std::memcmp(magic, "GGUF", 4) == 0) return true;
    std::string ext = path.size() >= 5 ? path.substr(path.size() - 5) : "";
    for (char& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
    if (ext == ".gguf") fail(path, ": not a GGUF file (it does not start with the bytes 'GGUF')");
    return false;
}

Checkpoint gguf_to_checkpoint(const GgufFile& g, bool load_mtp, bool allow_mtp_only) {
    const std::string arch = g.get_string("general.architecture");
    if (arch != "qwen35" && arch != "qwen35moe")
        fail(g.path, ": unsupported architecture '", arch.empty() ? "(none)" : arch,
             "' (supported: qwen35, qwen35moe)");
    Checkpoint ck;
    ck.path = g.path;
    ck.format = "gguf";
    ck.keep_alive.push_back(g.file);
    ck.config = config_from_gguf(g, arch);
    ck.gdn_tiled_heads = true;  // the converter reorders value heads to tiled order
    const int n_trunk = ck.config.n_layers;

    const bool mtp_only = g.find_tensor("blk.0.attn_norm.weight") == nullptr;
    if (mtp_only && !allow_mtp_only)
        fail(g.path, ": this is an MTP-only GGUF (no trunk layers, no blk.0.attn_norm.weight); "
                     "pass it as a drafter with --draft-model next to a full model");

    std::map<std::string, int> type_counts;
    for (const auto& info : g.tensors) {
        ck.file_tensor_names.push_back(info.name);
        std::string canonical;
        std::string rest;
        int block = -1;
        const char* expert_proj = nullptr;
        if (const char* top = canonical_of(kTopTensors, info.name)) {
            canonical = top;
        } else if (split_block_name(info.name, &block, &rest)) {
            // Metadata that puts the MTP block elsewhere would run a cut-down trunk (the
            // layers counted as MTP ones left unused) with no head, and only say "no MTP head".
            if (starts_with(rest, "nextn.") && block != n_trunk)
                fail(g.path, ": ", info.name, " is an MTP (nextn) tensor, but ", arch,
                     ".block_count ", n_trunk + ck.config.mtp_layers, " and ", arch,
                     ".nextn_predict_layers ", ck.config.mtp_layers, " put the MTP block at blk.",
                     n_trunk);
            const bool is_mtp = block >= n_trunk;
            if (is_mtp && !load_mtp) continue;
            const std::string prefix = is_mtp ? "mtp.layers." + std::to_string(block - n_trunk) + "."
                                              : "layers." + std::to_string(block) + ".";
            if (const char* c = canonical_of(kBlockTensors, rest)) {
                canonical = prefix + c;
            } else if ((expert_proj = canonical_of(kStackedExperts, rest))) {
                canonical = prefix + "mlp.experts.";  // completed per expert below
            } else if (const char* n = canonical_of(kNextnTensors, rest); n && block == n_trunk) {
                canonical = n;
            }
        }
        if (canonical.empty()) {
            // Kept under its file name so that inspect can list it as unused.
            if (ggml_type_to_dtype(info.ggml_type)) ck.tensors[info.name] = raw_from_gguf(g, info);
            continue;
        }
        RawTensor t = raw_from_gguf(g, info);
        type_counts[dtype_name(t.dtype)]++;
        if (expert_proj) {
            if (t.shape.size() != 3)
                fail(g.path, ": expert tensor '", info.name, "' has shape ", t.shape_str(),
                     ", expected [experts, rows, cols]");
            for (int64_t e = 0; e < t.shape[0]; ++e)
                ck.tensors[canonical + std::to_string(e) + "." + expert_proj] = expert_view(t, e);
            continue;
        }
        // The shared-expert gate is a single output row: [1, H] whatever the file's rank.
        if (rest == "ffn_gate_inp_shexp.weight" && t.shape.size() == 1) t.shape = {1, t.shape[0]};
        if (is_one_plus_norm(canonical)) ck.norms_already_shifted.insert(canonical);
        ck.tensors[canonical] = std::move(t);
    }

    ck.file_name_of = [n_trunk](const std::string& canonical) {
        return gguf_name_of(canonical, n_trunk);
    };
    const RawTensor* embed = ck.find("embed_tokens.weight");
    if (!embed) fail(g.path, ": missing tensor 'token_embd.weight'");
    if (embed->shape.size() != 2 || embed->shape[1] != ck.config.hidden_size)
        fail(g.path, ": token_embd.weight has shape ", embed->shape_str(), ", expected [vocab, ",
             ck.config.hidden_size, "]");
    ck.config.vocab_size = embed->shape[0];
    ck.config.tied_embeddings = ck.find("lm_head.weight") == nullptr;
    ck.config.validate(g.path);

    ck.mtp_source = ck.find("mtp.fc.weight") ? "inline" : "none";
    std::string types;
    for (const auto& [name, n] : type_counts) types += (types.empty() ? "" : ", ") + name + " x" + std::to_string(n);
    ck.notes.push_back("GGUF v" + std::to_string(g.version) + " '" + arch + "', tensor types: " + types +
                       "; block types no kernel reads are dequantized with ggml's formulas (inspect: 'weights held as')");
    ck.notes.push_back("Gated DeltaNet value heads are in GGUF's tiled order");
    if (ck.config.tied_embeddings) ck.notes.push_back("no output.weight: lm_head tied to token_embd");
    if (ck.mtp_source == "inline")
        ck.notes.push_back("MTP head: block blk." + std::to_string(n_trunk) + " (nextn)");
    else if (ck.config.mtp_layers > 0 && !load_mtp)
        ck.notes.push_back("MTP head present in the file but not loaded (--no-mtp)");
    if (g.find("tokenizer.ggml.tokens")) ck.notes.push_back("tokenizer: embedded tokenizer.ggml.* metadata");
    return ck;
}

Checkpoint load_gguf_checkpoint(const std::string& path, const LoadOptions& options) {
    Checkpoint ck = gguf_to_checkpoint(read_gguf(path), options.load_mtp, false);
    if (!options.draft_model.empty()) attach_drafter(ck, options.draft_model);
    return ck;
}

Checkpoint load_gguf_drafter(const std::string& path) {
    return gguf_to_checkpoint(read_gguf(path), true, true);
}

}  // namespace nextn
