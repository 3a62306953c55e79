#include "engine/decode_session.h"

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

DecodeStats DecodeSession::generate(const std::vector<int32_t>& prompt, int64_t ctx,
                                    DecodeOptions options, const TokenCallback& on_token) {
    SequenceState state = model_.new_state(ctx, depth_ + 1);
    std::unique_ptr<Drafter> drafter;
    if (depth_ > 0) drafter = std::make_unique<MtpDrafter>(model_, state);
    options.draft_depth = depth_;
    options.controller = controller_.get();
    return nextn::generate(model_, state, drafter.get(), prompt, options, on_token);
}

}  // namespace nextn
