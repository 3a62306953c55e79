#pragma once
// Log-probabilities for the API's "logprobs" / "top_logprobs".
//
// What the engine reports (speculative_decoder.cpp's emit): logprobs_from_logits over the
// logits after bias and penalties, before temperature and the filters (top-k, top-p, min-p):
// the model's distribution as the request shaped it, the same whatever the temperature, as
// vLLM's default raw logprobs are the model's own. A greedy pick is the top entry.
//
// logprobs_from_distribution reports log p(token) under a final sampling distribution instead
// (after temperature and the filters; tokens outside its support -inf, a one-hot pick 0), for
// callers that want the probability the draw really used.
#include <cstdint>
#include <span>
#include <vector>

#include "sampling/distribution.h"
#include "sampling/logit_pipeline.h"

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
// The same into `out`, ranking the top tokens in `ranking` (scratch): both keep their capacity,
// so a decode loop that reserved top_n entries in each (at least one in ranking) allocates
// nothing per token.
void logprobs_from_logits(std::span<const float> logits, int32_t chosen, int32_t top_n,
                          std::vector<SamplingCandidate>& ranking, LogprobReport& out);

}  // namespace nextn
