// Issue 4's degenerate "perfect" model: the fixture models with make_draft_perfect applied (the
// trunk's residual-branch outputs zeroed, the MTP head turned into a copy of the trunk's
// next-token prediction). Greedy speculation must then accept every draft: each round commits
// depth + 1 tokens, and the output is still exactly plain decoding.
#include <gtest/gtest.h>

#include "decode_helpers.h"

#include <cstring>
#include <ostream>

#include "golden.h"
#include "model/synthetic.h"
#include "spec/mtp_drafter.h"
#include "spec/speculative_decoder.h"

namespace nextn {
namespace {

struct Case {
    std::string model;
    WType type;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.model << " " << wtype_name(c.type); }

struct Built {
    Checkpoint checkpoint;
    std::unique_ptr<ThreadPool> pool;
    std::unique_ptr<Qwen35Model> model;
};

// Loads a fixture as load_model does, with make_draft_perfect (or nothing) between binding the
// weights and building the model.
Built load(const std::string& dir, WType type, bool perfect) {
    Built b;
    b.checkpoint = load_checkpoint(dir);
    b.checkpoint.config.gdn_tiled_heads = b.checkpoint.gdn_tiled_heads;
    BindOptions bo;
    bo.matrix_type = type;
    ModelWeights w = bind_weights(b.checkpoint, bo);
    b.pool = std::make_unique<ThreadPool>(2);
    if (perfect) make_draft_perfect(w, b.checkpoint.config, b.pool.get());
    b.model = std::make_unique<Qwen35Model>(b.checkpoint.config, std::move(w), *b.pool);
    return b;
}

std::vector<int32_t> decode(const Qwen35Model& model, const std::vector<int32_t>& prompt, int depth,
                            int64_t n, DecodeStats* stats) {
    return test::greedy_decode(model, prompt, depth, n, stats);
}

class PerfectDraft : public ::testing::TestWithParam<Case> {
protected:
    void SetUp() override {
        g_ = test::golden_model(GetParam().model);
        prompt_ = test::json_ids(g_.index["prompts"]["p7"]["tokens"]);
    }
    test::GoldenModel g_;
    std::vector<int32_t> prompt_;
};

TEST_P(PerfectDraft, EveryRoundCommitsDepthPlusOne) {
    Built b = load(g_.model_dir, GetParam().type, true);
    const Qwen35Model& model = *b.model;
    DecodeStats plain_stats;
    // 61 tokens: the first comes from the prefill, the other 60 are a whole number of rounds
    // for every depth 1..4 (60 is a multiple of 2, 3, 4 and 5), so no round is cut short.
    const int64_t n = 61;
    std::vector<int32_t> plain = decode(model, prompt_, 0, n, &plain_stats);
    ASSERT_EQ(int64_t(plain.size()), n);
    for (int depth = 1; depth <= 4; ++depth) {
        DecodeStats s;
        std::vector<int32_t> spec = decode(model, prompt_, depth, n, &s);
        EXPECT_EQ(plain, spec) << "depth " << depth;
        EXPECT_EQ(s.rounds, (n - 1) / (depth + 1)) << "depth " << depth;
        EXPECT_DOUBLE_EQ(s.tokens_per_round(), double(depth + 1)) << "depth " << depth;
        for (int d = 0; d < depth; ++d) {
            EXPECT_EQ(s.drafted[size_t(d)], s.rounds) << "depth " << depth << ", draft " << d + 1;
            EXPECT_EQ(s.accepted[size_t(d)], s.drafted[size_t(d)]) << "depth " << depth << ", draft " << d + 1;
        }
        // The round's parts: every round drafted and verified, and the parts (disjoint
        // intervals of the decode loop) add up to no more than its whole time.
        const DecodeStats::RoundTimes& t = s.round_times;
        EXPECT_GT(t.draft, 0.0) << "depth " << depth;
        EXPECT_GT(t.verify, 0.0) << "depth " << depth;
        EXPECT_GE(t.accept, 0.0) << "depth " << depth;
        EXPECT_GE(t.commit, 0.0) << "depth " << depth;
        EXPECT_LE(t.sum(), s.decode_seconds) << "depth " << depth;
    }
    // Plain rounds draft nothing: their drafting part is the empty proposal's bookkeeping, far
    // below a forward.
    EXPECT_GT(plain_stats.round_times.verify, 0.0);
    EXPECT_LT(plain_stats.round_times.draft, 0.1 * plain_stats.round_times.verify);
    EXPECT_LE(plain_stats.round_times.sum(), plain_stats.decode_seconds);
}

TEST_P(PerfectDraft, ACutShortFinalRoundAcceptsItsDraftsToo) {
    // 64 tokens: 63 after the prefill's; the last round drafts only what is left to generate.
    Built b = load(g_.model_dir, GetParam().type, true);
    const int64_t n = 64;
    DecodeStats plain_stats;
    std::vector<int32_t> plain = decode(*b.model, prompt_, 0, n, &plain_stats);
    for (int depth = 1; depth <= 4; ++depth) {
        DecodeStats s;
        EXPECT_EQ(plain, decode(*b.model, prompt_, depth, n, &s)) << "depth " << depth;
        EXPECT_EQ(s.rounds, (n - 1 + depth) / (depth + 1)) << "depth " << depth;  // ceil(63 / (d+1))
        for (int d = 0; d < depth; ++d)
            EXPECT_EQ(s.accepted[size_t(d)], s.drafted[size_t(d)]) << "depth " << depth;
    }
}

TEST_P(PerfectDraft, TrunkPredictionDependsOnTheCurrentTokenOnly) {
    // With every residual branch zeroed, no context reaches the final hidden: two different
    // histories ending in the same token give bitwise the same logits. (Fails if any layer's
    // output matrix was left non-zero.)
    Built b = load(g_.model_dir, GetParam().type, true);
    const Qwen35Model& m = *b.model;
    const int64_t V = m.config().vocab_size;
    std::vector<int32_t> x = prompt_, y = {5, 900, 17};
    x.push_back(42);
    y.push_back(42);
    SequenceState sx = m.new_state(64, 1), sy = m.new_state(64, 1);
    std::vector<float> lx(static_cast<size_t>(V)), ly(static_cast<size_t>(V));
    m.forward(sx, x.data(), int64_t(x.size()), {nullptr, lx.data(), 1});
    m.forward(sy, y.data(), int64_t(y.size()), {nullptr, ly.data(), 1});
    EXPECT_EQ(0, std::memcmp(lx.data(), ly.data(), size_t(V) * sizeof(float)));
}

TEST_P(PerfectDraft, WithoutTheTransformDraftsAreRejected) {
    // The control: the fixture's own head does not reach depth + 1 tokens per round, so the
    // assertions above measure the transform, not the decoder.
    Built b = load(g_.model_dir, GetParam().type, false);
    DecodeStats s;
    decode(*b.model, prompt_, 4, 61, &s);
    EXPECT_LT(s.tokens_per_round(), 5.0);
}

TEST(PerfectDraftTransform, NeedsAnMtpHead) {
    ModelWeights w;
    ModelConfig c;
    c.hidden_size = 8;
    EXPECT_THROW(make_draft_perfect(w, c), Error);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PerfectDraft,
                         ::testing::Values(Case{"qwen35-dense-tiny", WType::F32},
                                           Case{"qwen35-moe-tiny", WType::F32},
                                           Case{"qwen35-dense-tiny", WType::Q8_0},
                                           Case{"qwen35-moe-tiny", WType::Q8_0}),
                         [](const auto& info) {
                             return test::test_name(info.param.model + "_" + wtype_name(info.param.type));
                         });

}  // namespace
}  // namespace nextn
