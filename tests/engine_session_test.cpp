// A DecodeSession keeps its sequence between requests. What it must guarantee: a request that
// extends the kept sequence (a chat's next turn) gives bit for bit the output of a fresh
// session, prefilling only the new tokens; and a request cancelled mid-stream by its callback
// leaves the session consistent, so whatever comes next matches a fresh session too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "engine/decode_session.h"
#include "golden.h"
#include "kernels/kernels.h"
#include "test_paths.h"

namespace nextn {
namespace {

struct Reply {
    std::vector<int32_t> streamed;
    DecodeStats stats;
};

Reply ask(DecodeSession& session, const std::vector<int32_t>& prompt, const DecodeOptions& opts,
          int64_t stop_after = -1, int64_t ctx = 256) {
    Reply r;
    r.stats = session.generate(prompt, ctx, opts, [&](const EmittedToken& e) {
        r.streamed.push_back(e.id);
        return stop_after < 0 || int64_t(r.streamed.size()) < stop_after;
    });
    return r;
}

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

class EngineSession : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        g_ = test::golden_model(GetParam());
        ModelOptions mo;
        mo.threads = 2;
        lm_ = load_model(g_.model_dir, mo);
        prompt_ = test::json_ids(g_.index["prompts"]["p7"]["tokens"]);
        greedy_.max_new_tokens = 24;
        sampled_ = greedy_;
        sampled_.sampler.temperature = 0.9f;
        sampled_.sampler.seed = 77;
    }
    // Fixed depth: the adaptive controller would write its state to the user's cache dir.
    SessionOptions spec_{4, false};
    test::GoldenModel g_;
    LoadedModel lm_;
    std::vector<int32_t> prompt_;
    DecodeOptions greedy_, sampled_;
};

TEST_P(EngineSession, NextTurnReusesTheSequenceAndMatchesAFreshSession) {
    for (const DecodeOptions& opts : {greedy_, sampled_}) {
        DecodeSession kept(lm_, nullptr, spec_);
        Reply first = ask(kept, prompt_, opts);
        ASSERT_EQ(24u, first.streamed.size());
        EXPECT_EQ(0, kept.reused_tokens());
        EXPECT_EQ(4u, first.stats.drafted.size()) << "the session's depth, not the options'";
        // The next turn repeats everything so far (including the last generated token) and adds
        // a few tokens of its own.
        std::vector<int32_t> turn2 = concat(concat(prompt_, first.streamed), {5, 6, 7});
        Reply second = ask(kept, turn2, opts);
        EXPECT_EQ(int64_t(prompt_.size() + first.streamed.size() - 1), kept.reused_tokens());

        DecodeSession fresh(lm_, nullptr, spec_);
        Reply want = ask(fresh, turn2, opts);
        EXPECT_EQ(0, fresh.reused_tokens());
        EXPECT_EQ(want.streamed, second.streamed) << "temperature " << opts.sampler.temperature;
    }
}

// Only a prompt that repeats the kept sequence exactly and continues it with the token the model
// generated last extends it: a different token there, an edit earlier in the history, or a
// context larger than the kept caches hold each start a fresh sequence (and give a fresh
// session's output).
TEST_P(EngineSession, APromptThatDoesNotExtendTheKeptSequenceStartsFresh) {
    const int64_t V = lm_.model->config().vocab_size;
    for (const DecodeOptions& opts : {greedy_, sampled_}) {
        const std::string where = "temperature " + std::to_string(opts.sampler.temperature);
        std::vector<std::vector<int32_t>> turns;
        {
            DecodeSession probe(lm_, nullptr, spec_);
            const Reply first = ask(probe, prompt_, opts);
            std::vector<int32_t> other_next = concat(prompt_, first.streamed);
            other_next.back() = int32_t((other_next.back() + 1) % V);
            turns.push_back(concat(other_next, {5, 6}));
            std::vector<int32_t> edited = concat(concat(prompt_, first.streamed), {5, 6});
            edited[0] = int32_t((edited[0] + 1) % V);
            turns.push_back(edited);
        }
        for (const std::vector<int32_t>& turn : turns) {
            DecodeSession kept(lm_, nullptr, spec_);
            ask(kept, prompt_, opts);
            const Reply got = ask(kept, turn, opts);
            EXPECT_EQ(0, kept.reused_tokens()) << where;
            DecodeSession fresh(lm_, nullptr, spec_);
            EXPECT_EQ(ask(fresh, turn, opts).streamed, got.streamed) << where;
        }
        // A first request in a context just large enough for it, then its next turn in a larger
        // one that the kept caches cannot hold.
        DecodeSession kept(lm_, nullptr, spec_);
        const Reply first = ask(kept, prompt_, opts, -1, int64_t(prompt_.size()) + 25);
        ASSERT_EQ(24u, first.streamed.size());
        const std::vector<int32_t> turn2 = concat(concat(prompt_, first.streamed), {5, 6, 7});
        const Reply second = ask(kept, turn2, opts);
        EXPECT_EQ(0, kept.reused_tokens()) << where;
        EXPECT_EQ(24u, second.streamed.size()) << where;
        DecodeSession fresh(lm_, nullptr, spec_);
        EXPECT_EQ(ask(fresh, turn2, opts).streamed, second.streamed) << where;
    }
}

