#pragma once
// Internal state of nextn::Tokenizer, shared by its loading and its encode/decode code.
#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/piece_cache.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace nextn {

struct Tokenizer::Impl {
    BpeModel bpe;
    Normalizer normalizer;
    PreTokenizer pre_tokenizer;
    std::vector<AddedToken> added;
    AddedTokenMatcher matcher;

    // Per id, [vocab_size]: text shown by id_to_token, raw bytes for decoding, flags.
    std::vector<std::string> token_text;
    std::vector<std::string> token_bytes;
    std::vector<uint8_t> flags;  // kAdded | kSpecial
    static constexpr uint8_t kAdded = 1, kSpecial = 2;

    int32_t bos_id = -1, eos_id = -1, pad_id = -1;
    std::vector<int32_t> eos_ids;
    std::string bos_token, eos_token;
    bool add_bos = false, add_eos = false;
    std::string chat_template;
    mutable CachePool caches;  // BPE piece caches lent to encode calls

    // Fills token_text / token_bytes / flags / matcher from bpe and added. Call once at the end.
    void finish(const std::string& where);
    // Resolves a token text to an id, -1 when absent.
    int32_t lookup(const std::string& text) const;
};

}  // namespace nextn
