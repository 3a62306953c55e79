#pragma once
// A probability distribution over token ids, stored sparsely: only tokens with p > 0, in
// ascending id order. The same type describes the target's distribution p and the draft's q,
// and a greedy (temperature 0) distribution is one-hot.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace nextn {

class Rng;

struct Distribution {
    int64_t vocab_size = 0;      // size of the logit vector it came from
    std::vector<int32_t> ids;    // [n] ascending, each in [0, vocab_size), all with p > 0
    std::vector<float> probs;    // [n] p(ids[i]); sums to 1 up to float rounding

    static Distribution one_hot(int64_t vocab_size, int32_t token);

    size_t support_size() const { return ids.size(); }
    bool is_one_hot() const { return ids.size() == 1; }
    // p(token); 0 for any token outside the support (including ids >= vocab_size).
    float prob(int32_t token) const;
    // Most likely token, ties broken by the lowest id.
    int32_t argmax() const;
};

// Token whose cumulative-probability interval (in ascending id order) contains u * total mass,
// u in [0, 1). Pure function of (d, u): the one place where a uniform becomes a token.
int32_t sample_with_uniform(const Distribution& d, double u);

// Draws one token from d using exactly one rng.uniform(), or none when d is one-hot (so the
// greedy path never touches the generator).
int32_t sample(const Distribution& d, Rng& rng);

}  // namespace nextn
