#include "formats/model_config.h"

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
    } else {
        fail(origin, ": unsupported architecture '", type.empty() ? "(none)" : type,
             "' (supported: qwen3_5, qwen3_5_moe)");
    }
    c.moe = c.architecture == "qwen3_5_moe";
    c.vocab_size = require_int(text, "vocab_size", origin);
    c.hidden_size = require_int(text, "hidden_size", origin);
    c.n_layers = int(require_int(text, "num_hidden_layers", origin));
    c.n_q_heads = int(require_int(text, "num_attention_heads", origin));
    c.n_kv_heads = int(require_int(text, "num_key_value_heads", origin));
    c.head_dim = int(optional_int(text, "head_dim", c.n_q_heads ? c.hidden_size / c.n_q_heads : 0,
                                  origin));
    c.gdn_k_heads = int(require_int(text, "linear_num_key_heads", origin));
    c.gdn_v_heads = int(require_int(text, "linear_num_value_heads", origin));
    c.gdn_k_dim = int(require_int(text, "linear_key_head_dim", origin));
    c.gdn_v_dim = int(require_int(text, "linear_value_head_dim", origin));
    c.conv_kernel = int(optional_int(text, "linear_conv_kernel_dim", 4, origin));
    c.rms_eps = float(optional_number(text, "rms_norm_eps", 1e-6, origin));
    c.max_positions = optional_int(text, "max_position_embeddings", 262144, origin);
    c.mtp_layers = int(optional_int(text, "mtp_num_hidden_layers", 0, origin));

    // RoPE: rope_parameters (new) or top-level rope_theta / partial_rotary_factor (older exports).
    double theta = optional_number(text, "rope_theta", 1e7, origin);
    double partial = optional_number(text, "partial_rotary_factor", 1.0, origin);
    if (auto it = text.find("rope_parameters"); it != text.end() && it->is_object()) {
        theta = optional_number(*it, "rope_theta", theta, origin);
        partial = optional_number(*it, "partial_rotary_factor", partial, origin);
    }
    c.rope_theta = theta;
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
        c.n_experts = int(require_int(text, "num_experts", origin));
        c.n_experts_used = int(require_int(text, "num_experts_per_tok", origin));
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
        if (it->is_number_integer()) c.eos_token_ids.push_back(it->get<int>());
        if (it->is_array())
            for (const auto& v : *it)
                if (v.is_number_integer()) c.eos_token_ids.push_back(v.get<int>());
        if (!c.eos_token_ids.empty()) break;
    }
    c.validate(origin);
    return c;
}

}  // namespace nextn
