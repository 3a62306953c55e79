// GGUF IQ4_NL, MXFP4, IQ4_XS, Q3_K and Q2_K in 16-row groups (IQ4_NLR, MXFP4R, IQ4_XSR: Q4_0R's
// layout, each nibble an index into the type's table; Q3_KR: Q6_KR's scales and arithmetic with
// 3-bit codes; Q2_KR: 2-bit codes, a scale and a min per 16 values; kernels/row_groups.h), made
// from random blocks of the file types. They hold exactly the file's values. The scalar reference
// gives, bit for bit, what it gives for the same values held as Q8_0R (IQ4_NL and MXFP4 blocks are
// Q8_0 blocks, formats/dequant.h) or as Q6_KR (Q3_K's as the Q6_K blocks with the same values),
// whose references kernels_row_groups_test and kernels_k_quant_rows_test hold to the exact sum;
// IQ4_XS and Q2_K (no such twins) are held to the exact sum themselves. Every int8 table (AVX-512,
// AVX-VNNI, AVX2; NEON and dot product on aarch64) equals the reference bit for bit at widths 1..16
// and a prefill's, 1 and 2 threads, on row ranges inside groups, and the AVX-512 kernel with and
// without GFNI and with each way of prefetching.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "formats/dequant.h"
#include "formats/raw_tensor.h"
#include "kernel_test_helpers.h"
#include "kernels/int8_dot.h"
#include "kernels/kernels.h"
#include "kernels/quant.h"
#include "kernels/row_groups.h"
#include "row_group_checks.h"

namespace nextn {
namespace {

using test::matmul_on;
using test::random_normal;

// The row-group tests' shapes (row_group_checks.h): IQ4_NL and MXFP4 in whole 32-value blocks,
// IQ4_XS, Q3_K and Q2_K in 256-value super-blocks.
using test::Shape;
using test::kSuperBlockShapes;
const std::vector<Shape>& kShapes = test::kBlockShapes;
size_t block_bytes_of(DType type) {
    return type == DType::IQ4_NL  ? 18
           : type == DType::MXFP4 ? 17
           : type == DType::Q3_K  ? 110
           : type == DType::Q2_K  ? 84
                                  : 136;
}
int64_t block_values_of(DType type) {
    return type == DType::IQ4_XS || type == DType::Q3_K || type == DType::Q2_K ? 256 : 32;
}
const std::vector<Shape>& shapes_for(DType type) {
    return block_values_of(type) == 256 ? kSuperBlockShapes : kShapes;
}

// A GGUF IQ4_NL, MXFP4, IQ4_XS, Q3_K or Q2_K tensor of random blocks: every code bit (and the 4-
// and 6-bit scales and mins) random, the f16 scale d (Q2_K: and dmin) a random normal value
// (either sign), MXFP4's
// E8M0 byte 112..135 (scales 2^-16..2^7), one block in nine all zero with byte 0 (as ggml writes
// an all-zero block).
struct RandomTensor {
    std::vector<uint8_t> bytes;
    RawTensor t;
};
RandomTensor random_tensor(DType type, Shape s, uint32_t seed) {
    const size_t block_bytes = block_bytes_of(type),
                 blocks = size_t(s.rows * s.cols / block_values_of(type));
    RandomTensor r;
    r.bytes.resize(blocks * block_bytes);
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 0.02f);
    for (size_t b = 0; b < blocks; ++b) {
        uint8_t* block = r.bytes.data() + b * block_bytes;
        for (size_t i = 0; i < block_bytes; ++i) block[i] = uint8_t(rng());
        if (type == DType::Q2_K) {
            const uint16_t d[2] = {f32_to_f16(normal(rng)), f32_to_f16(normal(rng))};
            std::memcpy(block + 80, d, 4);
        } else if (type != DType::MXFP4) {
            const uint16_t d = f32_to_f16(normal(rng));
            std::memcpy(block + (type == DType::Q3_K ? 108 : 0), &d, 2);
        } else if (b % 9 == 4) {
            std::memset(block, 0, block_bytes);
        } else {
            block[0] = uint8_t(112 + rng() % 24);
        }
    }
    r.t.name = std::string("random ") + dtype_name(type);
    r.t.file = "memory";
    r.t.dtype = type;
    r.t.shape = {s.rows, s.cols};
    r.t.data = r.bytes.data();
    r.t.nbytes = r.bytes.size();
    return r;
}

WeightMatrix table_rows(const RawTensor& t) {
    WeightMatrix w;
    const bool made =
        t.dtype == DType::Q3_K   ? repack_q3_k_as_row_groups(t, t.shape[0], t.shape[1], w)
        : t.dtype == DType::Q2_K ? repack_q2_k_as_row_groups(t, t.shape[0], t.shape[1], w)
                                 : repack_table_codes_as_row_groups(t, t.shape[0], t.shape[1], w);
    if (!made) throw Error("no row groups for " + t.name);
    return w;
}

const DType kTypes[] = {DType::IQ4_NL, DType::MXFP4, DType::IQ4_XS, DType::Q3_K, DType::Q2_K};

TEST(KernelsGgufRows, HoldEveryValueOfTheFile) {
    for (DType type : kTypes)
        for (Shape s : shapes_for(type)) {
            SCOPED_TRACE(std::string(dtype_name(type)) + " " + std::to_string(s.rows) + "x" +
                         std::to_string(s.cols));
            const RandomTensor r = random_tensor(type, s, 1);
            const WeightMatrix w = table_rows(r.t);
            EXPECT_EQ(w.type, type == DType::IQ4_NL  ? WType::IQ4_NLR
                              : type == DType::MXFP4 ? WType::MXFP4R
                              : type == DType::Q3_K  ? WType::Q3_KR
                              : type == DType::Q2_K  ? WType::Q2_KR
                                                     : WType::IQ4_XSR);
            EXPECT_EQ(w.nbytes(), wtype_matrix_bytes(w.type, s.rows, s.cols));
            const size_t padded_rows = size_t(row_groups(s.rows) * kRowGroupRows);
            if (type == DType::Q3_K)  // the file's 110 bytes a super-block, its 12 scale bytes as
                                      // 16; whole pairs
                EXPECT_EQ(w.nbytes(), padded_rows * size_t((s.cols / 256 + 1) / 2 * 2) * 114);
            else if (type == DType::Q2_K)  // the file's 84 bytes a super-block
                EXPECT_EQ(w.nbytes(), padded_rows * size_t(s.cols / 256) * 84);
            else  // Q4_0R's bytes; IQ4_XSR's f32 scales 2 bytes more a block and row
                EXPECT_EQ(w.nbytes(),
                          wtype_matrix_bytes(WType::Q4_0R, s.rows, s.cols) +
                              (type == DType::IQ4_XS ? padded_rows * size_t(s.cols / 32) * 2 : 0));
            std::vector<float> want(size_t(s.cols)), got(size_t(s.cols));
            for (int64_t row = 0; row < s.rows; ++row) {
                dequantize_rows_to_f32(r.t, row, 1, want.data());
                weight_row_f32(w, row, got.data());
                ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)))
                    << "row " << row;
            }
        }
}

