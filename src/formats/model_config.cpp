#include "formats/model_config.h"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace nextn {

namespace {

const nlohmann::json& require(const nlohmann::json& obj, const char* key, const std::string& origin) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) fail(origin, ": missing required field '", key, "'");
    return *it;
}

int64_t require_int(const nlohmann::json& obj, const char* key, const std::string& origin) {
    const auto& v = require(obj, key, origin);
    if (!v.is_number_integer()) fail(origin, ": field '", key, "' must be an integer");
    return v.get<int64_t>();
}

int64_t optional_int(const nlohmann::json& obj, const char* key, int64_t fallback,
                     const std::string& origin) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return fallback;
    if (!it->is_number_integer()) fail(origin, ": field '", key, "' must be an integer");
    return it->get<int64_t>();
}

double optional_number(const nlohmann::json& obj, const char* key, double fallback,
                       const std::string& origin) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return fallback;
    if (!it->is_number()) fail(origin, ": field '", key, "' must be a number");
    return it->get<double>();
}

// An integer field stored in an int: a value outside int's range fails instead of wrapping to a
// plausible-looking small (or negative) number.
int to_int(int64_t v, const char* key, const std::string& origin) {
    if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
        fail(origin, ": field '", key, "' value ", v, " is out of range");
    return int(v);
}

int require_int32(const nlohmann::json& obj, const char* key, const std::string& origin) {
    return to_int(require_int(obj, key, origin), key, origin);
}

int optional_int32(const nlohmann::json& obj, const char* key, int fallback, const std::string& origin) {
    return to_int(optional_int(obj, key, fallback, origin), key, origin);
}

// Upper limits far above any real Qwen3.5 / 3.6 model (hidden 8192, 256k vocabulary, 512
// experts, 94 layers), low enough that the products the loader and model form from them (vocab x
// hidden, experts x ffn x hidden, heads x head_dim) stay far from int64 overflow and that a
// corrupt value fails here instead of as a huge allocation later.
constexpr int64_t kMaxVocab = int64_t(1) << 24;
constexpr int64_t kMaxWidth = int64_t(1) << 20;  // hidden and FFN widths
constexpr int64_t kMaxLayers = 4096;
constexpr int64_t kMaxHeads = 4096;
constexpr int64_t kMaxHeadDim = int64_t(1) << 14;
constexpr int64_t kMaxExperts = int64_t(1) << 14;
constexpr int64_t kMaxConvKernel = 64;

std::string model_type_of(const nlohmann::json& root) {
    auto it = root.find("model_type");
    if (it != root.end() && it->is_string()) return it->get<std::string>();
    return "";
}

}  // namespace

