#pragma once
// The inner step of attention's scores and value sums, written over an ISA description `I`;
// include only from an ISA translation unit.

namespace nextn::simd {

// acc[r][i] = fma(weight(r), x[i], acc[r][i]) for r < R, i < N: an R x N tile of accumulators
// takes the outer product of R broadcast scalars (query values, probabilities) and N vectors
// (keys of positions, values of a position). Always inlined, so the tile stays in registers.
template <class I, int R, int N, class Weight>
[[gnu::always_inline]] inline void rank1_update(typename I::V (&acc)[R][N],
                                                const typename I::V (&x)[N], Weight weight) {
#pragma GCC unroll 32
    for (int r = 0; r < R; ++r) {
        const typename I::V w = I::set1(weight(r));
#pragma GCC unroll 8
        for (int i = 0; i < N; ++i) acc[r][i] = I::fma(w, x[i], acc[r][i]);
    }
}

}  // namespace nextn::simd
