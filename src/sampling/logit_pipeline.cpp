#include "sampling/logit_pipeline.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace nextn {
namespace {

struct Candidate {
    int32_t id;
    float logit;
    float weight;  // exp((logit - max) / T), the unnormalized probability
};

// Strict "ranks before" order: higher logit first, equal logits to the lower id.
bool ranks_before(const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// Below this k the heap scan wins: almost every logit fails one comparison against the heap's
// worst entry. Above it a selection over all finite logits is cheaper.
constexpr int64_t kHeapSelectMaxK = 4096;

// The k best candidates by ranks_before, sorted. Assumes no NaN / +inf logits.
std::vector<Candidate> select_top_k(std::span<const float> logits, int64_t k) {
    std::vector<Candidate> best;
    if (k <= 0) return best;
    const auto count = static_cast<size_t>(k);
    if (k <= kHeapSelectMaxK) {
        // Max-heap under ranks_before keeps the worst kept candidate at front().
        best.reserve(count);
        for (size_t i = 0; i < logits.size(); ++i) {
            const float v = logits[i];
            if (v == -INFINITY) continue;
            if (best.size() < count) {
                best.push_back({static_cast<int32_t>(i), v, 0.0f});
                std::push_heap(best.begin(), best.end(), ranks_before);
            } else if (v > best.front().logit) {  // equal logit: the kept one has the lower id
                std::pop_heap(best.begin(), best.end(), ranks_before);
                best.back() = {static_cast<int32_t>(i), v, 0.0f};
                std::push_heap(best.begin(), best.end(), ranks_before);
            }
        }
    } else {
        best.reserve(logits.size());
        for (size_t i = 0; i < logits.size(); ++i)
            if (logits[i] != -INFINITY) best.push_back({static_cast<int32_t>(i), logits[i], 0.0f});
        if (best.size() > count) {
            std::nth_element(best.begin(), best.begin() + k, best.end(), ranks_before);
            best.resize(count);
        }
    }
    std::sort(best.begin(), best.end(), ranks_before);
    return best;
}

// Rejects logits the softmax cannot handle; returns the index of the largest finite logit
// (lowest id among ties), or -1 when all are -inf.
int64_t checked_argmax(std::span<const float> logits) {
    int64_t best = -1;
    float best_logit = -INFINITY;
    for (size_t i = 0; i < logits.size(); ++i) {
        const float v = logits[i];
        if (std::isnan(v) || v == INFINITY)
            fail("sampling: logit of token ", i, " is ", v, " (expected finite or -inf)");
        if (v > best_logit) {
            best_logit = v;
            best = static_cast<int64_t>(i);
        }
    }
    return best;
}

// Top-p over candidates in id order: sorts leading chunks by probability (growing 4x) until the
// prefix mass reaches target, so a peaked distribution sorts a few hundred entries, not V.
// Returns the prefix length; the candidates before it are left in rank order.
size_t nucleus_prefix_unsorted(std::vector<Candidate>& cand, double target) {
    const size_t n = cand.size();
    size_t done = 0;
    size_t chunk = 256;
    double cumulative = 0.0;
    while (done < n) {
        const size_t end = std::min(n, done + chunk);
        if (end < n)
            std::nth_element(cand.begin() + static_cast<ptrdiff_t>(done),
                             cand.begin() + static_cast<ptrdiff_t>(end), cand.end(), ranks_before);
        std::sort(cand.begin() + static_cast<ptrdiff_t>(done),
                  cand.begin() + static_cast<ptrdiff_t>(end), ranks_before);
        for (size_t i = done; i < end; ++i) {
            cumulative += cand[i].weight;
            if (cumulative >= target) return i + 1;
        }
        done = end;
        chunk *= 4;
    }
    return n;  // rounding kept the sum just under target: keep everything
}

size_t nucleus_prefix_sorted(const std::vector<Candidate>& cand, double target) {
    double cumulative = 0.0;
    for (size_t i = 0; i < cand.size(); ++i) {
        cumulative += cand[i].weight;
        if (cumulative >= target) return i + 1;
    }
    return cand.size();
}

}  // namespace

void apply_bias_and_penalties(std::span<const float> logits, std::span<const int32_t> history,
                              const SamplerParams& params, std::vector<float>& out) {
    params.validate();
    out.assign(logits.begin(), logits.end());  // [V]
    const auto vocab = static_cast<int64_t>(out.size());
    for (const auto& [id, bias] : params.logit_bias)
        if (id < vocab) out[static_cast<size_t>(id)] += bias;

    if (!params.penalties_active()) return;
    const size_t window = params.penalty_last_n < 0
                              ? history.size()
                              : std::min(history.size(), static_cast<size_t>(params.penalty_last_n));
    std::vector<int32_t> recent(history.end() - static_cast<ptrdiff_t>(window), history.end());
    std::sort(recent.begin(), recent.end());  // equal ids become runs: run length = count
    for (size_t start = 0; start < recent.size();) {
        const int32_t id = recent[start];
        size_t end = start;
        while (end < recent.size() && recent[end] == id) ++end;
        const auto count = static_cast<float>(end - start);
        start = end;
        if (id < 0) fail("sampling: history token id ", id, " is negative");
        if (id >= vocab) continue;  // not scored by these logits (draft sub-vocabulary)
        float& logit = out[static_cast<size_t>(id)];
        logit = logit > 0.0f ? logit / params.repeat_penalty : logit * params.repeat_penalty;
        logit -= params.presence_penalty + params.frequency_penalty * count;
    }
}

Distribution distribution_from_logits(std::span<const float> logits, const SamplerParams& params) {
    params.validate();
    const auto vocab = static_cast<int64_t>(logits.size());
    if (vocab == 0) fail("sampling: empty logit vector");
    const int64_t argmax = checked_argmax(logits);
    if (argmax < 0) fail("sampling: every token has a -inf logit (all banned)");
    if (params.greedy()) return Distribution::one_hot(vocab, static_cast<int32_t>(argmax));
    const float max_logit = logits[static_cast<size_t>(argmax)];

    // Candidates, either in rank order (after top-k) or in id order (all finite logits).
    std::vector<Candidate> cand;
    bool rank_ordered = false;
    if (params.top_k > 0 && params.top_k < vocab) {
        cand = select_top_k(logits, params.top_k);
        rank_ordered = true;
    } else {
        cand.reserve(logits.size());
        for (size_t i = 0; i < logits.size(); ++i)
            if (logits[i] != -INFINITY) cand.push_back({static_cast<int32_t>(i), logits[i], 0.0f});
    }

    // Subtracting the global max keeps every exponent <= 0 (no overflow for tiny T).
    const float temperature = params.temperature;
    double total = 0.0;
    for (Candidate& c : cand) {
        c.weight = std::exp((c.logit - max_logit) / temperature);
        total += c.weight;
    }

    if (params.top_p < 1.0f && cand.size() > 1) {
        const double target = static_cast<double>(params.top_p) * total;
        const size_t keep = rank_ordered ? nucleus_prefix_sorted(cand, target)
                                         : nucleus_prefix_unsorted(cand, target);
        cand.resize(keep);
        rank_ordered = true;  // either way, the kept prefix is now in rank order
    }

    if (params.min_p > 0.0f) {
        float max_weight = 0.0f;
        for (const Candidate& c : cand) max_weight = std::max(max_weight, c.weight);
        const float threshold = params.min_p * max_weight;
        std::erase_if(cand, [&](const Candidate& c) { return c.weight < threshold; });
    }
    std::erase_if(cand, [](const Candidate& c) { return c.weight <= 0.0f; });  // exp underflow

    if (rank_ordered)
        std::sort(cand.begin(), cand.end(),
                  [](const Candidate& a, const Candidate& b) { return a.id < b.id; });
    double kept = 0.0;
    for (const Candidate& c : cand) kept += c.weight;

    Distribution d;
    d.vocab_size = vocab;
    d.ids.resize(cand.size());
    d.probs.resize(cand.size());
    for (size_t i = 0; i < cand.size(); ++i) {
        d.ids[i] = cand[i].id;
        d.probs[i] = static_cast<float>(cand[i].weight / kept);
    }
    return d;
}

Distribution process(std::span<const float> logits, std::span<const int32_t> history,
                     const SamplerParams& params, std::vector<float>& workspace) {
    apply_bias_and_penalties(logits, history, params, workspace);
    return distribution_from_logits(workspace, params);
}

Distribution process(std::span<const float> logits, std::span<const int32_t> history,
                     const SamplerParams& params) {
    std::vector<float> workspace;
    return process(logits, history, params, workspace);
}

std::vector<int32_t> top_k_ids(std::span<const float> logits, int64_t k) {
    checked_argmax(logits);
    std::vector<int32_t> ids;
    for (const Candidate& c : select_top_k(logits, k)) ids.push_back(c.id);
    return ids;
}

}  // namespace nextn