TEST(KernelsGgufRows, OnlyTensorsTheyHoldExactlyBecomeThem) {
    RandomTensor r = random_tensor(DType::MXFP4, {16, 64}, 2);
    WeightMatrix w;
    r.bytes[17] = 103;  // the second block's scale 2^-25: no f16
    EXPECT_FALSE(repack_table_codes_as_row_groups(r.t, 16, 64, w));
    r.bytes[17] = 144;  // 2^16
    EXPECT_FALSE(repack_table_codes_as_row_groups(r.t, 16, 64, w));
    std::memset(r.bytes.data() + 17, 0, 17);  // all zero: fine whatever its scale byte
    r.bytes[17] = 7;
    EXPECT_TRUE(repack_table_codes_as_row_groups(r.t, 16, 64, w));
    EXPECT_FALSE(repack_table_codes_as_row_groups(r.t, 16, 32, w))
        << "a shape the tensor does not have";
    RandomTensor q = random_tensor(DType::IQ4_NL, {16, 64}, 3);
    q.t.dtype = DType::Q4_0;  // the same bytes, another type
    EXPECT_FALSE(repack_table_codes_as_row_groups(q.t, 16, 64, w));
    EXPECT_TRUE(w.empty() || w.type == WType::MXFP4R);
}

// The reference on the table types gives Q8_0R's bits for the same values: its sums are the same
// integers (code + 128 against the activation codes, less 128 x their sum) under the same scales.
TEST(KernelsGgufRows, ReferenceEqualsQ8_0RsOnTheSameValues) {
    for (DType type : {DType::IQ4_NL, DType::MXFP4})
        for (Shape s : shapes_for(type)) {
            const RandomTensor r = random_tensor(type, s, 4);
            const WeightMatrix w = table_rows(r.t);
            const WeightMatrix q8 =
                make_weight(r.t, s.rows, s.cols, WType::Q8_0, {nullptr, true, {.q8_0 = true}});
            ASSERT_EQ(q8.type, WType::Q8_0R);
            const std::vector<float> x = random_normal(size_t(16 * s.cols), 5);
            const std::vector<float> a = matmul_on(reference_kernels(), w, x, 16, 1);
            const std::vector<float> b = matmul_on(reference_kernels(), q8, x, 16, 1);
            ASSERT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)))
                << dtype_name(type) << " " << s.rows << "x" << s.cols;
        }
}

