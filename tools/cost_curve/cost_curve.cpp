// The verify cost curve cost(N)/cost(1), N = 1..8, of a synthetic model as ratios of medians over
// many rounds, the widths taking turns within each round. `nextn bench` reports the fastest of 7
// rounds, which is what a quiet machine gives; on a shared VM whose speed swings for seconds at a
// time (a Zen 5 slice: cost(4) of the same binary read 1.03 to 1.51 run to run) the medians over
// a few hundred rounds are the steadier measure of a change to the curve.
//
// Usage: cost_curve MODEL q8|q4 ROUNDS   (MODEL qwen3.5-0.8b, qwen3.5-2b, ...)
// Each forward of N >= 2 is a left-open verify of N positions with N logits rows, dropped
// afterwards (commit 0); N = 1 is a plain decoding step, committed at once (so each round's
// context is one position longer); after a 128-token prefill: what bench's curve times.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "model/synthetic.h"
#include "model/weights.h"

using namespace nextn;

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: cost_curve MODEL q8|q4 ROUNDS\n");
        return 2;
    }
    const std::string name = argv[1], quant = argv[2];
    const int rounds = std::atoi(argv[3]);
    if ((quant != "q8" && quant != "q4") || rounds < 1) {
        std::fprintf(stderr, "cost_curve: bad arguments (QUANT q8|q4, ROUNDS >= 1)\n");
        return 2;
    }
    constexpr int kMaxWidth = 8, kPrompt = 128;
    SyntheticOptions so;
    // The layout the engine holds the block type in on this table (Q4_0R / Q8_0R on every int8
    // table unless NEXTN_Q4_0_LAYOUT / NEXTN_Q8_0_LAYOUT say chunked).
    so.matrix_type = kernel_storage_type(quant == "q4" ? WType::Q4_0 : WType::Q8_0, /*int8_activations=*/true);
    so.draft = SyntheticDraft::None;
    LoadedModel lm = load_synthetic_model(name, so, 0);
    Qwen35Model& model = *lm.model;
    const int64_t V = model.config().vocab_size;
    SequenceState state = model.new_state(kPrompt + rounds + kMaxWidth, kMaxWidth);
    std::vector<float> logits(size_t(kMaxWidth * V));  // [kMaxWidth, V]
    std::vector<int32_t> tokens(kPrompt);
    for (int i = 0; i < kPrompt; ++i) tokens[size_t(i)] = int32_t((i * 7919) % 30000);
    model.forward(state, tokens.data(), kPrompt, {nullptr, logits.data(), 1});
    std::vector<double> seconds[kMaxWidth + 1];  // [width][round]
    for (int r = 0; r < rounds; ++r) {
        for (int w = 1; w <= kMaxWidth; ++w) {
            for (int i = 0; i < w; ++i) tokens[size_t(i)] = int32_t((tokens[size_t(i)] * 31 + 11 + r) % 30000);
            const auto t0 = std::chrono::steady_clock::now();
            model.forward(state, tokens.data(), w, {nullptr, logits.data(), w}, /*keep_open=*/w > 1);
            if (w > 1) model.commit(state, 0);
            seconds[w].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
    }
    double median[kMaxWidth + 1] = {};
    for (int w = 1; w <= kMaxWidth; ++w) {
        std::vector<double>& s = seconds[w];
        std::nth_element(s.begin(), s.begin() + long(s.size() / 2), s.end());
        median[w] = s[s.size() / 2];
    }
    std::printf("%s %s, %d rounds, median ms by width 1..%d:", name.c_str(), quant.c_str(), rounds, kMaxWidth);
    for (int w = 1; w <= kMaxWidth; ++w) std::printf(" %.2f", 1e3 * median[w]);
    std::printf("\ncost(N)/cost(1), ratios of medians:");
    for (int w = 1; w <= kMaxWidth; ++w) std::printf(" %.3f", median[w] / median[1]);
    std::printf("\n");
    return 0;
}
