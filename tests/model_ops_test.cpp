// The residual add of model/ops.h against a plain loop, bit for bit, at lengths that end inside a
// 16-value block and in whole blocks (the models' hidden sizes are whole blocks, so no forward runs
// its tail).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kernel_test_helpers.h"
#include "model/ops.h"

namespace nextn {
namespace {

TEST(ModelOps, AddInPlaceEqualsThePlainLoopAtEveryLength) {
    for (int64_t n : {0, 1, 5, 15, 16, 17, 31, 32, 33, 1024, 4101}) {
        SCOPED_TRACE("n = " + std::to_string(n));
        const std::vector<float> x0 = test::random_normal(size_t(n) + 1, 7);
        const std::vector<float> y = test::random_normal(size_t(n) + 1, 8);
        std::vector<float> got = x0, want = x0;
        ops::add_in_place(got.data(), y.data(), n);
        for (int64_t i = 0; i < n; ++i) want[size_t(i)] += y[size_t(i)];
        EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * sizeof(float)))
            << "values past n stay as they were, the rest are the plain sums";
        if (n > 0) {
            EXPECT_NE(x0[size_t(n - 1)], got[size_t(n - 1)]) << "the last value was added to";
        }
    }
}

}  // namespace
}  // namespace nextn
