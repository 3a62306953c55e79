// The matmul drivers' own checks and bookkeeping (kernels/matmul.cpp), apart from the products'
// arithmetic (kernels_gemm_test, kernels_int8_test): which malformed weights and output lists
// they refuse, and that jobs without columns are skipped before their weight is looked at.
#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "error_of.h"
#include "kernels/kernels.h"

namespace nextn {
namespace {

// A [rows, cols] f32 weight of all ones: each output is then the plain sum of its column.
WeightMatrix ones(int64_t rows, int64_t cols) {
    const std::vector<float> v(size_t(rows * cols), 1.0f);
    return make_weight_f32(v.data(), rows, cols, WType::F32);
}

// A row of 8 f32 values takes 32 bytes; rows said to be 28 bytes long would make the kernels
// read each row's last value from the next row. check_weight refuses them, naming the sizes.
TEST(KernelsMatmulGlue, RefusesRowsShorterThanTheirValues) {
    ThreadPool pool(1);
    WeightMatrix w = ones(2, 8);
    w.row_bytes = 28;
    const std::vector<float> x(8, 1.0f);
    std::vector<float> y(2, 0.0f);
    EXPECT_EQ(test::error_of([&] { matmul(w, x.data(), 1, y.data(), pool); }),
              "matmul: a f32 weight cannot have 8 columns and 28-byte rows");
}

// matmul_shared_input holds at most 8 outputs (kMaxOutputs, a fixed array): a ninth is an error,
// not a write past the array; eight are fine (each output: 8 ones summed = 8).
TEST(KernelsMatmulGlue, SharedInputTakesAtMostEightOutputs) {
    ThreadPool pool(1);
    const WeightMatrix w = ones(1, 8);
    const std::vector<float> x(8, 1.0f);
    std::vector<float> y(9, 0.0f);
    auto out = [&](int i) { return MatmulOutput{&w, &y[size_t(i)]}; };  // output i: into y[i]
    EXPECT_EQ(test::error_of([&] {
                  matmul_shared_input(kernels(),
                                      {out(0), out(1), out(2), out(3), out(4), out(5), out(6),
                                       out(7), out(8)},
                                      x.data(), 1, pool);
              }),
              "matmul_shared_input: at most 8 outputs");
    EXPECT_EQ(test::error_of([&] {
                  matmul_shared_input(
                      kernels(), {out(0), out(1), out(2), out(3), out(4), out(5), out(6), out(7)},
                      x.data(), 1, pool);
              }),
              "(no error)");
    for (int i = 0; i < 8; ++i) EXPECT_EQ(y[size_t(i)], 8.0f) << i;
}

// One input of 8 values cannot feed a 16-column matrix: the outputs must agree on cols.
TEST(KernelsMatmulGlue, SharedInputRefusesMatricesOfOtherWidths) {
    ThreadPool pool(1);
    const WeightMatrix a = ones(1, 8), b = ones(1, 16);
    const std::vector<float> x(16, 1.0f);
    std::vector<float> y(2, 0.0f);
    EXPECT_EQ(test::error_of([&] {
                  matmul_shared_input(kernels(), {{&a, &y[0]}, {&b, &y[1]}}, x.data(), 1, pool);
              }),
              "matmul_shared_input: matrices with 8 and 16 columns");
}

// kernels.h: "jobs with n == 0 are skipped". A skipped job's weight is never read, so an empty
// one is no error, and its output is not written; the batch's other job still runs (a row of 8
// ones times x = 1..8 sums to 36, exact in f32). A negative width counts as none (the driver
// clamps it to 0) and is skipped the same way.
TEST(KernelsMatmulGlue, JobsWithoutColumnsAreSkippedUnread) {
    ThreadPool pool(1);
    const WeightMatrix empty;  // no data, 0 x 0
    const WeightMatrix w = ones(1, 8);
    const std::vector<float> x{1, 2, 3, 4, 5, 6, 7, 8};
    for (const int64_t none : {int64_t(0), int64_t(-1)}) {
        float skipped = -5.0f, y = 0.0f;
        const MatmulJob jobs[] = {{&empty, x.data(), none, &skipped}, {&w, x.data(), 1, &y}};
        EXPECT_EQ(test::error_of([&] { matmul_batch(kernels(), jobs, pool); }), "(no error)")
            << none;
        EXPECT_EQ(skipped, -5.0f) << none;
        EXPECT_EQ(y, 36.0f) << none;
    }
}

}  // namespace
}  // namespace nextn
