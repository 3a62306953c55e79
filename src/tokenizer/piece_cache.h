#pragma once
// Cache of BPE results for short pieces: a direct-mapped table of 64-byte slots (one cache line
// each) holding the piece bytes and up to 8 ids inline, so a hit costs one memory access and no
// allocation. Text repeats the same words, so most pieces hit. Not thread-safe by itself: the
// tokenizer lends each encode call its own cache from a pool (see CachePool).
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

namespace nextn {

class PieceCache {
public:
    static constexpr std::size_t kMaxKeyBytes = 26;
    static constexpr std::size_t kMaxIds = 8;

    PieceCache() : slots_(kSlots) {}

    // Pointer to the cached ids and their count, or nullptr on a miss.
    const int32_t* find(std::string_view key, std::size_t& n_ids) const {
        if (key.size() > kMaxKeyBytes) return nullptr;
        uint64_t h = hash(key);
        const Slot& s = slots_[h & (kSlots - 1)];
        if (s.tag != static_cast<uint32_t>(h >> 32) || s.key_len != key.size() ||
            std::memcmp(s.key, key.data(), key.size()) != 0)
            return nullptr;
        n_ids = s.n_ids;
        return s.ids;
    }

    void store(std::string_view key, const int32_t* ids, std::size_t n_ids) {
        if (key.size() > kMaxKeyBytes || n_ids > kMaxIds || n_ids == 0) return;
        uint64_t h = hash(key);
        Slot& s = slots_[h & (kSlots - 1)];
        s.tag = static_cast<uint32_t>(h >> 32);
        s.key_len = static_cast<uint8_t>(key.size());
        s.n_ids = static_cast<uint8_t>(n_ids);
        std::memcpy(s.key, key.data(), key.size());
        std::memcpy(s.ids, ids, n_ids * sizeof(int32_t));
    }

private:
    struct Slot {
        uint32_t tag = 0;
        uint8_t key_len = 0xFF;  // never equal to a real key length: empty
        uint8_t n_ids = 0;
        char key[kMaxKeyBytes];
        int32_t ids[kMaxIds];
    };
    static_assert(sizeof(Slot) == 64);
    static constexpr std::size_t kSlots = 1 << 15;  // 2 MiB

    static uint64_t hash(std::string_view key) {
        uint64_t h = 0x9E3779B97F4A7C15ull ^ key.size();
        std::size_t i = 0;
        for (; i + 8 <= key.size(); i += 8) {
            uint64_t w;
            std::memcpy(&w, key.data() + i, 8);
            h = (h ^ w) * 0xFF51AFD7ED558CCDull;
            h ^= h >> 32;
        }
        uint64_t tail = 0;
        std::memcpy(&tail, key.data() + i, key.size() - i);
        h = (h ^ tail) * 0xC4CEB9FE1A85EC53ull;
        return h ^ (h >> 29);
    }

    std::vector<Slot> slots_;
};

// Caches lent to encode calls: a call takes one (or makes one when all are in use) and gives it
// back when it ends, so concurrent calls never share a cache and no lock is held while encoding.
class CachePool {
public:
    class Lease {
    public:
        Lease(CachePool& pool, std::unique_ptr<PieceCache> cache) : pool_(pool), cache_(std::move(cache)) {}
        ~Lease() { pool_.give_back(std::move(cache_)); }
        Lease(const Lease&) = delete;
        Lease& operator=(const Lease&) = delete;
        PieceCache& operator*() { return *cache_; }

    private:
        CachePool& pool_;
        std::unique_ptr<PieceCache> cache_;
    };

    Lease take() {
        std::lock_guard lock(mutex_);
        if (free_.empty()) return Lease(*this, std::make_unique<PieceCache>());
        auto c = std::move(free_.back());
        free_.pop_back();
        return Lease(*this, std::move(c));
    }

private:
    void give_back(std::unique_ptr<PieceCache> cache) {
        std::lock_guard lock(mutex_);
        if (free_.size() < 8) free_.push_back(std::move(cache));
    }
    std::mutex mutex_;
    std::vector<std::unique_ptr<PieceCache>> free_;
};

}  // namespace nextn
