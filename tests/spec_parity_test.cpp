// Speculative decoding is exact: greedy output with MTP drafts at every depth is token for token
// the plain greedy output, rollback leaves the caches exactly as a fresh run would, and the
// prefill / decode paths agree bitwise (batch invariance); with the f32 and the f16 KV cache.
#include <gtest/gtest.h>

#include <cstring>
#include <ostream>

#include "decode_helpers.h"
#include "golden.h"
#include "model/qwen35.h"
#include "spec/depth_controller.h"
#include "spec/mtp_drafter.h"
#include "spec/speculative_decoder.h"
#include "sampling/logit_pipeline.h"
#include "sampling/logprobs.h"

namespace nextn {
namespace {

// Counts the pairs queued by on_commit and not yet flushed, and records how many each draft()
// call finds (proposing nothing: every round then commits one token).
class PendingCountingDrafter : public Drafter {
public:
    void on_commit(const float*, const int32_t*, int64_t n, int64_t) override { pending_ += n; }
    void flush() override { pending_ = 0; }
    void draft(const DraftRequest&, DraftProposal& d) override {
        d.clear();
        seen_at_draft.push_back(pending_);
        pending_ = 0;  // draft() flushes what is queued
    }
    void reset() override { pending_ = 0; }
    std::vector<int64_t> seen_at_draft;  // [draft calls] pairs queued when each began

private:
    int64_t pending_ = 0;
};

// A fixture model, the KV cache type and the activations of its bf16 matrices: every property
// below holds bitwise with each, since an f16 cache rounds each key and value once, when
// written, and bf16 activations are rounded once per matmul input, whatever the batch width.
struct ParityCase {
    std::string model;
    KvCacheType kv;
    bool bf16_activations = false;
};

void PrintTo(const ParityCase& c, std::ostream* os) {
    *os << c.model << " " << kv_cache_type_name(c.kv) << (c.bf16_activations ? " bf16 activations" : "");
}

class SpecParity : public ::testing::TestWithParam<ParityCase> {
protected:
    void SetUp() override {
        g_ = test::golden_model(GetParam().model);
        ModelOptions opts;
        opts.threads = 2;
        opts.kv_cache_type = GetParam().kv;
        opts.bf16_activations = GetParam().bf16_activations;
        lm_ = load_model(g_.model_dir, opts);
        prompt_ = test::json_ids(g_.index["prompts"]["p7"]["tokens"]);
    }
    test::GoldenModel g_;
    LoadedModel lm_;
    std::vector<int32_t> prompt_;
};

TEST_P(SpecParity, MtpGreedyEqualsPlainAtEveryDepth) {
    const Qwen35Model& model = *lm_.model;
    // Several prompts (1, 7, 40 and 128 tokens), 200 generated tokens each.
    for (const char* name : {"p1", "p7", "p40", "p128"}) {
        std::vector<int32_t> prompt = test::json_ids(g_.index["prompts"][name]["tokens"]);
        std::vector<int32_t> plain = test::greedy_decode(model, prompt, 0, 200);
        // The plain run is itself the independent reference's greedy continuation (with f32
        // activations and an f32 or f16 cache; bf16 activations are held to the golden data in
        // model_golden_test, a q8_0 cache in model_kv_types_test: the MoE's router picks other
        // experts for some tokens, and a pick flips).
        std::vector<int32_t> want = test::json_ids(g_.index["prompts"][name]["greedy_tokens"]);
        if (!GetParam().bf16_activations && GetParam().kv != KvCacheType::Q8_0) {
            ASSERT_EQ(std::vector<int32_t>(want.begin(), want.begin() + 64),
                      std::vector<int32_t>(plain.begin(), plain.begin() + 64))
                << name;
        }
        for (int depth = 1; depth <= 4; ++depth) {
            DecodeStats stats;
            std::vector<int32_t> spec = test::greedy_decode(model, prompt, depth, 200, &stats);
            EXPECT_EQ(plain, spec) << name << ", depth " << depth;
            EXPECT_GT(stats.rounds, 0);
            EXPECT_GE(stats.drafted[0], stats.rounds - 1)
                << "every round but a final one-token round drafts";
        }
    }
}

// The cheap draft heads change only q: a sub-vocabulary and a quantized draft LM head, and the
// pre-norm MTP input, must all still give exactly the plain greedy output.
TEST_P(SpecParity, CheapDraftHeadsAndPreNormInputEqualPlain) {
    Qwen35Model& model = *lm_.model;
    const int64_t V = model.config().vocab_size;
    std::vector<int32_t> plain = test::greedy_decode(model, prompt_, 0, 48);
    struct Variant {
        int64_t vocab;
        WType type;
        MtpInput input;
    };
    for (Variant v : {Variant{V / 4, WType::Native, MtpInput::PostNorm},
                      Variant{0, WType::Q8_0, MtpInput::PostNorm},
                      Variant{V / 2, WType::Q4_0, MtpInput::PostNorm},
                      Variant{0, WType::Native, MtpInput::PreNorm}}) {
        model.set_draft_head(v.vocab, v.type);
        model.set_mtp_input(v.input);
        ASSERT_EQ(v.vocab ? v.vocab : V, model.draft_vocab());
        for (int depth = 1; depth <= 4; ++depth) {
            DecodeStats stats;
            std::vector<int32_t> spec = test::greedy_decode(model, prompt_, depth, 48, &stats);
            EXPECT_EQ(plain, spec) << "draft vocab " << v.vocab << ", type " << wtype_name(v.type)
                                   << ", " << mtp_input_name(v.input) << ", depth " << depth;
            EXPECT_GT(stats.drafted[0], 0);
        }
    }
    model.set_draft_head(0, WType::Native);
    model.set_mtp_input(MtpInput::PostNorm);
}

TEST_P(SpecParity, SubVocabularyDraftsStayInsideIt) {
    Qwen35Model& model = *lm_.model;
    const int64_t Vd = 100;
    model.set_draft_head(Vd, WType::Native);
    SequenceState state = model.new_state(int64_t(prompt_.size()) + 16, 8);
    MtpDrafter drafter(model, state);
    std::vector<float> hidden(size_t(int64_t(prompt_.size()) * model.config().hidden_size));
    model.forward(state, prompt_.data(), int64_t(prompt_.size()), {hidden.data(), nullptr, 0});
    std::vector<int32_t> next(prompt_.begin() + 1, prompt_.end());
    next.push_back(7);  // an arbitrary "current" token after the prompt
    drafter.on_commit(hidden.data(), next.data(), int64_t(next.size()), 0);
    SamplerParams params;
    params.temperature = 1.5f;  // broad q: samples would leave [0, Vd) if q were not cut there
    Rng rng(5);
    std::vector<int32_t> history = prompt_;
    history.push_back(7);
    for (int i = 0; i < 20; ++i) {
        DraftProposal d;
        drafter.draft({4, &params, &history, &rng}, d);
        ASSERT_FALSE(d.empty());
        for (size_t j = 0; j < d.size(); ++j) {
            EXPECT_LT(d.tokens()[j], Vd);
            EXPECT_LE(d.q()[j].vocab_size, Vd);
        }
        EXPECT_EQ(prompt_.size() + 1, history.size()) << "the drafter restores the history";
    }
    model.set_draft_head(0, WType::Native);
}

TEST_P(SpecParity, ScriptedDraftsWithRejectionsEqualPlain) {
    const Qwen35Model& model = *lm_.model;
    std::vector<int32_t> plain = test::greedy_decode(model, prompt_, 0, 40);
    for (int corrupt : {0, 2, 3, 5}) {
        for (int depth : {1, 3, 6}) {
            test::ScriptedDrafter drafter(prompt_, plain, corrupt, model.config().vocab_size);
            DecodeStats stats;
            std::vector<int32_t> out =
                test::decode_with_drafter(model, prompt_, drafter, depth, 40, &stats);
            EXPECT_EQ(plain, out) << "corrupt every " << corrupt << ", depth " << depth;
            if (corrupt == 0) {
                // A perfect drafter: every draft accepted, so each round commits depth + 1.
                EXPECT_EQ(stats.accepted[0], stats.drafted[0]);
                EXPECT_LE(stats.rounds, (40 + depth) / (depth + 1) + 1);
            }
            EXPECT_GT(stats.accepted[0], 0) << "corrupt every " << corrupt << ", depth " << depth;
        }
    }
}

// A callback that ends the output inside a round (a stop string, an interrupt) ends what is
// kept there too: the token count, the committed tokens and the caches stop at the last token
// it took, as in plain decoding, whatever the round had accepted after it.
TEST_P(SpecParity, ACallbackStoppingInsideARoundKeepsOnlyWhatItTook) {
    const Qwen35Model& model = *lm_.model;
    std::vector<int32_t> plain = test::greedy_decode(model, prompt_, 0, 40);
    for (int64_t take : {1, 2, 3, 4, 7}) {
        for (int depth : {0, 4}) {
            SequenceState state = model.new_state(int64_t(prompt_.size()) + 48, depth + 1);
            test::ScriptedDrafter drafter(prompt_, plain, 0, model.config().vocab_size);
            DecodeOptions opts;
            opts.max_new_tokens = 40;
            opts.draft_depth = depth;
            std::vector<int32_t> out;
            DecodeStats stats = generate(model, state, depth ? &drafter : nullptr, prompt_, opts,
                                         [&](const EmittedToken& t) {
                                             out.push_back(t.id);
                                             return int64_t(out.size()) < take;
                                         });
            ASSERT_EQ(size_t(take), out.size()) << "depth " << depth;
            EXPECT_EQ(out, stats.tokens) << "take " << take << ", depth " << depth;
            EXPECT_FALSE(stats.stopped_by_context);
            EXPECT_EQ(std::vector<int32_t>(plain.begin(), plain.begin() + take), out);
            // The last token taken is the next input; every one before it is in the caches.
            EXPECT_EQ(int64_t(prompt_.size()) + take - 1, state.n_past)
                << "take " << take << ", depth " << depth;
            if (depth > 0 && take > 1) {
                EXPECT_EQ(1 + (take - 2) / (depth + 1), stats.rounds)
                    << "every round's drafts are accepted";
            }
        }
    }
}

// A sequence whose caches fill before max_new_tokens says so (the CLI's "end of the context"
// note), at any depth; one that ends at max_new_tokens does not.
TEST_P(SpecParity, AFullContextIsReported) {
    const Qwen35Model& model = *lm_.model;
    std::vector<int32_t> plain = test::greedy_decode(model, prompt_, 0, 40);
    for (int depth : {0, 4}) {
        for (int64_t room : {int64_t(6), int64_t(40)}) {
            // room positions after the prompt: room + 1 tokens fit (the last needs no slot).
            SequenceState state = model.new_state(int64_t(prompt_.size()) + room, depth + 1);
            test::ScriptedDrafter drafter(prompt_, plain, 0, model.config().vocab_size);
            DecodeStats stats;
            test::greedy_decode_in(model, state, depth ? &drafter : nullptr, prompt_, depth, 20,
                                   &stats);
            EXPECT_EQ(std::min<int64_t>(20, room + 1), stats.generated())
                << "depth " << depth << ", room " << room;
            EXPECT_EQ(room + 1 < 20, stats.stopped_by_context)
                << "depth " << depth << ", room " << room;
        }
    }
}

// Under the adaptive depth, a drafting round that follows plain (depth 0) rounds finds their
// queued pairs already flushed, outside its timing; the one pair of the round just before is
// all draft() may still find. The output is still the plain greedy one.
TEST_P(SpecParity, PlainRoundsPairsAreFlushedBeforeADraftingRound) {
    const Qwen35Model& model = *lm_.model;
    std::vector<int32_t> plain = test::greedy_decode(model, prompt_, 0, 60);
    DepthController controller(1);
    // Nothing accepted and a depth-1 round ten times dearer: the controller settles on depth 0
    // and probes depth 1 now and then.
    for (int r = 0; r < 40; ++r) {
        const int d = controller.choose();
        controller.observe(d, 0, d == 0 ? 0.001 : 0.01);
    }
    ASSERT_EQ(0, controller.best_depth());
    SequenceState state = model.new_state(int64_t(prompt_.size()) + 64, 4);
    PendingCountingDrafter drafter;
    DecodeOptions opts;
    opts.max_new_tokens = 60;
    opts.draft_depth = 1;
    opts.controller = &controller;
    std::vector<int32_t> out;
    generate(model, state, &drafter, prompt_, opts, [&](const EmittedToken& t) {
        out.push_back(t.id);
        return true;
    });
    EXPECT_EQ(plain, out);
    ASSERT_FALSE(drafter.seen_at_draft.empty()) << "no probe at depth 1 in 60 rounds";
    for (int64_t pending : drafter.seen_at_draft) EXPECT_LE(pending, 1);
}

TEST_P(SpecParity, RollbackLeavesStateAsFreshRun) {
    // Verify 5 arbitrary tokens, keep 2, then decode one token: the logits must be bitwise those
    // of a fresh run that only ever saw the kept tokens.
    const Qwen35Model& model = *lm_.model;
    const int64_t V = model.config().vocab_size;
    std::vector<int32_t> extra = {11, 700, 42, 9, 300};
    SequenceState a = model.new_state(64, 8), b = model.new_state(64, 8);
    model.forward(a, prompt_.data(), int64_t(prompt_.size()), {});
    model.forward(b, prompt_.data(), int64_t(prompt_.size()), {});
    std::vector<float> scratch(size_t(5 * V));
    model.forward(a, extra.data(), 5, {nullptr, scratch.data(), 5}, /*keep_open=*/true);
    model.commit(a, 2);
    for (int i = 0; i < 2; ++i) model.forward(b, &extra[size_t(i)], 1, {});
    std::vector<float> la(static_cast<size_t>(V)), lb(static_cast<size_t>(V));
    int32_t next = 77;
    model.forward(a, &next, 1, {nullptr, la.data(), 1});
    model.forward(b, &next, 1, {nullptr, lb.data(), 1});
    EXPECT_EQ(0, std::memcmp(la.data(), lb.data(), size_t(V) * sizeof(float)));
}

// Each streamed token's logprobs are those of its own position's logits after bias and
// penalties (the decoder reports them from the round's logits, without a copy when nothing
// changes them), at depth 0 and in rounds that stream several tokens; against token-by-token
// forwards.
TEST_P(SpecParity, StreamedLogprobsAreThoseOfEachPositionsLogits) {
    const Qwen35Model& model = *lm_.model;
    const int64_t V = model.config().vocab_size;
    constexpr int kTop = 3;
    constexpr int64_t kTokens = 24;
    for (bool biased : {false, true}) {
        SamplerParams params = DecodeOptions::greedy_params();
        if (biased) {
            params.logit_bias = {{5, 1.5f}};
            params.presence_penalty = 0.5f;
        }
        std::vector<int32_t> plain;  // the depth-0 output, which the scripted drafts propose
        for (int depth : {0, 3}) {
            SequenceState state = model.new_state(int64_t(prompt_.size()) + kTokens + 8, depth + 1);
            // Mostly right drafts (every third one corrupted), so rounds stream several tokens.
            std::unique_ptr<Drafter> drafter;
            if (depth > 0)
                drafter = std::make_unique<test::ScriptedDrafter>(prompt_, plain, 3,
                                                                  model.config().vocab_size);
            DecodeOptions opts;
            opts.max_new_tokens = kTokens;
            opts.draft_depth = depth;
            opts.sampler = params;
            opts.logprobs = kTop;
            std::vector<int32_t> out;
            std::vector<LogprobReport> reports;
            generate(model, state, drafter.get(), prompt_, opts, [&](const EmittedToken& t) {
                out.push_back(t.id);
                if (t.logprobs) reports.push_back(*t.logprobs);
                return true;
            });
            ASSERT_EQ(out.size(), reports.size());
            if (depth == 0) plain = out;
            EXPECT_EQ(plain, out) << "depth " << depth;
            SequenceState ref = model.new_state(int64_t(prompt_.size()) + kTokens + 8, 1);
            std::vector<float> logits(static_cast<size_t>(V));
            model.forward(ref, prompt_.data(), int64_t(prompt_.size()), {nullptr, logits.data(), 1});
            std::vector<int32_t> history = prompt_;
            for (size_t i = 0; i < out.size(); ++i) {
                std::vector<float> processed;
                apply_bias_and_penalties(logits, history, params, processed);
                const LogprobReport want = logprobs_from_logits(processed, out[i], kTop);
                const std::string where = (biased ? "biased, " : "") + std::string("depth ") +
                                          std::to_string(depth) + ", token " + std::to_string(i);
                EXPECT_EQ(want.chosen.token, reports[i].chosen.token) << where;
                EXPECT_EQ(want.chosen.logprob, reports[i].chosen.logprob) << where;
                ASSERT_EQ(want.top.size(), reports[i].top.size()) << where;
                for (size_t k = 0; k < want.top.size(); ++k) {
                    EXPECT_EQ(want.top[k].token, reports[i].top[k].token) << where;
                    EXPECT_EQ(want.top[k].logprob, reports[i].top[k].logprob) << where;
                }
                history.push_back(out[i]);
                model.forward(ref, &out[i], 1, {nullptr, logits.data(), 1});
            }
        }
    }
}

// The 7-token prompt is one of attention's blocks of 8 tokens; the first 37 tokens of the
// 40-token one are four whole blocks and a ragged fifth.
TEST_P(SpecParity, PrefillThenDecodeEqualsTokenByToken) {
    const Qwen35Model& model = *lm_.model;
    const int64_t V = model.config().vocab_size;
    std::vector<int32_t> long_prompt = test::json_ids(g_.index["prompts"]["p40"]["tokens"]);
    long_prompt.resize(37);
    for (const std::vector<int32_t>& prompt : {prompt_, long_prompt}) {
        const int64_t N = int64_t(prompt.size());
        SequenceState a = model.new_state(N + 2, 1), b = model.new_state(N + 2, 1);
        std::vector<float> la(size_t(N * V)), lb(static_cast<size_t>(V));
        model.forward(a, prompt.data(), N, {nullptr, la.data(), N});
        for (int64_t t = 0; t < N; ++t) {
            model.forward(b, &prompt[size_t(t)], 1, {nullptr, lb.data(), 1});
            EXPECT_EQ(0, std::memcmp(la.data() + t * V, lb.data(), size_t(V) * sizeof(float)))
                << N << "-token prompt, position " << t;
        }
        int32_t next = 5;
        model.forward(a, &next, 1, {nullptr, la.data(), 1});
        model.forward(b, &next, 1, {nullptr, lb.data(), 1});
        EXPECT_EQ(0, std::memcmp(la.data(), lb.data(), size_t(V) * sizeof(float))) << N << "-token prompt";
    }
}

// Runs of up to max_width tokens read the conv window in the layer's own buffer and move the
// newest rows to its front afterwards (fewer tokens than the conv state's K-1 rows included);
// longer ones go through scratch. Either way every position's logits are those of one token at
// a time; an open run kept in part joins in between.
TEST_P(SpecParity, RunsInsideTheConvWindowEqualTokenByToken) {
    const Qwen35Model& model = *lm_.model;
    const int64_t V = model.config().vocab_size;
    std::vector<int32_t> tokens = test::json_ids(g_.index["prompts"]["p40"]["tokens"]);
    tokens.resize(24);
    SequenceState a = model.new_state(64, 8), b = model.new_state(64, 8);
    std::vector<float> la(size_t(10 * V)), lb(static_cast<size_t>(V));
    int64_t at = 0;
    auto check = [&](int64_t n, const char* what) {
        for (int64_t t = 0; t < n; ++t) {
            model.forward(b, &tokens[size_t(at + t)], 1, {nullptr, lb.data(), 1});
            EXPECT_EQ(0, std::memcmp(la.data() + t * V, lb.data(), size_t(V) * sizeof(float)))
                << what << " of " << n << ", position " << at + t;
        }
        at += n;
    };
    for (int64_t n : {2, 1, 4, 10, 3}) {  // 10 > max_width: scratch
        model.forward(a, &tokens[size_t(at)], n, {nullptr, la.data(), n});
        check(n, "committed run");
    }
    model.forward(a, &tokens[size_t(at)], 4, {nullptr, la.data(), 4}, /*keep_open=*/true);
    model.commit(a, 2);
    check(2, "open run kept in part");
    model.forward(a, &tokens[size_t(at)], 2, {nullptr, la.data(), 2});
    check(2, "committed run after it");
}

INSTANTIATE_TEST_SUITE_P(Fixtures, SpecParity,
                         ::testing::Values(ParityCase{"qwen35-dense-tiny", KvCacheType::F32},
                                           ParityCase{"qwen35-moe-tiny", KvCacheType::F32},
                                           ParityCase{"qwen35-dense-tiny", KvCacheType::F16},
                                           ParityCase{"qwen35-moe-tiny", KvCacheType::F16},
                                           ParityCase{"qwen35-dense-tiny", KvCacheType::Q8_0},
                                           ParityCase{"qwen35-moe-tiny", KvCacheType::Q8_0},
                                           ParityCase{"qwen35-dense-tiny", KvCacheType::F32, true},
                                           ParityCase{"qwen35-moe-tiny", KvCacheType::F32, true}),
                         [](const auto& info) {
                             return test::test_name(info.param.model + "_kv_" + kv_cache_type_name(info.param.kv) +
                                                    (info.param.bf16_activations ? "_bf16_activations" : ""));
                         });

}  // namespace
}  // namespace nextn
