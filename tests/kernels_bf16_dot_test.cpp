// BF16D weights x bf16-rounded activations (kernels/bf16_dot.h): the reference follows the
// stated arithmetic (checked here against a plain double sum within the rounding the
// activations and the f32 sums allow), every table's kernel equals the reference bit for bit on
// random data (odd row counts, columns that leave a ragged last block, N up to 16, 1 and 2
// threads), which is batch invariance, and the activation rounding equals the instruction's
// (round to nearest even, subnormals to zero).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/half.h"
#include "kernel_test_helpers.h"
#include "kernels/bf16_dot.h"
#include "kernels/kernels.h"
#include "kernels/ref/ref.h"

namespace nextn {
namespace {

using test::random_normal;

WeightMatrix bf16d_weight(int64_t rows, int64_t cols, uint32_t seed) {
    const std::vector<float> w = random_normal(size_t(rows * cols), seed, 0.05f);
    return make_weight_f32(w.data(), rows, cols, WType::BF16D);
}

struct Shape {
    int64_t rows, cols;
};
// 1, 17, 31, 33, 100 and 1000 columns end in a ragged block; 37, 19 and 5 rows leave tile
// remainders (tiles of 8 and 4 rows, 16-row chunks).
const Shape kShapes[] = {{37, 96}, {19, 1}, {5, 17}, {40, 31}, {16, 33}, {9, 100}, {24, 1024}, {3, 1000}};

using test::matmul_on;

// The reference product of w and x[n, w.cols]: y [n, w.rows].
std::vector<float> reference_product(const WeightMatrix& w, const float* x, int64_t n) {
    Bf16Columns xb;
    round_columns_bf16(x, n, w.cols, xb);
    std::vector<float> y(size_t(n * w.rows));
    ref::gemm_bf16_rows(w, xb, y.data(), w.rows, 0, w.rows);
    return y;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(KernelsBf16Dot, WeightKeepsBf16Bytes) {
    const std::vector<float> v = random_normal(3 * 40, 1);
    WeightMatrix a = make_weight_f32(v.data(), 3, 40, WType::BF16);
    WeightMatrix b = make_weight_f32(v.data(), 3, 40, WType::BF16D);
    ASSERT_EQ(WType::BF16D, b.type);
    ASSERT_EQ(a.row_bytes, b.row_bytes);
    EXPECT_EQ(0, std::memcmp(a.data, b.data, a.nbytes()));
    std::vector<float> row(40);
    weight_row_f32(b, 2, row.data());
    for (int i = 0; i < 40; ++i) EXPECT_EQ(bf16_to_f32(f32_to_bf16(v[size_t(80 + i)])), row[size_t(i)]);
}

TEST(KernelsBf16Dot, ActivationRoundingIsNearestEvenWithSubnormalsZero) {
    EXPECT_EQ(0x3f80, bf16_dot_round(1.0f));
    EXPECT_EQ(0x3f80, bf16_dot_round(std::nextafter(1.0f, 2.0f)));     // below half a step
    EXPECT_EQ(0x3f80, bf16_dot_round(1.00390625f));                   // a tie rounds to even (down)
    EXPECT_EQ(0x3f82, bf16_dot_round(1.01171875f));                   // a tie rounds to even (up)
    EXPECT_EQ(0x0000, bf16_dot_round(std::numeric_limits<float>::denorm_min()));
    EXPECT_EQ(0x8000, bf16_dot_round(-1e-39f));                       // subnormal: signed zero
    EXPECT_EQ(0x0080, bf16_dot_round(std::numeric_limits<float>::min()));
    EXPECT_EQ(0x7f80, bf16_dot_round(std::numeric_limits<float>::infinity()));
    const uint16_t nan = bf16_dot_round(std::numeric_limits<float>::quiet_NaN());
    EXPECT_TRUE((nan & 0x7f80) == 0x7f80 && (nan & 0x7f) != 0);
}

TEST(KernelsBf16Dot, ColumnsAreRoundedAndPaddedWithZeros) {
    const std::vector<float> x = random_normal(2 * 40, 8);
    Bf16Columns xb;
    xb.values.assign(200, 0xffff);  // stale values from a larger earlier input
    round_columns_bf16(x.data(), 2, 40, xb);
    ASSERT_EQ(64, xb.stride);
    for (int64_t j = 0; j < 2; ++j)
        for (int64_t k = 0; k < 64; ++k)
            EXPECT_EQ(k < 40 ? bf16_dot_round(x[size_t(j * 40 + k)]) : 0, xb.column(j)[k]) << j << "," << k;
}

// The reference against a double-precision sum of the same bf16 products: its f32 lanes and
// tree add at most (cols / 16 + 4) roundings of 2^-24 relative to the sum of |products|.
TEST(KernelsBf16Dot, ReferenceIsTheDotProductOfTheRoundedValues) {
    for (Shape s : kShapes) {
        WeightMatrix w = bf16d_weight(s.rows, s.cols, 2);
        const int64_t n = 3;
        const std::vector<float> x = random_normal(size_t(n * s.cols), 3);
        const std::vector<float> y = reference_product(w, x.data(), n);
        std::vector<float> row(size_t(s.cols));
        for (int64_t r = 0; r < s.rows; ++r) {
            weight_row_f32(w, r, row.data());
            for (int64_t j = 0; j < n; ++j) {
                double sum = 0, magnitude = 0;
                for (int64_t k = 0; k < s.cols; ++k) {
                    const double p = double(row[size_t(k)]) * bf16_to_f32(bf16_dot_round(x[size_t(j * s.cols + k)]));
                    sum += p;
                    magnitude += std::fabs(p);
                }
                const double bound = double(s.cols / 16 + 4) * std::ldexp(1.0, -24) * magnitude;
                EXPECT_NEAR(sum, y[size_t(j * s.rows + r)], bound) << s.rows << "x" << s.cols << " r " << r;
            }
        }
    }
}

// Every table's kernel (the AVX512_BF16 one where the CPU has it, else the reference itself)
// gives the reference's bits for every width 1..16 and on 1 and 2 threads. For a table whose
// kernel is the reference this still checks the matmul driver around it (the rounding of each
// input once, its row split over threads); only the AVX512_BF16 kernel is checked against a
// second implementation, and the test says when none ran.
TEST(KernelsBf16Dot, EveryTableEqualsReferenceForEveryWidthAndThreadCount) {
    bool fast_seen = false;
    for (const std::string& isa : available_isas()) {
        const KernelTable& k = kernels_for(isa);
        fast_seen |= k.bf16_dot_fast;
        for (Shape s : kShapes) {
            WeightMatrix w = bf16d_weight(s.rows, s.cols, 4);
            const std::vector<float> x = random_normal(size_t(16 * s.cols), 5);
            const std::vector<float> want = reference_product(w, x.data(), 16);
            for (int64_t n = 1; n <= 16; ++n) {
                const std::vector<float> xn(x.begin(), x.begin() + n * s.cols);
                const std::vector<float> expect(want.begin(), want.begin() + n * s.rows);
                for (int threads : {1, 2})
                    ASSERT_TRUE(same_bits(expect, matmul_on(k, w, xn, n, threads)))
                        << isa << " " << s.rows << "x" << s.cols << " n=" << n << " threads=" << threads;
            }
        }
    }
    if (!fast_seen) std::printf("note: no table here has the AVX512_BF16 kernel; only the reference ran\n");
}

// Rows past one 256 KB chunk of the kernel's walk (2 KB rows: 128-row chunks; 300 rows, the
// last chunk partial), at prefill-like widths: still the reference's bits.
TEST(KernelsBf16Dot, ManyRowChunksEqualReference) {
    WeightMatrix w = bf16d_weight(300, 1024, 9);
    for (int64_t n : {1, 7, 40}) {
        const std::vector<float> x = random_normal(size_t(n * 1024), 10);
        const std::vector<float> want = reference_product(w, x.data(), n);
        for (const std::string& isa : available_isas())
            for (int threads : {1, 2})
                ASSERT_TRUE(same_bits(want, matmul_on(kernels_for(isa), w, x, n, threads)))
                    << isa << " n=" << n << " threads=" << threads;
    }
}

// Values whose products land near the f32 limits: subnormal weights and activations read as
// zero, a sum that overflows is infinite in both.
TEST(KernelsBf16Dot, ExtremesMatchTheReference) {
    const int64_t rows = 8, cols = 64;
    std::vector<float> wv = random_normal(size_t(rows * cols), 6, 1e-20f);
    std::vector<float> xv = random_normal(size_t(2 * cols), 7, 1e-20f);  // products ~1e-40: subnormal
    wv[5] = 1e-39f;                 // a subnormal weight
    xv[9] = -1e-39f;                // a subnormal activation
    wv[size_t(cols + 3)] = 3e38f;   // row 1 overflows with a large activation
    xv[3] = 3e38f;
    WeightMatrix w = make_weight_f32(wv.data(), rows, cols, WType::BF16D);
    const std::vector<float> want = reference_product(w, xv.data(), 2);
    EXPECT_TRUE(std::isinf(want[1]));
    for (const std::string& isa : available_isas())
        EXPECT_TRUE(same_bits(want, matmul_on(kernels_for(isa), w, xv, 2, 1))) << isa;
}

// A subnormal bf16 weight reads as zero (vdpbf16ps's DAZ), which the extremes above cannot show:
// their subnormal weight meets an activation of ~1e-20, and the product underflows either way.
// Here 2^-130 (a bf16 subnormal, kept exactly by the weight) meets 2^100: read as its value the
// product would be 2^-30; read as zero, row 0 is exactly 0. Row 1's normal 2^-120 is the control
// (2^-20). Every table must agree.
TEST(KernelsBf16Dot, SubnormalWeightsReadAsZeroAgainstLargeActivations) {
    const int64_t rows = 2, cols = 32;
    std::vector<float> wv(size_t(rows * cols), 0.0f), xv(size_t(cols), 0.0f);
    wv[0] = std::ldexp(1.0f, -130);
    wv[size_t(cols)] = std::ldexp(1.0f, -120);
    xv[0] = std::ldexp(1.0f, 100);
    WeightMatrix w = make_weight_f32(wv.data(), rows, cols, WType::BF16D);
    std::vector<float> row(static_cast<size_t>(cols));
    weight_row_f32(w, 0, row.data());
    ASSERT_EQ(row[0], std::ldexp(1.0f, -130)) << "the weight must hold the subnormal itself";
    const std::vector<float> want = {0.0f, std::ldexp(1.0f, -20)};
    EXPECT_EQ(reference_product(w, xv.data(), 1), want);
    for (const std::string& isa : available_isas())
        EXPECT_EQ(matmul_on(kernels_for(isa), w, xv, 1, 1), want) << isa;
}

// round_columns_bf16 keeps room for at least 16 columns from the first call (bf16_dot.cpp: the
// widest verify or MTP flush), as resize_columns does for int8: rounding 1 column and then 16
// reuses the same buffer, so an MoE expert's growing input does not allocate in the decode loop.
TEST(KernelsBf16Dot, ColumnsHoldSixteenFromTheStart) {
    const std::vector<float> x(16 * 40, 1.0f);
    Bf16Columns xb;
    round_columns_bf16(x.data(), 1, 40, xb);
    const uint16_t* held = xb.values.data();
    EXPECT_GE(xb.values.size(), size_t(16 * xb.stride));
    round_columns_bf16(x.data(), 16, 40, xb);
    EXPECT_EQ(xb.values.data(), held);
    EXPECT_EQ(xb.n, 16);
}

}  // namespace
}  // namespace nextn
