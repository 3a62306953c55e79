// The performance model bench prints next to each measured MTP speed-up
// (spec/speculation_model.h), against sums worked by hand.
#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"
#include "spec/speculation_model.h"

namespace nextn {
namespace {

const std::vector<double> kCurve = {1.0, 1.05, 1.1, 1.2, 1.4, 1.6, 1.8, 2.0};  // cost(N)/cost(1)

TEST(SpeculationModel, WorkedExample) {
    // 10 rounds at depth 3: draft 1 accepted in 8, drafts 1-2 in 6, all three in 3.
    // E = 1 + 0.8 + 0.6 + 0.3 = 2.7; round = cost(4) + 3 * 0.05 = 1.35; speed-up 2.7 / 1.35 = 2.
    const SpeculationModel m = speculation_model({10, 10, 10}, {8, 6, 3}, 3, kCurve, 0.05);
    EXPECT_DOUBLE_EQ(m.tokens_per_round, 2.7);
    EXPECT_DOUBLE_EQ(m.round_cost, 1.35);
    EXPECT_NEAR(m.speedup(), 2.0, 1e-12);
}

TEST(SpeculationModel, EveryDraftAcceptedCommitsDepthPlusOne) {
    for (int k = 1; k <= 7; ++k) {
        const std::vector<int64_t> n(size_t(k), 40);
        const SpeculationModel m = speculation_model(n, n, k, kCurve, 0.1);
        EXPECT_DOUBLE_EQ(m.tokens_per_round, k + 1.0) << "depth " << k;
        EXPECT_DOUBLE_EQ(m.round_cost, kCurve[size_t(k)] + 0.1 * k) << "depth " << k;
    }
}

TEST(SpeculationModel, NothingAcceptedIsASlowDown) {
    const SpeculationModel m = speculation_model({25, 25}, {0, 0}, 2, kCurve, 0.05);
    EXPECT_DOUBLE_EQ(m.tokens_per_round, 1.0);
    EXPECT_LT(m.speedup(), 1.0);
    EXPECT_DOUBLE_EQ(m.speedup(), 1.0 / (1.1 + 0.1));
}

TEST(SpeculationModel, PositionNeverDraftedAddsNothing) {
    // The counts run past the depth asked for; position 2 was never drafted.
    const SpeculationModel m = speculation_model({4, 0, 9}, {2, 0, 9}, 2, kCurve, 0.0);
    EXPECT_DOUBLE_EQ(m.tokens_per_round, 1.5);
}

TEST(SpeculationModel, RejectsDepthsTheInputsDoNotCover) {
    EXPECT_THROW(speculation_model({1}, {1}, 0, kCurve, 0.0), Error);
    EXPECT_THROW(speculation_model(std::vector<int64_t>(8, 1), std::vector<int64_t>(8, 1), 8, kCurve, 0.0), Error);
    EXPECT_THROW(speculation_model({1, 1}, {1}, 2, kCurve, 0.0), Error);
}

}  // namespace
}  // namespace nextn
