#include "tokenizer/bpe.h"

#include <algorithm>
#include <climits>
#include <queue>

#include "core/error.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"

namespace nextn {

BpeModel::BpeModel(std::vector<std::string> vocab,
                   const std::vector<std::pair<std::string, std::string>>& merges,
                   bool ignore_merges, RepeatedMerge repeated, const std::string& where)
    : id_to_token_(std::move(vocab)), ignore_merges_(ignore_merges) {
    token_to_id_.reserve(id_to_token_.size() * 2);
    for (std::size_t id = 0; id < id_to_token_.size(); ++id) {
        if (id_to_token_[id].empty()) continue;
        token_to_id_.emplace(id_to_token_[id], static_cast<int32_t>(id));
    }
    for (int b = 0; b < 256; ++b) {
        std::string ch;
        utf8::append(ch, byte_level::char_for_byte(static_cast<uint8_t>(b)));
        byte_ids_[b] = token_to_id(ch);
    }
    std::size_t slots = 16;
    while (slots < merges.size() * 2) slots <<= 1;  // load factor <= 1/2
    merge_slots_.assign(slots, MergeSlot{});
    merge_mask_ = slots - 1;
    for (std::size_t rank = 0; rank < merges.size(); ++rank) {
        const auto& [left, right] = merges[rank];
        int32_t l = token_to_id(left), r = token_to_id(right), m = token_to_id(left + right);
        if (l < 0 || r < 0 || m < 0)
            fail(where, ": merge #", rank, " \"", left, " ", right, "\" uses a token missing from the vocab");
        insert_merge(pair_key(l, r), Merge{static_cast<int32_t>(rank), m}, repeated);
    }
}

int32_t BpeModel::token_to_id(std::string_view token) const {
    auto it = token_to_id_.find(std::string(token));
    return it == token_to_id_.end() ? -1 : it->second;
}

const std::string& BpeModel::id_to_token(int32_t id) const {
    static const std::string empty;
    if (id < 0 || id >= size()) return empty;
    return id_to_token_[id];
}

void BpeModel::insert_merge(uint64_t key, Merge merge, RepeatedMerge repeated) {
    for (uint64_t i = slot_hash(key) & merge_mask_;; i = (i + 1) & merge_mask_) {
        if (merge_slots_[i].key == key) {
            if (repeated == RepeatedMerge::KeepLast) merge_slots_[i].merge = merge;
            return;
        }
        if (merge_slots_[i].key == kEmptyKey) {
            merge_slots_[i] = {key, merge};
            return;
        }
    }
}

const BpeModel::Merge* BpeModel::find_merge(int32_t left, int32_t right) const {
    uint64_t key = pair_key(left, right);
    for (uint64_t i = slot_hash(key) & merge_mask_;; i = (i + 1) & merge_mask_) {
        const MergeSlot& slot = merge_slots_[i];
        if (slot.key == key) return &slot.merge;
        if (slot.key == kEmptyKey) return nullptr;
    }
}

// Merges out[first..] in place. O(n^2) in cheap steps but no heap: the rank of every adjacent
// pair is kept in `ranks`, so each round is one scan plus two hash look-ups. Best for the short
// pieces (at most 48 symbols) that make up most text.
void BpeModel::merge_small(std::vector<int32_t>& out, std::size_t first) const {
    constexpr int32_t kNone = INT32_MAX;
    int32_t* sym = out.data() + first;
    std::size_t n = out.size() - first;
    // ranks[i] / merged[i]: merge of the pair (sym[i], sym[i+1]); small pieces fit on the stack.
    int32_t ranks[48], merged[48];
    auto refresh = [&](std::size_t i) {
        const Merge* m = i + 1 < n ? find_merge(sym[i], sym[i + 1]) : nullptr;
        ranks[i] = m ? m->rank : kNone;
        merged[i] = m ? m->merged_id : -1;
    };
    for (std::size_t i = 0; i < n; ++i) refresh(i);
    while (n > 1) {
        std::size_t best = 0;
        for (std::size_t i = 1; i + 1 < n; ++i)
            if (ranks[i] < ranks[best]) best = i;  // strict: leftmost wins a tie
        if (ranks[best] == kNone) break;
        sym[best] = merged[best];
        for (std::size_t i = best + 1; i + 1 < n; ++i) {
            sym[i] = sym[i + 1];
            ranks[i] = ranks[i + 1];
            merged[i] = merged[i + 1];
        }
        --n;
        refresh(best);
        if (best > 0) refresh(best - 1);
    }
    out.resize(first + n);
}

// Linked list plus a min-heap of candidate pairs ordered by (rank, position); stale entries are
// skipped when popped. O(n log n) for long pieces (runs of thousands of bytes).
void BpeModel::merge_large(std::vector<int32_t>& sym) const {
    const int32_t n = static_cast<int32_t>(sym.size());
    std::vector<int32_t> prev(n), next(n);
    std::vector<bool> alive(n, true);
    for (int32_t i = 0; i < n; ++i) {
        prev[i] = i - 1;
        next[i] = i + 1 < n ? i + 1 : -1;
    }
    struct Candidate {
        int32_t rank, pos, left_id, right_id, merged_id;
        bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
    auto push = [&](int32_t i) {
        if (i < 0 || next[i] < 0) return;
        if (const Merge* m = find_merge(sym[i], sym[next[i]]))
            heap.push({m->rank, i, sym[i], sym[next[i]], m->merged_id});
    };
    for (int32_t i = 0; i + 1 < n; ++i) push(i);
    while (!heap.empty()) {
        Candidate c = heap.top();
        heap.pop();
        int32_t j = next[c.pos];
        if (!alive[c.pos] || j < 0 || sym[c.pos] != c.left_id || sym[j] != c.right_id) continue;
        sym[c.pos] = c.merged_id;
        alive[j] = false;
        next[c.pos] = next[j];
        if (next[j] >= 0) prev[next[j]] = c.pos;
        push(prev[c.pos]);
        push(c.pos);
    }
    std::vector<int32_t> out;
    for (int32_t i = 0; i >= 0 && i < n; i = next[i]) out.push_back(sym[i]);
    sym.swap(out);
}

void BpeModel::encode_piece(std::string_view bytes, bool prefix_space, std::vector<int32_t>& out,
                            PieceCache* cache) const {
    std::size_t n = bytes.size() + (prefix_space ? 1 : 0);
    if (n == 0) return;
    if (n == 1) {
        int32_t id = byte_ids_[static_cast<uint8_t>(prefix_space ? ' ' : bytes[0])];
        if (id >= 0) out.push_back(id);
        return;
    }
    std::string spaced;  // only built for the rare pieces that get a prefix space
    std::string_view key = bytes;
    if (prefix_space) {
        spaced = " " + std::string(bytes);
        key = spaced;
    }
    if (cache) {
        std::size_t n_ids = 0;
        if (const int32_t* ids = cache->find(key, n_ids)) {
            out.insert(out.end(), ids, ids + n_ids);
            return;
        }
    }
    if (ignore_merges_) {
        if (int32_t id = token_to_id(byte_level::encode(key)); id >= 0) {
            out.push_back(id);
            return;
        }
    }
    std::size_t first = out.size();
    // A byte whose token is missing from the vocab cannot be encoded (byte-level vocabularies
    // have no unk token); it is dropped, as HF does without an unk token.
    for (char c : key)
        if (int32_t id = byte_ids_[static_cast<uint8_t>(c)]; id >= 0) out.push_back(id);
    std::size_t count = out.size() - first;
    if (count <= 48) {
        merge_small(out, first);
    } else {
        std::vector<int32_t> sym(out.begin() + first, out.end());
        merge_large(sym);
        out.resize(first);
        out.insert(out.end(), sym.begin(), sym.end());
    }
    if (cache) cache->store(key, out.data() + first, out.size() - first);
}

}  // namespace nextn
