#pragma once
// The tokenizer a GGUF file carries in its tokenizer.ggml.* metadata, as plain data for the
// tokenizer to build itself from (so a lone .gguf file runs).
#include <cstdint>
#include <string>
#include <vector>

#include "formats/gguf.h"

namespace nextn {

struct GgufTokenizerData {
    std::string model;  // tokenizer.ggml.model, e.g. "gpt2" (byte-level BPE)
    std::string pre;    // tokenizer.ggml.pre, the pre-tokenizer name, e.g. "qwen35"
    std::vector<std::string> tokens;  // id -> token text (GPT-2 byte-to-unicode form)
    std::vector<std::string> merges;  // "left right", highest priority first
    // id -> llama.cpp token type: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused,
    // 6 byte. Empty when the file has none.
    std::vector<int32_t> token_types;
    // Special ids; -1 when the file does not set them.
    int64_t bos_id = -1;
    int64_t eos_id = -1;
    int64_t eot_id = -1;
    int64_t pad_id = -1;
    int64_t unk_id = -1;
    bool add_bos = false;         // tokenizer.ggml.add_bos_token (false when absent)
    bool add_eos = false;         // tokenizer.ggml.add_eos_token
    std::string chat_template;    // tokenizer.chat_template, "" when absent
};

// Reads the tokenizer metadata; fails naming the file when it has no tokenizer.ggml.tokens or
// when ids, types or counts are inconsistent.
GgufTokenizerData read_gguf_tokenizer(const GgufFile& file);
GgufTokenizerData read_gguf_tokenizer(const std::string& path);

}  // namespace nextn
