// MtpDrafter against the MTP chain composed by hand from the model's own mtp_forward
// (mtp_drafter.h, qwen35.h): the committed pairs (trunk hidden p, token p + 1) run through the
// head at positions 0..n-1, the last row's logits give draft 1, and each further draft feeds the
// head its previous output hidden with the previous draft at the next position; every draft is
// drawn from the pipeline's distribution over the history plus the drafts before it. Greedy
// drafts make the comparison exact. Greedy speculative output equals plain output whatever the
// drafts are, so the parity tests cannot see a drafter that drafts from the wrong position or
// hidden state; this one does.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "golden.h"
#include "model/qwen35.h"
#include "sampling/logit_pipeline.h"
#include "spec/mtp_drafter.h"

namespace nextn {
namespace {

// The MTP chain composed by hand from mtp_forward: the head runs over the n committed pairs
// (its last row's logits give draft 1); each advance() runs it once more on the draft before
// and the previous output hidden, at the next position, for the next draft's logits.
class HandChain {
  public:
    std::vector<float> logits;  // [Vd] the next draft's

    HandChain(const Qwen35Model& m, SequenceState& s, const float* hidden, const int32_t* next,
              int64_t n)
        : logits(static_cast<size_t>(m.draft_vocab())), m_(m), s_(s), n_(n) {
        const int64_t H = m.config().hidden_size;
        std::vector<float> out(static_cast<size_t>(n * H));  // [n, H]
        m.mtp_forward(s, hidden, next, n, 0, {out.data(), logits.data(), 1});
        prev_.assign(out.end() - H, out.end());  // the last pair's output hidden
    }
    void advance(int32_t draft) {
        std::vector<float> h(prev_.size());
        m_.mtp_forward(s_, prev_.data(), &draft, 1, n_ - 1 + ++steps_,
                       {h.data(), logits.data(), 1});
        prev_ = std::move(h);
    }

  private:
    const Qwen35Model& m_;
    SequenceState& s_;
    int64_t n_, steps_ = 0;
    std::vector<float> prev_;  // [H]
};

class MtpDrafterChain : public ::testing::Test {
  protected:
    void SetUp() override {
        ModelOptions mo;
        mo.threads = 2;
        g_ = test::golden_model("qwen35-dense-tiny");
        lm_ = load_model(g_.model_dir, mo);
        prompt_ = test::json_ids(g_.index["prompts"]["p7"]["tokens"]);
        H_ = lm_.model->config().hidden_size;
    }

    // The trunk's final hidden states over the prompt, [n, H], in a fresh state.
    std::vector<float> trunk_hidden(SequenceState& s) const {
        const int64_t n = int64_t(prompt_.size());
        std::vector<float> hidden(static_cast<size_t>(n * H_));
        lm_.model->forward(s, prompt_.data(), n, {hidden.data(), nullptr, 0});
        return hidden;
    }

    // The head's committed pairs after the prompt and `current`: the trunk's hidden at each
    // prompt position (in `state`, fresh) with the token that follows it.
    struct Pairs {
        std::vector<float> hidden;  // [n, H]
        std::vector<int32_t> next;  // [n]
    };
    Pairs pairs_after(SequenceState& state, int32_t current) const {
        Pairs p{trunk_hidden(state), std::vector<int32_t>(prompt_.begin() + 1, prompt_.end())};
        p.next.push_back(current);
        return p;
    }

    // The k drafts the chain gives after the prompt and `current`, composed from mtp_forward.
    std::vector<int32_t> reference_drafts(int32_t current, int k,
                                          const SamplerParams& params) const {
        const Qwen35Model& m = *lm_.model;
        SequenceState s = m.new_state(64, 8);
        const auto [hidden, next] = pairs_after(s, current);
        HandChain chain(m, s, hidden.data(), next.data(), int64_t(prompt_.size()));
        std::vector<int32_t> history = prompt_;
        history.push_back(current);
        std::vector<int32_t> drafts;
        for (int step = 0; step < k; ++step) {
            if (step > 0) chain.advance(drafts.back());
            const Distribution q = process(chain.logits, history, params);
            EXPECT_TRUE(q.is_one_hot());
            drafts.push_back(q.ids[0]);
            history.push_back(q.ids[0]);
        }
        return drafts;
    }

    // The drafter's k drafts after the same pairs, committed in two runs (3 pairs, then the
    // rest) and left queued for draft() to flush.
    std::vector<int32_t> drafter_drafts(int32_t current, int k, const SamplerParams& params) const {
        const Qwen35Model& m = *lm_.model;
        SequenceState s = m.new_state(64, 8);
        const auto [hidden, next] = pairs_after(s, current);
        const int64_t n = int64_t(prompt_.size());
        MtpDrafter drafter(m, s);
        drafter.on_commit(hidden.data(), next.data(), 3, 0);
        drafter.on_commit(hidden.data() + 3 * H_, next.data() + 3, n - 3, 3);
        std::vector<int32_t> history = prompt_;
        history.push_back(current);
        Rng rng(1);
        DraftProposal proposal;
        drafter.draft({k, &params, &history, &rng}, proposal);
        EXPECT_EQ(prompt_.size() + 1, history.size()) << "the history is restored";
        return proposal.tokens();
    }

