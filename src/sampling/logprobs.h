#pragma once
// Log-probabilities for the API's "logprobs" / "top_logprobs".
//
// The rule the engine reports: log p(token) under the FINAL sampling distribution p, the exact
// distribution the token was drawn from (after bias, penalties, temperature and the filters):
// logprobs_from_distribution. exp(logprob) is then the probability the engine really used;
// tokens outside the support report -inf and a greedy pick reports 0.
//
// logprobs_from_logits is the plain log-softmax of whatever logits are passed, for callers that
// want the unfiltered view: raw model logits give the model's own log-probabilities; the
// workspace of process() gives them after bias and penalties (no temperature, no filters).
#include <cstdint>
#include <span>
#include <vector>

#include "sampling/distribution.h"

namespace nextn {

struct TokenLogprob {
    int32_t token = -1;
    float logprob = 0.0f;
};

struct LogprobReport {
    TokenLogprob chosen;
    // Up to top_n most likely tokens, by (logprob descending, id ascending). Fewer when the
    // support (or vocabulary, or the finite logits) is smaller.
    std::vector<TokenLogprob> top;
};

LogprobReport logprobs_from_distribution(const Distribution& d, int32_t chosen, int32_t top_n);
LogprobReport logprobs_from_logits(std::span<const float> logits, int32_t chosen, int32_t top_n);

}  // namespace nextn
