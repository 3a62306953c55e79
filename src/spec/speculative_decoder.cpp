#include "spec/speculative_decoder.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"

namespace nextn {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

int32_t argmax(const float* x, int64_t n) {
    int64_t best = 0;
    for (int64_t i = 1; i < n; ++i)
        if (x[i] > x[best]) best = i;
    return int32_t(best);
}

// Prefill in chunks so activation buffers stay bounded on long prompts.
constexpr int64_t kPrefillChunk = 256;

}  // namespace

DecodeStats generate(const Qwen35Model& model, SequenceState& state, Drafter* drafter,
                     const std::vector<int32_t>& prompt, const DecodeOptions& options,
                     const TokenCallback& on_token) {
    const ModelConfig& c = model.config();
    const int64_t H = c.hidden_size, V = c.vocab_size;
    DecodeStats stats;
    stats.prompt_tokens = int64_t(prompt.size());
    if (prompt.empty()) fail("generate: the prompt is empty");
    if (options.max_new_tokens <= 0) return stats;
    if (state.n_past + int64_t(prompt.size()) + 1 > state.max_positions)
        fail("prompt of ", prompt.size(), " tokens does not fit the context size ",
             state.max_positions, " (", state.n_past, " already used)");
    const int depth = drafter ? std::max(0, options.draft_depth) : 0;
    if (depth + 1 > state.max_width)
        fail("draft depth ", depth, " needs verify width ", depth + 1, " but the state holds ",
             state.max_width);
    stats.drafted.assign(size_t(depth), 0);
    stats.accepted.assign(size_t(depth), 0);
    stats.snapshot_bytes = state.snapshot_bytes();
    auto is_stop = [&](int32_t t) {
        return std::find(options.stop_tokens.begin(), options.stop_tokens.end(), t) !=
               options.stop_tokens.end();
    };

    // Prefill.
    auto t0 = Clock::now();
    std::vector<float> logits(static_cast<size_t>(V));
    std::vector<float> hidden;
    int32_t current = -1;
    for (size_t begin = 0; begin < prompt.size(); begin += kPrefillChunk) {
        const int64_t n = std::min<int64_t>(kPrefillChunk, int64_t(prompt.size() - begin));
        const bool last = begin + size_t(n) == prompt.size();
        hidden.resize(size_t(n * H));
        const int64_t pos0 = state.n_past;
        model.forward(state, prompt.data() + begin, n,
                      {drafter ? hidden.data() : nullptr, last ? logits.data() : nullptr,
                       last ? 1 : 0});
        if (last) current = argmax(logits.data(), V);
        if (drafter) {
            // Pair position p with the token at p + 1 (the model's own first token at the end).
            std::vector<int32_t> next(prompt.begin() + int64_t(begin) + 1,
                                      prompt.begin() + int64_t(begin) + n);
            next.push_back(last ? current : prompt[begin + size_t(n)]);
            drafter->on_commit(hidden.data(), next.data(), n, pos0);
        }
    }
    stats.prefill_seconds = seconds_since(t0);
    stats.generated = 1;
    bool stop = is_stop(current);
    stats.stopped_by_token = stop;
    if (!on_token(current)) stop = true;

    // Decode rounds.
    t0 = Clock::now();
    std::vector<float> round_logits, round_hidden;
    while (!stop && stats.generated < options.max_new_tokens) {
        const int64_t room = std::min<int64_t>(options.max_new_tokens - stats.generated,
                                               state.max_positions - state.n_past);
        if (room <= 0) break;
        int k = int(std::min<int64_t>(depth, room - 1));
        std::vector<int32_t> batch{current};
        if (k > 0) {
            std::vector<int32_t> drafts = drafter->draft(k);
            batch.insert(batch.end(), drafts.begin(), drafts.end());
        }
        const int64_t W = int64_t(batch.size());
        round_logits.resize(size_t(W * V));
        round_hidden.resize(size_t(W * H));
        const int64_t pos0 = state.n_past;
        model.forward(state, batch.data(), W,
                      {drafter ? round_hidden.data() : nullptr, round_logits.data(), W},
                      /*snapshots=*/true);
        // Greedy acceptance: drafts while the trunk's argmax agrees, then the trunk's token.
        std::vector<int32_t> emitted;
        int64_t a = 0;
        for (; a < W - 1; ++a) {
            int32_t want = argmax(round_logits.data() + a * V, V);
            if (want != batch[size_t(a + 1)]) break;
            emitted.push_back(want);
        }
        emitted.push_back(argmax(round_logits.data() + a * V, V));
        for (int64_t d = 0; d < W - 1; ++d) {
            stats.drafted[size_t(d)]++;
            if (d < a) stats.accepted[size_t(d)]++;
        }
        // Tokens are committed before they are streamed; a stop inside the round keeps only
        // the positions up to it.
        int64_t m = 0;
        while (m < int64_t(emitted.size())) {
            const int32_t t = emitted[size_t(m)];
            ++m;
            stats.generated++;
            if (is_stop(t)) {
                stats.stopped_by_token = true;
                stop = true;
                break;
            }
            if (stats.generated >= options.max_new_tokens) {
                stop = true;
                break;
            }
        }
        model.commit(state, m);
        if (drafter) drafter->on_commit(round_hidden.data(), emitted.data(), m, pos0);
        stats.rounds++;
        for (int64_t i = 0; i < m; ++i) {
            if (!on_token(emitted[size_t(i)])) {
                stop = true;
                break;
            }
        }
        current = emitted[size_t(m - 1)];
    }
    stats.decode_seconds = seconds_since(t0);
    return stats;
}

}  // namespace nextn
