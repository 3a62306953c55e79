// bind_weights' shape rule: a matrix must be held as [rows, cols], or as [cols] only where it is
// a single row (GGUF's shared-expert gate); a one-dimensional tensor of a wider matrix is an
// error naming the expected shape, not rows read past what the shape says.
#include <gtest/gtest.h>

#include <iterator>
#include <string>

#include "error_of.h"
#include "formats/checkpoint.h"
#include "model/weights.h"
#include "test_paths.h"

namespace nextn {
namespace {

TEST(BindWeights, OneDimensionalTensorsBindOnlyAsSingleRows) {
    // FFN gate [256, 128] held as [128]: the data is still there, the shape is what is wrong.
    Checkpoint dense = load_checkpoint(test::data_dir() + "/qwen35-dense-tiny");
    RawTensor& gate = dense.tensors.at("layers.0.mlp.gate_proj.weight");
    ASSERT_EQ(gate.shape, (std::vector<int64_t>{256, 128}));
    gate.shape = {128};
    EXPECT_NE(test::error_of([&] {
                  bind_weights(dense, BindOptions{});
              }).find("has shape [128], expected [256, 128]"),
              std::string::npos);

    // The MoE shared-expert gate [1, 128] held as [128] binds as its one row.
    Checkpoint moe = load_checkpoint(test::data_dir() + "/qwen35-moe-tiny");
    RawTensor& shared_gate = moe.tensors.at("layers.0.mlp.shared_expert_gate.weight");
    ASSERT_EQ(shared_gate.shape, (std::vector<int64_t>{1, 128}));
    shared_gate.shape = {128};
    const ModelWeights w = bind_weights(moe, BindOptions{});
    EXPECT_EQ(w.layers[0].ffn.shared_expert_gate.rows, 1);
    EXPECT_EQ(w.layers[0].ffn.shared_expert_gate.cols, 128);
}

// shared_expert_intermediate_size 0 (absent: model_config's default) means no shared expert:
// nothing of it is bound, and the checkpoint need not hold its tensors.
TEST(BindWeights, MoeWithoutSharedExpertBindsNone) {
    Checkpoint moe = load_checkpoint(test::data_dir() + "/qwen35-moe-tiny");
    ASSERT_GT(moe.config.shared_expert_ffn_size, 0);
    moe.config.shared_expert_ffn_size = 0;
    for (auto it = moe.tensors.begin(); it != moe.tensors.end();)
        it = it->first.find("shared_expert") != std::string::npos ? moe.tensors.erase(it)
                                                                  : std::next(it);
    const ModelWeights w = bind_weights(moe, BindOptions{});
    for (const LayerWeights& l : w.layers) {
        EXPECT_TRUE(l.ffn.shared_gate.empty());
        EXPECT_TRUE(l.ffn.shared_expert_gate.empty());
        EXPECT_EQ(l.ffn.experts.size(), size_t(moe.config.n_experts));
    }
}

}  // namespace
}  // namespace nextn
