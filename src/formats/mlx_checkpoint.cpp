#include "formats/mlx_checkpoint.h"

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace nextn {

bool is_mlx_checkpoint(const nlohmann::json& config, const std::string& dir) {
    return config.contains("quantization") || config.contains("mlx_lm_extra_tensors");
}

Checkpoint load_mlx_checkpoint(const std::string& dir, const nlohmann::json& config,
                               const LoadOptions& options) {
    fail(dir, ": MLX checkpoints are not supported yet");
}

}  // namespace nextn
