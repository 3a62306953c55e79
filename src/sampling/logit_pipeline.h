#pragma once
// The one logit -> distribution pipeline used by plain decoding, by the draft (q) and by the
// target (p) under speculation, so that p and q always come from the same processors:
//
//   1. logit_bias        logit[id] += bias
//   2. penalties         over the last penalty_last_n history tokens, per distinct token with
//                        count c > 0:  repeat (llama.cpp): logit > 0 ? logit / r : logit * r,
//                        then logit -= presence * 1 + frequency * c  (OpenAI)
//   3. temperature       T = 0: greedy, the result is one-hot at the argmax of step 2 (ties to
//                        the lowest id) and steps 4-6 are skipped. Otherwise logits / T.
//   4. top-k             keep the k largest (ties to the lower id)
//   5. top-p             keep the smallest prefix, in descending probability (ties to the lower
//                        id), whose mass under the softmax of the survivors is >= top_p
//   6. min-p             keep tokens with p >= min_p * max p
//   7. softmax over the survivors -> Distribution (tokens with p == 0 are dropped).
//
// Temperature comes before the filters (HF transformers / vLLM order; llama.cpp's default chain
// applies it last), so top-p and min-p see the tempered probabilities.
//
// History: the tokens the penalties count. Under speculation it must include the in-flight
// draft tokens before the position being scored. Token ids the logits do not cover (a draft
// head scoring only the first N ids) carry no penalty and no bias; negative ids are an error.
//
// Cost for V = 248k: a few vectorizable passes for steps 1-3 and the softmax (a polynomial exp,
// not a libm call per token); top-k uses a size-k heap that skips whole blocks which cannot
// enter it; top-p without top-k finds the nucleus with a mass histogram and sorts only the
// tokens near it. No step sorts V entries.
#include <cstdint>
#include <span>
#include <vector>

#include "sampling/distribution.h"
#include "sampling/sampler_params.h"

namespace nextn {

// A token surviving the filters so far: its logit and exp((logit - max) / T), the unnormalized
// probability.
struct SamplingCandidate {
    int32_t id;
    float logit;
    float weight;
};

// Reusable buffers for process(). Keep one per decoding stream (and reuse the output
// Distributions too): allocating and first-touching fresh megabytes on every call costs more
// than the arithmetic, and once they have grown a decode loop allocates nothing.
struct SamplingWorkspace {
    // [V] the logits after steps 1-2 (bias, penalties), what logprobs_from_logits reads: a view
    // of `logits` below, or of process()'s input itself when no bias or penalty applies (no
    // copy; then valid only while that input is).
    std::span<const float> processed;
    std::vector<float> logits;   // [V] steps 1-2's output when they change anything
    std::vector<float> weights;  // [V] scratch for the unnormalized probabilities
    std::vector<SamplingCandidate> candidates;  // [<= V] top-k / nucleus survivors
    std::vector<double> nucleus_mass;           // the top-p histogram without top-k
    std::vector<int32_t> recent;                // [<= penalty_last_n] the penalties' window, sorted
};

// Capacity for everything process() with `params` over `vocab` logits writes: a decode loop
// that reserves its workspaces and output distributions before the first round allocates
// nothing later, even at a position (a draft depth) it first reaches late. max_history: the
// most history tokens it will pass (the penalty window of a whole-history -1 setting).
// The [vocab] buffers process() writes in full are sized, their pages touched, so that no round
// pays the first touches (a megabyte each, whose first touch took 2-3 ms on a VM): the copy that
// bias or penalties make, the dense weights of sampling without top-k. Those it never writes
// stay empty (greedy decoding without bias or penalties writes neither).
void reserve_for_sampling(const SamplerParams& params, int64_t vocab, SamplingWorkspace& w,
                          size_t max_history);
void reserve_for_sampling(const SamplerParams& params, int64_t vocab, Distribution& d);

// Steps 1-2 (no temperature): writes the biased, penalized logits into out, [V]; `recent` is
// scratch for the penalty window.
void apply_bias_and_penalties(std::span<const float> logits, std::span<const int32_t> history,
                              const SamplerParams& params, std::vector<float>& out,
                              std::vector<int32_t>& recent);
// The same with a fresh scratch.
void apply_bias_and_penalties(std::span<const float> logits, std::span<const int32_t> history,
                              const SamplerParams& params, std::vector<float>& out);

// Steps 1-7 into out (its buffers are reused). Validates params. Throws nextn::Error on NaN or
// +inf logits, or when every token has a -inf logit. Afterwards workspace.processed views the
// output of steps 1-2 (the input logits themselves when those steps change nothing).
void process(std::span<const float> logits, std::span<const int32_t> history,
             const SamplerParams& params, SamplingWorkspace& workspace, Distribution& out);

// Convenience form with fresh buffers.
Distribution process(std::span<const float> logits, std::span<const int32_t> history,
                     const SamplerParams& params);

// Steps 3-7 on already biased / penalized logits (which may be workspace.logits); the other
// workspace buffers are scratch.
void distribution_from_logits(std::span<const float> logits, const SamplerParams& params,
                              SamplingWorkspace& workspace, Distribution& out);
Distribution distribution_from_logits(std::span<const float> logits, const SamplerParams& params);

// Ids of the k largest logits, sorted by (logit descending, id ascending); -inf logits are
// never selected, so fewer than k come back when fewer are finite.
std::vector<int32_t> top_k_ids(std::span<const float> logits, int64_t k);
// The same candidates (id and logit; weight unset) into `best`, whose capacity is reused: with
// k entries reserved, a call with k up to 4096 allocates nothing.
void top_k_candidates(std::span<const float> logits, int64_t k,
                      std::vector<SamplingCandidate>& best);

}  // namespace nextn
