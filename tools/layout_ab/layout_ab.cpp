// Times one synthetic model held in two Q4_0 layouts in one process, forward by forward: the
// chunked Q4_0X (a) and the 16-row groups of Q4_0R (b), the same seeded values. The forwards
// alternate between the two, so a slow spell of a shared machine lands on both alike (separate
// bench runs swing 2x on the VMs this was written on). Both run on the table in use.
//
// Usage: layout_ab MODEL WIDTH TOKENS   (WIDTH 1..8: a left-open verify of that width committed
// whole; above 8: a plain prefill of that width)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/kernels.h"
#include "model/synthetic.h"

using namespace nextn;

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: layout_ab MODEL WIDTH TOKENS\n");
        return 2;
    }
    const std::string name = argv[1];
    const int width = std::atoi(argv[2]), tokens = std::atoi(argv[3]);
    if (width < 1 || tokens < 1) {
        std::fprintf(stderr, "layout_ab: bad arguments (WIDTH >= 1, TOKENS >= 1)\n");
        return 2;
    }
    if (!kernels().int8_dot_fast) {
        std::fprintf(stderr, "layout_ab: the %s table has no int8 kernels\n", kernels().isa);
        return 1;
    }
    // One pool for both models: a second pool's workers would spin on the cores while the
    // first one's forward runs.
    const WType types[2] = {WType::Q4_0X, WType::Q4_0R};
    const ModelConfig config = synthetic_config(name);
    ThreadPool pool(0);
    std::unique_ptr<Qwen35Model> models[2];
    SequenceState states[2];
    for (int k = 0; k < 2; ++k) {
        SyntheticOptions so;
        so.matrix_type = types[k];
        so.draft = SyntheticDraft::None;
        models[k] = std::make_unique<Qwen35Model>(config, synthetic_weights(config, so, pool), pool);
        states[k] = models[k]->new_state(4096, 8);
    }
    const int64_t V = models[0]->config().vocab_size;
    std::vector<float> logits(size_t(std::min(width, 8) * V));
    std::vector<int32_t> batch(size_t(width), 5);
    for (int k = 0; k < 2; ++k)
        models[k]->forward(states[k], batch.data(), std::min(width, 16), {nullptr, logits.data(), 1});
    std::vector<double> seconds[2];
    for (int i = 0; i < 2 * tokens; ++i) {
        const int k = i % 2;
        Qwen35Model& model = *models[k];
        SequenceState& state = states[k];
        if (k == 0)
            for (auto& t : batch) t = int32_t((t * 31 + 11 + i) % 30000);
        if (state.n_past + width > 4000) state = model.new_state(4096, 8);
        const auto t0 = std::chrono::steady_clock::now();
        if (width > 8) {
            model.forward(state, batch.data(), width, {nullptr, logits.data(), 1});
        } else {
            model.forward(state, batch.data(), width, {nullptr, logits.data(), width}, true);
            model.commit(state, width);
        }
        seconds[k].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    double median[2];
    for (int k = 0; k < 2; ++k) {
        auto& s = seconds[k];
        std::sort(s.begin(), s.end());
        median[k] = s[s.size() / 2];
        std::printf("%s %s: median %.2f ms, p10 %.2f ms over %zu forwards\n", k == 0 ? "a" : "b",
                    wtype_name(types[k]), 1e3 * median[k], 1e3 * s[s.size() / 10], s.size());
    }
    std::printf("b/a %.3f  (%s width %d, %s)\n", median[1] / median[0], name.c_str(), width, kernels().isa);
    return 0;
}
