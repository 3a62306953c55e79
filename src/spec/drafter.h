#pragma once
// A source of draft tokens for speculative decoding. The decoder tells it what was committed;
// it proposes up to k tokens to follow the committed sequence, each drawn from its own
// distribution q after the same logit processors the target uses.
#include <cstdint>
#include <vector>

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

struct DraftProposal {
    std::vector<int32_t> tokens;  // [<= k]
    std::vector<Distribution> q;  // [tokens.size()] the distribution each token was drawn from
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
    virtual DraftProposal draft(const DraftRequest& request) = 0;
    virtual void reset() = 0;
};

}  // namespace nextn
