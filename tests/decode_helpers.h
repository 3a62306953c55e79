#pragma once
// Greedy decoding of a model through the engine's generate() loop, for tests that compare
// outputs or round statistics (MTP at `depth` drafts per round; 0 = plain decoding).
#include <memory>
#include <vector>

#include "model/qwen35.h"
#include "spec/mtp_drafter.h"
#include "spec/speculative_decoder.h"

namespace nextn::test {

inline std::vector<int32_t> greedy_decode(const Qwen35Model& model, const std::vector<int32_t>& prompt,
                                          int depth, int64_t n, DecodeStats* stats = nullptr) {
    SequenceState s = model.new_state(int64_t(prompt.size()) + n + 8, depth + 1);
    std::unique_ptr<Drafter> d;
    if (depth > 0) d = std::make_unique<MtpDrafter>(model, s);
    DecodeOptions o;
    o.max_new_tokens = n;
    o.draft_depth = depth;
    std::vector<int32_t> out;
    DecodeStats st = generate(model, s, d.get(), prompt, o, [&](const EmittedToken& t) {
        out.push_back(t.id);
        return true;
    });
    if (stats) *stats = st;
    return out;
}

}  // namespace nextn::test
