#pragma once
// The draft -> verify -> commit loop. One round: the drafter proposes k tokens, the trunk runs
// ONE uncommitted forward over [current, d1..dk], the longest prefix of drafts that the trunk
// agrees with is accepted, and the trunk's own token at the first disagreement (or the bonus
// token after a full accept) is appended. Committing keeps exactly those positions; no layer
// is re-run except the Gated-DeltaNet recurrence over the kept positions when some are dropped
// (cache/sequence_state.h). With depth 0 (or no drafter) every round is plain decoding through
// the same code path.
#include <cstdint>
#include <functional>
#include <vector>

#include "model/qwen35.h"
#include "sampling/logprobs.h"
#include "sampling/sampler_params.h"
#include "spec/depth_controller.h"
#include "spec/drafter.h"

namespace nextn {

struct DecodeOptions {
    int64_t max_new_tokens = 128;
    int draft_depth = 3;  // drafts per round (the maximum when a controller is set); 0 = plain
    DepthController* controller = nullptr;  // adaptive depth (--draft-depth auto), may be null
    std::vector<int32_t> stop_tokens;
    SamplerParams sampler = greedy_params();
    int logprobs = 0;  // top alternatives to report per token; 0 = no logprobs
    // prompt[0, cached_prefix) is already in the state (state.n_past == cached_prefix) and the
    // drafter has queued the pair of its last position with prompt[cached_prefix]; only the
    // rest is prefilled. The whole prompt is still the penalties' history.
    int64_t cached_prefix = 0;

    static SamplerParams greedy_params() {
        SamplerParams p;
        p.temperature = 0.0f;
        return p;
    }
};

struct DecodeStats {
    int64_t prompt_tokens = 0;
    int64_t rounds = 0;  // verify forwards after the prefill
    std::vector<int64_t> drafted;   // [depth]: rounds that proposed a draft at depth d+1
    std::vector<int64_t> accepted;  // [depth]: ... and had it accepted
    double prefill_seconds = 0;
    double decode_seconds = 0;
    // Where the decode rounds' time went, summed over the rounds (seconds): the drafter (its
    // batched flush of the previous round's committed pairs, then the chained draft steps), the
    // verify forward, sampling and acceptance on the host over the round's positions, and the
    // commit (the trunk's caches kept, the pairs queued for the drafter). The token callbacks'
    // time is in none of them: decode_seconds holds it and the loop's own.
    struct RoundTimes {
        double draft = 0, verify = 0, accept = 0, commit = 0;
        double sum() const { return draft + verify + accept + commit; }
    };
    RoundTimes round_times;
    bool stopped_by_token = false;
    // The caches were full before max_new_tokens: the output ended at the context's end (not at a
    // stop token, the length limit, or the callback's word).
    bool stopped_by_context = false;
    int64_t rollback_bytes = 0;
    int64_t kv_cache_bytes = 0;  // the attention KV caches' span for the context (--kv-type)
    // Every generated token committed to the sequence, in order, up to the last one streamed
    // (a callback that stops mid-round ends it there). All but the last are in the caches; the
    // last is the next input.
    std::vector<int32_t> tokens;

    int64_t generated() const { return int64_t(tokens.size()); }
    double tokens_per_round() const { return rounds ? double(generated() - 1) / double(rounds) : 0; }
    double decode_tokens_per_second() const {
        return decode_seconds > 0 ? double(generated() - 1) / decode_seconds : 0;
    }
};

struct EmittedToken {
    int32_t id = -1;
    // With DecodeOptions::logprobs > 0: the target's log-probabilities at this position (log-
    // softmax of its logits after bias and penalties, before temperature and filters), the
    // same numbers with or without speculation.
    const LogprobReport* logprobs = nullptr;
};

// Called with each committed token in order; return false to stop after it.
using TokenCallback = std::function<bool(const EmittedToken&)>;

// Appends `prompt` to the sequence in `state` and generates. Drafts are accepted by rejection
// sampling against the target (greedy: exact match), so the output distribution is the plain
// sampler's. `drafter` may be null (plain decoding).
DecodeStats generate(const Qwen35Model& model, SequenceState& state, Drafter* drafter,
                     const std::vector<int32_t>& prompt, const DecodeOptions& options,
                     const TokenCallback& on_token);

}  // namespace nextn
