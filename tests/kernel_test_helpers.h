#pragma once
// y[n, w.rows] = x · Wᵀ through a given kernel table on a fresh pool of `threads` threads, the
// output prefilled with NaN so that a row the kernel skips cannot pass as a result.
#include <cmath>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/kernels.h"

namespace nextn::test {

inline std::vector<float> matmul_on(const KernelTable& k, const WeightMatrix& w,
                                    const std::vector<float>& x, int64_t n, int threads) {
    ThreadPool pool(threads);
    std::vector<float> y(size_t(n * w.rows), std::nanf(""));
    matmul(k, w, x.data(), n, y.data(), pool);
    return y;
}

}  // namespace nextn::test