    test::GoldenModel g_;
    LoadedModel lm_;
    std::vector<int32_t> prompt_;
    int64_t H_ = 0;
};

TEST_F(MtpDrafterChain, GreedyDraftsFollowTheHeadsChain) {
    SamplerParams greedy;
    greedy.temperature = 0.0f;
    for (int32_t current : {5, 300}) {
        const std::vector<int32_t> want = reference_drafts(current, 4, greedy);
        EXPECT_EQ(want, drafter_drafts(current, 4, greedy)) << "current " << current;
        EXPECT_EQ(std::vector<int32_t>(want.begin(), want.begin() + 2),
                  drafter_drafts(current, 2, greedy));
    }
    EXPECT_TRUE(drafter_drafts(5, 0, greedy).empty()) << "k = 0 drafts nothing";
}

// Penalties count the drafts before the one being drawn: a bias makes token 900 every position's
// favourite, so draft 1 is 900, and a presence penalty larger than the bias must then keep it out
// of drafts 2 and 3.
TEST_F(MtpDrafterChain, PenaltiesCountTheDraftsInFlight) {
    SamplerParams params;
    params.temperature = 0.0f;
    params.logit_bias = {{900, 40.0f}};
    params.presence_penalty = 80.0f;
    params.penalty_last_n = -1;
    ASSERT_EQ(0, std::count(prompt_.begin(), prompt_.end(), 900));
    const std::vector<int32_t> want = reference_drafts(5, 3, params);
    ASSERT_EQ(900, want[0]);
    EXPECT_NE(900, want[1]);
    EXPECT_EQ(want, drafter_drafts(5, 3, params));
}

// Sampled drafts: each q the drafter reports is, bit for bit, the pipeline's distribution of the
// head's logits at that step of the chain (fed the drafts it drew), also for a prompt whose
// pairs are committed in one run longer than a flush's 256 rows. Distributions, unlike greedy
// drafts, show a step run at a wrong position (its RoPE angle, an unwritten KV entry).
TEST_F(MtpDrafterChain, SampledDraftsReportTheChainsDistributions) {
    const Qwen35Model& m = *lm_.model;
    SamplerParams params;  // temperature 1, no filter: q over the whole draft vocabulary
    std::vector<int32_t> long_prompt;
    for (int i = 0; i < 300; ++i) long_prompt.push_back(int32_t(i * 7 % 1000 + 1));
    for (const std::vector<int32_t>& prompt : {prompt_, long_prompt}) {
        const int64_t n = int64_t(prompt.size());
        std::vector<int32_t> next(prompt.begin() + 1, prompt.end());
        next.push_back(5);
        std::vector<int32_t> history = prompt;
        history.push_back(5);
        // The drafter, all pairs in one run.
        SequenceState s = m.new_state(n + 16, 8);
        std::vector<float> hidden(static_cast<size_t>(n * H_));
        m.forward(s, prompt.data(), n, {hidden.data(), nullptr, 0});
        MtpDrafter drafter(m, s);
        drafter.on_commit(hidden.data(), next.data(), n, 0);
        Rng rng(3);
        DraftProposal proposal;
        drafter.draft({4, &params, &history, &rng}, proposal);
        ASSERT_EQ(4u, proposal.size());
        // The chain by hand, fed the same drafts.
        SequenceState r = m.new_state(n + 16, 8);
        m.forward(r, prompt.data(), n, {nullptr, nullptr, 0});
        HandChain chain(m, r, hidden.data(), next.data(), n);
        for (size_t step = 0; step < proposal.size(); ++step) {
            if (step > 0) chain.advance(proposal.tokens()[step - 1]);
            const Distribution q = process(chain.logits, history, params);
            EXPECT_EQ(q.ids, proposal.q()[step].ids) << n << "-token prompt, draft " << step + 1;
            EXPECT_EQ(q.probs, proposal.q()[step].probs)
                << n << "-token prompt, draft " << step + 1;
            history.push_back(proposal.tokens()[step]);
        }
    }
}

TEST_F(MtpDrafterChain, CommittedRunsMustBeContiguous) {
    const Qwen35Model& m = *lm_.model;
    SequenceState s = m.new_state(64, 8);
    const std::vector<float> hidden = trunk_hidden(s);
    MtpDrafter drafter(m, s);
    drafter.on_commit(hidden.data(), prompt_.data() + 1, 3, 0);
    EXPECT_THROW(drafter.on_commit(hidden.data() + 4 * H_, prompt_.data() + 5, 2, 4), Error);
}

}  // namespace
}  // namespace nextn
