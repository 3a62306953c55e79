#include "cache/sequence_state.h"

#include <algorithm>

#include "core/error.h"

namespace nextn {

const char* kv_cache_type_name(KvCacheType t) { return t == KvCacheType::F16 ? "f16" : "f32"; }

KvCacheType parse_kv_cache_type(const std::string& name) {
    if (name == "f32") return KvCacheType::F32;
    if (name == "f16") return KvCacheType::F16;
    fail("unknown KV cache type '", name, "' (supported: f32, f16)");
}

AttentionCache::AttentionCache(int64_t capacity_, int64_t n_heads_, int64_t head_dim_, KvCacheType type_)
    : capacity(capacity_), n_heads(n_heads_), head_dim(head_dim_), type(type_) {
    // The buffer counts floats: halves take half as many, rounded up.
    const size_t bytes = size_t(capacity * n_heads * head_dim) * value_bytes();
    const size_t floats = (bytes + sizeof(float) - 1) / sizeof(float);
    k = ZeroPagesBuffer(floats);
    v = ZeroPagesBuffer(floats);
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
