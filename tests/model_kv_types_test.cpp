// The f16 and q8_0 attention KV caches (--kv-type f16|q8_0). Their keys and values are the f32
// ones rounded when written (f16: to the nearest half; q8_0: to ggml's Q8_0 blocks), so:
//   - against the independent golden outputs (computed with an f32 cache) the logits move by
//     the rounding's effect only: within the type's tolerance, and the greedy picks still agree;
//   - every exactness property of the f32 cache still holds bitwise, since a verify batch, a
//     prefill and single decode steps all read the same rounded values: spec_parity_test.cpp runs
//     its whole suite (greedy MTP equals plain at every depth, rollback, prefill equals
//     token-by-token) with these caches too.
#include <gtest/gtest.h>

#include <cstdio>

#include "core/error.h"
#include "golden.h"
#include "model/qwen35.h"

namespace nextn {
namespace {

struct KvCase {
    std::string fixture;
    KvCacheType type;
    // Bound on any logit's distance from the golden (f32-cache) one:
    // - f16: a half keeps 11 significant bits, so each key and value moves by at most 2^-12 of
    //   itself. On these fixtures that moved the logits by 7e-4 to 3.5e-3 over prompts of 1-40
    //   tokens and 2.2e-3 (dense) and 9.5e-3 (MoE) over 128 tokens, against under 5e-4 with the
    //   f32 cache (kLogitTol in model_golden_test.cpp); 2e-2 leaves 2x room over the worst.
    // - q8_0: each value moves by up to half a code step, 1/254 of its block's largest
    //   magnitude. Measured (p1..p128, prompt and greedy steps): dense 0.028-0.16, so 0.4; MoE
    //   0.034-3.7, where a token's router picks another expert (the bf16-activation bounds in
    //   model_golden_test.cpp meet the same), so 7.5. Every one of the 365 clear picks agreed
    //   and 0.95 of them must; for scale, Q8_0 weights move these logits by up to 2.6 and 7.1.
    float logit_tol;
    // Bound on the median over positions of each position's largest logit distance. A flipped
    // expert moves a few positions' logits by whole units, so the bound above must allow that,
    // and a cache that is wrong everywhere could hide under it (values of every head written
    // from head 0 moved the MoE logits by at most 5.0-7.3); the median it moves by 0.9-1.9.
    // Measured: f16 2e-4 to 4e-4, so 5e-3; q8_0 0.007-0.022, so 0.1.
    float median_tol;
    // Of the positions (prompt and greedy steps) whose golden pick is clear (Agreement below),
    // the share whose pick must agree; 1: every pick, clear or not (f16: every pick agreed).
    double min_clear_agreement;
    size_t row_bytes;  // of one head at one position, for a head of 64 values: stated by hand
};

LoadedModel open_with(const KvCase& kv) {
    ModelOptions o;
    o.threads = 2;
    o.kv_cache_type = kv.type;
    return load_model(test::golden_model(kv.fixture).model_dir, o);
}

class KvTypes : public ::testing::TestWithParam<KvCase> {};

TEST_P(KvTypes, CacheHoldsTheTypesRows) {
    const KvCase& kv = GetParam();
    LoadedModel lm = open_with(kv);
    SequenceState s = lm.model->new_state(100, 4);
    const ModelConfig& c = lm.model->config();
    ASSERT_EQ(c.head_dim, 64) << "row_bytes in the cases below are for heads of 64 values";
    int checked = 0;
    for (int i = 0; i < c.n_layers; ++i) {
        if (c.is_linear[i]) continue;
        const AttentionCache& a = s.attention[size_t(i)];
        EXPECT_EQ(a.type, kv.type);
        EXPECT_EQ(a.row_bytes(), kv.row_bytes);
        // Keys in whole tiles of 16 positions (112 for 100), each 16 rows' bytes; values by row.
        EXPECT_EQ(a.key_tile_bytes(), size_t(16) * kv.row_bytes);
        EXPECT_EQ(a.bytes(), size_t((112 + 100) * c.n_kv_heads) * kv.row_bytes);
        ++checked;
    }
    EXPECT_GT(checked, 0);
}

// Counts the positions whose golden pick (want's argmax) is clear, its top two logits at least
// kClearGap apart, and how many of them got picks agree; `all_agree` stays true while every
// pick, clear or not, agrees.
constexpr float kClearGap = 0.5f;
struct Agreement {
    int clear = 0, clear_agree = 0;
    bool all_agree = true;
    void add(const float* got, const float* want, int64_t V) {
        const int best = test::argmax(want, V);
        const bool same = test::argmax(got, V) == best;
        all_agree = all_agree && same;
        float second = -INFINITY;
        for (int64_t v = 0; v < V; ++v)
            if (v != best) second = std::max(second, want[v]);
        if (want[best] - second < kClearGap) return;
        ++clear;
        clear_agree += same;
    }
};

TEST_P(KvTypes, GoldenLogitsWithinRoundingTolerance) {
    const KvCase& kv = GetParam();
    test::GoldenModel g = test::golden_model(kv.fixture);
    LoadedModel lm = open_with(kv);
    const Qwen35Model& model = *lm.model;
    const int64_t V = model.config().vocab_size;
    int prompts = 0;
    for (const char* name : {"p1", "p7", "p40", "p128"}) {
        if (!test::golden_has_prompt(g, name)) continue;
        SCOPED_TRACE(name);
        ++prompts;
        const auto& p = g.index["prompts"][name];
        std::vector<int32_t> tokens = test::json_ids(p["tokens"]);
        const int64_t T = int64_t(tokens.size());
        SequenceState state = model.new_state(T + 80, 1);
        std::vector<float> logits(size_t(T * V));
        model.forward(state, tokens.data(), T, {nullptr, logits.data(), T});
        std::vector<float> want = test::golden_tensor(g, name, "logits");
        test::PositionDistances distances;
        Agreement picks;
        for (int64_t t = 0; t < T; ++t) {
            distances.add(logits.data() + t * V, want.data() + t * V, V);
            picks.add(logits.data() + t * V, want.data() + t * V, V);
        }
        // The greedy continuation, fed the golden tokens so one early flip does not derail the
        // comparison: each step's logits against the golden step's.
        std::vector<int32_t> greedy = test::json_ids(p["greedy_tokens"]);
        std::vector<float> want_steps = test::golden_tensor(g, name, "greedy_logits");
        std::vector<float> step(static_cast<size_t>(V));
        std::copy_n(logits.data() + (T - 1) * V, V, step.data());
        for (size_t k = 0; k < greedy.size(); ++k) {
            distances.add(step.data(), want_steps.data() + k * V, V);
            picks.add(step.data(), want_steps.data() + k * V, V);
            model.forward(state, &greedy[k], 1, {nullptr, step.data(), 1});
        }
        const float worst = distances.largest(), median = distances.median();
        std::printf(
            "    %s: max |logit diff| %.4f, median over positions %.4f; %d/%d clear picks "
            "agree%s\n",
            name, worst, median, picks.clear_agree, picks.clear,
            picks.all_agree ? ", every pick agrees" : "");
        EXPECT_LT(worst, kv.logit_tol);
        EXPECT_LT(median, kv.median_tol);
        if (kv.min_clear_agreement >= 1.0)
            EXPECT_TRUE(picks.all_agree);
        else
            EXPECT_GE(picks.clear_agree, kv.min_clear_agreement * picks.clear);
    }
    EXPECT_GT(prompts, 0);
}

// A q8_0 cache needs whole blocks of 32 values a head; any other head size is refused with a
// message that names the size.
TEST(KvTypesQ8_0, RefusesHeadsOfPartBlocks) {
    try {
        AttentionCache cache(16, 2, 48, KvCacheType::Q8_0);
        FAIL() << "a head of 48 values was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("multiple of 32"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("48"), std::string::npos) << e.what();
    }
    EXPECT_EQ(AttentionCache(16, 2, 96, KvCacheType::Q8_0).row_bytes(), size_t(3 * 34));
    EXPECT_EQ(parse_kv_cache_type("q8_0"), KvCacheType::Q8_0);
    EXPECT_THROW(parse_kv_cache_type("q4_0"), Error);
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, KvTypes,
    ::testing::Values(KvCase{"qwen35-dense-tiny", KvCacheType::F16, 2e-2f, 5e-3f, 1.0, 64 * 2},
                      KvCase{"qwen35-moe-tiny", KvCacheType::F16, 2e-2f, 5e-3f, 1.0, 64 * 2},
                      // two blocks of 2 scale bytes + 32 codes
                      KvCase{"qwen35-dense-tiny", KvCacheType::Q8_0, 0.4f, 0.1f, 0.95, 2 * 34},
                      KvCase{"qwen35-moe-tiny", KvCacheType::Q8_0, 7.5f, 0.1f, 0.95, 2 * 34}),
    [](const auto& info) {
        return test::test_name(info.param.fixture) + "_" + kv_cache_type_name(info.param.type);
    });

}  // namespace
}  // namespace nextn
