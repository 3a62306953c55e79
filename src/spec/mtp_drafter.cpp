#include "spec/mtp_drafter.h"

#include <algorithm>

#include "core/error.h"
#include "sampling/logit_pipeline.h"

namespace nextn {

MtpDrafter::MtpDrafter(const Qwen35Model& model, SequenceState& state)
    : model_(model), state_(state) {
    if (!model.has_mtp()) fail("MtpDrafter: the model has no MTP head");
    const auto& c = model.config();
    last_hidden_.resize(size_t(c.hidden_size));
    last_logits_.resize(size_t(model.draft_vocab()));
    step_hidden_.resize(size_t(c.hidden_size));
    step_logits_.resize(size_t(model.draft_vocab()));
    // Room for a prefill chunk's pairs: the queue and the flush output then never regrow in
    // the decode loop.
    pending_hidden_.reserve(size_t(kMaxFlush * c.hidden_size));
    pending_tokens_.reserve(size_t(kMaxFlush));
    flush_hidden_.reserve(size_t(kMaxFlush * c.hidden_size));
}

void MtpDrafter::reset() {
    pending_hidden_.clear();
    pending_tokens_.clear();
    last_pos_ = -1;
}

void MtpDrafter::on_commit(const float* hidden, const int32_t* next_tokens, int64_t n,
                           int64_t pos0) {
    const int64_t H = model_.config().hidden_size;
    if (!pending_tokens_.empty() && pending_pos0_ + int64_t(pending_tokens_.size()) != pos0)
        fail("MtpDrafter: committed positions are not contiguous");
    // A long run of plain (depth 0) rounds drafts nothing, so nothing else flushes: flushing
    // once kMaxPending pairs wait bounds every decode-loop flush to kMaxPending rows, which a
    // prompt of that many tokens has already sized the scratch for (a shorter prompt grows it
    // once, at the first such flush). Prefill chunks still flush whole, in one batch.
    if (!pending_tokens_.empty() && int64_t(pending_tokens_.size()) + n > kMaxPending) flush();
    if (pending_tokens_.empty()) pending_pos0_ = pos0;
    pending_hidden_.insert(pending_hidden_.end(), hidden, hidden + n * H);
    pending_tokens_.insert(pending_tokens_.end(), next_tokens, next_tokens + n);
}

void MtpDrafter::flush() {
    const int64_t H = model_.config().hidden_size;
    const int64_t total = int64_t(pending_tokens_.size());
    for (int64_t begin = 0; begin < total; begin += kMaxFlush) {
        const int64_t n = std::min(kMaxFlush, total - begin);
        std::vector<float>& out_hidden = flush_hidden_;
        out_hidden.resize(size_t(n * H));
        const bool last_chunk = begin + n == total;
        model_.mtp_forward(state_, pending_hidden_.data() + begin * H,
                           pending_tokens_.data() + begin, n, pending_pos0_ + begin,
                           {out_hidden.data(), last_chunk ? last_logits_.data() : nullptr,
                            last_chunk ? 1 : 0});
        if (last_chunk) {
            std::copy_n(out_hidden.data() + (n - 1) * H, H, last_hidden_.data());
            last_pos_ = pending_pos0_ + total - 1;
        }
    }
    pending_hidden_.clear();
    pending_tokens_.clear();
}

void MtpDrafter::draft(const DraftRequest& request, DraftProposal& proposal) {
    proposal.clear();
    const int k = request.k;
    if (k <= 0) return;
    if (!pending_tokens_.empty()) flush();
    if (last_pos_ < 0) return;
    // The head scores the draft sub-vocabulary [0, Vd) only; q is zero above it (exactness holds
    // for any q the draft was really drawn from).
    const int64_t V = model_.draft_vocab(), H = model_.config().hidden_size;
    // Each draft is drawn from q = the same processors as the target, over the committed
    // history plus the drafts before it (so penalties count in-flight drafts).
    std::vector<int32_t>& history = *request.history;
    const size_t committed = history.size();
    reserve_for_sampling(*request.params, V, workspace_, history.capacity());
    // False, drafting nothing more this round, when the draft sub-vocabulary has no token q can
    // draw: a logit bias that bans all of [0, Vd) while the target may still pick a token above
    // it, or logits the head made NaN or +inf. Drafts only propose: the round then verifies the
    // drafts made so far (none is a plain step), and the target's own logits decide the output.
    auto propose = [&](const float* logits) {
        Distribution& q = proposal.next_q();
        try {
            process({logits, size_t(V)}, history, *request.params, workspace_, q);
        } catch (const Error&) {
            return false;
        }
        const int32_t tok = sample(q, *request.rng);
        proposal.add(tok);
        history.push_back(tok);
        return true;
    };
    // Draft 1 from the last committed pair's logits; each further draft runs the head on the
    // draft before it and that step's output hidden state.
    bool drafted = propose(last_logits_.data());
    prev_hidden_ = last_hidden_;
    for (int step = 1; drafted && step < k; ++step) {
        const int64_t pos = last_pos_ + step;
        if (pos >= state_.mtp_attention.capacity) break;
        int32_t tok = proposal.tokens().back();
        model_.mtp_forward(state_, prev_hidden_.data(), &tok, 1, pos,
                           {step_hidden_.data(), step_logits_.data(), 1});
        drafted = propose(step_logits_.data());
        std::copy_n(step_hidden_.data(), H, prev_hidden_.data());
    }
    history.resize(committed);
}

}  // namespace nextn
