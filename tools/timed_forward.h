#pragma once
// What kernel_ab and layout_ab share: one timed forward of a token batch, and the summary of a
// set of timings. Header-only, included by each tool's single source file.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <vector>

#include "model/qwen35.h"

namespace nextn::tools {

// The seconds of one forward of batch (its width tokens): a left-open verify committed whole for
// widths up to 8, above that a plain prefill. A fresh state when the context would pass 4000
// positions (the state holds 4096: new_state(4096, 8)). logits: [min(width, 8), vocab].
inline double timed_forward(const Qwen35Model& model, SequenceState& state, const std::vector<int32_t>& batch,
                            std::vector<float>& logits) {
    const int64_t width = int64_t(batch.size());
    if (state.n_past + width > 4000) state = model.new_state(4096, 8);
    const auto t0 = std::chrono::steady_clock::now();
    if (width > 8) {
        model.forward(state, batch.data(), width, {nullptr, logits.data(), 1});
    } else {
        model.forward(state, batch.data(), width, {nullptr, logits.data(), width}, true);
        model.commit(state, width);
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Prints "LABEL: median M ms, p10 P ms over N forwards" and returns the median (sorts s).
inline double report_median(std::vector<double>& s, const char* label) {
    std::sort(s.begin(), s.end());
    const double median = s[s.size() / 2];
    std::printf("%s: median %.2f ms, p10 %.2f ms over %zu forwards\n", label, 1e3 * median,
                1e3 * s[s.size() / 10], s.size());
    return median;
}

}  // namespace nextn::tools
