#pragma once
// y[n, w.rows] = x · Wᵀ through a given kernel table on a fresh pool of `threads` threads, the
// output prefilled with NaN so that a row the kernel skips cannot pass as a result.
#include <cmath>
#include <random>
#include <vector>

#include "core/thread_pool.h"
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

inline std::vector<float> matmul_on(const KernelTable& k, const WeightMatrix& w,
                                    const std::vector<float>& x, int64_t n, int threads) {
    ThreadPool pool(threads);
    std::vector<float> y(size_t(n * w.rows), std::nanf(""));
    matmul(k, w, x.data(), n, y.data(), pool);
    return y;
}

}  // namespace nextn::test
