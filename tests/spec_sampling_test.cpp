// Sampled speculative decoding has the plain sampler's distribution (model level): thousands of
// seeded runs with MTP drafts (rejection-sampling acceptance) and without, compared by a
// two-sample chi-square test on the marginals of generated tokens 2 and 3 (token 1 comes from
// the prefill in both), for temperature alone and with top-p + min-p + penalties.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "golden.h"
#include "model/qwen35.h"
#include "spec/mtp_drafter.h"
#include "spec/speculative_decoder.h"

namespace nextn {
namespace {

// Upper critical value of chi-square with df degrees of freedom at alpha = 1e-3
// (Wilson-Hilferty: z = 3.09).
double chi2_critical(int df) {
    const double z = 3.090232, k = double(df);
    const double t = 1.0 - 2.0 / (9.0 * k) + z * std::sqrt(2.0 / (9.0 * k));
    return k * t * t * t;
}

// Two-sample chi-square over bins; bins with a pooled count below 10 are merged.
bool same_distribution(const std::map<int, int>& a, const std::map<int, int>& b, int n,
                       double* stat_out, int* df_out) {
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
    (void)n;
    return stat < chi2_critical(df);
}

void check(const SamplerParams& params, int runs, int64_t draft_vocab = 0,
           WType draft_type = WType::Native) {
    test::GoldenModel g = test::golden_model("qwen35-dense-tiny");
    ModelOptions mo;
    mo.threads = 1;
    mo.draft_vocab = draft_vocab;
    mo.draft_head_type = draft_type;
    LoadedModel lm = load_model(g.model_dir, mo);
    const Qwen35Model& model = *lm.model;
    std::vector<int32_t> prompt = test::json_ids(g.index["prompts"]["p7"]["tokens"]);
    std::map<int, int> plain[2], spec[2];
    int64_t drafted = 0, accepted = 0;
    for (int mode = 0; mode < 2; ++mode) {
        for (int r = 0; r < runs; ++r) {
            SequenceState state = model.new_state(int64_t(prompt.size()) + 8, 4);
            std::unique_ptr<Drafter> drafter;
            if (mode == 1) drafter = std::make_unique<MtpDrafter>(model, state);
            DecodeOptions o;
            o.max_new_tokens = 3;
            o.draft_depth = 2;
            o.sampler = params;
            // Different seed streams for the two modes: the samples must be independent.
            o.sampler.seed = uint64_t(r) * 2 + uint64_t(mode) + 1000;
            std::vector<int32_t> out;
            DecodeStats s = generate(model, state, drafter.get(), prompt, o, [&](const EmittedToken& e) {
                out.push_back(e.id);
                return true;
            });
            ASSERT_EQ(3u, out.size());
            for (int i = 0; i < 2; ++i) (mode ? spec : plain)[i][out[size_t(i + 1)]]++;
            if (mode == 1) {
                drafted += s.drafted[0];
                accepted += s.accepted[0];
            }
        }
    }
    // The test only means something if drafts are both accepted and rejected.
    EXPECT_GT(accepted, 0);
    EXPECT_LT(accepted, drafted);
    for (int i = 0; i < 2; ++i) {
        double stat;
        int df;
        EXPECT_TRUE(same_distribution(plain[i], spec[i], runs, &stat, &df))
            << "token " << i + 2 << ": chi2 " << stat << " df " << df << " critical "
            << chi2_critical(df);
    }
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
    check(p, 1500, 256, WType::Q8_0);
}

}  // namespace
}  // namespace nextn
