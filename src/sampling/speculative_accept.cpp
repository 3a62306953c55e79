#include "sampling/speculative_accept.h"

#include "core/error.h"
#include "sampling/rng.h"

namespace nextn {
namespace {

// Calls fn(id, p(id) - q(id)) for every id in p's support where that excess is positive, in
// ascending id order: one merge pass over the two sorted id lists (only p's support can have
// p - q > 0).
template <class Fn>
void for_each_excess(const Distribution& p, const Distribution& q, Fn&& fn) {
    size_t j = 0;
    for (size_t i = 0; i < p.ids.size(); ++i) {
        const int32_t id = p.ids[i];
        while (j < q.ids.size() && q.ids[j] < id) ++j;
        const double q_id = (j < q.ids.size() && q.ids[j] == id) ? q.probs[j] : 0.0;
        const double excess = static_cast<double>(p.probs[i]) - q_id;
        if (excess > 0.0 && !fn(id, excess)) return;
    }
}

// A draw from norm(max(0, p - q)), falling back to p when that residual has (numerically) no
// mass. Two passes (total, then the cumulative walk) so nothing is allocated.
int32_t sample_residual(const Distribution& p, const Distribution& q, Rng& rng) {
    double total = 0.0;
    size_t count = 0;
    int32_t last = -1;
    for_each_excess(p, q, [&](int32_t id, double excess) {
        total += excess;
        ++count;
        last = id;
        return true;
    });
    if (total < kResidualFloor) return sample(p, rng);
    if (count == 1) return last;
    const double target = rng.uniform() * total;
    double cumulative = 0.0;
    int32_t picked = last;  // if rounding runs off the end
    for_each_excess(p, q, [&](int32_t id, double excess) {
        cumulative += excess;
        if (target < cumulative) {
            picked = id;
            return false;
        }
        return true;
    });
    return picked;
}

}  // namespace

AcceptResult accept_or_resample(const Distribution& p, const Distribution& q, int32_t x, Rng& rng) {
    if (p.ids.empty()) fail("sampling: speculative acceptance with an empty target distribution");
    if (x < 0 || x >= p.vocab_size)
        fail("sampling: draft token ", x, " is outside the target vocabulary (size ", p.vocab_size,
             ")");
    const float px = p.prob(x);
    const float qx = q.prob(x);
    if (qx > 0.0f) {
        if (px >= qx) return {true, x};  // min(1, p/q) == 1: certain, no draw
        // Keep with probability p(x) / q(x): u < p/q  <=>  u * q < p.
        if (px > 0.0f && rng.uniform() * static_cast<double>(qx) < static_cast<double>(px))
            return {true, x};
    }
    return {false, sample_residual(p, q, rng)};
}

void verify_draft(std::span<const Distribution> target, std::span<const Distribution> draft,
                  std::span<const int32_t> draft_tokens, Rng& rng, DraftVerdict& verdict) {
    if (draft.size() != draft_tokens.size() || target.size() != draft.size() + 1)
        fail("sampling: verify_draft needs k draft distributions, k draft tokens and k + 1 target "
             "distributions; got ",
             draft.size(), ", ", draft_tokens.size(), ", ", target.size());
    verdict.n_accepted = 0;
    verdict.tokens.clear();
    for (size_t i = 0; i < draft.size(); ++i) {
        const AcceptResult r = accept_or_resample(target[i], draft[i], draft_tokens[i], rng);
        verdict.tokens.push_back(r.token);
        if (!r.accepted) return;
        ++verdict.n_accepted;
    }
    verdict.tokens.push_back(sample(target.back(), rng));
}

DraftVerdict verify_draft(std::span<const Distribution> target, std::span<const Distribution> draft,
                          std::span<const int32_t> draft_tokens, Rng& rng) {
    DraftVerdict verdict;
    verify_draft(target, draft, draft_tokens, rng, verdict);
    return verdict;
}

}  // namespace nextn
