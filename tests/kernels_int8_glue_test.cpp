// The int8-dot glue's checks and sizing (kernels/int8_dot.cpp), apart from the values and
// products (kernels_int8_test): which types and tensors it refuses, the row size of ragged
// columns, and the room the activation buffers keep so that decode does not reallocate.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "error_of.h"
#include "kernel_test_helpers.h"
#include "kernels/int8_dot.h"
#include "kernels/kernels.h"

namespace nextn {
namespace {

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// int8_dot.h: the FX types and Q6_KX are "only made from a checkpoint's codes": asked for
// their block source they fail naming the caller; Q8_0X's source is Q8_0.
TEST(KernelsInt8Glue, BlockSourceRefusesTypesWithoutOne) {
    EXPECT_EQ(int8_dot_block_source(WType::Q8_0X, "draft"), WType::Q8_0);
    for (const WType t : {WType::Q6_KX, WType::Q4_1FX, WType::Q8_1FX}) {
        const std::string message = test::error_of([&] { int8_dot_block_source(t, "draft"); });
        EXPECT_TRUE(contains(message, "draft: ") && contains(message, "checkpoint's codes"))
            << wtype_name(t) << ": " << message;
    }
}

// int8_dot.h: "0 when cols % 32 != 0": 40 columns are not whole 32-value blocks; 64 are.
TEST(KernelsInt8Glue, RowBytesAreZeroForPartBlocks) {
    EXPECT_EQ(int8_dot_row_bytes(WType::Q8_0X, 40), 0u);
    EXPECT_EQ(int8_dot_row_bytes(WType::Q4_0X, 40), 0u);
    EXPECT_GT(int8_dot_row_bytes(WType::Q8_0X, 64), 0u);
}

// repack_for_int8_dot(w, target) requires int8_dot_source_type(target) == w.type: a Q4_0
// matrix cannot become Q8_0X (its nibbles are not Q8_0's bytes).
TEST(KernelsInt8Glue, RepackRefusesATargetOfAnotherSource) {
    const std::vector<float> v(64, 0.5f);
    const WeightMatrix q4 = make_weight_f32(v.data(), 2, 32, WType::Q4_0);
    ASSERT_EQ(q4.type, WType::Q4_0);
    const std::string message = test::error_of([&] { repack_for_int8_dot(q4, WType::Q8_0X); });
    EXPECT_TRUE(contains(message, "cannot become")) << message;
}

// repack_q6_k_for_int8_dot takes only a GGUF Q6_K tensor of exactly rows * cols / 256 * 210
// bytes (one 210-byte super-block per 256 values): 210 bytes of another dtype, or 209 bytes of
// Q6_K, are not one, and it returns false; 210 zero bytes of Q6_K are one (all values 0).
TEST(KernelsInt8Glue, Q6_KRepackTakesOnlyWholeQ6_KTensors) {
    const std::vector<uint8_t> whole(210, 0), short_by_one(209, 0);
    WeightMatrix out;
    EXPECT_FALSE(
        repack_q6_k_for_int8_dot(test::tensor_over("t", DType::Q8_0, 1, 256, whole), 1, 256, out));
    EXPECT_FALSE(repack_q6_k_for_int8_dot(test::tensor_over("t", DType::Q6_K, 1, 256, short_by_one),
                                          1, 256, out));
    ASSERT_TRUE(
        repack_q6_k_for_int8_dot(test::tensor_over("t", DType::Q6_K, 1, 256, whole), 1, 256, out));
    EXPECT_EQ(out.type, WType::Q6_KX);
    std::vector<float> row(256, 1.0f);
    int8_dot_row_f32(out, 0, row.data());
    for (float v : row) EXPECT_EQ(v, 0.0f);
}

// resize_columns keeps room for at least 16 columns (a verify batch; int8_dot.cpp
// kMinColumnsHeld) from the first call: sizing for 1 column and then for 16 reuses the same
// buffers, so the decode loop does not allocate when a verify first arrives.
TEST(KernelsInt8Glue, ActivationBuffersHoldSixteenColumnsFromTheStart) {
    QuantizedColumns q;
    resize_columns(1, 64, q);
    const int8_t* codes = q.codes.data();
    const float* scales = q.scales.data();
    EXPECT_GE(q.scales.size(), size_t(16 * q.chunks * kI8ChunkBlocks));
    resize_columns(16, 64, q);
    EXPECT_EQ(q.n, 16);
    EXPECT_EQ(q.codes.data(), codes);
    EXPECT_EQ(q.scales.data(), scales);
}

}  // namespace
}  // namespace nextn
