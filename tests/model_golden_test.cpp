// The forward pass against golden outputs of an independent implementation (llama.cpp, f32,
// see ../shared/fixtures/README.md §5-7): logits and final hidden at every prompt position,
// MTP-head logits with the vLLM pairing, chained MTP drafts, and 64 greedy tokens.
// Tolerances are the fixture README's suggestions for an f32 engine (§6).
#include <gtest/gtest.h>

#include <cmath>

#include "golden.h"
#include "model/qwen35.h"

namespace nextn {
namespace {

constexpr float kLogitTol = 5e-4f;
constexpr float kHiddenTol = 2e-4f;

struct Case {
    std::string model;
    std::string prompt;
};

class GoldenTest : public ::testing::TestWithParam<Case> {};

TEST_P(GoldenTest, PromptLogitsHiddenAndMtpMatch) {
    const Case& c = GetParam();
    test::GoldenModel g = test::golden_model(c.model);
    if (!test::golden_has_prompt(g, c.prompt))
        GTEST_SKIP() << "SKIPPED: prompt " << c.prompt << " needs the full fixture set";
    ModelOptions opts;
    opts.threads = 2;
    LoadedModel lm = load_model(g.model_dir, opts);
    const Qwen35Model& model = *lm.model;
    const int64_t V = model.config().vocab_size, H = model.config().hidden_size;
    const auto& p = g.index["prompts"][c.prompt];
    std::vector<int32_t> tokens = test::json_ids(p["tokens"]);
    const int64_t T = int64_t(tokens.size());

    SequenceState state = model.new_state(T + 80, 8);
    std::vector<float> logits(size_t(T * V)), hidden(size_t(T * H));
    model.forward(state, tokens.data(), T, {hidden.data(), logits.data(), T});
    std::vector<float> want_logits = test::golden_tensor(g, c.prompt, "logits");
    std::vector<float> want_hidden = test::golden_tensor(g, c.prompt, "hidden");
    EXPECT_LT(test::max_abs_diff(logits.data(), want_logits.data(), T * V), kLogitTol);
    EXPECT_LT(test::max_abs_diff(hidden.data(), want_hidden.data(), T * H), kHiddenTol);
    for (int64_t t = 0; t < T; ++t)
        EXPECT_EQ(test::argmax(logits.data() + t * V, V), test::argmax(want_logits.data() + t * V, V))
            << "position " << t;

    // MTP, vLLM pairing: row p = MTP(hidden p, token p+1) at position p, token T := greedy[0].
    ASSERT_TRUE(model.has_mtp());
    std::vector<int32_t> mtp_tokens = test::json_ids(p["mtp"]["input_tokens"]);
    std::vector<float> mtp_logits(size_t(T * V)), mtp_hidden(size_t(T * H));
    model.mtp_forward(state, hidden.data(), mtp_tokens.data(), T, 0,
                      {mtp_hidden.data(), mtp_logits.data(), T});
    std::vector<float> want_mtp = test::golden_tensor(g, c.prompt, "mtp_logits");
    std::vector<float> want_mtp_hidden = test::golden_tensor(g, c.prompt, "mtp_hidden");
    EXPECT_LT(test::max_abs_diff(mtp_logits.data(), want_mtp.data(), T * V), kLogitTol);
    EXPECT_LT(test::max_abs_diff(mtp_hidden.data(), want_mtp_hidden.data(), T * H), kHiddenTol);
    std::vector<int32_t> drafts = test::json_ids(p["mtp"]["draft_tokens"]);
    EXPECT_EQ(test::argmax(mtp_logits.data() + (T - 1) * V, V), drafts[0]);

    // Chained drafts: previous draft token, previous MTP output hidden, position + 1.
    std::vector<float> want_chain = test::golden_tensor(g, c.prompt, "mtp_chain_logits");
    std::vector<float> prev_hidden(mtp_hidden.begin() + (T - 1) * H, mtp_hidden.end());
    for (int step = 0; step < 2; ++step) {
        std::vector<float> step_logits(static_cast<size_t>(V)), step_hidden(static_cast<size_t>(H));
        int32_t tok = drafts[size_t(step)];
        model.mtp_forward(state, prev_hidden.data(), &tok, 1, T + step,
                          {step_hidden.data(), step_logits.data(), 1});
        EXPECT_LT(test::max_abs_diff(step_logits.data(), want_chain.data() + step * V, V), kLogitTol)
            << "chain step " << step + 2;
        EXPECT_EQ(test::argmax(step_logits.data(), V), drafts[size_t(step + 1)]);
        prev_hidden = step_hidden;
    }
}

TEST_P(GoldenTest, GreedyContinuationMatches) {
    const Case& c = GetParam();
    test::GoldenModel g = test::golden_model(c.model);
    if (!test::golden_has_prompt(g, c.prompt))
        GTEST_SKIP() << "SKIPPED: prompt " << c.prompt << " needs the full fixture set";
    ModelOptions opts;
    opts.threads = 2;
    opts.load_mtp = false;
    LoadedModel lm = load_model(g.model_dir, opts);
    const Qwen35Model& model = *lm.model;
    const int64_t V = model.config().vocab_size;
    const auto& p = g.index["prompts"][c.prompt];
    std::vector<int32_t> tokens = test::json_ids(p["tokens"]);
    std::vector<int32_t> want = test::json_ids(p["greedy_tokens"]);
    std::vector<float> want_logits = test::golden_tensor(g, c.prompt, "greedy_logits");
    SequenceState state = model.new_state(int64_t(tokens.size() + want.size()), 1);
    std::vector<float> logits(static_cast<size_t>(V));
    model.forward(state, tokens.data(), int64_t(tokens.size()), {nullptr, logits.data(), 1});
    float worst = 0.0f;
    for (size_t k = 0; k < want.size(); ++k) {
        worst = std::max(worst, test::max_abs_diff(logits.data(), want_logits.data() + k * V, V));
        int32_t next = test::argmax(logits.data(), V);
        ASSERT_EQ(next, want[k]) << "greedy step " << k;
        model.forward(state, &next, 1, {nullptr, logits.data(), 1});
    }
    EXPECT_LT(worst, kLogitTol);
}

std::vector<Case> all_cases() {
    std::vector<Case> cases;
    for (const char* m : {"qwen35-dense-tiny", "qwen35-moe-tiny"})
        for (const char* p : {"p1", "p7", "p40", "p128"}) cases.push_back({m, p});
    return cases;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GoldenTest, ::testing::ValuesIn(all_cases()),
                         [](const auto& info) {
                             return test::test_name(info.param.model + "_" + info.param.prompt);
                         });

}  // namespace
}  // namespace nextn
