#include "engine/decode_session.h"

#include <algorithm>

#include "core/error.h"
#include "kernels/kernels.h"
#include "spec/mtp_drafter.h"

namespace nextn {

DecodeSession::DecodeSession(const LoadedModel& model, const Tokenizer* tokenizer,
                             const SessionOptions& options)
    : model_(*model.model), tokenizer_(tokenizer) {
    depth_ = model_.has_mtp() ? options.max_depth : 0;
    if (depth_ > 0 && options.adaptive) {
        controller_ = std::make_unique<DepthController>(depth_);
        controller_path_ = DepthController::default_path(model.checkpoint.path + "-" + kernels().isa);
        controller_->load(controller_path_);
    }
}

DecodeSession::~DecodeSession() {
    if (controller_) controller_->save(controller_path_);
}

std::vector<int32_t> DecodeSession::eos_tokens() const {
    std::vector<int32_t> ids = model_.config().eos_token_ids;
    if (tokenizer_)
        for (int32_t id : tokenizer_->eos_ids()) ids.push_back(id);
    return ids;
}

void DecodeSession::forget_sequence() {
    drafter_.reset();  // it refers to the state
    state_.reset();
    sequence_.clear();
    next_token_ = -1;
}

void DecodeSession::reset_sequence(int64_t ctx) {
    forget_sequence();
    state_.emplace(model_.new_state(ctx, depth_ + 1));
    if (depth_ > 0) drafter_ = std::make_unique<MtpDrafter>(model_, *state_);
}

DecodeStats DecodeSession::generate(const std::vector<int32_t>& prompt, int64_t ctx,
                                    DecodeOptions options, const TokenCallback& on_token) {
    const auto n_kept = int64_t(sequence_.size());
    // The kept sequence serves when the prompt repeats it and the token generated after it,
    // adds something, and fits with the new tokens.
    const bool extends = state_ && n_kept > 0 && int64_t(prompt.size()) > n_kept &&
                         std::equal(sequence_.begin(), sequence_.end(), prompt.begin()) &&
                         prompt[size_t(n_kept)] == next_token_ &&
                         state_->max_positions >= std::max<int64_t>(ctx, int64_t(prompt.size()) + 1);
    if (!extends) reset_sequence(ctx);
    reused_ = extends ? n_kept : 0;
    options.draft_depth = depth_;
    options.controller = controller_.get();
    sampled_controller_.reset();
    if (controller_ && !options.sampler.greedy()) {
        sampled_controller_.emplace(DepthController::with_modelled_costs(depth_));
        options.controller = &*sampled_controller_;
    }
    options.cached_prefix = reused_;
    DecodeStats stats;
    try {
        stats = nextn::generate(model_, *state_, drafter_.get(), prompt, options, on_token);
    } catch (...) {
        forget_sequence();  // a request that failed part-way leaves nothing to reuse
        throw;
    }
    if (stats.tokens.empty()) return stats;  // nothing ran: the kept sequence is unchanged
    sequence_ = prompt;
    sequence_.insert(sequence_.end(), stats.tokens.begin(), stats.tokens.end() - 1);
    next_token_ = stats.tokens.back();
    if (state_->n_past != int64_t(sequence_.size()))
        fail("internal: the session's sequence (", sequence_.size(), " tokens) and its caches (",
             state_->n_past, " positions) disagree");
    return stats;
}

}  // namespace nextn
