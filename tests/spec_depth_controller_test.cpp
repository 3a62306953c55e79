// The adaptive depth controller converges to the depth that maximises E(N)/cost(N), computed
// here in closed form for simulated acceptance and cost.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "spec/depth_controller.h"
#include "test_paths.h"

namespace nextn {
namespace {

// Simulates rounds: each draft position accepted with probability `a` (given the previous
// ones were), a round at depth N costs base * (1 + slope * N).
int simulate(double a, double slope, int rounds, DepthController& c) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> u(0, 1);
    for (int r = 0; r < rounds; ++r) {
        int depth = c.choose();
        int accepted = 0;
        while (accepted < depth && u(rng) < a) ++accepted;
        c.observe(depth, accepted, 0.01 * (1 + slope * depth));
    }
    return c.best_depth();
}

int optimum(double a, double slope, int max_depth) {
    int best = 0;
    double best_rate = 0;
    for (int n = 0; n <= max_depth; ++n) {
        double e = 0;
        for (int i = 0; i <= n; ++i) e += std::pow(a, i);
        double rate = e / (1 + slope * n);
        if (rate > best_rate) best = n, best_rate = rate;
    }
    return best;
}

// Which rounds of a request run slow (caches and fresh pages warming up).
enum class ColdRounds { FirstAtEachDepth, FirstOfRequest };

// One request of `rounds` rounds on c: each draft position accepted with probability `a`
// (given the previous ones were), a depth-N round costs 0.01 * (1 + slope * N), and the `where`
// rounds `cold` times that. The request's first round is observed untimed, as the speculative
// decoder does. Adds the request's time and committed tokens.
void run_request(DepthController& c, double a, double slope, int rounds, double cold,
                 std::mt19937& rng, double& time, double& tokens,
                 ColdRounds where = ColdRounds::FirstAtEachDepth) {
    std::uniform_real_distribution<double> u(0, 1);
    std::vector<bool> seen(size_t(c.max_depth() + 1), false);
    for (int r = 0; r < rounds; ++r) {
        const int depth = c.choose();
        int accepted = 0;
        while (accepted < depth && u(rng) < a) ++accepted;
        double t = 0.01 * (1 + slope * depth);
        const bool is_cold = where == ColdRounds::FirstOfRequest ? r == 0 : !seen[size_t(depth)];
        if (is_cold) t *= cold;
        seen[size_t(depth)] = true;
        c.observe(depth, accepted, t, /*timed=*/r > 0);
        time += t;
        tokens += 1 + accepted;
    }
}

// Tokens per unit time of a controller over one request of `rounds` rounds, relative to plain
// decoding, when the `where` rounds are `cold` times slower (plain decoding's own first round
// included).
double relative_speed(double a, double slope, int rounds, double cold,
                      ColdRounds where = ColdRounds::FirstAtEachDepth) {
    DepthController c(4);
    std::mt19937 rng(11);
    double time = 0, tokens = 0;
    run_request(c, a, slope, rounds, cold, rng, time, tokens, where);
    const double plain_time = 0.01 * (rounds - 1) + 0.01 * cold;
    return (tokens / time) / (rounds / plain_time);
}

// As a server (or `nextn bench`) sees it: several requests, each starting with fresh buffers,
// so the first round at each depth within every request is `cold` times slower.
int simulate_requests(double a, double slope, int requests, int rounds, double cold,
                      DepthController& c) {
    std::mt19937 rng(5);
    double time = 0, tokens = 0;
    for (int q = 0; q < requests; ++q) run_request(c, a, slope, rounds, cold, rng, time, tokens);
    return c.best_depth();
}

// What one round of a scripted run observes: drafts accepted and the round's seconds.
struct Round {
    int accepted;
    double seconds;
};

// The depths c chooses over `rounds` rounds, round r at depth d observed as round(r, d) says.
template <class Script>
std::vector<int> choices_over(DepthController& c, int rounds, Script round) {
    std::vector<int> choices;
    for (int r = 0; r < rounds; ++r) {
        const int depth = c.choose();
        choices.push_back(depth);
        const Round seen = round(r, depth);
        c.observe(depth, seen.accepted, seen.seconds);
    }
    return choices;
}

// Issue 8's floor: at ~0% acceptance `auto` runs at >= 0.95x plain decoding, from a cold start,
// within a short request (48 rounds here, as `nextn bench` decodes 64 tokens), even when the
// very first plain round is measured 3x slow.
TEST(DepthController, ColdStartAtZeroAcceptanceCostsUnderFivePercent) {
    EXPECT_GE(relative_speed(0.0, 0.3, 48, 1.0), 0.95);
    EXPECT_GE(relative_speed(0.0, 0.3, 48, 2.0), 0.95);
    EXPECT_GE(relative_speed(0.0, 0.3, 400, 3.0), 0.95);
    DepthController c(4);
    EXPECT_EQ(0, simulate(0.0, 0.3, 48, c));
}

// `nextn bench --draft random` (a head never right): a request's first round ran 1.2-1.9x slow.
// Taken as plain decoding's only cost, a 1.9x one put a cold start at depth 1 for 14 of its
// first 20 rounds (0.97x plain in this model over 128 rounds).
// Untimed, it costs nothing: the controller is where a slow first round at every depth leaves it.
TEST(DepthController, SlowFirstRoundOfARequestDoesNotHoldADeeperDepth) {
    EXPECT_GE(relative_speed(0.0, 0.2, 128, 1.9, ColdRounds::FirstOfRequest), 0.985);
    EXPECT_GE(relative_speed(0.0, 0.2, 128, 3.0, ColdRounds::FirstOfRequest), 0.985);
    DepthController c(4);
    std::mt19937 rng(3);
    double time = 0, tokens = 0;
    run_request(c, 0.0, 0.2, 4, 1.9, rng, time, tokens, ColdRounds::FirstOfRequest);
    EXPECT_EQ(0, c.best_depth());  // rounds: 0 (untimed), 0, 1: plain decoding is ahead
}

TEST(DepthController, ZeroAcceptanceFallsBackToPlainDecoding) {
    DepthController c(4);
    EXPECT_EQ(0, simulate(0.0, 0.1, 400, c));
}

TEST(DepthController, HighAcceptanceSettlesDeep) {
    DepthController c(4);
    int got = simulate(0.9, 0.05, 2000, c);
    EXPECT_EQ(optimum(0.9, 0.05, 4), got);
    EXPECT_GE(got, 2);
}

// Every draft accepted and deeper always better: a cold start climbs to the deepest depth within
// 10 rounds (about 30 tokens), because a winning probe keeps its direction and the next one
// follows at once: measure 0 and 1, 4 rounds at 1, then probes 2, 3, 4 that each win.
// (Alternating up and down probes needed ~40 rounds to get there; waiting the 4-round interval
// after each win, 16.)
TEST(DepthController, PerfectDraftsClimbToTheTopQuickly) {
    DepthController c(4);
    EXPECT_EQ(4, simulate(1.0, 0.1, 10, c));
    EXPECT_EQ(4, c.choose());
}

// Every draft right, a depth-N round 5% dearer per draft, and each depth's first round in a
// request 1.6x slow (measured in `nextn bench --draft perfect`: 47 ms against 26). A probe
// decided on that one cold round lost every time, and the controller stayed at depth 2 over
// 8 requests; confirming a loss over 2 rounds reaches depth 4 within 2 requests.
TEST(DepthController, ColdFirstRoundsInEachRequestDoNotHideDeeperDepths) {
    DepthController c(4);
    EXPECT_EQ(4, simulate_requests(1.0, 0.05, 2, 20, 1.6, c));
    EXPECT_EQ(4, simulate_requests(1.0, 0.05, 6, 20, 1.6, c));
    EXPECT_EQ(4, c.choose());
}

TEST(DepthController, ModerateAcceptanceMatchesClosedForm) {
    DepthController c(6);
    int got = simulate(0.6, 0.3, 4000, c);
    EXPECT_NEAR(optimum(0.6, 0.3, 6), got, 1);
}

TEST(DepthController, StatePersistsAcrossInstances) {
    std::string path = test::scratch_dir() + "/depth.json";
    DepthController a(4);
    int want = simulate(0.9, 0.05, 2000, a);
    a.save(path);
    DepthController b(4);
    b.load(path);
    EXPECT_EQ(want, b.best_depth());
    EXPECT_DOUBLE_EQ(a.acceptance(1), b.acceptance(1));
    DepthController other(3);  // a different max depth ignores the file
    other.load(path);
    EXPECT_DOUBLE_EQ(0.5, other.acceptance(1));
}

// The cold start round by round with every draft right and deeper always better: depth 0 and
// the initial choice, depth 1, are measured first (rounds 1-2); depth 1 holds until the first
// probe, 4 rounds after the model is first trusted (rounds 2-5); then probes 2, 3 and 4 each win,
// and the next probe follows at once in the same direction (rounds 6-8). At the deepest depth
// the next probe, 4 rounds on, can only go down (round 12); it loses (depth 3's cost already
// rests on 2 rounds), and depth 4 resumes.
TEST(DepthController, ColdStartMeasuresPlainAndDepthOneThenClimbs) {
    DepthController c(4);
    const std::vector<int> choices = choices_over(c, 14, [](int, int depth) {
        return Round{depth, 0.01 * (1 + 0.1 * depth)};
    });
    EXPECT_EQ((std::vector<int>{0, 1, 1, 1, 1, 2, 3, 4, 4, 4, 4, 3, 4, 4}), choices);
}

// A probe that loses on its first, cold round (3x slow) goes on to a second round, and wins
// there once its cost is the minimum of the two: every draft right, a depth-N round
// 0.01 * (1 + 0.1 N) s, each depth's first round 3x that.
TEST(DepthController, ALosingProbeIsConfirmedOnASecondRound) {
    DepthController c(2);
    std::vector<bool> seen(3, false);
    const std::vector<int> choices = choices_over(c, 8, [&](int, int depth) {
        const double cold = seen[size_t(depth)] ? 1.0 : 3.0;
        seen[size_t(depth)] = true;
        return Round{depth, cold * 0.01 * (1 + 0.1 * depth)};
    });
    // Rounds 1-2 measure 0 and 1; 2-5 stay at 1; 6 probes 2 (cold: a loss so far); 7 confirms it
    // (warm: a win) and depth 2 stays.
    EXPECT_EQ((std::vector<int>{0, 1, 1, 1, 1, 2, 2, 2}), choices);
}

// A loss turns the next probe around: settled at depth 2 (drafts 1-2 always right, draft 3
// never), the probes go 3, 1, 3, 1, ..., each a losing one.
TEST(DepthController, ProbesAlternateDirectionAfterALoss) {
    DepthController c(4);
    std::vector<int> probes;  // depth of each run of rounds away from depth 2, after settling
    int previous = -1;
    for (int r = 0; r < 1500; ++r) {
        const int depth = c.choose();
        if (r >= 40 && depth != 2 && depth != previous) probes.push_back(depth);
        previous = depth;
        c.observe(depth, std::min(depth, 2), 0.01 * (1 + 0.1 * depth));
    }
    ASSERT_GE(probes.size(), 4u);
    for (size_t i = 0; i < probes.size(); ++i) {
        EXPECT_TRUE(probes[i] == 1 || probes[i] == 3) << "probe " << i << " at " << probes[i];
        if (i > 0) {
            EXPECT_NE(probes[i - 1], probes[i]) << "probes " << i - 1 << " and " << i;
        }
    }
}

// A win resets the probe interval to 4, however far losses had doubled it: drafts never right
// for 30 rounds (plain decoding wins, the probes to depth 1 lose, the interval grows), then
// always right. The first probe after that wins, and at the deepest depth the next probe (back
// down) comes 4 rounds later.
TEST(DepthController, AWinResetsTheProbeInterval) {
    DepthController c(1);
    const std::vector<int> choices = choices_over(c, 120, [](int r, int depth) {
        return Round{r < 30 ? 0 : depth, 0.01 * (1 + 0.2 * depth)};
    });
    size_t win = 30;
    while (win < choices.size() && choices[win] == 0) ++win;
    ASSERT_LT(win + 4, choices.size());
    EXPECT_EQ((std::vector<int>{1, 1, 1, 1, 0}),
              std::vector<int>(choices.begin() + long(win), choices.begin() + long(win) + 5))
        << "first probe at round " << win;
}

// A depth's cost starts as the minimum of its first 3 rounds (interference only slows a round).
TEST(DepthController, CostStartsAsTheMinimumOfTheFirstRounds) {
    DepthController c(1);
    c.observe(0, 0, 0.03);
    EXPECT_DOUBLE_EQ(0.03, c.cost(0));
    c.observe(0, 0, 0.01);
    c.observe(0, 0, 0.02);
    EXPECT_DOUBLE_EQ(0.01, c.cost(0));
}

// With modelled costs a probe is decided in its own round: when drafts are never accepted, a
// losing probe goes back to plain decoding at once, and the probes' interval doubles (4, 8, 16,
// 32, 64 rounds), so 100 rounds spend at most the first few (before the acceptance estimate
// falls from its prior) and one round a probe at depth > 0.
TEST(DepthController, ModelledCostsDecideAProbeInItsOwnRound) {
    DepthController c = DepthController::with_modelled_costs(4);
    int deep = 0;
    for (int r = 0; r < 100; ++r) {
        const int depth = c.choose();
        deep += depth > 0;
        c.observe(depth, 0, 0.01, r > 0);
    }
    EXPECT_LE(deep, 10);
    EXPECT_EQ(0, c.choose());
}

// The estimates against the formulas depth_controller.h states, on a few hand-fed rounds.
// E(N) = 1 + sum_{i=1..N} prod_{j<=i} a_j: with every a_j at its 0.5 prior, 1, 1.5, 1.75, 1.875.
TEST(DepthController, ExpectedTokensIsTheProductChainOfAcceptances) {
    DepthController c(3);
    EXPECT_DOUBLE_EQ(1.0, c.expected_tokens(0));
    EXPECT_DOUBLE_EQ(1.5, c.expected_tokens(1));
    EXPECT_DOUBLE_EQ(1.75, c.expected_tokens(2));
    EXPECT_DOUBLE_EQ(1.875, c.expected_tokens(3));
    c.observe(1, 1, 0.01);  // a_1: mean of the prior and one accept = 0.75
    EXPECT_DOUBLE_EQ(1.0 + 0.75 + 0.75 * 0.5 + 0.75 * 0.5 * 0.5, c.expected_tokens(3));
}

// Acceptance is a running mean in which the 0.5 prior counts as one sample, until it holds
// 1/ewma = 10 samples; from then on an EWMA with weight 0.1. A position after a rejected draft
// was not tested and keeps its estimate.
TEST(DepthController, AcceptanceIsARunningMeanThenAnEwma) {
    DepthController c(2);
    c.observe(2, 0, 0.01);  // draft 1 rejected: position 1 gets a 0, position 2 nothing
    EXPECT_DOUBLE_EQ(0.25, c.acceptance(1));
    EXPECT_DOUBLE_EQ(0.5, c.acceptance(2));
    c.observe(2, 1, 0.01);  // draft 1 accepted, draft 2 rejected
    EXPECT_NEAR((0.5 + 0 + 1) / 3, c.acceptance(1), 1e-12);
    EXPECT_DOUBLE_EQ(0.25, c.acceptance(2));
    for (int i = 0; i < 7; ++i) c.observe(1, 1, 0.01);  // 10 samples: 0.5, 0, 8 ones
    EXPECT_NEAR(8.5 / 10, c.acceptance(1), 1e-12);
    c.observe(1, 0, 0.01);  // the 11th: EWMA
    EXPECT_NEAR(0.9 * 0.85, c.acceptance(1), 1e-12);
}

// A loaded state continues as EWMAs (its averages are settled), while a depth it never measured
// takes its first round's time as is.
TEST(DepthController, LoadedEstimatesContinueAsEwmas) {
    const std::string path = test::scratch_dir() + "/depth_ewma.json";
    DepthController a(2);
    for (int r = 0; r < 3; ++r) a.observe(1, 1, 0.02);  // depth 2 never measured
    a.save(path);
    DepthController b(2);
    b.load(path);
    const double saved = b.acceptance(1);
    EXPECT_DOUBLE_EQ(a.acceptance(1), saved);
    EXPECT_EQ(0.0, b.cost(2));
    b.observe(1, 0, 0.02);
    EXPECT_NEAR(0.9 * saved, b.acceptance(1), 1e-12);
    b.observe(2, 2, 0.05);
    EXPECT_DOUBLE_EQ(0.05, b.cost(2));
}

// ~/.cache/nextn/depth-<key>.json, XDG_CACHE_HOME first, the key's other characters than letters
// and digits as '_', and "" without either variable.
TEST(DepthController, DefaultPathFollowsXdgThenHome) {
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    const char* home = std::getenv("HOME");
    const std::string saved_xdg = xdg ? xdg : "", saved_home = home ? home : "";
    setenv("XDG_CACHE_HOME", "/x/cache", 1);
    setenv("HOME", "/h", 1);
    EXPECT_EQ("/x/cache/nextn/depth-m_dir_a_b.json", DepthController::default_path("m/dir-a.b"));
    unsetenv("XDG_CACHE_HOME");
    EXPECT_EQ("/h/.cache/nextn/depth-m_dir_a_b.json", DepthController::default_path("m/dir-a.b"));
    unsetenv("HOME");
    EXPECT_EQ("", DepthController::default_path("m"));
    if (xdg) setenv("XDG_CACHE_HOME", saved_xdg.c_str(), 1);
    if (home) setenv("HOME", saved_home.c_str(), 1);
}

// A sampled request's controller (with_modelled_costs) chooses from acceptance alone: the same
// acceptance with any timings gives the same depths, round for round, and it settles next to
// the closed form's optimum for its cost model (its acceptance estimates are EWMAs of 0/1
// samples, so not always on it).
TEST(DepthController, ModelledCostsIgnoreTimings) {
    for (double a : {0.0, 0.3, 0.6, 0.9}) {
        DepthController quiet = DepthController::with_modelled_costs(4);
        DepthController busy = DepthController::with_modelled_costs(4);
        std::mt19937 acceptance(3), load(4);
        std::uniform_real_distribution<double> u(0, 1);
        for (int r = 0; r < 300; ++r) {
            const int depth = quiet.choose();
            ASSERT_EQ(depth, busy.choose()) << "a " << a << ", round " << r;
            int accepted = 0;
            while (accepted < depth && u(acceptance) < a) ++accepted;
            quiet.observe(depth, accepted, 0.01, r > 0);
            busy.observe(depth, accepted, 0.01 * (1 + 50 * u(load)) * (depth == 0 ? 10 : 1), r > 0);
        }
        EXPECT_DOUBLE_EQ(1.0 + 2 * DepthController::kModelledCostPerDraft, busy.cost(2));
        EXPECT_NEAR(optimum(a, DepthController::kModelledCostPerDraft, 4), quiet.best_depth(), 1)
            << "a " << a;
    }
}

}  // namespace
}  // namespace nextn
