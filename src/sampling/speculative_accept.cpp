#include "sampling/speculative_accept.h"

#include "core/error.h"
#include "sampling/rng.h"

namespace nextn {
namespace {

// A draw from norm(max(0, p - q)), falling back to p when that residual has (numerically) no
// mass. Only p's support can have p - q > 0, so one merge pass over the two sorted id lists
// gives the residual.
int32_t sample_residual(const Distribution& p, const Distribution& q, Rng& rng) {
    std::vector<int32_t> ids;  // [n <= |supp p|]
    std::vector<double> mass;  // [n] p - q > 0
    double total = 0.0;
    size_t j = 0;
    for (size_t i = 0; i < p.ids.size(); ++i) {
        const int32_t id = p.ids[i];
        while (j < q.ids.size() && q.ids[j] < id) ++j;
        const double q_id = (j < q.ids.size() && q.ids[j] == id) ? q.probs[j] : 0.0;
        const double excess = static_cast<double>(p.probs[i]) - q_id;
        if (excess > 0.0) {
            ids.push_back(id);
            mass.push_back(excess);
            total += excess;
        }
    }
    if (total < kResidualFloor) return sample(p, rng);
    if (ids.size() == 1) return ids[0];
    return sample_weighted(ids, mass, rng.uniform());
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

DraftVerdict verify_draft(std::span<const Distribution> target, std::span<const Distribution> draft,
                          std::span<const int32_t> draft_tokens, Rng& rng) {
    if (draft.size() != draft_tokens.size() || target.size() != draft.size() + 1)
        fail("sampling: verify_draft needs k draft distributions, k draft tokens and k + 1 target "
             "distributions; got ",
             draft.size(), ", ", draft_tokens.size(), ", ", target.size());
    DraftVerdict verdict;
    for (size_t i = 0; i < draft.size(); ++i) {
        const AcceptResult r = accept_or_resample(target[i], draft[i], draft_tokens[i], rng);
        verdict.tokens.push_back(r.token);
        if (!r.accepted) return verdict;
        ++verdict.n_accepted;
    }
    verdict.tokens.push_back(sample(target.back(), rng));
    return verdict;
}

}  // namespace nextn
