#pragma once
// A loaded checkpoint in one canonical form, whatever the file format: the model config and the
// weights under canonical names, still pointing into the mapped files.
//
// Canonical names are the Hugging Face text-model names with the trunk prefix removed:
//   embed_tokens.weight, norm.weight, lm_head.weight (absent when tied),
//   layers.{i}.input_layernorm.weight, layers.{i}.post_attention_layernorm.weight,
//   layers.{i}.linear_attn.{in_proj_qkv,in_proj_z,in_proj_b,in_proj_a,out_proj}.weight,
//   layers.{i}.linear_attn.conv1d.weight      (any of [C,1,K], [C,K,1], [C,K]: same memory order)
//   layers.{i}.linear_attn.A_log  OR  layers.{i}.linear_attn.A   (A = -exp(A_log), GGUF's ssm_a)
//   layers.{i}.linear_attn.dt_bias, layers.{i}.linear_attn.norm.weight,
//   layers.{i}.self_attn.{q_proj,k_proj,v_proj,o_proj,q_norm,k_norm}.weight,
//   layers.{i}.mlp.{gate_proj,up_proj,down_proj}.weight                      (dense)
//   layers.{i}.mlp.gate.weight, layers.{i}.mlp.experts.{e}.{gate_proj,up_proj,down_proj}.weight,
//   layers.{i}.mlp.shared_expert.{gate_proj,up_proj,down_proj}.weight,
//   layers.{i}.mlp.shared_expert_gate.weight                                  (MoE, per expert)
//   mtp.fc.weight, mtp.pre_fc_norm_embedding.weight, mtp.pre_fc_norm_hidden.weight,
//   mtp.norm.weight, mtp.layers.0.* (as a full-attention layer above)
// Fused expert tensors are split into per-expert views by the format adapter.
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "formats/model_config.h"
#include "formats/raw_tensor.h"

namespace nextn {

struct Checkpoint {
    std::string path;
    std::string format;  // "safetensors", "mlx", "gguf"
    ModelConfig config;
    std::map<std::string, RawTensor> tensors;  // canonical name -> tensor
    // Canonical names of (1+w) norms whose stored value already includes the +1 (GGUF, MLX).
    std::set<std::string> norms_already_shifted;
    // Value-head order of the Gated DeltaNet tensors: HF/MLX group value heads by key head
    // (v-head j uses k-head j / (Hv/Hk)); GGUF tiles them (v-head j uses k-head j % Hk).
    bool gdn_tiled_heads = false;
    std::string mtp_source = "none";  // "inline", "sidecar", "drafter", "none"
    std::string tokenizer_dir;        // directory holding tokenizer.json, if any
    std::vector<std::string> notes;   // things the loader did that a user may want to know
    std::vector<std::string> file_tensor_names;  // every tensor name present in the files
    std::vector<std::shared_ptr<void>> keep_alive;  // mapped files and converted buffers
    // The name a canonical tensor has (or would have) in the files, for errors about it; unset
    // where the format keeps canonical names.
    std::function<std::string(const std::string& canonical)> file_name_of;

    const RawTensor* find(const std::string& name) const;
    const RawTensor& require(const std::string& name) const;
};

struct LoadOptions {
    bool load_mtp = true;
    std::string draft_model;  // separate MTP drafter checkpoint (--draft-model), may be empty
};

// Opens a model directory or file in any supported format.
Checkpoint load_checkpoint(const std::string& path, const LoadOptions& options = {});

// Hugging Face safetensors directory (also the entry point the MLX adapter builds on).
Checkpoint load_hf_checkpoint(const std::string& dir, const LoadOptions& options);

}  // namespace nextn
