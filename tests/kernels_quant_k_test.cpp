// The K-quant encoders (kernels/quant_k.h) against the GGUF decoder (formats/dequant.cpp, checked
// against the fixture files), for Q4_K, Q5_K, Q6_K and Q2_K: every value decodes to within half its sub-block's step (a scale or
// min past its 6 bits would spill into its neighbours' bits and break that), Q6_K's int8 scales are
// never negative, and the steps are tight enough that normal data keeps its usual 4- and 6-bit
// error (relative RMS 0.1, 0.05 and 0.025).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/half.h"
#include "formats/dequant.h"
#include "kernel_test_helpers.h"
#include "kernels/quant_k.h"

namespace nextn {
namespace {

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

// Q4_K and Q5_K: the same scales and mins, 15 or 31 steps.
void expect_affine_k_within_half_a_step(bool five, double max_relative_rms) {
    const DType dtype = five ? DType::Q5_K : DType::Q4_K;
    const int64_t block_bytes = five ? kQ5KBlockBytes : kQ4KBlockBytes;
    const int64_t rows = 10, cols = 1024;
    const std::vector<float> x = test_values(rows, cols, 1);
    std::vector<uint8_t> blocks(size_t(rows * cols / 256 * block_bytes));
    for (int64_t r = 0; r < rows; ++r)
        (five ? quantize_row_q5_k : quantize_row_q4_k)(x.data() + r * cols, cols,
                                                       blocks.data() + size_t(r * cols / 256 * block_bytes));
    std::vector<float> v(x.size());
    dequantize_to_f32(test::tensor_over("k", dtype, rows, cols, blocks), v.data());
    double err2 = 0, sum2 = 0;
    for (size_t b = 0; b < blocks.size() / size_t(block_bytes); ++b) {
        uint8_t codes[256], sc[8], mn[8];
        uint16_t d_h, dmin_h;
        (five ? q5_k_block_codes : q4_k_block_codes)(blocks.data() + b * size_t(block_bytes), codes, sc, mn, &d_h, &dmin_h);
        const float d = f16_to_f32(d_h), dmin = f16_to_f32(dmin_h);
        for (int j = 0; j < 8; ++j) {
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
    EXPECT_LT(std::sqrt(err2 / sum2), max_relative_rms);
}

TEST(KernelsQuantK, Q4KValuesWithinHalfAStep) { expect_affine_k_within_half_a_step(false, 0.1); }

// 31 steps: about half Q4_K's error.
TEST(KernelsQuantK, Q5KValuesWithinHalfAStep) { expect_affine_k_within_half_a_step(true, 0.05); }

TEST(KernelsQuantK, Q6KValuesWithinHalfAStep) {
    const int64_t rows = 10, cols = 1024;
    const std::vector<float> x = test_values(rows, cols, 2);
    std::vector<uint8_t> blocks(size_t(rows * cols / 256 * kQ6KBlockBytes));
    for (int64_t r = 0; r < rows; ++r)
        quantize_row_q6_k(x.data() + r * cols, cols, blocks.data() + size_t(r * cols / 256 * kQ6KBlockBytes));
    std::vector<float> v(x.size());
    dequantize_to_f32(test::tensor_over("k", DType::Q6_K, rows, cols, blocks), v.data());
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

// Q2_K: 3 steps per 16 values, a 4-bit scale and min each (q2_k_block_codes reads them back).
TEST(KernelsQuantK, Q2KValuesWithinHalfAStep) {
    const int64_t rows = 10, cols = 1024;
    const std::vector<float> x = test_values(rows, cols, 5);
    std::vector<uint8_t> blocks(size_t(rows * cols / 256 * kQ2KBlockBytes));
    for (int64_t r = 0; r < rows; ++r)
        quantize_row_q2_k(x.data() + r * cols, cols, blocks.data() + size_t(r * cols / 256 * kQ2KBlockBytes));
    std::vector<float> v(x.size());
    dequantize_to_f32(test::tensor_over("k", DType::Q2_K, rows, cols, blocks), v.data());
    double err2 = 0, sum2 = 0;
    for (size_t b = 0; b < blocks.size() / kQ2KBlockBytes; ++b) {
        uint8_t codes[256], scales[16];
        uint16_t d_h, dmin_h;
        q2_k_block_codes(blocks.data() + b * kQ2KBlockBytes, codes, scales, &d_h, &dmin_h);
        const float d = f16_to_f32(d_h), dmin = f16_to_f32(dmin_h);
        for (int j = 0; j < 16; ++j) {
            const float step = d * float(scales[j] & 15);
            for (int l = 0; l < 16; ++l) {
                const size_t i = b * 256 + size_t(16 * j + l);
                ASSERT_EQ(step * float(codes[16 * j + l]) - dmin * float(scales[j] >> 4), v[i]) << i;  // the decoder's value
                ASSERT_LE(std::fabs(x[i] - v[i]), 0.5f * step * 1.0001f + 1e-6f * std::fabs(x[i])) << i << " " << x[i];
                err2 += double(x[i] - v[i]) * double(x[i] - v[i]);
                sum2 += double(x[i]) * double(x[i]);
            }
        }
    }
    for (int i = 512; i < 768; ++i) EXPECT_EQ(0.0f, v[size_t(i)]) << i;
    // Four levels over each 16 values' range (about 3.5 standard deviations of normal data): a step
    // of about 1.2 of them, and an error of about a third.
    EXPECT_LT(std::sqrt(err2 / sum2), 0.45);
}

// The smallest f16 at or above v (0 <= v <= 65504), found by bisecting the positive halves, whose
// bit patterns order as their values: "rounded up" in quant_k.h's sense, without f32_to_f16.
uint16_t smallest_half_at_least(float v) {
    uint32_t lo = 0, hi = 0x7bff;
    while (lo < hi) {
        const uint32_t mid = (lo + hi) / 2;
        if (f16_to_f32(uint16_t(mid)) >= v)
            hi = mid;
        else
            lo = mid + 1;
    }
    return uint16_t(lo);
}

// The smallest k >= 0 with k * step >= need, counting up ("rounded up" for an integer scale or
// min); 0 when nothing needs covering.
int smallest_count_covering(float need, float step) {
    if (need <= 0.0f || step <= 0.0f) return 0;
    int k = 0;
    while (float(k) * step < need && k < 1000) ++k;
    return k;
}

// Rows for the scale checks: test_values' rows, then a row whose first super-block's largest need
// is exactly kTop * 63 (Q6_K: 31 * 127) times 2^-7, so the rounded-up d is exactly 2^-7 (f16
// 0x2000) and not the half above it, and a second super-block of small values with one negative
// sub-block (a min of its own).
std::vector<float> scale_test_values(float top_need) {
    std::vector<float> x = test_values(10, 1024, 3);
    std::vector<float> exact(1024, 0.0f);
    for (int i = 0; i < 256; ++i) exact[size_t(i)] = float(1 + i % 7) * 0.01f;
    exact[100] = top_need * std::ldexp(1.0f, -7);  // the largest value, all values positive
    for (int i = 256; i < 1024; ++i)
        exact[size_t(i)] = 0.001f * float(i % 13) - (i < 288 ? 0.02f : 0.0f);
    x.insert(x.end(), exact.begin(), exact.end());
    return x;
}

// Q4_K / Q5_K scales by quant_k.h's rules, each "rounded up": dmin the smallest f16 >= (largest
// sub-block need below zero) / 63; m_j the smallest count of dmin covering sub-block j's need
// (-min, 0 if none below zero); d the smallest f16 >= (largest span) / (kTop * 63), a span being
// max + dmin * m_j; sc_j the smallest count of kTop * d covering span j. So every value lies in
// the codes' range (no clipping) and no smaller scale would have done.
void expect_affine_k_scales_rounded_up(bool five) {
    const int kTop = five ? 31 : 15;
    const int64_t block_bytes = five ? kQ5KBlockBytes : kQ4KBlockBytes;
    const std::vector<float> x = scale_test_values(float(kTop) * 63.0f);
    const int64_t blocks = int64_t(x.size()) / 256;
    std::vector<uint8_t> encoded(size_t(blocks * block_bytes));
    (five ? quantize_row_q5_k : quantize_row_q4_k)(x.data(), int64_t(x.size()), encoded.data());
    for (int64_t b = 0; b < blocks; ++b) {
        SCOPED_TRACE("super-block " + std::to_string(b));
        uint8_t codes[256], sc[8], mn[8];
        uint16_t d_h, dmin_h;
        (five ? q5_k_block_codes : q4_k_block_codes)(encoded.data() + b * block_bytes, codes, sc,
                                                     mn, &d_h, &dmin_h);
        const float* v = x.data() + b * 256;
        float low[8], high[8], max_low = 0.0f;
        for (int j = 0; j < 8; ++j) {
            low[j] = std::max(0.0f, -*std::min_element(v + 32 * j, v + 32 * j + 32));
            high[j] = *std::max_element(v + 32 * j, v + 32 * j + 32);
            max_low = std::max(max_low, low[j]);
        }
        ASSERT_EQ(smallest_half_at_least(max_low / 63.0f), dmin_h);
        const float dmin = f16_to_f32(dmin_h);
        float span[8], max_span = 0.0f;
        for (int j = 0; j < 8; ++j) {
            ASSERT_EQ(smallest_count_covering(low[j], dmin), mn[j]) << "min of sub-block " << j;
            span[j] = high[j] + dmin * float(mn[j]);
            max_span = std::max(max_span, span[j]);
        }
        ASSERT_EQ(smallest_half_at_least(max_span / (float(kTop) * 63.0f)), d_h);
        const float d = f16_to_f32(d_h);
        for (int j = 0; j < 8; ++j)
            ASSERT_EQ(smallest_count_covering(span[j], float(kTop) * d), sc[j])
                << "scale of sub-block " << j;
    }
    // The exact row's first super-block: d is 2^-7 itself.
    uint16_t d_exact;
    std::memcpy(&d_exact, encoded.data() + 40 * block_bytes, 2);
    EXPECT_EQ(0x2000, d_exact);
}

TEST(KernelsQuantK, Q4KScalesAreTheNeedsRoundedUp) { expect_affine_k_scales_rounded_up(false); }
TEST(KernelsQuantK, Q5KScalesAreTheNeedsRoundedUp) { expect_affine_k_scales_rounded_up(true); }

// Q6_K by quant_k.h's rule: d the smallest f16 >= (largest sub-block max|x|) / (31 * 127), sc_j
// the smallest count of 31 * d covering sub-block j's max|x| (so no value clips at code 0 or 63).
TEST(KernelsQuantK, Q6KScalesAreTheNeedsRoundedUp) {
    const std::vector<float> x = scale_test_values(31.0f * 127.0f);
    const int64_t blocks = int64_t(x.size()) / 256;
    std::vector<uint8_t> encoded(size_t(blocks * kQ6KBlockBytes));
    quantize_row_q6_k(x.data(), int64_t(x.size()), encoded.data());
    for (int64_t b = 0; b < blocks; ++b) {
        SCOPED_TRACE("super-block " + std::to_string(b));
        uint8_t codes[256];
        int8_t sc[16];
        uint16_t d_h;
        q6_k_block_codes(encoded.data() + b * kQ6KBlockBytes, codes, sc, &d_h);
        const float* v = x.data() + b * 256;
        float amax[16], max_amax = 0.0f;
        for (int j = 0; j < 16; ++j) {
            amax[j] = 0.0f;
            for (int l = 0; l < 16; ++l) amax[j] = std::max(amax[j], std::fabs(v[16 * j + l]));
            max_amax = std::max(max_amax, amax[j]);
        }
        ASSERT_EQ(smallest_half_at_least(max_amax / (31.0f * 127.0f)), d_h);
        const float d = f16_to_f32(d_h);
        for (int j = 0; j < 16; ++j)
            ASSERT_EQ(smallest_count_covering(amax[j], 31.0f * d), sc[j])
                << "scale of sub-block " << j;
    }
    uint16_t d_exact;
    std::memcpy(&d_exact, encoded.data() + 40 * kQ6KBlockBytes + 208, 2);
    EXPECT_EQ(0x2000, d_exact);
}

// The encoders write every byte of their blocks ("out holds n / 256 blocks"): encoding into a
// buffer full of 0xa5 gives the bytes encoding into a zeroed one does (codes are OR-ed together
// bit field by bit field, so bytes not cleared first would keep the old bits).
TEST(KernelsQuantK, EncodersWriteEveryByteOfTheirBlocks) {
    const std::vector<float> x = test_values(2, 1024, 4);
    const auto encoders = {std::pair{&quantize_row_q4_k, kQ4KBlockBytes},
                           std::pair{&quantize_row_q5_k, kQ5KBlockBytes},
                           std::pair{&quantize_row_q6_k, kQ6KBlockBytes},
                           std::pair{&quantize_row_q2_k, kQ2KBlockBytes}};
    for (auto [encode, block_bytes] : encoders) {
        SCOPED_TRACE(std::to_string(block_bytes) + "-byte blocks");
        const size_t bytes = size_t(int64_t(x.size()) / 256 * block_bytes);
        std::vector<uint8_t> clean(bytes, 0), dirty(bytes, 0xa5);
        encode(x.data(), int64_t(x.size()), clean.data());
        encode(x.data(), int64_t(x.size()), dirty.data());
        EXPECT_EQ(clean, dirty);
    }
}

}  // namespace
}  // namespace nextn
