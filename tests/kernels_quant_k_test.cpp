// The K-quant encoders (kernels/quant_k.h) against the GGUF decoder (formats/dequant.cpp, checked
// against the fixture files): every value decodes to within half its sub-block's step, the
// scales stay in their 6-bit (Q4_K) and 7-bit positive (Q6_K) ranges, and the steps are tight
// enough that normal data keeps its usual 4- and 6-bit error (relative RMS 0.1 and 0.025).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "formats/dequant.h"
#include "kernels/quant_k.h"

namespace nextn {
namespace {

RawTensor tensor_over(DType dtype, int64_t rows, int64_t cols, const std::vector<uint8_t>& bytes) {
    RawTensor t;
    t.name = "k";
    t.file = "test";
    t.dtype = dtype;
    t.shape = {rows, cols};
    t.data = bytes.data();
    t.nbytes = bytes.size();
    return t;
}

// Rows of normal values at scales 1e-3..10, and special super-blocks: all positive, all
// negative, all zero, one spike among zeros.
std::vector<float> test_values(int64_t rows, int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(size_t(rows * cols));
    for (int64_t r = 0; r < rows; ++r) {
        const float scale = std::pow(10.0f, float(r % 5) - 3.0f);
        for (int64_t c = 0; c < cols; ++c) x[size_t(r * cols + c)] = scale * normal(rng);
    }
    float* special = x.data();  // row 0's first four super-blocks
    for (int i = 0; i < 256; ++i) {
        special[i] = std::fabs(special[i]) + 0.5f;
        special[256 + i] = -std::fabs(special[256 + i]) - 0.5f;
        special[512 + i] = 0.0f;
        special[768 + i] = i == 77 ? 3.0f : 0.0f;
    }
    return x;
}

TEST(KernelsQuantK, Q4KValuesWithinHalfAStep) {
    const int64_t rows = 10, cols = 1024;
    const std::vector<float> x = test_values(rows, cols, 1);
    std::vector<uint8_t> blocks(size_t(rows * cols / 256 * kQ4KBlockBytes));
    for (int64_t r = 0; r < rows; ++r)
        quantize_row_q4_k(x.data() + r * cols, cols, blocks.data() + size_t(r * cols / 256 * kQ4KBlockBytes));
    std::vector<float> v(x.size());
    dequantize_to_f32(tensor_over(DType::Q4_K, rows, cols, blocks), v.data());
    double err2 = 0, sum2 = 0;
    for (size_t b = 0; b < blocks.size() / kQ4KBlockBytes; ++b) {
        uint8_t codes[256], sc[8], mn[8];
        uint16_t d_h, dmin_h;
        q4_k_block_codes(blocks.data() + b * kQ4KBlockBytes, codes, sc, mn, &d_h, &dmin_h);
        const float d = f16_to_f32(d_h), dmin = f16_to_f32(dmin_h);
        for (int j = 0; j < 8; ++j) {
            ASSERT_LE(sc[j], 63);
            ASSERT_LE(mn[j], 63);
            const float step = d * float(sc[j]);
            for (int l = 0; l < 32; ++l) {
                const size_t i = b * 256 + size_t(32 * j + l);
                ASSERT_EQ(step * float(codes[32 * j + l]) - dmin * float(mn[j]), v[i]) << i;  // the decoder's value
                ASSERT_LE(std::fabs(x[i] - v[i]), 0.5f * step * 1.0001f + 1e-6f * std::fabs(x[i])) << i << " " << x[i];
                err2 += double(x[i] - v[i]) * double(x[i] - v[i]);
                sum2 += double(x[i]) * double(x[i]);
            }
        }
    }
    // The zero super-block stays zero; the spike's sub-block keeps its spike within half a step.
    for (int i = 512; i < 768; ++i) EXPECT_EQ(0.0f, v[size_t(i)]) << i;
    // Relative RMS over the rows of each scale (row 0 included: its error is its step's).
    EXPECT_LT(std::sqrt(err2 / sum2), 0.1);
}

TEST(KernelsQuantK, Q6KValuesWithinHalfAStep) {
    const int64_t rows = 10, cols = 1024;
    const std::vector<float> x = test_values(rows, cols, 2);
    std::vector<uint8_t> blocks(size_t(rows * cols / 256 * kQ6KBlockBytes));
    for (int64_t r = 0; r < rows; ++r)
        quantize_row_q6_k(x.data() + r * cols, cols, blocks.data() + size_t(r * cols / 256 * kQ6KBlockBytes));
    std::vector<float> v(x.size());
    dequantize_to_f32(tensor_over(DType::Q6_K, rows, cols, blocks), v.data());
    double err2 = 0, sum2 = 0;
    for (size_t b = 0; b < blocks.size() / kQ6KBlockBytes; ++b) {
        uint8_t codes[256];
        int8_t sc[16];
        uint16_t d_h;
        q6_k_block_codes(blocks.data() + b * kQ6KBlockBytes, codes, sc, &d_h);
        const float d = f16_to_f32(d_h);
        for (int j = 0; j < 16; ++j) {
            ASSERT_GE(sc[j], 0);
            const float step = d * float(sc[j]);
            for (int l = 0; l < 16; ++l) {
                const size_t i = b * 256 + size_t(16 * j + l);
                ASSERT_LE(codes[16 * j + l], 63);
                ASSERT_EQ(step * float(int(codes[16 * j + l]) - 32), v[i]) << i;  // the decoder's value
                ASSERT_LE(std::fabs(x[i] - v[i]), 0.5f * step * 1.0001f + 1e-6f * std::fabs(x[i])) << i << " " << x[i];
                err2 += double(x[i] - v[i]) * double(x[i] - v[i]);
                sum2 += double(x[i]) * double(x[i]);
            }
        }
    }
    for (int i = 512; i < 768; ++i) EXPECT_EQ(0.0f, v[size_t(i)]) << i;
    EXPECT_LT(std::sqrt(err2 / sum2), 0.025);
}

}  // namespace
}  // namespace nextn
