#include "spec/speculation_model.h"

#include "core/error.h"

namespace nextn {

SpeculationModel speculation_model(const std::vector<int64_t>& drafted,
                                   const std::vector<int64_t>& accepted, int depth,
                                   const std::vector<double>& verify_cost, double draft_step_cost) {
    if (depth < 1 || size_t(depth) + 1 > verify_cost.size())
        fail("speculation_model: depth ", depth, " needs cost(", depth + 1, "); the curve has ",
             verify_cost.size(), " widths");
    if (drafted.size() < size_t(depth) || accepted.size() < size_t(depth))
        fail("speculation_model: acceptance counts for ", drafted.size(), " positions, depth ", depth);
    SpeculationModel m;
    m.tokens_per_round = 1.0;
    for (int d = 0; d < depth; ++d)
        if (drafted[size_t(d)] > 0) m.tokens_per_round += double(accepted[size_t(d)]) / double(drafted[size_t(d)]);
    m.round_cost = verify_cost[size_t(depth)] + double(depth) * draft_step_cost;
    return m;
}

}  // namespace nextn
