#pragma once
// Greedy decoding of a model through the engine's generate() loop, for tests that compare
// outputs or round statistics (MTP at `depth` drafts per round; 0 = plain decoding).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "golden.h"
#include "model/qwen35.h"
#include "spec/drafter.h"
#include "spec/mtp_drafter.h"
#include "spec/speculative_decoder.h"

namespace nextn::test {

// Greedy decoding into `state` with `drafter` (null: plain) proposing up to `depth` tokens a round.
inline std::vector<int32_t> greedy_decode_in(const Qwen35Model& model, SequenceState& state,
                                             Drafter* drafter, const std::vector<int32_t>& prompt,
                                             int depth, int64_t n, DecodeStats* stats) {
    DecodeOptions o;
    o.max_new_tokens = n;
    o.draft_depth = depth;
    std::vector<int32_t> out;
    DecodeStats st = generate(model, state, drafter, prompt, o, [&](const EmittedToken& t) {
        out.push_back(t.id);
        return true;
    });
    if (stats) *stats = st;
    return out;
}

inline std::vector<int32_t> greedy_decode(const Qwen35Model& model,
                                          const std::vector<int32_t>& prompt, int depth, int64_t n,
                                          DecodeStats* stats = nullptr) {
    SequenceState s = model.new_state(int64_t(prompt.size()) + n + 8, depth + 1);
    std::unique_ptr<Drafter> d;
    if (depth > 0) d = std::make_unique<MtpDrafter>(model, s);
    return greedy_decode_in(model, s, d.get(), prompt, depth, n, stats);
}

// Proposes the known plain-greedy continuation `truth` of `prompt` (one-hot q over `vocab`),
// corrupting every `corrupt_every`-th draft (0: none), so rounds see full accepts, partial
// accepts and immediate rejections whatever the model's own head would draft: on the random
// fixture models a real MTP head is almost never accepted, and then a parity test would check
// only the verify's first column and full rollbacks.
class ScriptedDrafter : public Drafter {
  public:
    ScriptedDrafter(std::vector<int32_t> prompt, std::vector<int32_t> truth, int corrupt_every,
                    int64_t vocab)
        : prompt_(std::move(prompt)),
          truth_(std::move(truth)),
          corrupt_every_(corrupt_every),
          vocab_(vocab) {}
    void on_commit(const float*, const int32_t*, int64_t n, int64_t pos0) override {
        committed_end_ = pos0 + n;  // the token after position committed_end_ - 1 is known
    }
    void draft(const DraftRequest& request, DraftProposal& d) override {
        d.clear();
        // Position committed_end_ holds generated token (committed_end_ - prompt), the "current"
        // one; drafts continue after it.
        const int64_t next_index = committed_end_ - int64_t(prompt_.size()) + 1;
        for (int i = 0; i < request.k && next_index + i < int64_t(truth_.size()); ++i) {
            int32_t t = truth_[size_t(next_index + i)];
            if (corrupt_every_ > 0 && (++calls_ % corrupt_every_) == 0)
                t = int32_t((t + 1) % vocab_);
            d.next_q() = Distribution::one_hot(vocab_, t);
            d.add(t);
        }
    }
    void reset() override {}

  private:
    std::vector<int32_t> prompt_, truth_;
    int corrupt_every_;
    int64_t vocab_;
    int64_t committed_end_ = 0;
    int64_t calls_ = 0;
};

// Greedy decoding with `drafter` proposing up to `depth` tokens a round.
inline std::vector<int32_t> decode_with_drafter(const Qwen35Model& model,
                                                const std::vector<int32_t>& prompt,
                                                Drafter& drafter, int depth, int64_t n,
                                                DecodeStats* stats = nullptr) {
    SequenceState s = model.new_state(int64_t(prompt.size()) + n + 8, depth + 1);
    return greedy_decode_in(model, s, &drafter, prompt, depth, n, stats);
}

// Runs both models over prompt + the f32 continuation in one forward (teacher forcing, so one
// early difference does not derail the rest) and compares the next-token choice at every
// continuation position.
inline double teacher_forced_agreement(const Qwen35Model& f32, const Qwen35Model& q,
                                       const std::vector<int32_t>& prompt,
                                       const std::vector<int32_t>& cont) {
    std::vector<int32_t> seq = prompt;
    seq.insert(seq.end(), cont.begin(), cont.end() - 1);
    const int64_t T = int64_t(seq.size()), V = f32.config().vocab_size, n = int64_t(cont.size());
    auto logits = [&](const Qwen35Model& m) {
        std::vector<float> l(size_t(n * V));  // [n, V]: the positions that predict cont
        SequenceState s = m.new_state(T + 1, 1);
        m.forward(s, seq.data(), T, {nullptr, l.data(), n});
        return l;
    };
    std::vector<float> a = logits(f32), b = logits(q);
    float max_diff = 0;
    int agree = 0;
    float worst_gap = 0;
    for (int64_t i = 0; i < n; ++i) {
        const float* la = a.data() + i * V;
        const float* lb = b.data() + i * V;
        for (int64_t v = 0; v < V; ++v) max_diff = std::max(max_diff, std::abs(la[v] - lb[v]));
        const int32_t pa = test::argmax(la, V), pb = test::argmax(lb, V);
        if (pa == pb) {
            ++agree;
        } else {
            worst_gap = std::max(worst_gap, la[pa] - la[pb]);  // how far from a tie in f32
        }
    }
    printf(
        "    teacher-forced: %d/%lld next-token choices agree, max |logit diff| %.4f, "
        "largest f32 gap at a disagreement %.4f\n",
        agree, (long long)n, max_diff, worst_gap);
    return double(agree) / double(n);
}

}  // namespace nextn::test
