// The decode loop's contracts with its callers and its drafter (spec/speculative_decoder.h,
// spec/drafter.h) that its outputs alone do not show: what on_commit is told, what the stats
// say ended the output, which rounds the adaptive depth may time, and the requests it refuses.
// On the dense fixture model, with scripted drafts (the plain greedy continuation), so rounds
// commit several tokens.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "decode_helpers.h"
#include "error_of.h"
#include "golden.h"
#include "model/qwen35.h"
#include "spec/depth_controller.h"
#include "spec/speculative_decoder.h"

namespace nextn {
namespace {

// Checks every on_commit against drafter.h's contract: runs arrive in order and contiguous from
// position 0, and next_tokens[i] is the token that follows position pos0 + i in the sequence
// (prompt, then the generated tokens). Drafts come from a ScriptedDrafter.
class CommitCheckingDrafter : public Drafter {
  public:
    CommitCheckingDrafter(std::vector<int32_t> prompt, std::vector<int32_t> truth, int64_t vocab)
        : inner_(prompt, truth, 0, vocab), sequence_(std::move(prompt)) {
        sequence_.insert(sequence_.end(), truth.begin(), truth.end());
    }
    void on_commit(const float* hidden, const int32_t* next_tokens, int64_t n,
                   int64_t pos0) override {
        EXPECT_EQ(committed_, pos0) << "runs must be contiguous";
        for (int64_t i = 0; i < n; ++i) {
            ASSERT_LT(size_t(pos0 + i + 1), sequence_.size());
            EXPECT_EQ(sequence_[size_t(pos0 + i + 1)], next_tokens[i]) << "position " << pos0 + i;
        }
        committed_ = pos0 + n;
        ++calls;
        ++unflushed_;
        inner_.on_commit(hidden, next_tokens, n, pos0);
    }
    void flush() override { unflushed_ = 0; }
    void draft(const DraftRequest& request, DraftProposal& out) override {
        if (unflushed_at_first_draft < 0) unflushed_at_first_draft = unflushed_;
        unflushed_ = 0;
        inner_.draft(request, out);
    }
    void reset() override {}
    int64_t calls = 0;
    int64_t unflushed_at_first_draft = -1;  // commits queued when draft() was first called