// Q3_KR's reference gives Q6_KR's bits for the Q6_K blocks with the same values (codes + 32,
// scales - 32: q3_k_block_as_q6_k): the same integer sums and scales.
TEST(KernelsGgufRows, Q3KReferenceEqualsQ6KRsOnTheSameValues) {
    for (Shape s : kSuperBlockShapes) {
        const RandomTensor r = random_tensor(DType::Q3_K, s, 16);
        std::vector<uint8_t> q6(r.bytes.size() / 110 * 210);
        for (size_t b = 0; b < r.bytes.size() / 110; ++b)
            q3_k_block_as_q6_k(r.bytes.data() + b * 110, q6.data() + b * 210);
        RawTensor t6 = r.t;
        t6.dtype = DType::Q6_K;
        t6.data = q6.data();
        t6.nbytes = q6.size();
        WeightMatrix w6;
        ASSERT_TRUE(repack_q6_k_as_row_groups(t6, s.rows, s.cols, w6));
        const WeightMatrix w3 = table_rows(r.t);
        const std::vector<float> x = random_normal(size_t(16 * s.cols), 17);
        const std::vector<float> a = matmul_on(reference_kernels(), w3, x, 16, 1);
        const std::vector<float> b = matmul_on(reference_kernels(), w6, x, 16, 1);
        ASSERT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)))
            << s.rows << "x" << s.cols;
    }
}

// With the K-quants chunked (NEXTN_Q6_K_LAYOUT=chunked) Q3_K is held as the Q6_K tensor with its
// values, chunked (Q6_KX): the same values as the file's.
TEST(KernelsGgufRows, Q3KChunkedAsQ6KHoldsEveryValue) {
    for (Shape s : kSuperBlockShapes) {
        const RandomTensor r = random_tensor(DType::Q3_K, s, 18);
        WeightMatrix w;
        ASSERT_TRUE(repack_k_quant_tensor(r.t, s.rows, s.cols, WType::Q6_KX, w));
        EXPECT_EQ(w.type, WType::Q6_KX);
        std::vector<float> want(size_t(s.cols)), got(size_t(s.cols));
        for (int64_t row = 0; row < s.rows; ++row) {
            dequantize_rows_to_f32(r.t, row, 1, want.data());
            weight_row_f32(w, row, got.data());
            ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float))) << s.rows << "x" << s.cols << " row " << row;
        }
    }
}

// IQ4_XS's scales are no f16, so it has no Q8_0 form: its reference is held to the exact sum of
// its values times the activations' (within the rounding of a product and an fma a block). It has
// no second form to compare with, so the helper's comparison with another layout is with itself.
TEST(KernelsGgufRows, Iq4XsReferenceNearTheExactSum) {
    for (Shape s : kSuperBlockShapes) {
        SCOPED_TRACE(std::to_string(s.rows) + "x" + std::to_string(s.cols));
        const RandomTensor r = random_tensor(DType::IQ4_XS, s, 15);
        const WeightMatrix w = table_rows(r.t);
        test::expect_reference_near_exact_sum(w, w, w, 3, 16, 4e-7);
    }
}

// Q2_K has no twin either (its mins make it no Q6_K, its 16-value groups no Q4_K): its reference
// is held to the exact sum of the file's values (dequantize_rows_to_f32, ggml's bits) times the
// activations', within a few roundings of both of its terms, (d * sc) * q * x and dmin * mn * x,
// which it forms apart.
TEST(KernelsGgufRows, Q2KReferenceNearTheExactSum) {
    constexpr int64_t n = 3;
    for (Shape s : kSuperBlockShapes) {
        SCOPED_TRACE(std::to_string(s.rows) + "x" + std::to_string(s.cols));
        const RandomTensor r = random_tensor(DType::Q2_K, s, 18);
        const WeightMatrix w = table_rows(r.t);
        const std::vector<float> x = random_normal(size_t(n * s.cols), 19);
        QuantizedColumns qx;
        resize_columns(n, s.cols, qx);
        ref::quantize_columns(x.data(), s.cols, qx, 0, n);
        std::vector<float> got(size_t(n * s.rows));
        ref::gemm_i8_rows(w, qx, got.data(), s.rows, 0, s.rows);
        std::vector<float> values(size_t(s.cols));
        for (int64_t row = 0; row < s.rows; ++row) {
            dequantize_rows_to_f32(r.t, row, 1, values.data());
            for (int64_t j = 0; j < n; ++j) {
                double exact = 0, magnitude = 0;
                for (int64_t c = 0; c < s.cols; ++c) {
                    const int64_t b = c / 32, e = c % 32;
                    const int64_t at = (b / 16) * 512 + (e / 4) * 64 + 4 * (b % 16) + e % 4;  // chunk layout
                    const double xv = double(qx.codes_of(j)[at]) * qx.scales_of(j)[b];
                    const uint8_t* block = r.bytes.data() + size_t((row * s.cols + c) / 256) * 84;
                    const uint8_t scale = block[(c % 256) / 16];
                    const double d = f16_to_f32(uint16_t(block[80] | block[81] << 8)),
                                 dmin = f16_to_f32(uint16_t(block[82] | block[83] << 8));
                    exact += double(values[size_t(c)]) * xv;
                    magnitude +=
                        (std::fabs(d * (scale & 15) * 3) + std::fabs(dmin * (scale >> 4))) *
                        std::fabs(xv);
                }
                EXPECT_NEAR(exact, got[size_t(j * s.rows + row)],
                            4e-7 * magnitude * double(s.cols / 32 + 2))
                    << "row " << row << " col " << j;
            }
        }
    }
}

