#pragma once
// MLX (mlx-community) safetensors checkpoints: affine-quantized weights, renamed prefixes,
// inline or sidecar MTP heads.
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "formats/checkpoint.h"

namespace nextn {

// True when the directory holds an MLX conversion (quantization config or MLX tensor names).
bool is_mlx_checkpoint(const nlohmann::json& config, const std::string& dir);

Checkpoint load_mlx_checkpoint(const std::string& dir, const nlohmann::json& config,
                               const LoadOptions& options);

}  // namespace nextn
