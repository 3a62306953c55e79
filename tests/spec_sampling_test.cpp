// Sampled speculative decoding has the plain sampler's distribution (model level): thousands of
// seeded runs with MTP drafts (rejection-sampling acceptance) and without, compared by a
// two-sample chi-square test on the marginals of generated tokens 2, 3 and 4 (token 1 comes from
// the prefill in both), for temperature alone and with top-p + min-p + penalties.
//
// The drafts come from the embedded model's trained MTP head (models/nextn-tiny), whose q
// overlaps the target's p: a round of depth 2 has its first draft accepted about half the time,
// so acceptance, rejection with a residual draw, a second draft and the bonus token are all in
// the sample. (A random head's drafts are almost never accepted, and the residual draw is then
// close to p itself, so that test compared plain sampling with plain sampling.) A drafter that
// misstates its q must fail the same statistic: the control that shows the test has power.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <memory>

#include "golden.h"
#include "model/qwen35.h"
#include "spec/mtp_drafter.h"
#include "spec/speculative_decoder.h"
#include "spec_sampling_checks.h"

namespace nextn {
namespace {

// Two-sample chi-square over bins; bins with a pooled count below 10 are merged.
bool same_distribution(const std::map<int, int>& a, const std::map<int, int>& b, double* stat_out,
                       int* df_out) {
    std::map<int, std::pair<int, int>> bins;
    for (auto [k, v] : a) bins[k].first += v;
    for (auto [k, v] : b) bins[k].second += v;
    std::vector<std::pair<int, int>> merged;
    std::pair<int, int> rest{0, 0};
    for (auto [k, v] : bins) {
        if (v.first + v.second < 10) {
            rest.first += v.first;
            rest.second += v.second;
        } else {
            merged.push_back(v);
        }
    }
    if (rest.first + rest.second > 0) merged.push_back(rest);
    double stat = 0;
    for (auto [x, y] : merged) {
        // Equal sample sizes: sum (x - y)^2 / (x + y).
        stat += double(x - y) * double(x - y) / double(x + y);
    }
    int df = int(merged.size()) - 1;
    *stat_out = stat;
    *df_out = df;
    return stat < test::chi2_critical(df);
}

enum class DraftKind { Mtp, MisstatedQ };

constexpr int kDepth = 2;
constexpr int kCompared = 3;  // generated tokens 2..4: one round of depth 2 can make all three

struct Samples {
    std::map<int, int> plain[kCompared], spec[kCompared];
    int64_t drafted[kDepth] = {}, accepted[kDepth] = {};
};

Samples sample_runs(const SamplerParams& params, int runs, DraftKind kind, int64_t draft_vocab,
                    WType draft_type) {
    ModelOptions mo;
    mo.threads = 1;
    mo.draft_vocab = draft_vocab;
    mo.draft_head_type = draft_type;
    mo.matrix_type = WType::Q8_0;
    LoadedModel lm = load_model(test::tiny_model_dir(), mo);
    const Qwen35Model& model = *lm.model;
    const std::vector<int32_t> prompt = test::tiny_prompt("p9");
    Samples out;
    for (int mode = 0; mode < 2; ++mode) {
        // One state and drafter for all runs, reset before each (as a server's session is).
        SequenceState state = model.new_state(int64_t(prompt.size()) + 8, kDepth + 2);
        std::unique_ptr<Drafter> drafter;
        if (mode == 1 && kind == DraftKind::Mtp)
            drafter = std::make_unique<MtpDrafter>(model, state);
        if (mode == 1 && kind == DraftKind::MisstatedQ)
            drafter = std::make_unique<test::MisstatedQDrafter>(model, state);
        for (int r = 0; r < runs; ++r) {
            state.reset();
            if (drafter) drafter->reset();
            DecodeOptions o;
            // Room for the first round to draft kDepth tokens: k = min(depth, room - 1).
            o.max_new_tokens = kCompared + 1;
            o.draft_depth = kDepth;
            o.sampler = params;
            // Different seed streams for the two modes: the samples must be independent.
            o.sampler.seed = uint64_t(r) * 2 + uint64_t(mode) + 1000;
            std::vector<int32_t> tokens;
            DecodeStats s =
                generate(model, state, drafter.get(), prompt, o, [&](const EmittedToken& e) {
                    tokens.push_back(e.id);
                    return true;
                });
            EXPECT_EQ(size_t(kCompared + 1), tokens.size());
            if (tokens.size() != size_t(kCompared + 1)) return out;
            for (int i = 0; i < kCompared; ++i)
                (mode ? out.spec : out.plain)[i][tokens[size_t(i + 1)]]++;
            if (mode == 1)
                for (int d = 0; d < kDepth && d < int(s.drafted.size()); ++d) {
                    out.drafted[d] += s.drafted[size_t(d)];
                    out.accepted[d] += s.accepted[size_t(d)];
                }
        }
    }
    return out;
}

// Whether every compared token's marginal passes the chi-square test; prints each statistic.
bool all_tokens_match(const Samples& s) {
    bool all = true;
    for (int i = 0; i < kCompared; ++i) {
        double stat;
        int df;
        const bool same = same_distribution(s.plain[i], s.spec[i], &stat, &df);
        std::printf("    token %d: chi2 %.1f, df %d, critical %.1f\n", i + 2, stat, df,
                    test::chi2_critical(df));
        all = all && same;
    }
    return all;
}

void check(const SamplerParams& params, int runs, int64_t draft_vocab = 0,
           WType draft_type = WType::Native) {
    const Samples s = sample_runs(params, runs, DraftKind::Mtp, draft_vocab, draft_type);
    // The test only means something if drafts at both depths are accepted and rejected often.
    for (int d = 0; d < kDepth; ++d) {
        std::printf("    depth %d: %lld of %lld drafts accepted\n", d + 1, (long long)s.accepted[d],
                    (long long)s.drafted[d]);
        EXPECT_GE(s.drafted[d], runs / 10) << "depth " << d + 1;
        EXPECT_GE(s.accepted[d], s.drafted[d] / 10) << "depth " << d + 1;
        EXPECT_LE(s.accepted[d], s.drafted[d] * 9 / 10) << "depth " << d + 1;
    }
    EXPECT_TRUE(all_tokens_match(s));
}

TEST(SpeculativeSampling, TemperatureOnlyMatchesPlain) {
    SamplerParams p;
    p.temperature = 0.6f;
    check(p, 1500);
}

TEST(SpeculativeSampling, TopPMinPPenaltiesMatchPlain) {
    SamplerParams p;
    p.temperature = 0.8f;
    p.top_p = 0.9f;
    p.min_p = 0.05f;
    p.repeat_penalty = 1.3f;
    p.presence_penalty = 0.5f;
    p.frequency_penalty = 0.2f;
    check(p, 1500);
}

// A cheap draft head (a quarter of the vocabulary, q8_0 LM head) changes q, never the output
// distribution.
TEST(SpeculativeSampling, SubVocabularyQuantizedDraftHeadMatchesPlain) {
    SamplerParams p;
    p.temperature = 0.7f;
    p.top_p = 0.95f;
    check(p, 1500, 1024, WType::Q8_0);
}

// The control: the same runs and statistic catch a drafter whose stated q is not the one its
// drafts were drawn from.
TEST(SpeculativeSampling, MisstatedDraftDistributionIsCaught) {
    SamplerParams p;
    p.temperature = 0.6f;
    const Samples s = sample_runs(p, 1500, DraftKind::MisstatedQ, 0, WType::Native);
    EXPECT_FALSE(all_tokens_match(s));
}

// A logit bias that bans the whole draft sub-vocabulary leaves q nothing to draw from, while the
// target can still pick tokens above it: the drafter then drafts nothing, and each round is a
// plain step (the same tokens as plain decoding, for the same seed), where the request failed.
TEST(SpeculativeSampling, DraftVocabularyAllBannedDraftsNothing) {
    ModelOptions mo;
    mo.threads = 1;
    mo.draft_vocab = 64;
    LoadedModel lm = load_model(test::tiny_model_dir(), mo);
    const Qwen35Model& model = *lm.model;
    const std::vector<int32_t> prompt = test::tiny_prompt("p9");
    for (const float temperature : {0.0f, 0.8f}) {
        SCOPED_TRACE("temperature " + std::to_string(temperature));
        std::vector<int32_t> out[2];
        for (int depth : {0, 2}) {
            SequenceState state = model.new_state(int64_t(prompt.size()) + 16, depth + 1);
            MtpDrafter drafter(model, state);
            // The adaptive depth must not count drafts that were never made as rejected.
            DepthController controller = DepthController::with_modelled_costs(2);
            const double prior = controller.acceptance(1);
            DecodeOptions o;
            o.max_new_tokens = 8;
            o.draft_depth = depth;
            o.controller = depth ? &controller : nullptr;
            o.sampler.temperature = temperature;
            o.sampler.seed = 11;
            for (int32_t id = 0; id < 64; ++id) o.sampler.logit_bias[id] = -INFINITY;
            DecodeStats s = generate(model, state, depth ? &drafter : nullptr, prompt, o,
                                     [&](const EmittedToken& e) {
                                         out[depth / 2].push_back(e.id);
                                         return true;
                                     });
            if (depth > 0) {
                EXPECT_EQ(s.drafted[0], 0);
                EXPECT_EQ(controller.acceptance(1), prior);
                EXPECT_EQ(controller.acceptance(2), prior);
            }
        }
        EXPECT_EQ(out[0].size(), 8u);
        EXPECT_EQ(out[0], out[1]);
    }
}

}  // namespace
}  // namespace nextn
