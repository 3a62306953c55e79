#pragma once
// Helpers shared by the kernel tests: random values, a matmul through a given table, a tensor
// over caller-owned bytes, and the int8 reference checked against the exact sum.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/thread_pool.h"
#include "formats/raw_tensor.h"
#include "kernels/int8_dot.h"
#include "kernels/kernels.h"

namespace nextn::test {

// n values from N(0, scale^2), seeded, never zero (a kernel that skipped a product would not show
// on zeros).
inline std::vector<float> random_normal(size_t n, uint32_t seed, float scale = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, scale);
    std::vector<float> v(n);
    for (float& x : v) {
        do x = dist(rng);
        while (x == 0.0f);
    }
    return v;
}

// y[n, w.rows] = x · Wᵀ through a given kernel table on a fresh pool of `threads` threads, the
// output prefilled with NaN so that a row the kernel skips cannot pass as a result.
inline std::vector<float> matmul_on(const KernelTable& k, const WeightMatrix& w,
                                    const std::vector<float>& x, int64_t n, int threads) {
    ThreadPool pool(threads);
    std::vector<float> y(size_t(n * w.rows), std::nanf(""));
    matmul(k, w, x.data(), n, y.data(), pool);
    return y;
}

// A [rows, cols] tensor of `dtype` over bytes owned by the caller.
inline RawTensor tensor_over(const char* name, DType dtype, int64_t rows, int64_t cols,
                             const std::vector<uint8_t>& bytes) {
    RawTensor t;
    t.name = name;
    t.file = "test";
    t.dtype = dtype;
    t.shape = {rows, cols};
    t.data = bytes.data();
    t.nbytes = bytes.size();
    return t;
}

// The scalar int8 reference product of w on n random columns (seeded), and of `other` (the same
// values in another layout), against the exact sum of the values times the quantized activations,
// the values read from `values` (a matrix in a layout other than w's, so that w's reader is under
// test too): each block adds a few rounded operations, so w's result lies within per_block x the
// running magnitude x (blocks + 2) of it, and other's within twice that of w's.
inline void expect_reference_near_exact_sum(const WeightMatrix& w, const WeightMatrix& other,
                                            const WeightMatrix& values, int64_t n, uint32_t seed, double per_block) {
    const int64_t rows = w.rows, cols = w.cols;
    const std::vector<float> x = random_normal(size_t(n * cols), seed);
    QuantizedColumns qx;
    resize_columns(n, cols, qx);
    ref::quantize_columns(x.data(), cols, qx, 0, n);
    std::vector<float> got(size_t(n * rows)), theirs(got.size());
    ref::gemm_i8_rows(w, qx, got.data(), rows, 0, rows);
    ref::gemm_i8_rows(other, qx, theirs.data(), rows, 0, rows);
    std::vector<float> wrow(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
        weight_row_f32(values, r, wrow.data());
        for (int64_t j = 0; j < n; ++j) {
            double exact = 0, magnitude = 0;
            for (int64_t c = 0; c < cols; ++c) {
                const int64_t b = c / 32, e = c % 32;
                const int8_t code = qx.codes_of(j)[(b / 16) * 512 + (e / 4) * 64 + 4 * (b % 16) + e % 4];
                const double xv = double(code) * qx.scales_of(j)[b];
                exact += double(wrow[size_t(c)]) * xv;
                magnitude += std::fabs(double(wrow[size_t(c)]) * xv);
            }
            const double tol = per_block * magnitude * double(cols / 32 + 2);
            const float g = got[size_t(j * rows + r)];
            EXPECT_NEAR(exact, g, tol) << "row " << r << " col " << j;
            EXPECT_NEAR(theirs[size_t(j * rows + r)], g, 2 * tol) << "row " << r << " col " << j;
        }
    }
}

}  // namespace nextn::test
