#pragma once
// GGUF checkpoints (llama.cpp architectures qwen35 and qwen35moe), MTP head as blk.N.nextn.*.
#include <string>

#include "formats/checkpoint.h"
#include "formats/gguf.h"

namespace nextn {

// Whether the file starts with GGUF's magic bytes. A file named .gguf (any case) without them
// is an error saying so, rather than one the caller's other formats would give ("not valid
// JSON", "unrecognised model file").
bool is_gguf_file(const std::string& path);

// A whole model. The tokenizer lives in the file's metadata: read it with
// read_gguf_tokenizer(path) (formats/gguf_tokenizer.h). Fails for MTP-only files (they are
// drafters: see load_gguf_drafter) and for tensor types we cannot dequantize.
Checkpoint load_gguf_checkpoint(const std::string& path, const LoadOptions& options);

// Any qwen35/qwen35moe GGUF holding an MTP block (llama.cpp's MTP-only `--mtp` output or a
// full model), loaded for its mtp.* tensors; trunk tensors, if present, come along.
Checkpoint load_gguf_drafter(const std::string& path);

// The Checkpoint form of an already-read GGUF file (exposed for tests).
Checkpoint gguf_to_checkpoint(const GgufFile& file, bool load_mtp, bool allow_mtp_only);

}  // namespace nextn