TEST(KernelsGgufRows, EveryTableEqualsReferenceBitwise) {
    for (DType type : kTypes)
        for (Shape s : shapes_for(type)) {
            const WeightMatrix w = table_rows(random_tensor(type, s, 6).t);
            test::expect_every_table_bitwise_for_every_width(w, 7);
            test::expect_every_table_bitwise_at_prefill_width(
                w, 8);  // the cursor's passes, codes unpacked once
        }
}

// Every table index in every row (codes 1..241 for IQ4_NL's table) against activations at +-127:
// the integer sums at their largest stay exact.
TEST(KernelsGgufRows, ExtremeCodesEqualReference) {
    const Shape s{21, 512};
    for (DType type : kTypes) {
        RandomTensor r = random_tensor(type, s, 9);
        const size_t block_bytes = block_bytes_of(type);
        const int64_t block_values = block_values_of(type);
        for (size_t b = 0; b < r.bytes.size() / block_bytes; ++b) {
            uint8_t* block = r.bytes.data() + b * block_bytes;
            if (type == DType::Q2_K) {
                // Row 3k: every code 3; 3k + 1: every code 0; 3k + 2: random; every scale and min
                // 15 (the largest).
                const int row = int(b / size_t(s.cols / 256));
                if (row % 3 < 2) std::memset(block + 16, row % 3 == 0 ? 0xFF : 0x00, 64);
                std::memset(block, 0xFF, 16);
                continue;
            }
            if (type == DType::Q3_K) {
                // Row 3k: every code 7 (low bits 3, high bit set); 3k + 1: every code 0; 3k + 2:
                // random; every scale 0 - 32 (the largest magnitude).
                const int row = int(b / size_t(s.cols / 256));
                if (row % 3 < 2) std::memset(block, row % 3 == 0 ? 0xFF : 0x00, 96);
                std::memset(block + 96, 0, 12);
                continue;
            }
            const int64_t nibble_bytes = block_values / 2;
            uint8_t* qs = block + block_bytes - size_t(nibble_bytes);
            const int row = int(b / size_t(s.cols / block_values));
            // Row 3k: every nibble 15 (IQ4_NL's largest code); 3k + 1: every nibble 0 (its
            // smallest; MXFP4's zero); 3k + 2: the indices in turn.
            for (int j = 0; j < nibble_bytes; ++j)
                qs[j] = row % 3 == 0   ? 0xFF
                        : row % 3 == 1 ? 0x00
                                       : uint8_t(j % 16 | (15 - j % 16) << 4);
            if (type == DType::MXFP4) block[0] = 127;
            if (type == DType::IQ4_XS)
                std::memset(block + 2, 0, 6);  // every sub-block scale 0 - 32: the largest
        }
        test::expect_every_table_bitwise_on_extreme_activations(table_rows(r.t), dtype_name(type));
    }
}

TEST(KernelsGgufRows, RowRangesInsideGroupsEqualReference) {
    for (DType type : kTypes) {
        const Shape s{70, block_values_of(type) == 256 ? 512 : 160};
        const WeightMatrix w = table_rows(random_tensor(type, s, 10).t);
        test::expect_every_table_on_ranges(w, {1, 2, 3, 4, 5, 8, 9},
                                           {{5, 29}, {0, 70}, {17, 18}, {33, 70}, {48, 64}}, 11);
#if NEXTN_X86_KERNELS
        if (test::have_avx512())
            test::expect_avx512_every_fetch_way_on_ranges(
                w, {1, 2, 5, 8, 9, 13, 16, test::kPrefillWidth},
                {{5, 29}, {0, 70}, {17, 18}, {33, 70}, {48, 64}, {5, 70}}, 12);
#endif
    }
}

}  // namespace
}  // namespace nextn
