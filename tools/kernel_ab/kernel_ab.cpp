// Times two builds of one int8 matrix kernel on a synthetic model in one process, token by
// token: the forwards alternate between the builds, so a slow spell of a shared machine lands
// on both alike. Separate runs of two binaries could not tell a 5% change on the VMs this was
// written on, whose read rate swings from 35 to 66 GB/s within a minute.
//
// The two builds are the same kernel translation unit compiled with its namespace renamed
// (kernel_ab.sh: -Dnextn=nextn_a / nextn_b), so both link next to the library; each provides
// <ns>::<isa>::gemm_i8_rows with the library's own WeightMatrix / QuantizedColumns layout.
//
// Usage: kernel_ab MODEL QUANT WIDTH TOKENS   (MODEL qwen3.5-0.8b..., QUANT q8|q4, WIDTH 1..8 a
// left-open verify of that width committed whole, above 8 a plain prefill of that width)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "kernels/kernels.h"
#include "model/synthetic.h"
#include "model/weights.h"
#include "../timed_forward.h"

#ifndef KERNEL_AB_ISA
#define KERNEL_AB_ISA avx512
#endif

// Declared with the renamed namespaces' own (layout-identical) types.
namespace nextn_a {
struct WeightMatrix;
struct QuantizedColumns;
namespace KERNEL_AB_ISA {
void gemm_i8_rows(const WeightMatrix&, const QuantizedColumns&, float*, int64_t, int64_t, int64_t);
#ifdef KERNEL_AB_GROUP_STREAMS
void gemm_i8_rows_group_streams(const WeightMatrix&, const QuantizedColumns&, float*, int64_t,
                                int64_t, int64_t);
#endif
}
}  // namespace nextn_a
namespace nextn_b {
struct WeightMatrix;
struct QuantizedColumns;
namespace KERNEL_AB_ISA {
void gemm_i8_rows(const WeightMatrix&, const QuantizedColumns&, float*, int64_t, int64_t, int64_t);
#ifdef KERNEL_AB_GROUP_STREAMS
void gemm_i8_rows_group_streams(const WeightMatrix&, const QuantizedColumns&, float*, int64_t,
                                int64_t, int64_t);
#endif
}
}  // namespace nextn_b

using namespace nextn;

int main(int argc, char** argv) {
    if (argc != 5) {
        std::fprintf(stderr, "usage: kernel_ab MODEL q8|q4|q4_k_m WIDTH TOKENS\n");
        return 2;
    }
    const std::string name = argv[1], quant = argv[2];
    const int width = std::atoi(argv[3]), tokens = std::atoi(argv[4]);
    if ((quant != "q8" && quant != "q4" && quant != "q4_k_m") || width < 1 || tokens < 1) {
        std::fprintf(stderr, "kernel_ab: bad arguments (QUANT q8|q4|q4_k_m, WIDTH >= 1, TOKENS >= 1)\n");
        return 2;
    }
    SyntheticOptions so;
    // The layout the engine holds the block type in on this table (Q4_0R / Q8_0R on every int8
    // table unless NEXTN_Q4_0_LAYOUT / NEXTN_Q8_0_LAYOUT say chunked).
    so.matrix_type = kernel_storage_type(quant == "q4" ? WType::Q4_0 : WType::Q8_0, /*int8_activations=*/true);
    // q4_k_m: llama.cpp's Q4_K_M mix, held as the loader holds such a file (nextn bench --quant q4_k_m).
    so.q4_k_m = quant == "q4_k_m";
    so.draft = SyntheticDraft::None;
    LoadedModel lm = load_synthetic_model(name, so, 0);
    Qwen35Model& model = *lm.model;
    if (!kernels().int8_dot_fast) {
        std::fprintf(stderr, "kernel_ab: the %s table has no int8 kernels\n", kernels().isa);
        return 1;
    }
    using Gemm = decltype(KernelTable::gemm_i8_rows);
    KernelTable tables[2] = {kernels(), kernels()};
    tables[0].gemm_i8_rows = reinterpret_cast<Gemm>(&nextn_a::KERNEL_AB_ISA::gemm_i8_rows);
    tables[1].gemm_i8_rows = reinterpret_cast<Gemm>(&nextn_b::KERNEL_AB_ISA::gemm_i8_rows);
#ifdef KERNEL_AB_GROUP_STREAMS
    // On AMD gemm_i8_rows is the cursor, and the group streams run only as the model's timed
    // alternative; with NEXTN_ROW_GROUP_FETCH=streams (or off AMD) both builds' group-stream
    // entry is timed instead.
    if (std::string(kernels().narrow_fetch) == "group streams") {
        tables[0].gemm_i8_rows =
            reinterpret_cast<Gemm>(&nextn_a::KERNEL_AB_ISA::gemm_i8_rows_group_streams);
        tables[1].gemm_i8_rows =
            reinterpret_cast<Gemm>(&nextn_b::KERNEL_AB_ISA::gemm_i8_rows_group_streams);
    }
#endif
    std::printf("kernels: %s, decode-width row groups fetch by %s\n", kernels().isa,
                *kernels().narrow_fetch ? kernels().narrow_fetch : "(no choice on this table)");

    const int64_t V = model.config().vocab_size;
    SequenceState state = model.new_state(4096, 8);
    std::vector<float> logits(size_t(std::min(width, 8) * V));
    std::vector<int32_t> batch(size_t(width), 5);
    model.forward(state, batch.data(), std::min(width, 16), {nullptr, logits.data(), 1});
    std::vector<double> seconds[2];
    for (int i = 0; i < 2 * tokens; ++i) {
        model.set_kernels(tables[i % 2]);
        for (auto& t : batch) t = int32_t((t * 31 + 11 + i) % 30000);
        seconds[i % 2].push_back(tools::timed_forward(model, state, batch, logits));
    }
    model.set_kernels(kernels());
    // The same comparison within memory spells: each token's pair (a, b) ranked by a + b, and the
    // median of b/a over the fastest third and over the slowest third. On a VM whose read
    // bandwidth swings (37-88 GB/s on the Zen 5 slice), a change can gain in slow spells and lose
    // in fast ones, which the overall medians blur.
    std::vector<std::pair<double, double>> pairs;  // [tokens] (a + b, b / a)
    for (size_t i = 0; i < seconds[1].size(); ++i)
        pairs.emplace_back(seconds[0][i] + seconds[1][i], seconds[1][i] / seconds[0][i]);
    std::sort(pairs.begin(), pairs.end());
    auto median_ratio = [&](size_t from, size_t to) {
        std::vector<double> r;
        for (size_t i = from; i < to; ++i) r.push_back(pairs[i].second);
        std::nth_element(r.begin(), r.begin() + long(r.size() / 2), r.end());
        return r.empty() ? 0.0 : r[r.size() / 2];
    };
    const size_t third = pairs.size() / 3;
    const double median[2] = {tools::report_median(seconds[0], "a"), tools::report_median(seconds[1], "b")};
    std::printf("b/a %.3f  (%s %s width %d, %s)\n", median[1] / median[0], name.c_str(),
                quant.c_str(), width, kernels().isa);
    if (third > 0)
        std::printf("b/a in the fastest third of pairs %.3f (a+b median %.2f ms), in the slowest third %.3f (%.2f ms)\n",
                    median_ratio(0, third), 1e3 * pairs[third / 2].first, median_ratio(pairs.size() - third, pairs.size()),
                    1e3 * pairs[pairs.size() - third / 2 - 1].first);
    return 0;
}