// A request whose callback throws leaves nothing to reuse (its caches hold a part of it), and a
// request for no tokens changes nothing: the next turn after each behaves as it should.
TEST_P(EngineSession, FailedAndEmptyRequestsLeaveTheSessionConsistent) {
    DecodeSession kept(lm_, nullptr, spec_);
    const Reply first = ask(kept, prompt_, greedy_);
    const std::vector<int32_t> turn2 = concat(concat(prompt_, first.streamed), {5, 6, 7});
    DecodeOptions none = greedy_;
    none.max_new_tokens = 0;
    EXPECT_TRUE(ask(kept, turn2, none).streamed.empty());
    const Reply second = ask(kept, turn2, greedy_);
    EXPECT_EQ(int64_t(prompt_.size() + first.streamed.size() - 1), kept.reused_tokens())
        << "the empty request dropped the kept sequence";

    DecodeSession failing(lm_, nullptr, spec_);
    ask(failing, prompt_, greedy_);
    int seen = 0;
    EXPECT_THROW(failing.generate(turn2, 256, greedy_,
                                  [&](const EmittedToken&) -> bool {
                                      if (++seen == 3) throw std::runtime_error("client went away");
                                      return true;
                                  }),
                 std::runtime_error);
    const Reply after = ask(failing, turn2, greedy_);
    EXPECT_EQ(0, failing.reused_tokens());
    EXPECT_EQ(second.streamed, after.streamed);
}

TEST_P(EngineSession, PlainDecodingSessionReusesToo) {
    DecodeSession kept(lm_, nullptr, {0, false});
    Reply first = ask(kept, prompt_, greedy_);
    std::vector<int32_t> turn2 = concat(concat(prompt_, first.streamed), {9});
    Reply second = ask(kept, turn2, greedy_);
    EXPECT_GT(kept.reused_tokens(), 0);
    DecodeSession fresh(lm_, nullptr, {0, false});
    EXPECT_EQ(ask(fresh, turn2, greedy_).streamed, second.streamed);
}

TEST_P(EngineSession, CancelledMidStreamThenNextRequestMatchesFresh) {
    for (const DecodeOptions& opts : {greedy_, sampled_}) {
        for (int64_t stop_after : {1, 2, 5}) {
            DecodeSession kept(lm_, nullptr, spec_);
            Reply cancelled = ask(kept, prompt_, opts, stop_after);
            ASSERT_EQ(size_t(stop_after), cancelled.streamed.size());
            // The decoder may have committed past the cancel point (the rest of that round).
            EXPECT_GE(cancelled.stats.tokens.size(), cancelled.streamed.size());
            // What a client sends next: the history it saw, plus more; and an unrelated prompt.
            for (const std::vector<int32_t>& next :
                 {concat(concat(prompt_, cancelled.streamed), {3, 4}), std::vector<int32_t>{8, 9, 10},
                  prompt_}) {
                Reply got = ask(kept, next, opts);
                DecodeSession fresh(lm_, nullptr, spec_);
                Reply want = ask(fresh, next, opts);
                EXPECT_EQ(want.streamed, got.streamed)
                    << "cancel after " << stop_after << ", next prompt of " << next.size();
            }
        }
    }
}

TEST_P(EngineSession, RepeatedIdenticalRequestsGiveIdenticalOutput) {
    DecodeSession kept(lm_, nullptr, spec_);
    Reply a = ask(kept, prompt_, sampled_);
    Reply b = ask(kept, prompt_, sampled_);  // not an extension: a fresh sequence
    EXPECT_EQ(0, kept.reused_tokens());
    EXPECT_EQ(a.streamed, b.streamed);
}

