#pragma once
// What every frontend sets up the same way around generate(): the end-of-sequence tokens, the
// MTP drafter when the model has a head, and the adaptive depth controller, which starts from
// what it learned on this model before and saves what it learns. A sampled request gets a
// controller of its own that ignores timings (DepthController::with_modelled_costs), so the same
// seed and settings give the same text on a busy machine or a quiet one.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/qwen35.h"
#include "spec/depth_controller.h"
#include "spec/speculative_decoder.h"
#include "tokenizer/tokenizer.h"

namespace nextn {

struct SessionOptions {
    int max_depth = 4;     // drafts per round; 0 = plain decoding
    bool adaptive = true;  // pick the depth per round (--draft-depth auto), up to max_depth
};

class DecodeSession {
public:
    // `model` and `tokenizer` (may be null) must outlive the session.
    DecodeSession(const LoadedModel& model, const Tokenizer* tokenizer, const SessionOptions& options);
    ~DecodeSession();  // saves the controller's state
    DecodeSession(const DecodeSession&) = delete;
    DecodeSession& operator=(const DecodeSession&) = delete;

    bool uses_mtp() const { return depth_ > 0; }
    // The controller that chose the last request's depths (null without adaptive depth).
    const DepthController* controller() const {
        return sampled_controller_ ? &*sampled_controller_ : controller_.get();
    }
    // The model config's and the tokenizer's end-of-sequence ids.
    std::vector<int32_t> eos_tokens() const;

    // Generates from `prompt` in a sequence of at least `ctx` positions. The session keeps its
    // sequence between requests: a prompt that extends it (a chat's next turn, which repeats
    // the history and the model's last token) prefills only the new tokens; any other prompt
    // starts a fresh sequence. The output is the same either way, bit for bit.
    // options.draft_depth, options.controller and options.cached_prefix are set here.
    DecodeStats generate(const std::vector<int32_t>& prompt, int64_t ctx, DecodeOptions options,
                         const TokenCallback& on_token);
    // Prompt tokens the last request took from the kept sequence instead of prefilling.
    int64_t reused_tokens() const { return reused_; }

private:
    void forget_sequence();
    void reset_sequence(int64_t ctx);

    const Qwen35Model& model_;
    const Tokenizer* tokenizer_;
    int depth_ = 0;
    // The kept sequence: `sequence_` are the tokens in the caches, `next_token_` the last
    // generated token, which is not (the drafter has queued its pair with the last position).
    std::optional<SequenceState> state_;
    std::unique_ptr<Drafter> drafter_;
    std::vector<int32_t> sequence_;
    int32_t next_token_ = -1;
    int64_t reused_ = 0;
    std::unique_ptr<DepthController> controller_;        // greedy requests': timed, persisted
    std::optional<DepthController> sampled_controller_;  // the last request's, when it sampled
    std::string controller_path_;
};

}  // namespace nextn
