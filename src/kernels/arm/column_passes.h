#pragma once
// The ARM matmuls' walk over a batch: columns [0, n) in passes of up to kMax, each pass's width a
// template argument, so that its accumulators are sized at compile time and stay in registers.
#include <cstdint>

// Internal linkage: each including file compiles these with its own -march flags.
namespace nextn::arm {
namespace {

// pass.template operator()<C>(j0) for C = width (1..C).
template <int C, class Pass>
inline void pass_of_width(int width, int64_t j0, Pass& pass) {
    if constexpr (C > 1)
        if (width < C) return pass_of_width<C - 1>(width, j0, pass);
    pass.template operator()<C>(j0);
}

// Columns [0, n) as passes [j0, j0 + C): C = kMax, the last pass whatever is left.
template <int kMax, class Pass>
inline void for_column_passes(int64_t n, Pass&& pass) {
    for (int64_t j0 = 0; j0 < n; j0 += kMax)
        pass_of_width<kMax>(int(n - j0 < kMax ? n - j0 : kMax), j0, pass);
}

}  // namespace
}  // namespace nextn::arm
