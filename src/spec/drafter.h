#pragma once
// A source of draft tokens for speculative decoding. The decoder tells it what was committed;
// it proposes up to k tokens to follow the committed sequence, each drawn from its own
// distribution q after the same logit processors the target uses.
#include <cstdint>
#include <span>
#include <vector>

#include "core/error.h"
#include "sampling/distribution.h"
#include "sampling/rng.h"
#include "sampling/sampler_params.h"

namespace nextn {

struct DraftRequest {
    int k = 0;
    const SamplerParams* params = nullptr;
    // Committed tokens, current token last. The drafter may append its drafts while scoring
    // them (penalties count in-flight drafts) but must restore the original length.
    std::vector<int32_t>* history = nullptr;
    Rng* rng = nullptr;
};

// The drafts of one round, each with the distribution q it was drawn from. One proposal is
// reused round after round: clear() keeps the distributions' buffers, so a round allocates
// nothing once they have grown.
class DraftProposal {
public:
    void clear() {
        tokens_.clear();
        q_filled_ = false;
    }
    // The next draft's distribution, to fill before add() (its buffers are an earlier round's).
    Distribution& next_q() {
        if (q_.size() == tokens_.size()) q_.emplace_back();
        q_filled_ = true;
        return q_[tokens_.size()];
    }
    // Room for k drafts, each distribution given to `prepare` (to reserve its buffers): with
    // this done before the first round, a depth first reached late allocates nothing either.
    template <class Prepare>
    void reserve(size_t k, Prepare&& prepare) {
        tokens_.reserve(k);
        if (q_.size() < k) q_.resize(k);
        for (Distribution& d : q_) prepare(d);
    }
    // Appends a draft drawn from the distribution next_q() returned.
    // (Without next_q() first the token would pair with a stale distribution of an earlier
    // round, and acceptance would no longer be exact.)
    void add(int32_t token) {
        if (!q_filled_) fail("DraftProposal: a draft added without its distribution (next_q first)");
        tokens_.push_back(token);
        q_filled_ = false;
    }

    size_t size() const { return tokens_.size(); }
    bool empty() const { return tokens_.empty(); }
    const std::vector<int32_t>& tokens() const { return tokens_; }   // [size()]
    std::span<const Distribution> q() const { return {q_.data(), tokens_.size()}; }  // [size()]

private:
    std::vector<int32_t> tokens_;
    std::vector<Distribution> q_;  // [>= size()]: entries past size() are spare buffers
    bool q_filled_ = false;        // next_q() was called since the last add()
};

class Drafter {
public:
    virtual ~Drafter() = default;
    // The trunk processed `n` positions starting at `pos0` whose final hidden states are
    // `hidden` [n, H]; `next_tokens[i]` is the token that follows position pos0 + i. Called
    // once per committed run (prompt or verify round), in order.
    virtual void on_commit(const float* hidden, const int32_t* next_tokens, int64_t n,
                           int64_t pos0) = 0;
    // Processes queued commits now (the prompt's pairs belong to prefill, not to the first
    // decode round). draft() does it too when needed.
    virtual void flush() {}
    // Replaces `out` with up to request.k drafts (none when there is nothing to draft from).
    virtual void draft(const DraftRequest& request, DraftProposal& out) = 0;
    virtual void reset() = 0;
};

}  // namespace nextn
