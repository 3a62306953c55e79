#pragma once
// Helpers shared by the MLX loader, the drafter loader and the GGUF loader: the canonical names
// of zero-centred (1+w) norms, numeric detection of already-shifted norms, and assembly of MLX
// affine-quantized tensors (packed U32 .weight + .scales + .biases) into RawTensors.
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "formats/checkpoint.h"
#include "formats/raw_tensor.h"

namespace nextn {

// True for canonical names of RMSNorm weights applied as x̂·(1+w): layer norms, q/k norms, the
// final norm and the MTP norms. linear_attn.norm (a plain gated norm) is not one of them.
bool is_one_plus_norm(const std::string& canonical);

// Mean of the stored values of the given norm tensors. Zero-centred (unshifted) norms have a
// mean near 0, shifted ones near 1; 0.5 separates them.
double mean_norm_value(const std::vector<const RawTensor*>& norms);
constexpr double kShiftedNormThreshold = 0.5;

// MLX quantization settings from config.json ("quantization" or "quantization_config"):
// default bits / group size plus per-module-path overrides ("path": {bits, group_size}) and
// exclusions ("path": false).
struct MlxQuantConfig {
    bool present = false;
    int bits = 0;
    int group_size = 0;
    std::string mode = "affine";
    struct Override {
        bool quantized = true;
        int bits = 0;
        int group_size = 0;
    };
    std::map<std::string, Override> overrides;  // by module path as stored in the files
};

MlxQuantConfig parse_mlx_quant_config(const nlohmann::json& config, const std::string& origin);

// Turns a file's tensors into logical ones: every "<path>.weight" of dtype U32 with sibling
// "<path>.scales" (and "<path>.biases") becomes one MLX_AFFINE tensor named "<path>.weight" of
// logical shape [.., out, in]; the scales/biases entries are consumed. Other tensors pass
// through unchanged. Bits and group size come from `quant` (override for <path>, else
// default) and are checked against the packed and scale shapes; a packed <path> the config
// excludes ("path": false) is an error.
std::map<std::string, RawTensor> assemble_mlx_tensors(const std::map<std::string, RawTensor>& file,
                                                      const MlxQuantConfig& quant,
                                                      const std::string& origin);

// Per-expert view e of a stacked [E, rows, cols] tensor (plain, ggml-block or MLX_AFFINE).
RawTensor expert_view(const RawTensor& stacked, int64_t e);

// Splits every "<prefix>switch_mlp.{gate,up,down}_proj.weight" ([E, rows, cols]) in `tensors`
// into "<prefix>experts.{e}.{gate,up,down}_proj.weight" views, removing the stacked entry.
void split_switch_mlp(std::map<std::string, RawTensor>& tensors);

}  // namespace nextn