// Under the adaptive depth a sampled request's text depends on the seed and settings alone, not
// on how fast rounds ran or on what earlier runs saved: a session whose saved state says drafting
// never pays, and a cold one, give the same text (with a timed controller the first would
// stay plain and the second draft, and rejection sampling would emit other tokens).
TEST_P(EngineSession, AdaptiveSampledOutputIgnoresTimingsAndSavedState) {
    const std::string cache = test::scratch_dir() + "/cache_" + GetParam();
    const char* old = std::getenv("XDG_CACHE_HOME");
    const std::string saved_old = old ? old : "";
    setenv("XDG_CACHE_HOME", cache.c_str(), 1);
    const SessionOptions adaptive{4, true};
    Reply cold;
    {
        DecodeSession session(lm_, nullptr, adaptive);
        cold = ask(session, prompt_, sampled_);
    }
    std::filesystem::remove_all(cache);
    DepthController plain_pays(4);  // depth 0 a hundred times cheaper than any drafting round
    for (int r = 0; r < 50; ++r)
        for (int d = 0; d <= 4; ++d) plain_pays.observe(d, 0, d == 0 ? 0.001 : 0.1);
    ASSERT_EQ(0, plain_pays.best_depth());
    plain_pays.save(DepthController::default_path(lm_.checkpoint.path + "-" + kernels().isa));
    Reply warm;
    {
        DecodeSession session(lm_, nullptr, adaptive);
        warm = ask(session, prompt_, sampled_);
    }
    if (old)
        setenv("XDG_CACHE_HOME", saved_old.c_str(), 1);
    else
        unsetenv("XDG_CACHE_HOME");
    EXPECT_EQ(cold.streamed, warm.streamed);
    EXPECT_GT(warm.stats.drafted[0], 0) << "the sampled request chose its own depths";
}

// The adaptive depth's state is this model's (on this ISA): a session starts from what was saved
// for it, a greedy request's rounds update it, and the session saves it when it ends.
TEST_P(EngineSession, AdaptiveStateIsLoadedUpdatedAndSaved) {
    const std::string cache = test::scratch_dir() + "/state_" + GetParam();
    const char* old = std::getenv("XDG_CACHE_HOME");
    const std::string saved_old = old ? old : "";
    setenv("XDG_CACHE_HOME", cache.c_str(), 1);
    const std::string path =
        DepthController::default_path(lm_.checkpoint.path + "-" + kernels().isa);
    DepthController before(4);  // every depth measured at an impossible 1000 s a round
    for (int d = 0; d <= 4; ++d) before.observe(d, d, 1000.0);
    before.save(path);
    {
        DecodeSession session(lm_, nullptr, {4, true});
        ASSERT_NE(nullptr, session.controller());
        EXPECT_EQ(before.acceptance(1), session.controller()->acceptance(1)) << "not loaded";
        ask(session, prompt_, greedy_);
        double least = 1000.0;
        for (int d = 0; d <= 4; ++d) least = std::min(least, session.controller()->cost(d));
        EXPECT_LT(least, 1000.0) << "the request's rounds were not observed";
    }
    DepthController after(4);
    after.load(path);
    double least = 1000.0;
    for (int d = 0; d <= 4; ++d) least = std::min(least, after.cost(d));
    EXPECT_LT(least, 1000.0) << "the session did not save its state";
    std::filesystem::remove_all(cache);
    if (old)
        setenv("XDG_CACHE_HOME", saved_old.c_str(), 1);
    else
        unsetenv("XDG_CACHE_HOME");
}

// The end-of-sequence ids are the model config's and the tokenizer's: the embedded model's
// config names <|endoftext|>, its tokenizer <|im_end|>, a chat turn's end.
TEST(EngineSessionEos, ConfigAndTokenizerEosIdsBothEndGeneration) {
    ModelOptions mo;
    mo.threads = 1;
    const LoadedModel lm = load_model(test::tiny_model_dir(), mo);
    const Tokenizer tok = Tokenizer::load(test::tiny_model_dir());
    const DecodeSession session(lm, &tok, {0, false});
    const std::vector<int32_t> eos = session.eos_tokens();
    std::vector<int32_t> want = lm.model->config().eos_token_ids;
    want.insert(want.end(), tok.eos_ids().begin(), tok.eos_ids().end());
    ASSERT_FALSE(tok.eos_ids().empty());
    for (int32_t id : want)
        EXPECT_NE(std::find(eos.begin(), eos.end(), id), eos.end())
            << "eos id " << id << " missing";
    EXPECT_NE(std::find(eos.begin(), eos.end(), tok.eos_id()), eos.end());
}

INSTANTIATE_TEST_SUITE_P(Fixtures, EngineSession,
                         ::testing::Values("qwen35-dense-tiny", "qwen35-moe-tiny"),
                         [](const auto& info) {
                             std::string n = info.param;
                             for (char& c : n)
                                 if (c == '-') c = '_';
                             return n;
                         });

}  // namespace
}  // namespace nextn
