#include "spec/speculative_decoder.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "core/huge_pages.h"
#include "core/zero_pages.h"
#include "sampling/logit_pipeline.h"
#include "sampling/rng.h"
#include "sampling/speculative_accept.h"

namespace nextn {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point t0, Clock::time_point t1) {
    return std::chrono::duration<double>(t1 - t0).count();
}

double seconds_since(Clock::time_point t0) { return seconds_between(t0, Clock::now()); }

// Prefill in chunks so activation buffers stay bounded on long prompts.
constexpr int64_t kPrefillChunk = 256;

}  // namespace

DecodeStats generate(const Qwen35Model& model, SequenceState& state, Drafter* drafter,
                     const std::vector<int32_t>& prompt, const DecodeOptions& options,
                     const TokenCallback& on_token) {
    const ModelConfig& c = model.config();
    const int64_t H = c.hidden_size, V = c.vocab_size;
    const SamplerParams& params = options.sampler;
    params.validate_for_vocab(V);
    DecodeStats stats;
    stats.prompt_tokens = int64_t(prompt.size());
    if (prompt.empty()) fail("generate: the prompt is empty");
    if (options.max_new_tokens <= 0) return stats;
    const int64_t cached = options.cached_prefix;
    if (cached < 0 || cached >= int64_t(prompt.size()) || cached != state.n_past)
        fail("generate: cached prefix ", cached, " does not match the state (", state.n_past,
             " positions) and a prompt of ", prompt.size(), " tokens");
    // One position past the prompt: the first generated token is run too (its hidden state
    // feeds the drafter, and the session keeps it for the next turn).
    if (int64_t(prompt.size()) + 1 > state.max_positions)
        fail("prompt of ", prompt.size(),
             " tokens leaves no room for a generated token in the context size ",
             state.max_positions, " (it takes at most ", state.max_positions - 1,
             " prompt tokens)");
    const int depth = drafter ? std::max(0, options.draft_depth) : 0;
    if (depth + 1 > state.max_width)
        fail("draft depth ", depth, " needs verify width ", depth + 1, " but the state holds ",
             state.max_width);
    stats.drafted.assign(size_t(depth), 0);
    stats.accepted.assign(size_t(depth), 0);
    stats.rollback_bytes = state.rollback_bytes();
    stats.kv_cache_bytes = state.kv_cache_bytes();
    // Sized once: the decode loop appends without reallocating.
    stats.tokens.reserve(size_t(std::min<int64_t>(options.max_new_tokens,
                                                  state.max_positions - state.n_past + 1)));
    auto is_stop = [&](int32_t t) {
        return std::find(options.stop_tokens.begin(), options.stop_tokens.end(), t) !=
               options.stop_tokens.end();
    };
    Rng rng(params.seed);
    std::vector<int32_t> history;  // committed tokens the penalties look at
    // Room for the whole generation and a round's in-flight drafts: no regrowth in the loop.
    history.reserve(prompt.size() + stats.tokens.capacity() + size_t(depth) + 1);
    history = prompt;
    SamplingWorkspace workspace;            // its .processed: [V] after bias and penalties
    LogprobReport report;                   // reused token after token
    std::vector<SamplingCandidate> logprob_ranking;  // logprobs_from_logits's scratch
    report.top.reserve(size_t(std::max(options.logprobs, 0)));
    logprob_ranking.reserve(size_t(std::max(options.logprobs, 1)));
    auto emit = [&](int32_t token) {
        EmittedToken e;
        e.id = token;
        if (options.logprobs > 0) {
            // Logprobs of the target's logits after bias and penalties (workspace holds them).
            logprobs_from_logits(workspace.processed, token, options.logprobs, logprob_ranking,
                                 report);
            e.logprobs = &report;
        }
        return on_token(e);
    };

    // Prefill.
    auto t0 = Clock::now();
    std::vector<float> logits(static_cast<size_t>(V));
    std::vector<float> hidden;
    int32_t current = -1;
    for (size_t begin = size_t(cached); begin < prompt.size(); begin += kPrefillChunk) {
        const int64_t n = std::min<int64_t>(kPrefillChunk, int64_t(prompt.size() - begin));
        const bool last = begin + size_t(n) == prompt.size();
        hidden.resize(size_t(n * H));
        const int64_t pos0 = state.n_past;
        model.forward(state, prompt.data() + begin, n,
                      {drafter ? hidden.data() : nullptr, last ? logits.data() : nullptr,
                       last ? 1 : 0});
        if (last) {
            Distribution p;
            process({logits.data(), size_t(V)}, history, params, workspace, p);
            current = sample(p, rng);
        }
        if (drafter) {
            // Pair position p with the token at p + 1 (the model's own first token at the end).
            std::vector<int32_t> next(prompt.begin() + int64_t(begin) + 1,
                                      prompt.begin() + int64_t(begin) + n);
            next.push_back(last ? current : prompt[begin + size_t(n)]);
            drafter->on_commit(hidden.data(), next.data(), n, pos0);
        }
    }
    if (drafter) drafter->flush();
    stats.prefill_seconds = seconds_since(t0);
    stats.tokens.push_back(current);
    history.push_back(current);
    bool stop = is_stop(current);
    stats.stopped_by_token = stop;
    if (!emit(current)) stop = true;

    // Decode rounds.
    t0 = Clock::now();
    std::vector<float> round_hidden;
    std::vector<int32_t> batch;  // [current, drafts...]
    DraftProposal proposal;      // reused: its distributions keep their buffers
    DraftVerdict verdict;
    std::vector<Distribution> targets;
    std::vector<SamplingWorkspace> processed;  // [W] per-position processed logits
    // Buffers for the widest round, sized (and their pages touched) once before the first
    // round and never resized in the loop: a round at a new width used to grow them (and a
    // narrower one shrank the workspaces, freeing them), and on this VM the fresh pages made
    // that round up to 2x slow (a width-4 verify 58 ms instead of 28), which is what the depth
    // controller measured for that depth. Touching them is all the setup costs, in the decode's
    // time: on that VM a first touch of a 4 KiB page takes about 10 us, and depth 4's 10 MB
    // (the logits, and a copy of them a position) took 28 ms before the first round, 5.5 ms at
    // depth 0. So the logits go on huge pages where the kernel allows (at least one, which
    // ZeroPagesBuffer maps as such; a write a 4 KiB page touches them), and the sampling
    // buffers are made only where process() writes them (reserve_for_sampling): 0.3-1.4 ms at
    // any depth.
    const int64_t max_w = depth + 1;
    ZeroPagesBuffer round_logits(
        std::max(size_t(max_w * V), kHugePageBytes / sizeof(float)));  // [max_w, V]
    constexpr size_t kFloatsPerSmallPage = 4096 / sizeof(float);
    for (size_t i = 0; i < round_logits.size(); i += kFloatsPerSmallPage)
        round_logits.data()[i] = 0.0f;
    round_hidden.resize(size_t(max_w * H));
    batch.reserve(size_t(max_w));
    verdict.tokens.reserve(size_t(max_w));
    targets.resize(size_t(max_w));
    processed.resize(size_t(max_w));
    for (SamplingWorkspace& w : processed) reserve_for_sampling(params, V, w, history.capacity());
    for (Distribution& t : targets) reserve_for_sampling(params, V, t);
    proposal.reserve(size_t(depth), [&](Distribution& q) { reserve_for_sampling(params, V, q); });
    int previous_k = -1;  // the previous round's drafts (-1: no round yet)
    while (!stop && stats.generated() < options.max_new_tokens) {
        const int64_t room = std::min<int64_t>(options.max_new_tokens - stats.generated(),
                                               state.max_positions - state.n_past);
        if (room <= 0) {
            // The loop's condition left room for more tokens, so the caches are what is full.
            stats.stopped_by_context = true;
            break;
        }
        const int round_depth =
            options.controller && depth > 0 ? std::min(depth, options.controller->choose()) : depth;
        const int k = int(std::min<int64_t>(round_depth, room - 1));
        // The pairs plain rounds queued (up to MtpDrafter::kMaxPending) are their catch-up, not
        // this round's work: flushed inside the round they made a drafting round that follows
        // plain ones (the controller's probe out of depth 0) look dearer than its depth is, so
        // they go before the round's clock starts. A round after a drafting round still flushes
        // its predecessor's pairs in draft(): every drafting round pays that.
        if (drafter && k > 0 && previous_k == 0) drafter->flush();
        previous_k = k;
        const auto round_start = Clock::now();
        proposal.clear();
        if (k > 0) drafter->draft({k, &params, &history, &rng}, proposal);
        const auto drafted_at = Clock::now();
        batch.assign(1, current);
        batch.insert(batch.end(), proposal.tokens().begin(), proposal.tokens().end());
        const int64_t W = int64_t(batch.size());  // <= max_w: the buffers above hold it
        if (W > max_w) fail("internal: a round of ", W, " positions with depth ", depth);
        const int64_t pos0 = state.n_past;
        // A round without drafts always keeps its one position: committed at once, its
        // recurrent state updated in place (cheaper than an open forward's copy into the spare
        // slot: gdn_recurrence_heads in kernels/simd/vec_ops.h).
        const bool open = W > 1;
        model.forward(state, batch.data(), W,
                      {drafter ? round_hidden.data() : nullptr, round_logits.data(), W}, open);
        const auto verified_at = Clock::now();
        // Target distributions p_j after the same processors as the drafts, with the drafts
        // before position j counted in the history.
        for (int64_t j = 0; j < W; ++j) {
            if (j > 0) history.push_back(batch[size_t(j)]);
            process({round_logits.data() + j * V, size_t(V)}, history, params, processed[size_t(j)],
                    targets[size_t(j)]);
        }
        history.resize(history.size() - size_t(W - 1));  // drafts leave; committed ones return below
        verify_draft({targets.data(), size_t(W)}, proposal.q(), proposal.tokens(), rng, verdict);
        const std::vector<int32_t>& emitted = verdict.tokens;
        for (int64_t d = 0; d < W - 1; ++d) {
            stats.drafted[size_t(d)]++;
            if (d < verdict.n_accepted) stats.accepted[size_t(d)]++;
        }
        const auto accepted_at = Clock::now();
        const double round_seconds = seconds_between(round_start, accepted_at);
        stats.round_times.draft += seconds_between(round_start, drafted_at);
        stats.round_times.verify += seconds_between(drafted_at, verified_at);
        stats.round_times.accept += seconds_between(verified_at, accepted_at);
        // A stop token or the length limit inside the round keeps only the positions up to it.
        int64_t m = 0;
        while (m < int64_t(emitted.size())) {
            const int32_t t = emitted[size_t(m)];
            ++m;
            if (is_stop(t) || stats.generated() + m >= options.max_new_tokens) {
                stop = true;
                break;
            }
        }
        // Streamed before they are committed, so a callback that ends the output (a stop string,
        // an interrupt) also ends what is kept: the caches, the drafter's pairs and the token
        // count stop at the last token the caller took.
        for (int64_t i = 0; i < m; ++i) {
            std::swap(workspace, processed[size_t(i)]);
            const bool keep_going = emit(emitted[size_t(i)]);
            std::swap(workspace, processed[size_t(i)]);
            if (!keep_going) {
                stop = true;
                m = i + 1;
                break;
            }
        }
        stats.stopped_by_token = is_stop(emitted[size_t(m - 1)]);
        const auto commit_start = Clock::now();  // the callbacks' time is not the round's
        if (open) model.commit(state, m);  // (a round of one position has m = 1: kept)
        if (drafter) drafter->on_commit(round_hidden.data(), emitted.data(), m, pos0);
        stats.round_times.commit += seconds_since(commit_start);
        // Told the drafts the round made, not the k it asked for: a drafter may return fewer
        // (none where a logit bias bans its whole sub-vocabulary), and positions it never
        // drafted were not tested, so they must not count as rejected.
        if (options.controller && depth > 0)
            options.controller->observe(int(W - 1), verdict.n_accepted, round_seconds,
                                        /*timed=*/stats.rounds > 0);
        history.insert(history.end(), emitted.begin(), emitted.begin() + m);
        stats.tokens.insert(stats.tokens.end(), emitted.begin(), emitted.begin() + m);
        stats.rounds++;
        current = emitted[size_t(m - 1)];
    }
    stats.decode_seconds = seconds_since(t0);
    return stats;
}

}  // namespace nextn