void ModelConfig::validate(const std::string& origin) const {
    auto positive = [&](int64_t v, const char* name) {
        if (v <= 0) fail(origin, ": '", name, "' must be positive (got ", v, ")");
    };
    positive(vocab_size, "vocab_size");
    positive(hidden_size, "hidden_size");
    positive(n_layers, "num_hidden_layers");
    positive(n_q_heads, "num_attention_heads");
    positive(n_kv_heads, "num_key_value_heads");
    positive(head_dim, "head_dim");
    positive(gdn_k_heads, "linear_num_key_heads");
    positive(gdn_v_heads, "linear_num_value_heads");
    positive(gdn_k_dim, "linear_key_head_dim");
    positive(gdn_v_dim, "linear_value_head_dim");
    positive(conv_kernel, "linear_conv_kernel_dim");
    auto at_most = [&](int64_t v, int64_t limit, const char* name) {
        if (v > limit) fail(origin, ": '", name, "' ", v, " is implausibly large (limit ", limit, ")");
    };
    at_most(vocab_size, kMaxVocab, "vocab_size");
    at_most(hidden_size, kMaxWidth, "hidden_size");
    at_most(n_layers, kMaxLayers, "num_hidden_layers");
    at_most(n_q_heads, kMaxHeads, "num_attention_heads");
    at_most(n_kv_heads, kMaxHeads, "num_key_value_heads");
    at_most(head_dim, kMaxHeadDim, "head_dim");
    at_most(gdn_k_heads, kMaxHeads, "linear_num_key_heads");
    at_most(gdn_v_heads, kMaxHeads, "linear_num_value_heads");
    at_most(gdn_k_dim, kMaxHeadDim, "linear_key_head_dim");
    at_most(gdn_v_dim, kMaxHeadDim, "linear_value_head_dim");
    at_most(conv_kernel, kMaxConvKernel, "linear_conv_kernel_dim");
    at_most(ffn_size, kMaxWidth, "intermediate_size");
    at_most(expert_ffn_size, kMaxWidth, "moe_intermediate_size");
    at_most(shared_expert_ffn_size, kMaxWidth, "shared_expert_intermediate_size");
    at_most(n_experts, kMaxExperts, "num_experts");
    at_most(mtp_layers, kMaxLayers, "mtp_num_hidden_layers");
    if (mtp_layers < 0) fail(origin, ": 'mtp_num_hidden_layers' must not be negative (got ", mtp_layers, ")");
    if (shared_expert_ffn_size < 0)
        fail(origin, ": 'shared_expert_intermediate_size' must not be negative (got ",
             shared_expert_ffn_size, ")");
    if (max_positions < 0)
        fail(origin, ": 'max_position_embeddings' must not be negative (got ", max_positions, ")");
    // Written as negations so that NaN fails too.
    if (!(rope_theta > 0) || !std::isfinite(rope_theta))
        fail(origin, ": rope_theta must be positive and finite (got ", rope_theta, ")");
    if (!(rms_eps > 0) || !(rms_eps < 1))
        fail(origin, ": rms_norm_eps must lie in (0, 1) (got ", rms_eps, ")");
    if (n_q_heads % n_kv_heads != 0)
        fail(origin, ": num_attention_heads ", n_q_heads, " is not a multiple of num_key_value_heads ",
             n_kv_heads);
    if (gdn_v_heads % gdn_k_heads != 0)
        fail(origin, ": linear_num_value_heads ", gdn_v_heads,
             " is not a multiple of linear_num_key_heads ", gdn_k_heads);
    if (rotary_dims < 0 || rotary_dims > head_dim || rotary_dims % 2 != 0)
        fail(origin, ": rotary dimensions ", rotary_dims, " invalid for head_dim ", head_dim);
    if (int(is_linear.size()) != n_layers)
        fail(origin, ": layer_types has ", is_linear.size(), " entries for ", n_layers, " layers");
    if (moe) {
        positive(n_experts, "num_experts");
        positive(n_experts_used, "num_experts_per_tok");
        positive(expert_ffn_size, "moe_intermediate_size");
        if (n_experts_used > n_experts)
            fail(origin, ": num_experts_per_tok ", n_experts_used, " > num_experts ", n_experts);
    } else {
        positive(ffn_size, "intermediate_size");
    }
}

