#pragma once
// The tokenizer that belongs to a checkpoint: tokenizer.json beside the weights, or the
// tokenizer.ggml.* metadata of a lone GGUF file.
#include <optional>
#include <string>

#include "formats/checkpoint.h"
#include "tokenizer/tokenizer.h"

namespace nextn {

// nullopt when the checkpoint carries no tokenizer.
std::optional<Tokenizer> load_model_tokenizer(const Checkpoint& ck);

// A tokenizer from a path that may be a model directory, a tokenizer.json, or a .gguf file.
Tokenizer load_tokenizer_from_path(const std::string& path);

}  // namespace nextn
