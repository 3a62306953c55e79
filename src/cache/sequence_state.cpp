#include "cache/sequence_state.h"

#include <algorithm>

#include "core/error.h"
#include "kernels/quant.h"

namespace nextn {

const char* kv_cache_type_name(KvCacheType t) {
    switch (t) {
        case KvCacheType::F16:
            return "f16";
        case KvCacheType::Q8_0:
            return "q8_0";
        default:
            return "f32";
    }
}

WType kv_wtype(KvCacheType t) {
    switch (t) {
        case KvCacheType::F16:
            return WType::F16;
        case KvCacheType::Q8_0:
            return WType::Q8_0;
        default:
            return WType::F32;
    }
}

KvCacheType parse_kv_cache_type(const std::string& name) {
    if (name == "f32") return KvCacheType::F32;
    if (name == "f16") return KvCacheType::F16;
    if (name == "q8_0") return KvCacheType::Q8_0;
    fail("unknown KV cache type '", name, "' (supported: f32, f16, q8_0)");
}

AttentionCache::AttentionCache(int64_t capacity_, int64_t n_heads_, int64_t head_dim_,
                               KvCacheType type_)
    : capacity(capacity_),
      n_heads(n_heads_),
      head_dim(head_dim_),
      key_tiles((capacity_ + kKeyTile - 1) / kKeyTile),
      type(type_) {
    if (type == KvCacheType::Q8_0 && head_dim % kQuantBlock != 0)
        fail("--kv-type q8_0 needs an attention head size that is a multiple of ", kQuantBlock,
             "; this model's is ", head_dim, " (use f16 or f32)");
    // The buffers count floats: other types take fewer bytes, rounded up.
    auto floats = [](size_t bytes) { return (bytes + sizeof(float) - 1) / sizeof(float); };
    k = ZeroPagesBuffer(floats(size_t(n_heads * key_tiles) * key_tile_bytes()));
    v = ZeroPagesBuffer(floats(size_t(capacity * n_heads) * row_bytes()));
}

int64_t SequenceState::rollback_bytes() const {
    int64_t total = 0;
    for (const auto& r : recurrent)
        if (r.state_size)
            total += int64_t(sizeof(float)) *
                     (r.state_size + int64_t(r.conv_window.size()) - r.conv_state_size +
                      int64_t(r.pending_q.size() + r.pending_k.size() + r.pending_v.size() +
                              r.pending_g.size() + r.pending_beta.size()));
    return total;
}

int64_t SequenceState::kv_cache_bytes() const {
    int64_t total = int64_t(mtp_attention.bytes());
    for (const auto& a : attention) total += int64_t(a.bytes());
    return total;
}

void SequenceState::reset() {
    n_past = 0;
    uncommitted = 0;
    for (auto& r : recurrent) {
        if (!r.state_size) continue;
        r.current = 0;
        std::fill(r.slots.data(), r.slots.data() + r.state_size, 0.0f);
        std::fill(r.conv_window.begin(), r.conv_window.begin() + r.conv_state_size, 0.0f);
    }
}

}  // namespace nextn
