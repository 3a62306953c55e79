#pragma once
// MLX (mlx-community) safetensors checkpoints: affine-quantized weights, renamed prefixes,
// inline or sidecar MTP heads.
#include <map>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "formats/checkpoint.h"

namespace nextn {

// True when the directory holds an MLX conversion: an MLX quantization config, an MTP sidecar
// entry, or MLX tensor names (language_model.model.*) in its safetensors files.
bool is_mlx_checkpoint(const nlohmann::json& config, const std::string& dir);

Checkpoint load_mlx_checkpoint(const std::string& dir, const nlohmann::json& config,
                               const LoadOptions& options);

// Canonical name of a tensor name found in MLX (or HF) files: language_model.model.X -> X,
// language_model.lm_head.X -> lm_head.X, language_model.mtp.X -> mtp.X, model.X -> X.
// Returns "" for tensors the text model never uses (vision tower).
std::string mlx_canonical_name(const std::string& file_name);

}  // namespace nextn
