#include "sampling/distribution.h"

#include <algorithm>

#include "core/error.h"
#include "sampling/rng.h"

namespace nextn {

Distribution Distribution::one_hot(int64_t vocab_size, int32_t token) {
    if (token < 0 || token >= vocab_size)
        fail("sampling: one-hot token ", token, " is outside the vocabulary (size ", vocab_size,
             ")");
    Distribution d;
    d.vocab_size = vocab_size;
    d.ids = {token};
    d.probs = {1.0f};
    return d;
}

float Distribution::prob(int32_t token) const {
    auto it = std::lower_bound(ids.begin(), ids.end(), token);
    if (it == ids.end() || *it != token) return 0.0f;
    return probs[static_cast<size_t>(it - ids.begin())];
}

int32_t Distribution::argmax() const {
    if (ids.empty()) fail("sampling: argmax of an empty distribution");
    size_t best = 0;
    for (size_t i = 1; i < probs.size(); ++i)
        if (probs[i] > probs[best]) best = i;  // strict: equal probs keep the lower id
    return ids[best];
}

int32_t sample_with_uniform(const Distribution& d, double u) {
    if (d.ids.empty()) fail("sampling: cannot sample from an empty distribution");
    if (d.ids.size() != d.probs.size())
        fail("sampling: distribution has ", d.ids.size(), " ids but ", d.probs.size(), " probs");
    double total = 0.0;
    for (float p : d.probs) total += p;
    // Scaling u by the actual total (not 1) keeps float rounding from running off the end.
    const double target = u * total;
    double cumulative = 0.0;
    for (size_t i = 0; i < d.probs.size(); ++i) {
        cumulative += d.probs[i];
        if (target < cumulative) return d.ids[i];
    }
    return d.ids.back();
}

int32_t sample(const Distribution& d, Rng& rng) {
    if (d.ids.size() == 1) return d.ids[0];
    return sample_with_uniform(d, rng.uniform());
}

}  // namespace nextn
