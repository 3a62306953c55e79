#pragma once
// Hyper-parameters of a Qwen3.5 / Qwen3.6 text model (dense or MoE), whatever file they came from.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace nextn {

struct ModelConfig {
    std::string architecture;  // "qwen3_5" or "qwen3_5_moe"
    int64_t vocab_size = 0;
    int64_t hidden_size = 0;       // H
    int n_layers = 0;              // trunk layers, MTP layers not included
    std::vector<bool> is_linear;   // per trunk layer: Gated DeltaNet (true) or full attention
    // full attention
    int n_q_heads = 0;
    int n_kv_heads = 0;
    int head_dim = 0;     // D, explicit (not H / n_q_heads)
    int rotary_dims = 0;  // int(D * partial_rotary_factor)
    double rope_theta = 1e7;
    // Gated DeltaNet
    int gdn_k_heads = 0;  // Hk
    int gdn_v_heads = 0;  // Hv, a multiple of Hk
    int gdn_k_dim = 0;    // Dk
    int gdn_v_dim = 0;    // Dv
    int conv_kernel = 4;
    // Value-head order: false = grouped (HF/MLX: v-head j uses k-head j / (Hv/Hk)),
    // true = tiled (GGUF: v-head j uses k-head j % Hk).
    bool gdn_tiled_heads = false;
    // FFN
    int64_t ffn_size = 0;  // dense SwiGLU width
    bool moe = false;
    int n_experts = 0;
    int n_experts_used = 0;
    int64_t expert_ffn_size = 0;
    int64_t shared_expert_ffn_size = 0;
    float rms_eps = 1e-6f;
    bool tied_embeddings = false;
    int mtp_layers = 0;
    std::vector<int> eos_token_ids;
    int64_t max_positions = 0;

    int64_t gdn_key_dim() const { return int64_t(gdn_k_heads) * gdn_k_dim; }
    int64_t gdn_value_dim() const { return int64_t(gdn_v_heads) * gdn_v_dim; }
    int64_t gdn_conv_dim() const { return 2 * gdn_key_dim() + gdn_value_dim(); }

    // Checks internal consistency (divisibility, positive sizes); throws Error naming the field.
    void validate(const std::string& origin) const;
};

// Parses a Hugging Face config.json (multimodal layout with text_config, or text-only layout).
// `origin` names the file in error messages. Unsupported architectures fail with
// "unsupported architecture '<name>' (supported: qwen3_5, qwen3_5_moe)".
ModelConfig parse_hf_config(const nlohmann::json& root, const std::string& origin);

// The same from config.json text; malformed JSON fails as a nextn::Error naming `origin`.
ModelConfig parse_hf_config_text(std::string_view json_text, const std::string& origin);

}  // namespace nextn
