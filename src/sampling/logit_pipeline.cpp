#include "sampling/logit_pipeline.h"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "core/error.h"

namespace nextn {
namespace {

using Candidate = SamplingCandidate;

// Strict "ranks before" order: higher logit first, equal logits to the lower id.
bool ranks_before(const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// Four floats as one value, with element-wise arithmetic (GCC / Clang vector extension: SSE2
// on x86-64, NEON on arm64, scalar code elsewhere).
using Float4 = float __attribute__((vector_size(16)));
using Int4 = int32_t __attribute__((vector_size(16)));

// exp(x) for x <= 0 (including -inf), within about 2 ulp of the true value; 0 below -87.33,
// where exp(x) would be under FLT_MIN (such a token is 38 orders of magnitude below the best one
// and is dropped from the support). Branch-free, four at a time: glibc's expf is a call per
// element and was the largest cost of a full-vocabulary softmax.
Float4 exp_nonpositive(Float4 x) {
    constexpr float kLowest = -87.33f;
    const Int4 below = x < kLowest;
    const Float4 clamped = below ? Float4{} + kLowest : x;
    // x = n ln2 + r, |r| <= ln2 / 2; n rounded to nearest by the 1.5 * 2^23 trick (exact for
    // |n| < 2^22); ln2 split so that n * 0.693145751953125f is exact for |n| <= 127.
    constexpr float kRoundMagic = 12582912.0f;
    const Float4 n = (clamped * 1.44269504088896341f + kRoundMagic) - kRoundMagic;
    const Float4 r = (clamped - n * 0.693145751953125f) - n * 1.428606765330187e-06f;
    // Taylor series of exp(r) to r^7: the truncation error r^8 / 8! < 1e-8 for |r| <= 0.347.
    Float4 poly = Float4{} + 1.0f / 5040.0f;
    poly = poly * r + 1.0f / 720.0f;
    poly = poly * r + 1.0f / 120.0f;
    poly = poly * r + 1.0f / 24.0f;
    poly = poly * r + 1.0f / 6.0f;
    poly = poly * r + 0.5f;
    poly = poly * r + 1.0f;
    poly = poly * r + 1.0f;
    const Int4 exponent_bits = (__builtin_convertvector(n, Int4) + 127) << 23;  // 2^n, n >= -126
    const Float4 result = poly * std::bit_cast<Float4>(exponent_bits);
    return below ? Float4{} : result;
}

// The same function for one value (bit-identical to the four-wide form).
float exp_nonpositive(float x) { return exp_nonpositive(Float4{x, x, x, x})[0]; }

// weights[i] = exp((logits[i] - max_logit) / temperature), [V]; returns their sum.
double dense_weights(std::span<const float> logits, float max_logit, float temperature,
                     float* weights) {
    const size_t n = logits.size();
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        Float4 block;
        std::memcpy(&block, &logits[i], sizeof block);
        block = exp_nonpositive((block - max_logit) / temperature);
        std::memcpy(&weights[i], &block, sizeof block);
    }
    for (; i < n; ++i) weights[i] = exp_nonpositive((logits[i] - max_logit) / temperature);
    // Summed in double (top-p compares prefix masses against it), in four lanes that vectorize.
    double lane[4] = {};
    size_t k = 0;
    for (; k + 4 <= n; k += 4)
        for (int j = 0; j < 4; ++j) lane[j] += weights[k + j];
    for (; k < n; ++k) lane[0] += weights[k];
    return (lane[0] + lane[1]) + (lane[2] + lane[3]);
}

// Max (ignoring NaN; -inf when n == 0) of the n values at `values` and whether any is NaN or
// +inf, in one pass: four accumulators of four lanes each, so four chains of max instructions
// overlap (one register's chain ran the scan at a quarter of the rate the loads allow). The
// top-k heap skips 64-logit blocks by their max; the argmax scans the logits in 1024-blocks.
struct ScanResult {
    float max;
    bool unusable;
};
ScanResult scan_values(const float* values, size_t n) {
    constexpr size_t kLanes = 16;
    Float4 best[4];
    Int4 bad[4] = {};
    for (Float4& b : best) b = Float4{} - INFINITY;
    size_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
#pragma GCC unroll 4  // (-O2 leaves it rolled, the accumulators then live in memory)
        for (int a = 0; a < 4; ++a) {
            Float4 v;
            std::memcpy(&v, values + i + 4 * a, sizeof v);
            best[a] = v > best[a] ? v : best[a];
            bad[a] |= ~(v <= FLT_MAX);  // false for NaN and +inf
        }
    }
    float max = -INFINITY;
    int32_t any = 0;
    for (int a = 0; a < 4; ++a)
        for (int j = 0; j < 4; ++j) {
            max = best[a][j] > max ? best[a][j] : max;
            any |= bad[a][j];
        }
    for (; i < n; ++i) {
        max = values[i] > max ? values[i] : max;
        any |= !(values[i] <= FLT_MAX);
    }
    return {max, any != 0};
}

// Below this k the heap scan wins: almost every logit fails one comparison against the heap's
// worst entry. Above it a selection over all finite logits is cheaper.
constexpr int64_t kHeapSelectMaxK = 4096;

// The k best candidates by ranks_before, sorted, into best (its capacity reused). Assumes no
// NaN / +inf logits.
void select_top_k(std::span<const float> logits, int64_t k, std::vector<Candidate>& best) {
    best.clear();
    if (k <= 0) return;
    const auto count = static_cast<size_t>(k);
    if (k <= kHeapSelectMaxK) {
        // Max-heap under ranks_before keeps the worst kept candidate at front(). Once it is
        // full, a block whose max cannot beat that worst entry is skipped whole (an equal logit
        // loses the tie, having a higher id), so most of V costs one vectorized max.
        constexpr size_t kBlock = 64;
        for (size_t start = 0; start < logits.size(); start += kBlock) {
            const size_t end = std::min(logits.size(), start + kBlock);
            if (best.size() == count && scan_values(&logits[start], end - start).max <= best.front().logit)
                continue;
            for (size_t i = start; i < end; ++i) {
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
}

// Rejects logits the softmax cannot handle; returns the index of the largest finite logit
// (lowest id among ties), or -1 when all are -inf. One pass over the logits, block by block:
// the first block holding the largest value is the only one searched for its index.
int64_t checked_argmax(std::span<const float> logits) {
    constexpr size_t kBlock = 1024;
    float max_logit = -INFINITY;
    size_t best_block = 0;
    bool unusable = false;
    for (size_t start = 0; start < logits.size(); start += kBlock) {
        const ScanResult r = scan_values(&logits[start], std::min(kBlock, logits.size() - start));
        unusable |= r.unusable;
        if (r.max > max_logit) {  // strictly: an equal max in a later block has higher ids
            max_logit = r.max;
            best_block = start;
        }
    }
    if (unusable) {
        for (size_t i = 0; i < logits.size(); ++i)
            if (!(logits[i] <= FLT_MAX))
                fail("sampling: logit of token ", i, " is ", logits[i],
                     " (expected finite or -inf)");
    }
    if (max_logit == -INFINITY) return -1;
    for (size_t i = best_block; i < logits.size(); ++i)
        if (logits[i] == max_logit) return static_cast<int64_t>(i);
    return -1;  // unreachable: max_logit is one of the logits
}

size_t nucleus_prefix_sorted(const std::vector<Candidate>& cand, double target) {
    double cumulative = 0.0;
    for (size_t i = 0; i < cand.size(); ++i) {
        cumulative += cand[i].weight;
        if (cumulative >= target) return i + 1;
    }
    return cand.size();
}

// Top-p without top-k, over dense weights [V], without sorting V entries: a histogram of mass by
// the weight's top float bits (exponent + 2 mantissa bits: 4 buckets per octave) finds the
// heaviest buckets holding >= target; only tokens in those buckets, plus one bucket of slack
// (for rounding, and for exp_nonpositive being monotone only to within an ulp), become
// candidates. Larger logits never fall in a lighter bucket than that, so the candidates are a
// prefix of the rank order containing the whole nucleus. Writes the nucleus in rank order into
// cand; mass is the histogram's scratch.
constexpr int kNucleusShift = 21;
constexpr int kNucleusBuckets = (0x3F800000 >> kNucleusShift) + 1;  // weights lie in [0, 1]

void nucleus_from_dense(std::span<const float> logits, std::span<const float> weights, double target,
                        std::vector<double>& mass, std::vector<Candidate>& cand) {
    constexpr int kShift = kNucleusShift;
    constexpr int kBuckets = kNucleusBuckets;
    auto bucket_of = [](float w) { return std::bit_cast<int32_t>(w) >> kShift; };
    // Four interleaved histograms: consecutive tokens often share a bucket, and one histogram
    // would serialize on that bucket's read-modify-write.
    mass.assign(4 * kBuckets, 0.0);  // [4, kBuckets]
    for (size_t i = 0; i < weights.size(); ++i)
        mass[(i & 3) * kBuckets + static_cast<size_t>(bucket_of(weights[i]))] += weights[i];
    int cut = 0;
    double cumulative = 0.0;
    for (int b = kBuckets - 1; b >= 0; --b) {
        for (int copy = 0; copy < 4; ++copy) cumulative += mass[copy * kBuckets + b];
        if (cumulative >= target) {
            cut = std::max(b - 1, 0);
            break;
        }
    }
    cand.clear();
    for (size_t i = 0; i < weights.size(); ++i)
        if (weights[i] > 0.0f && bucket_of(weights[i]) >= cut)
            cand.push_back({static_cast<int32_t>(i), logits[i], weights[i]});
    std::sort(cand.begin(), cand.end(), ranks_before);
    cand.resize(nucleus_prefix_sorted(cand, target));
}

// The distribution of dense weights [V] (max weight 1) after min-p: every token with
// weight >= min_p and > 0, in id order. Writes into out, reusing its capacity.
void dense_distribution(std::span<const float> weights, float min_p, Distribution& out) {
    out.vocab_size = static_cast<int64_t>(weights.size());
    out.ids.resize(weights.size());
    out.probs.resize(weights.size());
    double kept = 0.0;
    size_t count = 0;
    for (size_t i = 0; i < weights.size(); ++i) {
        const float w = weights[i];
        if (w >= min_p && w > 0.0f) {
            kept += w;
            out.ids[count] = static_cast<int32_t>(i);
            out.probs[count] = w;
            ++count;
        }
    }
    out.ids.resize(count);
    out.probs.resize(count);
    const auto inverse = static_cast<float>(1.0 / kept);  // a multiply per token, not a divide
    for (float& p : out.probs) p *= inverse;
}

bool uses_top_k(const SamplerParams& params, int64_t vocab) {
    return params.top_k > 0 && params.top_k < vocab;
}

// The penalty window reserved at once: the whole history (max_history) for -1, else
// penalty_last_n up to a bound (a huge --repeat-last-n must not reserve gigabytes per workspace).
constexpr size_t kReservedPenaltyWindow = size_t(1) << 16;
size_t reserved_penalty_window(const SamplerParams& params, size_t max_history) {
    if (!params.penalties_active() || params.penalty_last_n == 0) return 0;
    if (params.penalty_last_n < 0) return max_history;
    return std::min(static_cast<size_t>(params.penalty_last_n), kReservedPenaltyWindow);
}

// The candidates' capacity: top_k in the heap scan, else every logit (select_top_k's selection
// over all finite logits above kHeapSelectMaxK, or the nucleus).
size_t candidate_capacity(const SamplerParams& params, int64_t vocab) {
    if (params.greedy()) return 0;
    const bool heap = uses_top_k(params, vocab) && params.top_k <= kHeapSelectMaxK;
    return static_cast<size_t>(heap ? params.top_k : vocab);
}

// The most tokens a distribution from process() can hold.
size_t max_support(const SamplerParams& params, int64_t vocab) {
    if (params.greedy()) return 1;
    return static_cast<size_t>(uses_top_k(params, vocab) ? params.top_k : vocab);
}

}  // namespace

void reserve_for_sampling(const SamplerParams& params, int64_t vocab, Distribution& d) {
    d.ids.reserve(max_support(params, vocab));
    d.probs.reserve(max_support(params, vocab));
}

void reserve_for_sampling(const SamplerParams& params, int64_t vocab, SamplingWorkspace& w,
                          size_t max_history) {
    if (params.changes_logits()) w.logits.resize(static_cast<size_t>(vocab));
    w.recent.reserve(reserved_penalty_window(params, max_history));
    if (params.greedy()) return;
    w.candidates.reserve(candidate_capacity(params, vocab));
    if (!uses_top_k(params, vocab)) {
        w.weights.resize(static_cast<size_t>(vocab));
        if (params.top_p < 1.0f) w.nucleus_mass.reserve(4 * kNucleusBuckets);
    }
}

void apply_bias_and_penalties(std::span<const float> logits, std::span<const int32_t> history,
                              const SamplerParams& params, std::vector<float>& out) {
    std::vector<int32_t> recent;
    apply_bias_and_penalties(logits, history, params, out, recent);
}

void apply_bias_and_penalties(std::span<const float> logits, std::span<const int32_t> history,
                              const SamplerParams& params, std::vector<float>& out,
                              std::vector<int32_t>& recent) {
    params.validate();
    out.assign(logits.begin(), logits.end());  // [V]
    const auto vocab = static_cast<int64_t>(out.size());
    for (const auto& [id, bias] : params.logit_bias)
        if (id < vocab) out.at(static_cast<size_t>(id)) += bias;

    if (!params.penalties_active()) return;
    const size_t window = params.penalty_last_n < 0
                              ? history.size()
                              : std::min(history.size(), static_cast<size_t>(params.penalty_last_n));
    // Grows by doubling; a decode loop reserves the whole window up front (reserve_for_sampling).
    if (recent.capacity() < window) recent.reserve(std::max(window, 2 * recent.capacity()));
    recent.assign(history.end() - static_cast<ptrdiff_t>(window), history.end());
    std::sort(recent.begin(), recent.end());  // equal ids become runs: run length = count
    for (size_t start = 0; start < recent.size();) {
        const int32_t id = recent[start];
        size_t end = start;
        while (end < recent.size() && recent[end] == id) ++end;
        const auto count = static_cast<float>(end - start);
        start = end;
        if (id < 0) fail("sampling: history token id ", id, " is negative");
        if (id >= vocab) continue;  // not scored by these logits (draft sub-vocabulary)
        // at(): a skip that let the first unscored id through would throw, not write past out.
        float& logit = out.at(static_cast<size_t>(id));
        logit = logit > 0.0f ? logit / params.repeat_penalty : logit * params.repeat_penalty;
        logit -= params.presence_penalty + params.frequency_penalty * count;
    }
}

void distribution_from_logits(std::span<const float> logits, const SamplerParams& params,
                              SamplingWorkspace& workspace, Distribution& out) {
    params.validate();
    const auto vocab = static_cast<int64_t>(logits.size());
    if (vocab == 0) fail("sampling: empty logit vector");
    const int64_t argmax = checked_argmax(logits);
    if (argmax < 0) fail("sampling: every token has a -inf logit (all banned)");
    out.vocab_size = vocab;
    if (params.greedy()) {
        out.ids.assign(1, static_cast<int32_t>(argmax));
        out.probs.assign(1, 1.0f);
        return;
    }
    const float max_logit = logits[static_cast<size_t>(argmax)];

    // Subtracting the global max keeps every exponent <= 0 (no overflow for tiny T).
    const float temperature = params.temperature;
    std::vector<Candidate>& cand = workspace.candidates;  // the survivors so far, in rank order
    std::vector<float>& scratch = workspace.weights;
    if (uses_top_k(params, vocab)) {
        select_top_k(logits, params.top_k, cand);
        double total = 0.0;
        for (Candidate& c : cand) {
            c.weight = exp_nonpositive((c.logit - max_logit) / temperature);
            total += c.weight;
        }
        if (params.top_p < 1.0f)
            cand.resize(nucleus_prefix_sorted(cand, static_cast<double>(params.top_p) * total));
    } else {
        scratch.resize(logits.size());  // [V] dense weights
        const double total = dense_weights(logits, max_logit, temperature, scratch.data());
        if (params.top_p >= 1.0f) {
            // No filter needs a ranking: min-p (max weight is exp(0) = 1) straight from the
            // dense weights, in id order.
            dense_distribution(scratch, params.min_p, out);
            return;
        }
        nucleus_from_dense(logits, scratch, static_cast<double>(params.top_p) * total,
                           workspace.nucleus_mass, cand);
    }

    if (params.min_p > 0.0f) {
        float max_weight = 0.0f;
        for (const Candidate& c : cand) max_weight = std::max(max_weight, c.weight);
        const float threshold = params.min_p * max_weight;
        std::erase_if(cand, [&](const Candidate& c) { return c.weight < threshold; });
    }
    std::erase_if(cand, [](const Candidate& c) { return c.weight <= 0.0f; });  // exp underflow
    std::sort(cand.begin(), cand.end(),
              [](const Candidate& a, const Candidate& b) { return a.id < b.id; });
    double kept = 0.0;
    for (const Candidate& c : cand) kept += c.weight;
    const auto inverse = static_cast<float>(1.0 / kept);  // same rounding as the dense path
    out.ids.resize(cand.size());
    out.probs.resize(cand.size());
    for (size_t i = 0; i < cand.size(); ++i) {
        out.ids[i] = cand[i].id;
        out.probs[i] = cand[i].weight * inverse;
    }
}

Distribution distribution_from_logits(std::span<const float> logits, const SamplerParams& params) {
    SamplingWorkspace workspace;
    Distribution out;
    distribution_from_logits(logits, params, workspace, out);
    return out;
}

void process(std::span<const float> logits, std::span<const int32_t> history,
             const SamplerParams& params, SamplingWorkspace& workspace, Distribution& out) {
    if (!params.changes_logits()) {
        // Steps 1-2 change nothing: no copy of the V logits (a pass over a megabyte every token).
        // (distribution_from_logits validates params.)
        workspace.processed = logits;
    } else {
        apply_bias_and_penalties(logits, history, params, workspace.logits, workspace.recent);
        workspace.processed = workspace.logits;
    }
    distribution_from_logits(workspace.processed, params, workspace, out);
}

Distribution process(std::span<const float> logits, std::span<const int32_t> history,
                     const SamplerParams& params) {
    SamplingWorkspace workspace;
    Distribution out;
    process(logits, history, params, workspace, out);
    return out;
}

void top_k_candidates(std::span<const float> logits, int64_t k,
                      std::vector<SamplingCandidate>& best) {
    checked_argmax(logits);  // rejects NaN / +inf logits
    select_top_k(logits, k, best);
}

std::vector<int32_t> top_k_ids(std::span<const float> logits, int64_t k) {
    std::vector<Candidate> best;
    top_k_candidates(logits, k, best);
    std::vector<int32_t> ids;
    for (const Candidate& c : best) ids.push_back(c.id);
    return ids;
}

}  // namespace nextn
