#pragma once
// GGUF checkpoints (llama.cpp architectures qwen35 and qwen35moe), MTP head as blk.N.nextn.*.
#include <string>

#include "formats/checkpoint.h"

namespace nextn {

bool is_gguf_file(const std::string& path);
Checkpoint load_gguf_checkpoint(const std::string& path, const LoadOptions& options);

}  // namespace nextn
