#include "sampling/logprobs.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "sampling/logit_pipeline.h"

namespace nextn {

LogprobReport logprobs_from_distribution(const Distribution& d, int32_t chosen, int32_t top_n) {
    if (chosen < 0 || chosen >= d.vocab_size)
        fail("sampling: logprob token ", chosen, " is outside the vocabulary (size ", d.vocab_size,
             ")");
    if (top_n < 0) fail("sampling: top_logprobs must be >= 0, got ", top_n);
    LogprobReport report;
    const float p = d.prob(chosen);
    report.chosen = {chosen, p > 0.0f ? std::log(p) : -INFINITY};

    const size_t n = std::min(d.ids.size(), static_cast<size_t>(top_n));
    std::vector<size_t> order(d.ids.size());  // [support] positions, partially ranked
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    auto ranks_before = [&](size_t a, size_t b) {
        return d.probs[a] > d.probs[b] || (d.probs[a] == d.probs[b] && d.ids[a] < d.ids[b]);
    };
    std::partial_sort(order.begin(), order.begin() + static_cast<ptrdiff_t>(n), order.end(),
                      ranks_before);
    for (size_t i = 0; i < n; ++i)
        report.top.push_back({d.ids[order[i]], std::log(d.probs[order[i]])});
    return report;
}

LogprobReport logprobs_from_logits(std::span<const float> logits, int32_t chosen, int32_t top_n) {
    std::vector<SamplingCandidate> ranking;
    LogprobReport report;
    logprobs_from_logits(logits, chosen, top_n, ranking, report);
    return report;
}

void logprobs_from_logits(std::span<const float> logits, int32_t chosen, int32_t top_n,
                          std::vector<SamplingCandidate>& top, LogprobReport& out) {
    const auto vocab = static_cast<int64_t>(logits.size());
    if (chosen < 0 || chosen >= vocab)
        fail("sampling: logprob token ", chosen, " is outside the vocabulary (size ", vocab, ")");
    if (top_n < 0) fail("sampling: top_logprobs must be >= 0, got ", top_n);
    // top_k_candidates also rejects NaN / +inf logits.
    top_k_candidates(logits, std::max<int32_t>(top_n, 1), top);
    if (top.empty()) fail("sampling: every token has a -inf logit (all banned)");
    const double max_logit = top[0].logit;
    double sum = 0.0;
    for (float v : logits) sum += std::exp(static_cast<double>(v) - max_logit);
    const double log_normalizer = max_logit + std::log(sum);
    auto logprob = [&](int32_t id) {
        return static_cast<float>(static_cast<double>(logits[static_cast<size_t>(id)]) -
                                  log_normalizer);
    };
    out.chosen = {chosen, logprob(chosen)};
    out.top.clear();
    for (size_t i = 0; i < top.size() && i < static_cast<size_t>(top_n); ++i)
        out.top.push_back({top[i].id, logprob(top[i].id)});
}

}  // namespace nextn
