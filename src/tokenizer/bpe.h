#pragma once
// Byte-level BPE model: vocab (byte-level strings -> ids) and ranked merges. Works on token ids
// directly: a piece's bytes become the ids of their one-character tokens, then the adjacent pair
// with the lowest merge rank is merged (leftmost on a tie) until no pair has a merge.
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace nextn {

class BpeModel {
public:
    BpeModel() = default;
    // `vocab` is indexed by id ("" for ids without a vocab token, e.g. added-token-only ids).
    // `merges` are (left, right) vocab strings, best first. `where` names the source for errors.
    BpeModel(std::vector<std::string> vocab, const std::vector<std::pair<std::string, std::string>>& merges,
             bool ignore_merges, const std::string& where);
    BpeModel(BpeModel&& other) noexcept;
    BpeModel& operator=(BpeModel&& other) noexcept;

    // Appends the ids for one pre-tokenized piece given as raw bytes (before the byte-level
    // mapping), with an optional leading space byte.
    void encode_piece(std::string_view bytes, bool prefix_space, std::vector<int32_t>& out) const;

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
    void merge_small(std::vector<int32_t>& symbols) const;
    void merge_large(std::vector<int32_t>& symbols) const;

    std::vector<std::string> id_to_token_;
    std::unordered_map<std::string, int32_t> token_to_id_;
    std::unordered_map<uint64_t, Merge> merges_;
    int32_t byte_ids_[256] = {};  // id of the one-character token of each byte, -1 if absent
    bool ignore_merges_ = false;

    // Piece -> ids cache. Text repeats the same words, so most pieces are found here.
    static constexpr std::size_t kCacheCapacity = 1 << 17;
    static constexpr std::size_t kCacheMaxPieceBytes = 64;
    mutable std::mutex cache_mutex_;
    mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

}  // namespace nextn
