#pragma once
// Self-drafting with the checkpoint's MTP head. MTP KV slot p pairs trunk hidden p with the token
// at p+1, so a pair is complete only once that token is known. Committed pairs are queued and
// flushed into the head in batched forwards of at most kMaxFlush rows; the last flushed row's
// logits give the first draft, and chained steps feed the head its own output hidden at
// position + 1.
#include <vector>

#include "model/qwen35.h"
#include "sampling/logit_pipeline.h"
#include "spec/drafter.h"

namespace nextn {

class MtpDrafter : public Drafter {
public:
    static constexpr int64_t kMaxFlush = 256;
    // on_commit flushes the queue first when it would grow past this many pairs.
    static constexpr int64_t kMaxPending = 16;

    MtpDrafter(const Qwen35Model& model, SequenceState& state);

    void on_commit(const float* hidden, const int32_t* next_tokens, int64_t n,
                   int64_t pos0) override;
    void draft(const DraftRequest& request, DraftProposal& out) override;
    void reset() override;
    void flush() override;

private:

    const Qwen35Model& model_;
    SequenceState& state_;
    std::vector<float> pending_hidden_;   // [n_pending, H]
    std::vector<int32_t> pending_tokens_; // [n_pending]
    int64_t pending_pos0_ = 0;
    std::vector<float> last_hidden_;      // [H] MTP output hidden of the last flushed pair
    std::vector<float> last_logits_;      // [Vd] over the draft sub-vocabulary
    int64_t last_pos_ = -1;               // position of the last flushed pair
    std::vector<float> step_hidden_, step_logits_, prev_hidden_;
    std::vector<float> flush_hidden_;  // [<= kMaxFlush, H] MTP output of one flush
    SamplingWorkspace workspace_;
};

}  // namespace nextn
