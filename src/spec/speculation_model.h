#pragma once
// DESIGN.md's performance model of a speculative round, for bench to print next to the
// measured speed-up. A round at depth k commits on average
//   E = 1 + sum_{d=1..k} P(drafts 1..d all accepted)
// tokens (the per-position acceptance of a run), and costs one verify forward of width k+1
// and k chained draft steps; in units of one plain decode token
//   round cost = cost(k+1)/cost(1) + k * draft_step_cost.
// The expected speed-up is E / round cost. What the measured speed-up falls short of it is the
// round's work the model leaves out: sampling and acceptance on the host, the MTP head's flush
// of committed pairs, the depth bookkeeping.
#include <cstdint>
#include <vector>

namespace nextn {

struct SpeculationModel {
    double tokens_per_round = 0;  // E
    double round_cost = 0;        // in plain decode tokens
    double speedup() const { return round_cost > 0 ? tokens_per_round / round_cost : 0.0; }
};

// drafted[d], accepted[d]: rounds that drafted position d+1, and that had drafts 1..d+1 all
// accepted (DecodeStats); verify_cost[n-1] = cost(n)/cost(1); draft_step_cost in plain decode
// tokens. Fails unless 1 <= depth, depth + 1 <= verify_cost.size() and the counts cover depth.
SpeculationModel speculation_model(const std::vector<int64_t>& drafted,
                                   const std::vector<int64_t>& accepted, int depth,
                                   const std::vector<double>& verify_cost, double draft_step_cost);

}  // namespace nextn
