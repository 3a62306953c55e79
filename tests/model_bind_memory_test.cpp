// bind_weights' memory check: the lower bound it compares with the memory at hand never
// exceeds what the bound matrices take, and a budget below it fails before any conversion
// with an error naming the checkpoint and the sizes.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "formats/checkpoint.h"
#include "model/weights.h"
#include "test_paths.h"

namespace nextn {
namespace {

size_t held_bytes(const ModelWeights& w) {
    size_t total = 0;
    for_each_matrix(w, [&](const WeightMatrix& m) { total += m.nbytes(); });
    return total;
}

void expect_lower_bound_holds(const std::string& path) {
    const Checkpoint ck = load_checkpoint(path);
    for (WType type : {WType::Native, WType::F32, WType::BF16, WType::Q8_0, WType::Q4_0}) {
        for (bool int8 : {true, false}) {
            BindOptions o;
            o.matrix_type = type;
            o.int8_activations = int8;
            const size_t bound = bound_matrix_bytes_at_least(ck, o);
            const ModelWeights w = bind_weights(ck, o);
            EXPECT_GT(bound, 0u);
            EXPECT_LE(bound, held_bytes(w))
                << path << " " << wtype_name(type) << (int8 ? " int8" : " f32 acts");
        }
    }
}

TEST(BindMemory, LowerBoundHoldsForEveryTargetType) {
    expect_lower_bound_holds(test::data_dir() + "/qwen35-dense-tiny");
    expect_lower_bound_holds(test::data_dir() + "/qwen35-moe-tiny");
}

// GGUF Q2_K, Q3_K, IQ4_NL, IQ4_XS and MXFP4 (tests/data/ggml-types), which grow when bound (Q3_K
// to Q6_K's codes, IQ4_XS to 8-bit ones, Q2_K to Q8_0; with f32 activations most widen to f32):
// the bound counts that, beyond the file's bytes.
TEST(BindMemory, LowerBoundHoldsForTheTypesThatGrow) {
    for (const char* f : {"dense-mixed.gguf", "moe-mxfp4.gguf"}) {
        const std::string path = test::data_dir() + "/ggml-types/" + f;
        expect_lower_bound_holds(path);
        const Checkpoint ck = load_checkpoint(path);
        size_t file_bytes = 0;
        for (const auto& [name, t] : ck.tensors)
            if (t.shape.size() == 2 && name.find("conv1d") == std::string::npos)
                file_bytes += t.nbytes;
        BindOptions o;  // Native
        o.int8_activations = false;
        EXPECT_GT(bound_matrix_bytes_at_least(ck, o), file_bytes) << f;
    }
}

// GGUF (shapes reversed from the file's order, experts split from 3-D tensors) and MLX.
TEST(BindMemory, LowerBoundHoldsForGgufAndMlx) {
    NEXTN_REQUIRE_FIXTURES(fixtures);
    for (const char* f : {"model-Q4_0.gguf", "model-Q4_K_M.gguf", "model-Q8_0.gguf", "model-f32.gguf",
                          "mlx-4bit", "mlx-6bit"})
        expect_lower_bound_holds(fixtures + "/qwen35-dense-tiny/" + f);
    for (const char* f : {"model-Q4_K_M.gguf", "mlx-4bit"})
        expect_lower_bound_holds(fixtures + "/qwen35-moe-tiny/" + f);
}

TEST(BindMemory, BudgetBelowTheMatricesFailsNamingTheCheckpoint) {
    const Checkpoint ck = load_checkpoint(test::data_dir() + "/qwen35-dense-tiny");
    BindOptions o;
    o.matrix_type = WType::Q8_0;
    const size_t need = bound_matrix_bytes_at_least(ck, o);
    o.memory_budget = need;  // exactly enough: binds
    EXPECT_NO_THROW(bind_weights(ck, o));
    o.memory_budget = need / 2;
    try {
        bind_weights(ck, o);
        FAIL() << "a budget of half the matrices' bytes bound";
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("qwen35-dense-tiny"), std::string::npos) << msg;
        EXPECT_NE(msg.find("q8_0"), std::string::npos) << msg;
        EXPECT_NE(msg.find("needs"), std::string::npos) << msg;
        EXPECT_NE(msg.find("--quant"), std::string::npos) << msg;
    }
}

}  // namespace
}  // namespace nextn