  private:
    test::ScriptedDrafter inner_;
    std::vector<int32_t> sequence_;  // prompt + the continuation the drafts follow
    int64_t committed_ = 0;
    int64_t unflushed_ = 0;  // on_commit calls since the last flush() or draft()
};

class DecodeLoop : public ::testing::Test {
  protected:
    void SetUp() override {
        ModelOptions mo;
        mo.threads = 2;
        lm_ = load_model(test::golden_model("qwen35-dense-tiny").model_dir, mo);
        V_ = lm_.model->config().vocab_size;
        for (int i = 0; i < 7; ++i) prompt_.push_back(int32_t(i * 37 % 1000 + 1));
    }
    // generate() into a fresh state (room for n tokens and `depth` drafts) with drafter d.
    DecodeStats run(const std::vector<int32_t>& prompt, Drafter* d, const DecodeOptions& o,
                    std::vector<int32_t>* out = nullptr) {
        SequenceState s =
            lm_.model->new_state(int64_t(prompt.size()) + o.max_new_tokens + 8, o.draft_depth + 1);
        return generate(*lm_.model, s, d, prompt, o, [&](const EmittedToken& e) {
            if (out) out->push_back(e.id);
            return true;
        });
    }
    LoadedModel lm_;
    int64_t V_ = 0;
    std::vector<int32_t> prompt_;
};

// A prompt longer than one prefill chunk (256 tokens) is committed in several runs; the pair at
// each chunk's end is the next chunk's first token, and the last prefill position's is the first
// generated token. Then every round's run, at depth 0 and 3.
TEST_F(DecodeLoop, DrafterIsToldTheTokenAfterEachCommittedPosition) {
    std::vector<int32_t> long_prompt;
    for (int i = 0; i < 600; ++i) long_prompt.push_back(int32_t(i * 7 % 1000 + 1));
    for (const std::vector<int32_t>& prompt : {prompt_, long_prompt}) {
        const std::vector<int32_t> plain = test::greedy_decode(*lm_.model, prompt, 0, 12);
        for (int depth : {0, 3}) {
            CommitCheckingDrafter d(prompt, plain, V_);
            DecodeOptions o;
            o.max_new_tokens = 12;
            o.draft_depth = depth;
            std::vector<int32_t> out;
            const DecodeStats s = run(prompt, &d, o, &out);
            EXPECT_EQ(plain, out) << "depth " << depth;
            EXPECT_EQ(int64_t(prompt.size()), s.prompt_tokens);
            EXPECT_GE(d.calls, (int64_t(prompt.size()) + 255) / 256 + 1) << "depth " << depth;
            // The prompt's pairs are flushed with the prefill, not in the first round's draft().
            if (depth > 0) {
                EXPECT_EQ(0, d.unflushed_at_first_draft);
            }
        }
    }
}

// The stats count, per draft position, the rounds that drafted it and those that accepted it:
// with every first draft right and every second one wrong, each round at depth 2 accepts one.
TEST_F(DecodeLoop, AcceptanceStatsCountEachPosition) {
    const std::vector<int32_t> plain = test::greedy_decode(*lm_.model, prompt_, 0, 14);
    test::ScriptedDrafter d(prompt_, plain, 2, V_);  // corrupts drafts 2, 4, 6, ...
    DecodeOptions o;
    o.max_new_tokens = 14;  // the prefill's token, 6 rounds of 2, and a last plain round of 1
    o.draft_depth = 2;
    std::vector<int32_t> out;
    const DecodeStats s = run(prompt_, &d, o, &out);
    EXPECT_EQ(plain, out);
    EXPECT_EQ(7, s.rounds);
    EXPECT_EQ((std::vector<int64_t>{6, 6}), s.drafted);
    EXPECT_EQ((std::vector<int64_t>{6, 0}), s.accepted);
}

// stopped_by_token says whether the last token is a stop token: set by a stop token inside a
// drafting round, not by the length limit.
TEST_F(DecodeLoop, StoppedByTokenSaysWhatEndedTheOutput) {
    const std::vector<int32_t> plain = test::greedy_decode(*lm_.model, prompt_, 0, 16);
    // A stop token that first appears after the first round at depth 3 (not the prefill's).
    size_t at = 5;
    while (std::find(plain.begin(), plain.begin() + long(at), plain[at]) !=
           plain.begin() + long(at))
        ++at;
    ASSERT_LT(at, plain.size());
    for (int depth : {0, 3}) {
        test::ScriptedDrafter d(prompt_, plain, 0, V_);
        DecodeOptions o;
        o.max_new_tokens = 16;
        o.draft_depth = depth;
        o.stop_tokens = {plain[at]};
        std::vector<int32_t> out;
        DecodeStats s = run(prompt_, depth ? &d : nullptr, o, &out);
        EXPECT_EQ(std::vector<int32_t>(plain.begin(), plain.begin() + long(at) + 1), out)
            << "depth " << depth;
        EXPECT_TRUE(s.stopped_by_token) << "depth " << depth;
        o.stop_tokens.clear();
        o.max_new_tokens = 6;
        test::ScriptedDrafter d2(prompt_, plain, 0, V_);
        s = run(prompt_, depth ? &d2 : nullptr, o);
        EXPECT_FALSE(s.stopped_by_token) << "depth " << depth;
    }
}

// A request's first round counts for the controller's acceptance only (observe's `timed`): it
// runs cold, and its time must not become a depth's cost. The second round's does.
TEST_F(DecodeLoop, FirstRoundIsNotTimedForTheController) {
    const std::vector<int32_t> plain = test::greedy_decode(*lm_.model, prompt_, 0, 8);
    for (int64_t n : {2, 3}) {  // the prefill's token, then 1 or 2 rounds
        DepthController c(2);   // cold: its first choices are depth 0, to measure it
        test::ScriptedDrafter d(prompt_, plain, 0, V_);
        DecodeOptions o;
        o.max_new_tokens = n;
        o.draft_depth = 2;
        o.controller = &c;
        const DecodeStats s = run(prompt_, &d, o);
        ASSERT_EQ(n - 1, s.rounds);
        if (n == 2)
            EXPECT_EQ(0.0, c.cost(0)) << "the first round's time was taken";
        else
            EXPECT_GT(c.cost(0), 0.0) << "the second round's time was not taken";
    }
}

// The rounds' host-side work (sampling and acceptance) is timed along with the rest.
TEST_F(DecodeLoop, RoundTimesIncludeAcceptance) {
    SamplerParams sampled;
    sampled.temperature = 0.8f;
    DecodeOptions o;
    o.max_new_tokens = 8;
    o.draft_depth = 0;
    o.sampler = sampled;
    const DecodeStats s = run(prompt_, nullptr, o);
    EXPECT_GT(s.round_times.accept, 0.0);
}

// Requests that generate nothing or cannot run: no token and no callback for max_new_tokens 0;
// errors for an empty prompt, a logit bias on a token the model does not have, a depth the
// state's verify width cannot hold, a prompt that fills the context, and a cached prefix that is
// the whole prompt (its last token must still be run to give the first logits).
TEST_F(DecodeLoop, RequestsThatCannotRun) {
    DecodeOptions o;
    o.max_new_tokens = 0;
    int calls = 0;
    SequenceState s = lm_.model->new_state(32, 4);
    const DecodeStats stats =
        generate(*lm_.model, s, nullptr, prompt_, o, [&](const EmittedToken&) {
            ++calls;
            return true;
        });
    EXPECT_TRUE(stats.tokens.empty());
    EXPECT_EQ(0, calls);
    EXPECT_EQ(0, s.n_past);

    // The error each request gives ("(no error)" when it runs), each its own.
    auto error = [&](const std::vector<int32_t>& prompt, const DecodeOptions& opts, int width,
                     SequenceState* state = nullptr) {
        SequenceState fresh = lm_.model->new_state(32, width);
        test::ScriptedDrafter d(prompt_, prompt_, 0, V_);
        return test::error_of([&] {
            generate(*lm_.model, state ? *state : fresh, &d, prompt, opts,
                     [](const EmittedToken&) { return true; });
        });
    };
    auto fails = [&](const std::vector<int32_t>& prompt, const DecodeOptions& opts, int width,
                     const std::string& why, SequenceState* state = nullptr) {
        const std::string got = error(prompt, opts, width, state);
        EXPECT_NE(got.find(why), std::string::npos) << got;
    };
    DecodeOptions ok;
    ok.max_new_tokens = 4;
    ok.draft_depth = 2;
    EXPECT_EQ("(no error)", error(prompt_, ok, 3));  // the control: these settings run
    fails({}, ok, 3, "the prompt is empty");
    DecodeOptions biased = ok;
    biased.sampler.logit_bias = {{int32_t(V_), 1.0f}};
    fails(prompt_, biased, 3, "is outside the vocabulary");
    fails(prompt_, ok, 2, "needs verify width 3");
    // A 32-position state takes a prompt of 31 tokens, not of 32: the first generated token
    // needs a position too.
    const std::vector<int32_t> fills(32, 5);
    fails(fills, ok, 3,
          "prompt of 32 tokens leaves no room for a generated token in the context size 32");
    EXPECT_EQ("(no error)", error(std::vector<int32_t>(31, 5), ok, 3));
    SequenceState cached = lm_.model->new_state(32, 3);
    lm_.model->forward(cached, prompt_.data(), int64_t(prompt_.size()), {});
    DecodeOptions whole = ok;
    whole.max_new_tokens = 1;  // the prefill's token alone: no round's forward to catch it later
    whole.cached_prefix = int64_t(prompt_.size());
    fails(prompt_, whole, 3, "does not match the state", &cached);
}

}  // namespace
}  // namespace nextn
