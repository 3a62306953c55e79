#pragma once
// A source of draft tokens for speculative decoding. The decoder tells it what was committed;
// it proposes up to k tokens to follow the committed sequence.
#include <cstdint>
#include <vector>

namespace nextn {

class Drafter {
public:
    virtual ~Drafter() = default;
    // The trunk processed `n` positions starting at `pos0` whose final hidden states are
    // `hidden` [n, H]; `next_tokens[i]` is the token that follows position pos0 + i. Called
    // once per committed run (prompt or verify round), in order.
    virtual void on_commit(const float* hidden, const int32_t* next_tokens, int64_t n,
                           int64_t pos0) = 0;
    // Proposes up to k tokens to follow the committed sequence.
    virtual std::vector<int32_t> draft(int k) = 0;
    virtual void reset() = 0;
};

}  // namespace nextn
