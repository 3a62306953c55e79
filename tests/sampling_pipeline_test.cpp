// The logit pipeline against hand-computed math on small vectors, and against a naive
// full-sort reference of the same stated rules on larger ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "core/error.h"
#include "sampling/logit_pipeline.h"
#include "sampling/rng.h"

namespace nextn {
namespace {

SamplerParams plain() {
    SamplerParams p;  // temperature 1, every processor off
    return p;
}

// softmax of the given logits, the hand-math reference.
std::vector<double> softmax(const std::vector<double>& logits) {
    double max = *std::max_element(logits.begin(), logits.end());
    std::vector<double> out;
    double sum = 0.0;
    for (double l : logits) sum += std::exp(l - max);
    for (double l : logits) out.push_back(std::exp(l - max) / sum);
    return out;
}

std::vector<float> logs_of(const std::vector<double>& probs) {
    std::vector<float> out;
    for (double p : probs) out.push_back(static_cast<float>(std::log(p)));
    return out;
}

void expect_distribution(const Distribution& d, const std::vector<int32_t>& ids,
                         const std::vector<double>& probs, double tol = 1e-6) {
    ASSERT_EQ(d.ids, ids);
    ASSERT_EQ(d.probs.size(), probs.size());
    for (size_t i = 0; i < probs.size(); ++i)
        EXPECT_NEAR(d.probs[i], probs[i], tol) << "token " << ids[i];
}

TEST(SamplingPipeline, PlainSoftmaxAtTemperatureOne) {
    const std::vector<float> logits = {1.0f, 2.0f, 3.0f, -1.0f};
    Distribution d = process(logits, {}, plain());
    expect_distribution(d, {0, 1, 2, 3}, softmax({1, 2, 3, -1}));
    EXPECT_EQ(d.vocab_size, 4);
}

TEST(SamplingPipeline, SoftmaxIsAccurateAcrossTheWholeRange) {
    // Depths 0 .. 86 nats below the max: every probability within 1e-6 relative of the double
    // softmax. A token more than 87.33 nats down (exp under FLT_MIN) leaves the support.
    std::vector<float> logits;
    std::vector<double> exact_logits;
    for (int i = 0; i < 861; ++i) {
        logits.push_back(-0.1f * static_cast<float>(i));
        exact_logits.push_back(static_cast<double>(logits.back()));
    }
    const std::vector<double> want = softmax(exact_logits);
    logits.push_back(-90.0f);
    const Distribution d = process(logits, {}, plain());
    ASSERT_EQ(d.ids.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(d.probs[i] / want[i], 1.0, 1e-6) << "depth " << 0.1 * static_cast<double>(i);
}

TEST(SamplingPipeline, TemperatureDividesLogits) {
    SamplerParams params = plain();
    params.temperature = 2.0f;
    Distribution d = process(std::vector<float>{1.0f, 2.0f, 3.0f}, {}, params);
    expect_distribution(d, {0, 1, 2}, softmax({0.5, 1.0, 1.5}));
    params.temperature = 0.25f;
    d = process(std::vector<float>{1.0f, 2.0f, 3.0f}, {}, params);
    expect_distribution(d, {0, 1, 2}, softmax({4, 8, 12}));
}

TEST(SamplingPipeline, TinyTemperatureDoesNotOverflow) {
    SamplerParams params = plain();
    params.temperature = 1e-30f;
    Distribution d = process(std::vector<float>{100.0f, 99.0f, 100.0f}, {}, params);
    // Both maxima stay (exp(0) each), the rest underflows away.
    expect_distribution(d, {0, 2}, {0.5, 0.5});
}

TEST(SamplingPipeline, LogitBiasAddsAndMinusInfinityBans) {
    SamplerParams params = plain();
    params.logit_bias = {{2, 1.0f}, {3, -INFINITY}};
    Distribution d = process(std::vector<float>{0, 0, 0, 0}, {}, params);
    const double e = std::exp(1.0);
    expect_distribution(d, {0, 1, 2}, {1 / (2 + e), 1 / (2 + e), e / (2 + e)});
}

TEST(SamplingPipeline, RepeatPenaltyDividesPositiveMultipliesNegative) {
    SamplerParams params = plain();
    params.repeat_penalty = 2.0f;
    std::vector<float> out;
    const std::vector<int32_t> history = {0, 1, 1};
    apply_bias_and_penalties(std::vector<float>{2.0f, -1.0f, 0.5f, 3.0f}, history, params, out);
    // 0 and 1 were seen (1 twice: the repeat penalty ignores the count).
    EXPECT_EQ(out, (std::vector<float>{1.0f, -2.0f, 0.5f, 3.0f}));
}

TEST(SamplingPipeline, PresenceAndFrequencyPenaltiesFollowOpenAiFormula) {
    SamplerParams params = plain();
    params.presence_penalty = 0.5f;
    params.frequency_penalty = 0.25f;
    std::vector<float> out;
    const std::vector<int32_t> history = {0, 0, 0, 2};
    apply_bias_and_penalties(std::vector<float>{1, 1, 1, 1}, history, params, out);
    // id 0: 1 - 0.5 - 3 * 0.25; id 2: 1 - 0.5 - 1 * 0.25
    EXPECT_EQ(out, (std::vector<float>{-0.25f, 1.0f, 0.25f, 1.0f}));
}

TEST(SamplingPipeline, RepeatPenaltyComesBeforePresenceAndBiasBeforeBoth) {
    SamplerParams params = plain();
    params.repeat_penalty = 2.0f;
    params.presence_penalty = 1.0f;
    params.logit_bias = {{0, 2.0f}};
    std::vector<float> out;
    const std::vector<int32_t> history = {0};
    apply_bias_and_penalties(std::vector<float>{2.0f, 0.0f}, history, params, out);
    EXPECT_EQ(out[0], (2.0f + 2.0f) / 2.0f - 1.0f);
}

TEST(SamplingPipeline, PenaltyWindowCountsOnlyTheLastTokens) {
    SamplerParams params = plain();
    params.frequency_penalty = 1.0f;
    const std::vector<int32_t> history = {0, 1, 2, 3, 3};
    std::vector<float> out;
    params.penalty_last_n = 2;  // only the two 3s
    apply_bias_and_penalties(std::vector<float>{0, 0, 0, 0}, history, params, out);
    EXPECT_EQ(out, (std::vector<float>{0, 0, 0, -2}));
    params.penalty_last_n = -1;  // whole history
    apply_bias_and_penalties(std::vector<float>{0, 0, 0, 0}, history, params, out);
    EXPECT_EQ(out, (std::vector<float>{-1, -1, -1, -2}));
    params.penalty_last_n = 0;  // off
    apply_bias_and_penalties(std::vector<float>{0, 0, 0, 0}, history, params, out);
    EXPECT_EQ(out, (std::vector<float>{0, 0, 0, 0}));
    params.penalty_last_n = 100;  // longer than the history: all of it
    apply_bias_and_penalties(std::vector<float>{0, 0, 0, 0}, history, params, out);
    EXPECT_EQ(out, (std::vector<float>{-1, -1, -1, -2}));
}

TEST(SamplingPipeline, HistoryBeyondTheScoredVocabIsIgnoredNegativeIsAnError) {
    SamplerParams params = plain();
    params.presence_penalty = 1.0f;
    params.logit_bias = {{3, 5.0f}, {7, 5.0f}};  // a draft head that scores only ids 0..2
    std::vector<float> out;
    const std::vector<int32_t> history = {1, 3, 9};  // 3: the first id past the scored ones
    apply_bias_and_penalties(std::vector<float>{0, 0, 0}, history, params, out);
    EXPECT_EQ(out, (std::vector<float>{0, -1, 0}));
    const std::vector<int32_t> bad = {1, -3};
    EXPECT_THROW(apply_bias_and_penalties(std::vector<float>{0, 0, 0}, bad, params, out), Error);
}

TEST(SamplingPipeline, TopKKeepsExactlyKLargest) {
    Rng rng(7);
    std::vector<float> logits(1000);  // [V]
    for (float& l : logits) l = static_cast<float>(rng.uniform() * 10.0);
    std::vector<int32_t> order(logits.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
    for (int32_t k : {1, 10, 999}) {
        SamplerParams params = plain();
        params.top_k = k;
        Distribution d = process(logits, {}, params);
        std::vector<int32_t> expected(order.begin(), order.begin() + k);
        std::sort(expected.begin(), expected.end());
        ASSERT_EQ(d.ids, expected) << "k=" << k;
        std::vector<double> kept;
        for (int32_t id : expected) kept.push_back(logits[id]);
        expect_distribution(d, expected, softmax(kept));
    }
}

TEST(SamplingPipeline, TopKTiesGoToTheLowestIds) {
    SamplerParams params = plain();
    params.top_k = 3;
    Distribution d = process(std::vector<float>(10, 1.0f), {}, params);
    expect_distribution(d, {0, 1, 2}, {1.0 / 3, 1.0 / 3, 1.0 / 3});
    params.top_k = 5000;  // the nth_element path
    std::vector<float> flat(20000, 0.0f);
    d = process(flat, {}, params);
    ASSERT_EQ(d.ids.size(), 5000u);
    EXPECT_EQ(d.ids.front(), 0);
    EXPECT_EQ(d.ids.back(), 4999);
}

TEST(SamplingPipeline, TopPKeepsSmallestPrefixReachingP) {
    // p = [0.1, 0.4, 0.2, 0.3] by id; in rank order: id1 0.4, id3 0.3, id2 0.2, id0 0.1.
    const std::vector<float> logits = logs_of({0.1, 0.4, 0.2, 0.3});
    SamplerParams params = plain();
    params.top_p = 0.35f;  // 0.4 >= 0.35
    expect_distribution(process(logits, {}, params), {1}, {1.0});
    params.top_p = 0.65f;  // 0.4 < 0.65 <= 0.7
    expect_distribution(process(logits, {}, params), {1, 3}, {4.0 / 7, 3.0 / 7});
    params.top_p = 0.85f;  // 0.7 < 0.85 <= 0.9
    expect_distribution(process(logits, {}, params), {1, 2, 3}, {4.0 / 9, 2.0 / 9, 3.0 / 9});
    params.top_p = 0.95f;
    expect_distribution(process(logits, {}, params), {0, 1, 2, 3}, {0.1, 0.4, 0.2, 0.3});
}

TEST(SamplingPipeline, TopPOnAFlatDistributionUsesTheLowestIds) {
    // 5000 equal weights: mass of k tokens is k / 5000, so top_p = 0.5 keeps exactly 2500, and
    // rank ties go to the lower id. Exercises several growing sort chunks.
    SamplerParams params = plain();
    params.top_p = 0.5f;
    Distribution d = process(std::vector<float>(5000, 0.0f), {}, params);
    ASSERT_EQ(d.ids.size(), 2500u);
    EXPECT_EQ(d.ids.front(), 0);
    EXPECT_EQ(d.ids.back(), 2499);
    EXPECT_NEAR(d.probs[17], 1.0 / 2500, 1e-9);
}

TEST(SamplingPipeline, MinPIsRelativeToTheLargestProbability) {
    const std::vector<float> logits = logs_of({0.1, 0.5, 0.15, 0.25});
    SamplerParams params = plain();
    params.min_p = 0.25f;  // threshold 0.125: drops 0.1
    expect_distribution(process(logits, {}, params), {1, 2, 3}, {0.5 / 0.9, 0.15 / 0.9, 0.25 / 0.9});
    params.min_p = 0.45f;  // threshold 0.225
    expect_distribution(process(logits, {}, params), {1, 3}, {0.5 / 0.75, 0.25 / 0.75});
    params.min_p = 1.0f;  // only the max survives
    expect_distribution(process(logits, {}, params), {1}, {1.0});
}

// min-p keeps p >= min_p * max p on the ranked (top-k / top-p) path as on the dense one, the
// boundary included: min_p = 1 keeps exactly the most likely token (and any tied with it).
TEST(SamplingPipeline, MinPFiltersAfterTopKAndTopP) {
    const std::vector<float> logits = logs_of({0.1, 0.5, 0.15, 0.25});
    SamplerParams params = plain();
    params.top_k = 3;      // 0.5, 0.25, 0.15
    params.min_p = 0.45f;  // threshold 0.45 * 0.5 = 0.225: drops 0.15
    expect_distribution(process(logits, {}, params), {1, 3}, {0.5 / 0.75, 0.25 / 0.75});
    params.top_k = 0;
    params.top_p = 0.85f;  // 0.5, 0.25, 0.15 (0.75 < 0.85 <= 0.9); min-p then drops 0.15
    expect_distribution(process(logits, {}, params), {1, 3}, {0.5 / 0.75, 0.25 / 0.75});
    params.top_p = 1.0f;
    params.min_p = 1.0f;
    params.top_k = 3;
    expect_distribution(process(logits, {}, params), {1}, {1.0});
    params.top_k = 0;
    params.top_p = 0.9f;
    expect_distribution(process(logits, {}, params), {1}, {1.0});
    // Two tokens tied at the max both sit on the boundary and both stay.
    params.top_p = 1.0f;
    params.top_k = 3;
    expect_distribution(process(std::vector<float>{2.0f, 0.0f, 2.0f, 1.0f}, {}, params), {0, 2},
                        {0.5, 0.5});
}

// Under top-k a tiny temperature underflows every weight but the max's to 0; such tokens leave
// the support (the distribution holds only p > 0), as they do without top-k.
TEST(SamplingPipeline, TinyTemperatureUnderTopKDropsUnderflowedTokens) {
    SamplerParams params = plain();
    params.temperature = 1e-30f;
    params.top_k = 3;
    const Distribution d = process(std::vector<float>{100.0f, 99.0f, 100.0f, 98.0f}, {}, params);
    expect_distribution(d, {0, 2}, {0.5, 0.5});
}

// -inf logits are never selected, also where k is above the heap's limit (4096) and the selection
// runs over every logit: fewer than k come back when fewer are finite.
TEST(SamplingPipeline, TopKNeverSelectsBannedTokensAtLargeK) {
    std::vector<float> logits(6000, -INFINITY);  // [V]
    for (size_t i = 0; i < 5000; ++i) logits[i * 6000 / 5000] = float(i % 7);
    for (int64_t k : {int64_t(10), int64_t(5500)}) {
        const std::vector<int32_t> ids = top_k_ids(logits, k);
        EXPECT_EQ(ids.size(), size_t(std::min<int64_t>(k, 5000))) << "k " << k;
        for (int32_t id : ids) ASSERT_NE(logits[size_t(id)], -INFINITY) << "k " << k;
    }
}

TEST(SamplingPipeline, TopPIsMeasuredAfterTopKRenormalizes) {
    // Rank order 0.4, 0.3, 0.2, 0.1. top_k = 2 renormalizes to 4/7, 3/7, so top_p = 0.5 keeps
    // one token; top_p alone at 0.5 would need two (0.4 < 0.5).
    const std::vector<float> logits = logs_of({0.4, 0.3, 0.2, 0.1});
    SamplerParams params = plain();
    params.top_p = 0.5f;
    EXPECT_EQ(process(logits, {}, params).ids, (std::vector<int32_t>{0, 1}));
    params.top_k = 2;
    EXPECT_EQ(process(logits, {}, params).ids, (std::vector<int32_t>{0}));
}

TEST(SamplingPipeline, TemperatureComesBeforeTopP) {
    // T = 1: [0.665, 0.245, 0.090] -> top_p 0.8 keeps 2. T = 0.5: [0.867, 0.117, 0.016] keeps 1.
    const std::vector<float> logits = {2.0f, 1.0f, 0.0f};
    SamplerParams params = plain();
    params.top_p = 0.8f;
    EXPECT_EQ(process(logits, {}, params).ids.size(), 2u);
    params.temperature = 0.5f;
    expect_distribution(process(logits, {}, params), {0}, {1.0});
}

TEST(SamplingPipeline, GreedyIsOneHotArgmaxAfterBiasAndPenalties) {
    SamplerParams params = plain();
    params.temperature = 0.0f;
    params.top_k = 1;  // filters are irrelevant to greedy
    params.top_p = 0.1f;
    const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f};
    expect_distribution(process(logits, {}, params), {1}, {1.0});  // tie 1 vs 3: lowest id
    params.logit_bias = {{3, 0.5f}};
    expect_distribution(process(logits, {}, params), {3}, {1.0});
    params.logit_bias.clear();
    params.repeat_penalty = 2.0f;
    const std::vector<int32_t> history = {1, 3};  // 3 -> 1.5 each: now 2 wins
    expect_distribution(process(logits, history, params), {2}, {1.0});
}

TEST(SamplingPipeline, BadLogitsAreErrors) {
    EXPECT_THROW(process(std::vector<float>{0.0f, NAN}, {}, plain()), Error);
    EXPECT_THROW(process(std::vector<float>{0.0f, INFINITY}, {}, plain()), Error);
    EXPECT_THROW(process(std::vector<float>{-INFINITY, -INFINITY}, {}, plain()), Error);
    EXPECT_THROW(process(std::vector<float>{}, {}, plain()), Error);
}

// Greedy over vocabulary-sized vectors (the argmax scans blocks of 1024 in 16-value steps, and
// its index search looks only in the first block holding the max): the lowest id holding the
// largest value, against a plain loop, for ties placed across blocks, lanes and the tail.
TEST(SamplingPipeline, GreedyArgmaxMatchesAPlainScanOnLongVectors) {
    Rng rng(99);
    SamplerParams params = plain();
    params.temperature = 0.0f;
    for (size_t n : {size_t(17), size_t(1023), size_t(1024), size_t(1025), size_t(5000), size_t(248320 + 7)}) {
        std::vector<float> logits(n);
        for (float& l : logits) l = static_cast<float>(rng.uniform() * 10.0 - 5.0);
        for (int trial = 0; trial < 12; ++trial) {
            std::vector<float> x = logits;
            // Ties of a new max at two random places (trial 0: the last one only; trial 1: the
            // first one only); a few -inf entries.
            const size_t a = size_t(rng.uniform() * double(n)) % n;
            const size_t b = size_t(rng.uniform() * double(n)) % n;
            if (trial == 0) x[n - 1] = 7.0f;
            else if (trial == 1) x[0] = 7.0f;
            else x[a] = x[b] = 7.0f + float(trial);
            for (int k = 0; k < 5; ++k) x[size_t(rng.uniform() * double(n)) % n] = -INFINITY;
            size_t want = 0;
            for (size_t i = 1; i < n; ++i)
                if (x[i] > x[want]) want = i;
            const Distribution d = process(x, {}, params);
            ASSERT_EQ(d.ids, std::vector<int32_t>{int32_t(want)}) << "n=" << n << " trial " << trial;
        }
        // One NaN or +inf anywhere (in a 16-value step or in the tail) is an error naming it.
        for (size_t at : {size_t(0), n / 2, n - 1}) {
            for (float bad : {NAN, INFINITY}) {
                std::vector<float> x = logits;
                x[at] = bad;
                try {
                    process(x, {}, params);
                    ADD_FAILURE() << "no error for " << bad << " at " << at << " of " << n;
                } catch (const Error& e) {
                    EXPECT_NE(std::string(e.what()).find("token " + std::to_string(at)), std::string::npos)
                        << e.what();
                }
            }
        }
        std::vector<float> banned(n, -INFINITY);
        EXPECT_THROW(process(banned, {}, params), Error);
    }
}

// Without bias or penalties the workspace views the input logits (no copy); with either, its
// own biased, penalized copy. Logprobs read the view.
TEST(SamplingPipeline, WorkspaceViewsTheInputWhenNothingChangesIt) {
    SamplerParams params = plain();
    params.temperature = 0.0f;
    SamplingWorkspace workspace;
    Distribution d;
    const std::vector<float> logits = {0.5f, 2.0f, -1.0f};
    process(logits, {}, params, workspace, d);
    EXPECT_FALSE(params.changes_logits());  // what the decode loop sizes the copies by
    EXPECT_EQ(workspace.processed.data(), logits.data());
    EXPECT_EQ(workspace.processed.size(), logits.size());
    // A repeat penalty over a window of no tokens changes nothing either.
    params.repeat_penalty = 1.3f;
    params.penalty_last_n = 0;
    process(logits, std::vector<int32_t>{1}, params, workspace, d);
    EXPECT_FALSE(params.changes_logits());
    EXPECT_EQ(workspace.processed.data(), logits.data());
    params.penalty_last_n = 64;
    process(logits, std::vector<int32_t>{1}, params, workspace, d);
    EXPECT_TRUE(params.changes_logits());
    EXPECT_EQ(workspace.processed.data(), workspace.logits.data());
    params.repeat_penalty = 1.0f;
    params.logit_bias = {{2, 4.0f}};
    process(logits, {}, params, workspace, d);
    EXPECT_TRUE(params.changes_logits());
    EXPECT_EQ(workspace.processed.data(), workspace.logits.data());
    EXPECT_EQ(std::vector<float>(workspace.processed.begin(), workspace.processed.end()),
              (std::vector<float>{0.5f, 2.0f, 3.0f}));
    EXPECT_EQ(d.ids, std::vector<int32_t>{2});
}

// reserve_for_sampling sizes exactly the [V] buffers process() then writes in full: process()
// leaves them where they are (no reallocation, so no first touch inside a decode round), and it
// makes none that process() leaves unused.
TEST(SamplingPipeline, ReserveSizesWhatProcessWritesInFullAndNothingElse) {
    constexpr int64_t V = 1000;
    std::vector<float> logits(V);
    for (int64_t i = 0; i < V; ++i) logits[size_t(i)] = float((i * 37) % 101) / 17.0f;
    struct Case {
        const char* name;
        SamplerParams params;
        bool copy, dense;  // process() writes a [V] copy / [V] dense weights
    };
    SamplerParams greedy = plain(), biased = plain(), penalized = plain(), top_k = plain(),
                  dense = plain();
    greedy.temperature = 0.0f;
    biased.temperature = 0.0f;
    biased.logit_bias = {{3, 1.0f}};
    penalized.repeat_penalty = 1.2f;
    penalized.penalty_last_n = 8;
    penalized.top_k = 40;
    top_k.top_k = 40;
    dense.top_k = 0;
    for (const Case& c :
         {Case{"greedy", greedy, false, false}, Case{"bias", biased, true, false},
          Case{"penalties, top-k", penalized, true, false}, Case{"top-k", top_k, false, false},
          Case{"no top-k", dense, false, true}}) {
        SamplingWorkspace w;
        reserve_for_sampling(c.params, V, w, 16);
        EXPECT_EQ(w.logits.size(), c.copy ? size_t(V) : 0u) << c.name;
        EXPECT_EQ(w.weights.size(), c.dense ? size_t(V) : 0u) << c.name;
        const float* copy = w.logits.data();
        const float* weights = w.weights.data();
        Distribution d;
        process(logits, std::vector<int32_t>{3, 5}, c.params, w, d);
        if (c.copy) {
            EXPECT_EQ(w.logits.data(), copy) << c.name;
        }
        if (c.dense) {
            EXPECT_EQ(w.weights.data(), weights) << c.name;
        }
        EXPECT_EQ(w.logits.size(), c.copy ? size_t(V) : 0u) << c.name;
        EXPECT_EQ(w.weights.size(), c.dense ? size_t(V) : 0u) << c.name;
    }
}

// Naive reference of the documented rules: full sort, then prefix scans.
Distribution reference_pipeline(const std::vector<float>& logits, const SamplerParams& params) {
    const size_t n = logits.size();
    std::vector<int32_t> rank(n);
    std::iota(rank.begin(), rank.end(), 0);
    std::stable_sort(rank.begin(), rank.end(),
                     [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
    if (params.top_k > 0 && static_cast<size_t>(params.top_k) < n) rank.resize(params.top_k);
    const double max = logits[rank[0]];
    std::vector<double> w;
    for (int32_t id : rank) w.push_back(std::exp((logits[id] - max) / params.temperature));
    if (params.top_p < 1.0f) {
        double total = std::accumulate(w.begin(), w.end(), 0.0), cum = 0.0;
        size_t keep = 0;
        while (keep < w.size()) {
            cum += w[keep++];
            if (cum >= params.top_p * total) break;
        }
        rank.resize(keep);
        w.resize(keep);
    }
    std::vector<std::pair<int32_t, double>> kept;
    for (size_t i = 0; i < rank.size(); ++i)
        if (w[i] >= params.min_p * w[0]) kept.push_back({rank[i], w[i]});
    std::sort(kept.begin(), kept.end());
    double total = 0.0;
    for (auto& [id, weight] : kept) total += weight;
    Distribution d;
    for (auto& [id, weight] : kept) {
        d.ids.push_back(id);
        d.probs.push_back(static_cast<float>(weight / total));
    }
    return d;
}

TEST(SamplingPipeline, MatchesNaiveFullSortReference) {
    Rng rng(1234);
    // [V] a peaked model-like spread, and a flat one where top-p keeps tens of thousands of
    // tokens (several sort chunks).
    std::vector<float> peaked(50000), flat(50000);
    for (float& l : peaked) l = static_cast<float>(-std::log(rng.uniform() + 1e-12) * 3.0);
    for (float& l : flat) l = static_cast<float>(rng.uniform() * 0.5);
    struct Case { const std::vector<float>* logits; float t; int32_t k; float p; float min_p; };
    const Case cases[] = {{&peaked, 1.0f, 0, 0.9f, 0.0f},   {&peaked, 0.7f, 40, 0.95f, 0.0f},
                          {&peaked, 1.3f, 0, 1.0f, 0.05f},  {&peaked, 0.8f, 0, 0.5f, 0.01f},
                          {&peaked, 1.0f, 200, 1.0f, 0.0f}, {&peaked, 0.6f, 8000, 0.99f, 0.001f},
                          {&flat, 1.0f, 0, 0.9f, 0.0f},     {&flat, 0.2f, 0, 0.3f, 0.2f},
                          {&flat, 1.0f, 30000, 0.7f, 0.0f}, {&flat, 1.0f, 0, 1.0f, 0.0f}};
    for (const Case& c : cases) {
        SamplerParams params = plain();
        params.temperature = c.t;
        params.top_k = c.k;
        params.top_p = c.p;
        params.min_p = c.min_p;
        Distribution got = process(*c.logits, {}, params);
        Distribution want = reference_pipeline(*c.logits, params);
        std::printf("  T=%.1f k=%d p=%.2f min_p=%.3f: support %zu\n", c.t, c.k, c.p, c.min_p,
                    got.ids.size());
        ASSERT_EQ(got.ids, want.ids) << "T=" << c.t << " k=" << c.k << " p=" << c.p;
        for (size_t i = 0; i < want.probs.size(); ++i) ASSERT_NEAR(got.probs[i], want.probs[i], 1e-6);
    }
}

void expect_error_naming(const SamplerParams& params, const std::string& field) {
    try {
        params.validate();
        ADD_FAILURE() << "no error for bad " << field;
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
    // process() validates too.
    EXPECT_THROW(process(std::vector<float>{0.0f, 1.0f}, {}, params), Error) << field;
}

TEST(SamplingParamsValidation, OutOfRangeValuesAreErrors) {
    auto with = [](auto change) {
        SamplerParams p;
        change(p);
        return p;
    };
    expect_error_naming(with([](SamplerParams& p) { p.temperature = -0.1f; }), "temperature");
    expect_error_naming(with([](SamplerParams& p) { p.temperature = NAN; }), "temperature");
    expect_error_naming(with([](SamplerParams& p) { p.temperature = INFINITY; }), "temperature");
    expect_error_naming(with([](SamplerParams& p) { p.top_k = -1; }), "top_k");
    expect_error_naming(with([](SamplerParams& p) { p.top_p = 0.0f; }), "top_p");
    expect_error_naming(with([](SamplerParams& p) { p.top_p = 1.5f; }), "top_p");
    expect_error_naming(with([](SamplerParams& p) { p.top_p = NAN; }), "top_p");
    expect_error_naming(with([](SamplerParams& p) { p.min_p = -0.1f; }), "min_p");
    expect_error_naming(with([](SamplerParams& p) { p.min_p = 1.1f; }), "min_p");
    expect_error_naming(with([](SamplerParams& p) { p.repeat_penalty = 0.0f; }), "repeat_penalty");
    expect_error_naming(with([](SamplerParams& p) { p.repeat_penalty = -1.0f; }), "repeat_penalty");
    expect_error_naming(with([](SamplerParams& p) { p.penalty_last_n = -2; }), "penalty_last_n");
    expect_error_naming(with([](SamplerParams& p) { p.presence_penalty = NAN; }), "presence_penalty");
    expect_error_naming(with([](SamplerParams& p) { p.frequency_penalty = INFINITY; }),
                        "frequency_penalty");
    expect_error_naming(with([](SamplerParams& p) { p.logit_bias = {{-1, 1.0f}}; }), "logit_bias");
    expect_error_naming(with([](SamplerParams& p) { p.logit_bias = {{0, INFINITY}}; }), "logit_bias");
    expect_error_naming(with([](SamplerParams& p) { p.logit_bias = {{0, NAN}}; }), "logit_bias");
}

// Values outside the ranges sampler_params.h states that a sign or NaN check alone would let
// through, and validate_for_vocab's own checks beyond the vocabulary bound.
TEST(SamplingParamsValidation, InfiniteRepeatPenaltyAndBadFieldsUnderVocabCheckAreErrors) {
    SamplerParams p;
    p.repeat_penalty = INFINITY;
    expect_error_naming(p, "repeat_penalty");
    SamplerParams q;
    q.temperature = -1.0f;  // every id in range: the field checks must still run
    EXPECT_THROW(q.validate_for_vocab(10), Error);
}

TEST(SamplingParamsValidation, BoundaryValuesAreAccepted) {
    SamplerParams p;
    p.temperature = 0.0f;
    p.top_p = 1.0f;
    p.min_p = 1.0f;
    p.penalty_last_n = -1;
    p.presence_penalty = -2.0f;
    p.logit_bias = {{0, 2.0f}, {5, -INFINITY}};  // token 0 is a token like any other
    EXPECT_NO_THROW(p.validate());
    EXPECT_NO_THROW(p.validate_for_vocab(6));
    EXPECT_THROW(p.validate_for_vocab(5), Error);
}

}  // namespace
}  // namespace nextn
