#include "cache/sequence_state.h"

#include <algorithm>

namespace nextn {

int64_t SequenceState::rollback_bytes() const {
    int64_t total = 0;
    for (const auto& r : recurrent)
        if (r.state_size)
            total += int64_t(sizeof(float)) *
                     (r.state_size + int64_t(r.pending_qkv.size() + r.pending_q.size() +
                                             r.pending_k.size() + r.pending_v.size() +
                                             r.pending_g.size() + r.pending_beta.size()));
    return total;
}

void SequenceState::reset() {
    n_past = 0;
    uncommitted = 0;
    for (auto& r : recurrent) {
        if (!r.state_size) continue;
        r.current = 0;
        std::fill(r.slots.data(), r.slots.data() + r.state_size, 0.0f);
        std::fill(r.conv.begin(), r.conv.end(), 0.0f);
    }
}

}  // namespace nextn
