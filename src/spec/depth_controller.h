#pragma once
// Adaptive draft depth (--draft-depth auto). Picks the depth N in [0, max] that maximises
// expected committed tokens per second:
//   E(N) = 1 + sum_{i=1..N} prod_{j<=i} a_j      a_j: EWMA of P(draft j accepted | 1..j-1 were)
//   rate(N) = E(N) / cost(N)                     cost(N): EWMA wall time of a round at depth N
// Depth 0 is plain decoding. Every `probe_interval` rounds it tries a neighbour of its choice,
// first one deeper; a probe that wins becomes the choice and the next probe goes one further
// the same way, in the next round (the interval resets to 4). A probe that loses goes on until the
// depth's cost rests on 2 rounds (a cold first round only ever looks slow), then turns the
// direction around and doubles the interval (up to 512). Acceptance starts as a running mean (the
// 0.5 prior counts as one sample) and becomes an EWMA once it holds 1/ewma samples; a depth's cost
// starts as the minimum of its first 3 rounds (interference only slows a round), then follows an
// EWMA; a request's first round counts for acceptance only (observe's `timed`). The state
// persists across requests and can be saved as a small JSON file per model.
//
// A sampled request must not follow timings: which positions are drafted, and from which q,
// decides which tokens rejection sampling emits, so a depth that followed the machine's load
// would make the same seed give different text. Such a request runs a controller made by
// with_modelled_costs: the same choices, from acceptance alone and a fixed cost model.
#include <string>
#include <vector>

namespace nextn {

class DepthController {
public:
    static constexpr int kMinProbeInterval = 4;
    static constexpr int kMaxProbeInterval = 512;
    static constexpr int kMinCostSamples = 3;  // a depth's cost is the min of its first samples
    static constexpr int kMinLossSamples = 2;  // samples behind a cost before a probe can lose

    explicit DepthController(int max_depth, double ewma = 0.1);
    // Costs cost(N) = 1 + kModelledCostPerDraft * N instead of measured ones (observe's seconds
    // are ignored); starts cold, so its choices depend only on the acceptance it observes.
    static DepthController with_modelled_costs(int max_depth);
    // A verify's cost per draft, in decode steps: a width-5 verify measured 1.05-1.7 steps on
    // real models (README, Speed), so 0.15 a draft is at the dear end of that range (a model
    // whose weights stay in the cache, like the embedded tiny one, pays about 1.0).
    static constexpr double kModelledCostPerDraft = 0.15;

    int max_depth() const { return max_depth_; }
    // Depth for the next round.
    int choose();
    // After a round at `depth` that accepted `accepted` drafts and took `seconds` end to end.
    // A round that is not `timed` counts for acceptance only: a request's first round, which
    // in `nextn bench` ran 1.2-1.9x slow (caches and pages cold after the prefill) and, as plain
    // decoding's only cost, kept a never-accepted head at depth 1 until a probe came back down.
    void observe(int depth, int accepted, double seconds, bool timed = true);

    double acceptance(int position) const { return accept_[size_t(position - 1)]; }
    double cost(int depth) const { return cost_[size_t(depth)]; }
    double expected_tokens(int depth) const;
    int best_depth() const;

    // Persistence (no-ops on I/O errors: a cold start is always safe).
    void load(const std::string& path);
    void save(const std::string& path) const;
    // ~/.cache/nextn/depth-<key>.json (XDG_CACHE_HOME honoured); "" when no home is known.
    static std::string default_path(const std::string& model_key);

private:
    int max_depth_;
    double ewma_;
    std::vector<double> accept_;  // [max_depth] conditional acceptance per draft position
    std::vector<double> cost_;    // [max_depth + 1] seconds per round; <= 0: unmeasured
    int chosen_ = 1;
    int rounds_since_probe_ = 0;
    int probe_interval_ = kMinProbeInterval;
    int probing_ = -1;            // depth being probed this round, -1 if none
    bool probe_down_next_ = false;  // direction of the next probe (up first)
    double rate_before_probe_ = 0;
    std::vector<int> accept_samples_;  // [max_depth] observations behind accept_ (prior = 1)
    std::vector<int> cost_samples_;    // [max_depth + 1] observations behind cost_
    bool modelled_costs_ = false;      // cost_ is fixed (with_modelled_costs)
};

}  // namespace nextn
