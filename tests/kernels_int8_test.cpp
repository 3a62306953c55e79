// Q8_0 weights x int8 activations (kernels/int8_dot.h): the repacked layout holds exactly the
// Q8_0 values; activation codes are within half a step of x; every table's kernel equals the
// scalar reference bit for bit on random data (odd row counts, an unpaired last block, N up
// to 16, 1 and 2 threads), so batch invariance holds; and the int8 result stays within the
// bound the activation rounding allows of the f32-activation Q8_0 product.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/int8_dot.h"
#include "kernels/kernels.h"

namespace nextn {
namespace {

std::vector<float> random_values(size_t n, uint32_t seed, float scale = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, scale);
    std::vector<float> v(n);
    for (float& x : v) {
        do x = dist(rng);
        while (x == 0.0f);  // never zeros
    }
    return v;
}

struct Shape {
    int64_t rows, cols;
};
// 96 and 160 columns leave an unpaired last block; 37 and 19 rows leave tile remainders.
const Shape kShapes[] = {{37, 96}, {19, 256}, {5, 32}, {40, 160}, {16, 1024}};

WeightMatrix q8_0_weight(Shape s, uint32_t seed) {
    const std::vector<float> w = random_values(size_t(s.rows * s.cols), seed);
    return make_weight_f32(w.data(), s.rows, s.cols, WType::Q8_0);
}

std::vector<float> run(const KernelTable& k, const WeightMatrix& w, const std::vector<float>& x,
                       int64_t n, int threads) {
    ThreadPool pool(threads);
    std::vector<float> y(size_t(n * w.rows), std::nanf(""));
    matmul(k, w, x.data(), n, y.data(), pool);
    return y;
}

TEST(KernelsInt8, RepackKeepsEveryValue) {
    for (Shape s : kShapes) {
        WeightMatrix q8 = q8_0_weight(s, 1);
        WeightMatrix p = repack_q8_0_pairs(q8);
        ASSERT_EQ(WType::Q8_0P, p.type);
        std::vector<float> a(size_t(s.cols)), b(size_t(s.cols));
        for (int64_t r = 0; r < s.rows; ++r) {
            weight_row_f32(q8, r, a.data());
            weight_row_f32(p, r, b.data());
            ASSERT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << "row " << r;
        }
    }
}

TEST(KernelsInt8, ActivationCodesWithinHalfAStep) {
    const int64_t cols = 160, n = 3;
    std::vector<float> x = random_values(size_t(n * cols), 2, 3.0f);
    x[5] = 40.0f;  // an outlier sets its block's scale
    QuantizedColumns q;
    quantize_columns(x.data(), n, cols, q);
    ASSERT_EQ(3, q.pairs);
    std::vector<float> back(static_cast<size_t>(cols));
    for (int64_t j = 0; j < n; ++j) {
        for (int64_t i = 0; i < cols; ++i) {
            // Invert the documented lane layout.
            const int64_t p = i / 64;
            const int half = int(i % 64) / 32, e = int(i % 32);
            const int lane = 2 * (e / 4) + half;
            const int8_t code = q.codes_of(j)[p * 64 + 4 * lane + e % 4];
            const float d = q.scales_of(j)[p * 16 + lane];
            EXPECT_LE(std::fabs(float(code) * d - x[size_t(j * cols + i)]), 0.5f * d * 1.0001f)
                << "column " << j << " element " << i;
        }
        for (int64_t p = 0; p < q.pairs; ++p)
            for (int l = 0; l < 16; ++l) {
                int32_t sum = 0;
                for (int i = 0; i < 4; ++i) sum += q.codes_of(j)[p * 64 + 4 * l + i];
                EXPECT_EQ(-128 * sum, q.corr_of(j)[p * 16 + l]);
            }
        // Elements past cols (the unpaired half of the last pair) are zero codes.
        for (int l = 0; l < 16; l += 2) EXPECT_EQ(0, q.corr_of(j)[2 * 16 + l + 1]);
    }
}

// The scalar and AVX2 tables run the reference kernel itself (AVX2 never repacks to q8_0p), so
// for them this checks the driver (row split, threads, column groups); for AVX-512 it compares
// the VNNI kernel with the reference.
TEST(KernelsInt8, EveryTableEqualsReferenceBitwiseForEveryWidth) {
    for (const std::string& isa : available_isas()) {
        const KernelTable& k = kernels_for(isa);
        for (Shape s : kShapes) {
            WeightMatrix p = repack_q8_0_pairs(q8_0_weight(s, 3));
            const std::vector<float> x = random_values(size_t(16 * s.cols), 4);
            std::vector<float> want = run(reference_kernels(), p, x, 16, 1);
            for (int64_t n : {1, 2, 3, 4, 5, 8, 16}) {
                for (int threads : {1, 2}) {
                    std::vector<float> got = run(k, p, x, n, threads);
                    // Column j of a width-n product equals column j of the width-16 reference.
                    ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
                        << isa << " " << s.rows << "x" << s.cols << " n=" << n
                        << " threads=" << threads;
                }
            }
        }
    }
}

TEST(KernelsInt8, WithinActivationRoundingOfTheFloatProduct) {
    const Shape s{64, 512};
    WeightMatrix q8 = q8_0_weight(s, 5);
    WeightMatrix p = repack_q8_0_pairs(q8);
    const int64_t n = 4;
    const std::vector<float> x = random_values(size_t(n * s.cols), 6);
    std::vector<float> exact = run(reference_kernels(), q8, x, n, 1);  // f32 activations
    std::vector<float> got = run(kernels(), p, x, n, 2);
    std::vector<float> row(static_cast<size_t>(s.cols));
    int64_t differ = 0;
    for (int64_t r = 0; r < s.rows; ++r) {
        weight_row_f32(q8, r, row.data());
        for (int64_t j = 0; j < n; ++j) {
            // Each activation moves by at most half its block's step max|x_block| / 127; add
            // a float-rounding allowance of 1e-5 of sum |w x|.
            double bound = 0, mag = 0;
            for (int64_t b = 0; b < s.cols / 32; ++b) {
                float amax = 0;
                for (int e = 0; e < 32; ++e) amax = std::max(amax, std::fabs(x[size_t(j * s.cols + b * 32 + e)]));
                for (int e = 0; e < 32; ++e) {
                    bound += std::fabs(row[size_t(b * 32 + e)]) * amax / 254.0;
                    mag += std::fabs(row[size_t(b * 32 + e)] * x[size_t(j * s.cols + b * 32 + e)]);
                }
            }
            const double diff = std::fabs(double(got[size_t(j * s.rows + r)]) - exact[size_t(j * s.rows + r)]);
            EXPECT_LE(diff, bound + 1e-5 * mag) << "row " << r << " col " << j;
            differ += diff > 0.0;
        }
    }
    EXPECT_GT(differ, s.rows * n / 2) << "int8 activations round: most outputs must move";
}

}  // namespace
}  // namespace nextn