ModelConfig parse_hf_config(const nlohmann::json& root, const std::string& origin) {
    if (!root.is_object()) fail(origin, ": config is not a JSON object");
    std::string top_type = model_type_of(root);
    const nlohmann::json& text = root.contains("text_config") && root["text_config"].is_object()
                                     ? root["text_config"]
                                     : root;
    std::string type = top_type.empty() ? model_type_of(text) : top_type;
    ModelConfig c;
    if (type == "qwen3_5" || type == "qwen3_5_text") {
        c.architecture = "qwen3_5";
    } else if (type == "qwen3_5_moe" || type == "qwen3_5_moe_text") {
        c.architecture = "qwen3_5_moe";
    } else if (type == "qwen3_5_mtp") {
        fail(origin,
             ": this is an MTP drafter (model_type qwen3_5_mtp), not a model; pass it with "
             "--draft-model next to a full model");
    } else {
        fail(origin, ": unsupported architecture '", type.empty() ? "(none)" : type,
             "' (supported: qwen3_5, qwen3_5_moe)");
    }
    c.moe = c.architecture == "qwen3_5_moe";
    c.vocab_size = require_int(text, "vocab_size", origin);
    c.hidden_size = require_int(text, "hidden_size", origin);
    c.n_layers = require_int32(text, "num_hidden_layers", origin);
    // Checked here, before the layer loop below runs that many times.
    if (c.n_layers <= 0 || c.n_layers > kMaxLayers)
        fail(origin, ": 'num_hidden_layers' must lie in 1..", kMaxLayers, " (got ", c.n_layers, ")");
    c.n_q_heads = require_int32(text, "num_attention_heads", origin);
    c.n_kv_heads = require_int32(text, "num_key_value_heads", origin);
    // The default divides by the head count: only a positive one (INT64_MIN / -1 traps).
    const int64_t default_head_dim = c.n_q_heads > 0 ? c.hidden_size / c.n_q_heads : 0;
    c.head_dim = to_int(optional_int(text, "head_dim", default_head_dim, origin), "head_dim", origin);
    c.gdn_k_heads = require_int32(text, "linear_num_key_heads", origin);
    c.gdn_v_heads = require_int32(text, "linear_num_value_heads", origin);
    c.gdn_k_dim = require_int32(text, "linear_key_head_dim", origin);
    c.gdn_v_dim = require_int32(text, "linear_value_head_dim", origin);
    c.conv_kernel = optional_int32(text, "linear_conv_kernel_dim", 4, origin);
    // Range-checked as a double: converting one outside float's range is undefined.
    const double rms_eps = optional_number(text, "rms_norm_eps", 1e-6, origin);
    if (!(rms_eps > 0) || !(rms_eps < 1))
        fail(origin, ": rms_norm_eps must lie in (0, 1) (got ", rms_eps, ")");
    c.rms_eps = float(rms_eps);
    c.max_positions = optional_int(text, "max_position_embeddings", 262144, origin);
    c.mtp_layers = optional_int32(text, "mtp_num_hidden_layers", 0, origin);

    // RoPE: rope_parameters (new) or top-level rope_theta / partial_rotary_factor (older exports).
    double theta = optional_number(text, "rope_theta", 1e7, origin);
    double partial = optional_number(text, "partial_rotary_factor", 1.0, origin);
    if (auto it = text.find("rope_parameters"); it != text.end() && it->is_object()) {
        theta = optional_number(*it, "rope_theta", theta, origin);
        partial = optional_number(*it, "partial_rotary_factor", partial, origin);
    }
    c.rope_theta = theta;
    // Checked before the product is converted to int: an out-of-range double -> int is undefined.
    if (!(partial >= 0) || !(partial <= 1))
        fail(origin, ": partial_rotary_factor must lie in [0, 1] (got ", partial, ")");
    c.rotary_dims = int(double(c.head_dim) * partial);

    // Layer types: explicit list, else every full_attention_interval-th layer is attention.
    if (auto it = text.find("layer_types"); it != text.end() && it->is_array()) {
        for (const auto& t : *it) {
            if (!t.is_string()) fail(origin, ": layer_types entries must be strings");
            std::string s = t.get<std::string>();
            if (s == "linear_attention") {
                c.is_linear.push_back(true);
            } else if (s == "full_attention") {
                c.is_linear.push_back(false);
            } else {
                fail(origin, ": unknown layer type '", s, "' in layer_types");
            }
        }
    } else {
        int64_t interval = optional_int(text, "full_attention_interval", 4, origin);
        if (interval <= 0) fail(origin, ": full_attention_interval must be positive");
        for (int i = 0; i < c.n_layers; ++i) c.is_linear.push_back((i + 1) % interval != 0);
    }

    if (c.moe) {
        c.n_experts = require_int32(text, "num_experts", origin);
        c.n_experts_used = require_int32(text, "num_experts_per_tok", origin);
        c.expert_ffn_size = require_int(text, "moe_intermediate_size", origin);
        c.shared_expert_ffn_size = optional_int(text, "shared_expert_intermediate_size", 0, origin);
    } else {
        c.ffn_size = require_int(text, "intermediate_size", origin);
    }

    // tie_word_embeddings may sit at either level; the caller overrides it from the presence
    // of lm_head.weight, which is what actually decides.
    bool tied = false;
    if (auto it = root.find("tie_word_embeddings"); it != root.end() && it->is_boolean())
        tied = it->get<bool>();
    if (auto it = text.find("tie_word_embeddings"); it != text.end() && it->is_boolean())
        tied = it->get<bool>();
    c.tied_embeddings = tied;

    for (const nlohmann::json* src : {&text, &root}) {
        auto it = src->find("eos_token_id");
        if (it == src->end()) continue;
        if (it->is_number_integer())
            c.eos_token_ids.push_back(to_int(it->get<int64_t>(), "eos_token_id", origin));
        if (it->is_array())
            for (const auto& v : *it)
                if (v.is_number_integer())
                    c.eos_token_ids.push_back(to_int(v.get<int64_t>(), "eos_token_id", origin));
        if (!c.eos_token_ids.empty()) break;
    }
    c.validate(origin);
    return c;
}

ModelConfig parse_hf_config_text(std::string_view json_text, const std::string& origin) {
    nlohmann::json root;
    try {
        root = nlohmann::json::parse(json_text);
    } catch (const nlohmann::json::exception& e) {
        fail(origin, ": not valid JSON: ", e.what());
    }
    return parse_hf_config(root, origin);
}

}  // namespace nextn
