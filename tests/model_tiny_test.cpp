// The embedded model (models/nextn-tiny, trained by tools/train) against the reference outputs
// the torch implementation wrote in float64 on the exported bf16 weights
// (tests/data/nextn-tiny-ref; tolerances from its index.json: the trunk, the MTP head and two
// chained draft steps), and greedy speculative parity
// over 200+ tokens on a head whose drafts are actually accepted.
#include <gtest/gtest.h>

#include "golden.h"
#include "model/qwen35.h"
#include "spec/mtp_drafter.h"
#include "spec/speculative_decoder.h"

namespace nextn {
namespace {

const std::string kModel = test::tiny_model_dir();
const std::string kRefs = test::tiny_refs_dir();

LoadedModel open_tiny() {
    ModelOptions o;
    o.threads = 2;
    return load_model(kModel, o);
}

TEST(TinyModel, MatchesTorchReference) {
    nlohmann::json index = nlohmann::json::parse(read_text_file(kRefs + "/index.json"));
    const auto& tol = index["tolerance"];
    const float logit_tol = tol["logits_max_abs"].get<float>();
    const float hidden_tol = tol["hidden_max_abs"].get<float>();
    const float mtp_tol = tol["mtp_logits_max_abs"].get<float>();
    const float mtp_hidden_tol = tol["mtp_hidden_max_abs"].get<float>();
    LoadedModel lm = open_tiny();
    const Qwen35Model& m = *lm.model;
    const int64_t V = m.config().vocab_size, H = m.config().hidden_size;
    ASSERT_TRUE(m.has_mtp());
    for (const auto& [name, p] : index["prompts"].items()) {
        SCOPED_TRACE(name);
        std::vector<int32_t> tokens = test::json_ids(p["tokens"]);
        const int64_t T = int64_t(tokens.size()), from = p.value("rows_from", 0);
        // (&p = p: clang 14 cannot capture a structured binding.)
        auto file = [&, &p = p](const char* key) {
            return test::read_f32(kRefs + "/" + p["files"][key]["file"].get<std::string>());
        };
        SequenceState s = m.new_state(T + 40, 1);
        std::vector<float> logits(size_t(T * V)), hidden(size_t(T * H));
        m.forward(s, tokens.data(), T, {hidden.data(), logits.data(), T});
        EXPECT_LT(test::max_abs_diff(logits.data() + from * V, file("logits").data(), (T - from) * V),
                  logit_tol);
        EXPECT_LT(test::max_abs_diff(hidden.data(), file("hidden").data(), T * H), hidden_tol);

        std::vector<int32_t> pairs = test::json_ids(p["mtp"]["input_tokens"]);
        std::vector<float> mtp_logits(size_t(T * V)), mtp_hidden(size_t(T * H));
        m.mtp_forward(s, hidden.data(), pairs.data(), T, 0, {mtp_hidden.data(), mtp_logits.data(), T});
        EXPECT_LT(test::max_abs_diff(mtp_logits.data() + from * V, file("mtp_logits").data(),
                                     (T - from) * V), mtp_tol);
        EXPECT_LT(test::max_abs_diff(mtp_hidden.data(), file("mtp_hidden").data(), T * H),
                  mtp_hidden_tol);
        const std::vector<int32_t> drafts = test::json_ids(p["mtp"]["draft_tokens"]);
        EXPECT_EQ(test::argmax(mtp_logits.data() + (T - 1) * V, V), drafts[0]);

        // The chained draft steps 2..3: each pairs the step before's MTP hidden (after mtp.norm)
        // with the draft before it, appended to the same MTP KV cache.
        const std::vector<int32_t> chain_tokens = test::json_ids(p["mtp"]["chain_input_tokens"]);
        const auto chain_positions = p["mtp"]["chain_positions"].get<std::vector<int64_t>>();
        const std::vector<float> want_chain_logits = file("mtp_chain_logits");
        const std::vector<float> want_chain_hidden = file("mtp_chain_hidden");
        ASSERT_EQ(chain_tokens.size(), chain_positions.size());
        ASSERT_EQ(want_chain_logits.size(), chain_tokens.size() * size_t(V));
        std::vector<float> previous(mtp_hidden.end() - H, mtp_hidden.end());  // [H]
        std::vector<float> step_hidden(static_cast<size_t>(H)), step_logits(static_cast<size_t>(V));
        for (size_t j = 0; j < chain_tokens.size(); ++j) {
            SCOPED_TRACE("chained step " + std::to_string(j + 2));
            m.mtp_forward(s, previous.data(), &chain_tokens[j], 1, chain_positions[j],
                          {step_hidden.data(), step_logits.data(), 1});
            EXPECT_LT(test::max_abs_diff(step_logits.data(), want_chain_logits.data() + j * V, V),
                      mtp_tol);
            EXPECT_LT(test::max_abs_diff(step_hidden.data(), want_chain_hidden.data() + j * H, H),
                      mtp_hidden_tol);
            EXPECT_EQ(test::argmax(step_logits.data(), V), drafts[j + 1]);
            previous = step_hidden;
        }

        // Plain greedy continuation, exact wherever the reference's top-2 gap is not tiny.
        std::vector<int32_t> want = test::json_ids(p["greedy_tokens"]);
        std::vector<float> margins = p["greedy_margins"].get<std::vector<float>>();
        SequenceState g = m.new_state(T + int64_t(want.size()) + 1, 1);
        std::vector<float> l(static_cast<size_t>(V));
        m.forward(g, tokens.data(), T, {nullptr, l.data(), 1});
        for (size_t i = 0; i < want.size(); ++i) {
            if (margins[i] < tol["argmax_margin_min"].get<float>()) break;
            int32_t next = test::argmax(l.data(), V);
            ASSERT_EQ(want[i], next) << "greedy step " << i;
            m.forward(g, &next, 1, {nullptr, l.data(), 1});
        }
    }
}

TEST(TinyModel, GreedyMtpEqualsPlainOver200TokensAtEveryDepth) {
    LoadedModel lm = open_tiny();
    const Qwen35Model& m = *lm.model;
    for (const char* prompt_name : {"p9", "p48"}) {
        std::vector<int32_t> prompt = test::tiny_prompt(prompt_name);
        auto run = [&](int depth, DecodeStats* stats) {
            SequenceState s = m.new_state(int64_t(prompt.size()) + 216, depth + 1);
            std::unique_ptr<Drafter> d;
            if (depth > 0) d = std::make_unique<MtpDrafter>(m, s);
            DecodeOptions o;
            o.max_new_tokens = 208;
            o.draft_depth = depth;
            std::vector<int32_t> out;
            *stats = generate(m, s, d.get(), prompt, o, [&](const EmittedToken& e) {
                out.push_back(e.id);
                return true;
            });
            return out;
        };
        DecodeStats plain_stats;
        std::vector<int32_t> plain = run(0, &plain_stats);
        ASSERT_EQ(208u, plain.size());
        for (int depth = 1; depth <= 4; ++depth) {
            DecodeStats stats;
            EXPECT_EQ(plain, run(depth, &stats)) << prompt_name << " depth " << depth;
            // A trained head: drafts are accepted often enough to commit > 1.5 tokens per round.
            EXPECT_GT(stats.tokens_per_round(), 1.5) << prompt_name << " depth " << depth;
        }
    }
}

}  // namespace
}  // namespace nextn
