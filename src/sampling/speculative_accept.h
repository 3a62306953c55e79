#pragma once
// Exact speculative acceptance by rejection sampling (Leviathan et al. 2023, Chen et al. 2023).
// The draft proposes x ~ q; the target keeps it with probability min(1, p(x) / q(x)), otherwise
// replaces it by a sample from norm(max(0, p - q)). The emitted token is then distributed
// exactly as p, whatever q is. p and q must come from the same pipeline (logit_pipeline.h) with
// the same params and the same history (including the earlier in-flight drafts).
//
// Greedy is the one-hot special case and uses no randomness: accept iff x == argmax p, and on
// rejection the token is argmax p. More generally no uniform is drawn when the outcome is
// certain (p(x) >= q(x), p(x) == 0, or a one-token residual).
//
// Edge cases:
//   - q(x) == 0 (x is outside q's support, so it was not drawn from q): rejected.
//   - sum max(0, p - q) < kResidualFloor (p and q equal up to float rounding, so a rejection
//     is itself a rounding artifact): the replacement is drawn from p.
//   - q over a sub-vocabulary (zero outside some subset, or a smaller vocab_size): nothing
//     special; p's mass outside q's support is reached through the residual.
#include <cstdint>
#include <span>
#include <vector>

#include "sampling/distribution.h"

namespace nextn {

class Rng;

constexpr double kResidualFloor = 1e-6;

struct AcceptResult {
    bool accepted = false;
    int32_t token = -1;  // x when accepted, else the replacement from the residual
};

AcceptResult accept_or_resample(const Distribution& p, const Distribution& q, int32_t x, Rng& rng);

struct DraftVerdict {
    int32_t n_accepted = 0;       // leading draft tokens kept
    std::vector<int32_t> tokens;  // the n_accepted drafts, then one replacement or bonus token
};

// Verifies a chain of k drafts: target[i] is p at draft position i (k + 1 of them, the last
// scoring the position after the final draft), draft[i] is q at position i, draft_tokens[i] the
// token drawn from it. Stops at the first rejection (its replacement is the last token); when
// all k are accepted the bonus token is sampled from target[k]. Always emits n_accepted + 1.
void verify_draft(std::span<const Distribution> target, std::span<const Distribution> draft,
                  std::span<const int32_t> draft_tokens, Rng& rng, DraftVerdict& out);
// The same into a fresh verdict (the decode loop reuses one instead).
DraftVerdict verify_draft(std::span<const Distribution> target, std::span<const Distribution> draft,
                          std::span<const int32_t> draft_tokens, Rng& rng);

}  // namespace nextn
