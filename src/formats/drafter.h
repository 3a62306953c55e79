#pragma once
// Separately published MTP drafters (model_type qwen3_5_mtp, HF or MLX form, or an MTP-only
// GGUF) attached to a target checkpoint with --draft-model.
#include <string>

#include "formats/checkpoint.h"

namespace nextn {

// Loads the drafter at `path`, checks it against the target's dimensions and replaces the
// target's mtp.* tensors with it. Throws Error on a mismatch or an unknown architecture.
void attach_drafter(Checkpoint& target, const std::string& path);

}  // namespace nextn
