#pragma once
// Byte-level BPE model: vocab (byte-level strings -> ids) and ranked merges. Works on token ids
// directly: a piece's bytes become the ids of their one-character tokens, then the adjacent pair
// with the lowest merge rank is merged (leftmost on a tie) until no pair has a merge.
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/piece_cache.h"

namespace nextn {

// Which rank a pair listed twice in the merges keeps. The formats' own readers differ: Hugging
// Face tokenizers collects tokenizer.json's merges into a hash map, so the later entry wins;
// llama.cpp emplaces a GGUF's into a std::map, so the first does.
enum class RepeatedMerge { KeepFirst, KeepLast };

class BpeModel {
public:
    BpeModel() = default;
    // `vocab` is indexed by id ("" for ids without a vocab token, e.g. added-token-only ids).
    // `merges` are (left, right) vocab strings, best first. `where` names the source for errors.
    BpeModel(std::vector<std::string> vocab,
             const std::vector<std::pair<std::string, std::string>>& merges, bool ignore_merges,
             RepeatedMerge repeated, const std::string& where);

    // Appends the ids for one pre-tokenized piece given as raw bytes (before the byte-level
    // mapping), with an optional leading space byte. `cache` holds earlier results (may be null).
    void encode_piece(std::string_view bytes, bool prefix_space, std::vector<int32_t>& out,
                      PieceCache* cache) const;

    // -1 when the string is not in the vocab.
    int32_t token_to_id(std::string_view token) const;
    // Byte-level vocab string of an id ("" when the id has none).
    const std::string& id_to_token(int32_t id) const;
    int32_t size() const { return static_cast<int32_t>(id_to_token_.size()); }

private:
    struct Merge {
        int32_t rank;
        int32_t merged_id;
    };
    static uint64_t pair_key(int32_t left, int32_t right) {
        return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
    }
    const Merge* find_merge(int32_t left, int32_t right) const;
    void merge_small(std::vector<int32_t>& out, std::size_t first) const;
    void merge_large(std::vector<int32_t>& symbols) const;

    std::vector<std::string> id_to_token_;
    std::unordered_map<std::string, int32_t> token_to_id_;
    // Open-addressing table of merges keyed by pair_key (linear probing, power-of-two size):
    // one probe usually lands on the right slot, where std::unordered_map chases two pointers.
    struct MergeSlot {
        uint64_t key = kEmptyKey;
        Merge merge{};
    };
    static constexpr uint64_t kEmptyKey = ~uint64_t{0};
    static uint64_t slot_hash(uint64_t key) {
        key ^= key >> 29;
        key *= 0xBF58476D1CE4E5B9ull;
        return key ^ (key >> 32);
    }
    void insert_merge(uint64_t key, Merge merge, RepeatedMerge repeated);
    std::vector<MergeSlot> merge_slots_;
    uint64_t merge_mask_ = 0;
    int32_t byte_ids_[256] = {};  // id of the one-character token of each byte, -1 if absent
    bool ignore_merges_ = false;

};

}  // namespace nextn
