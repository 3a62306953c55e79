// A DecodeSession keeps its sequence between requests. What it must guarantee: a request that
// extends the kept sequence (a chat's next turn) gives bit for bit the output of a fresh
// session, prefilling only the new tokens; and a request cancelled mid-stream by its callback
// leaves the session consistent, so whatever comes next matches a fresh session too.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

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
          int64_t stop_after = -1) {
    Reply r;
    r.stats = session.generate(prompt, 256, opts, [&](const EmittedToken& e) {
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
