// Times one synthetic model held in two layouts of its block type in one process, forward by
// forward: chunked (a: Q4_0X or Q8_0X) and in 16-row groups (b: Q4_0R or Q8_0R), the same
// seeded values. The forwards
// alternate between the two, so a slow spell of a shared machine lands on both alike (separate
// bench runs swing 2x on the VMs this was written on). Both run on the table in use.
//
// Usage: layout_ab MODEL q4|q8 WIDTH TOKENS   (WIDTH 1..8: a left-open verify of that width committed
// whole; above 8: a plain prefill of that width)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/kernels.h"
#include "model/synthetic.h"
#include "../timed_forward.h"

using namespace nextn;

int main(int argc, char** argv) {
    if (argc != 5) {
        std::fprintf(stderr, "usage: layout_ab MODEL q4|q8 WIDTH TOKENS\n");
        return 2;
    }
    const std::string name = argv[1], quant = argv[2];
    const int width = std::atoi(argv[3]), tokens = std::atoi(argv[4]);
    if ((quant != "q4" && quant != "q8") || width < 1 || tokens < 1) {
        std::fprintf(stderr, "layout_ab: bad arguments (q4 or q8, WIDTH >= 1, TOKENS >= 1)\n");
        return 2;
    }
    if (!kernels().int8_dot_fast) {  // the scalar table runs both layouts by their references
        std::fprintf(stderr, "layout_ab: the %s table has no int8 kernels\n", kernels().isa);
        return 1;
    }
    // One pool for both models: a second pool's workers would spin on the cores while the
    // first one's forward runs.
    const bool q4 = quant == "q4";
    const WType types[2] = {q4 ? WType::Q4_0X : WType::Q8_0X, q4 ? WType::Q4_0R : WType::Q8_0R};
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
        if (k == 0)
            for (auto& t : batch) t = int32_t((t * 31 + 11 + i) % 30000);
        seconds[k].push_back(tools::timed_forward(*models[k], states[k], batch, logits));
    }
    double median[2];
    for (int k = 0; k < 2; ++k)
        median[k] = tools::report_median(seconds[k], (std::string(k == 0 ? "a " : "b ") + wtype_name(types[k])).c_str());
    std::printf("b/a %.3f  (%s width %d, %s)\n", median[1] / median[0], name.c_str(), width, kernels().isa);
    return 0;
}
