// Cost of the sampling pipeline at the Qwen3.5 vocabulary size (248,320 logits), per call.
#include <benchmark/benchmark.h>

#include <cmath>
#include <vector>

#include "sampling/logit_pipeline.h"
#include "sampling/rng.h"
#include "sampling/speculative_accept.h"

namespace nextn {
namespace {

constexpr size_t kVocab = 248320;

// Model-like logits: Gaussian with sd 3 (Box-Muller), so the best token sits ~13 nats above the
// bulk and top-p / min-p keep from a few to a few hundred tokens.
std::vector<float> model_like_logits(uint64_t seed) {
    Rng rng(seed);
    std::vector<float> logits(kVocab);  // [V]
    for (float& l : logits)
        l = static_cast<float>(3.0 * std::sqrt(-2.0 * std::log(1.0 - rng.uniform())) *
                               std::cos(6.283185307179586 * rng.uniform()));
    return logits;
}

SamplerParams params_for(int preset) {
    SamplerParams p;
    switch (preset) {
        case 0: p.temperature = 0.0f; break;                                 // greedy
        case 1: p.temperature = 0.7f; p.top_k = 40; p.top_p = 0.95f; break;  // typical chat
        case 2: p.temperature = 0.8f; p.top_p = 0.9f; break;                 // top-p only
        case 3: p.temperature = 1.0f; p.min_p = 0.05f; break;                // min-p only
        case 4: p.temperature = 1.0f; break;                                 // full softmax
        default: break;
    }
    p.repeat_penalty = 1.1f;
    return p;
}

void BM_Process(benchmark::State& state) {
    const std::vector<float> logits = model_like_logits(1);
    const SamplerParams params = params_for(static_cast<int>(state.range(0)));
    std::vector<int32_t> history(64);
    for (size_t i = 0; i < history.size(); ++i) history[i] = static_cast<int32_t>(i * 997);
    SamplingWorkspace workspace;
    Distribution d;  // reused, as a decode loop would
    for (auto _ : state) {
        process(logits, history, params, workspace, d);
        benchmark::DoNotOptimize(d.ids.data());
    }
    const size_t support = d.support_size();
    state.counters["support"] = static_cast<double>(support);
}
BENCHMARK(BM_Process)->DenseRange(0, 4)->Unit(benchmark::kMicrosecond);

// The pieces of BM_Process: the [V] copy + bias + penalties, and partial selection.
void BM_BiasAndPenalties(benchmark::State& state) {
    const std::vector<float> logits = model_like_logits(1);
    const SamplerParams params = params_for(1);
    std::vector<int32_t> history(64);
    for (size_t i = 0; i < history.size(); ++i) history[i] = static_cast<int32_t>(i * 997);
    std::vector<float> workspace;
    for (auto _ : state) {
        apply_bias_and_penalties(logits, history, params, workspace);
        benchmark::DoNotOptimize(workspace.data());
    }
}
BENCHMARK(BM_BiasAndPenalties)->Unit(benchmark::kMicrosecond);

void BM_TopKIds(benchmark::State& state) {
    const std::vector<float> logits = model_like_logits(1);
    for (auto _ : state) benchmark::DoNotOptimize(top_k_ids(logits, state.range(0)).data());
}
BENCHMARK(BM_TopKIds)->Arg(1)->Arg(40)->Arg(1000)->Unit(benchmark::kMicrosecond);

void BM_AcceptOrResample(benchmark::State& state) {
    const SamplerParams params = params_for(static_cast<int>(state.range(0)));
    const Distribution p = process(model_like_logits(1), {}, params);
    const Distribution q = process(model_like_logits(2), {}, params);
    Rng rng(3);
    for (auto _ : state) {
        const int32_t x = sample(q, rng);
        benchmark::DoNotOptimize(accept_or_resample(p, q, x, rng));
    }
}
BENCHMARK(BM_AcceptOrResample)->DenseRange(0, 4)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace nextn

BENCHMARK_MAIN();
