#pragma once
// The small-N GEMM shared by the x86 ISAs, written once over an ISA description `I` and a
// weight decoder `D` (both defined per ISA in x86/<isa>/, so every instantiation is a distinct
// symbol compiled with that ISA's flags). Include only from an ISA translation unit.
//
// Shape of the work: a tile is R weight rows x C activation columns. For each 32-value block of
// the row, each row's block is decoded ONCE into K = 32 / I::L vectors and applied to all C
// columns, so the weight bytes are streamed once for every C columns.
//
// Batch invariance: the output (r, j) is always computed the same way, whatever R, C, n, the
// column's position or the row range: one accumulator vector, starting at zero, updated by
// acc = fma(w_sub, x_sub, acc) for every sub-vector in order (tail sub-vectors zero-padded),
// then I::hsum (a fixed tree). R and C only decide how many such chains run side by side.
#include <cstdint>

#include "kernels/weight.h"

namespace nextn::x86 {

template <class I, class D, int R, int C>
void gemm_tile(const uint8_t* const* wrow, size_t row_bytes, const float* const* xcol, int64_t cols,
               float* y, int64_t ldy) {
    using V = typename I::V;
    constexpr int L = I::L;
    constexpr int K = 32 / L;
    V acc[R][C];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) acc[r][c] = I::zero();

    const int64_t n_blocks = cols / 32;
    for (int64_t b = 0; b < n_blocks; ++b) {
        // Software prefetch of the next tile's rows (R rows further down, same offset): rows are
        // short streams (a few KB) that the hardware prefetcher alone picks up too late, which
        // left the decode-heavy types (q8_0, q4_*) well short of the memory bandwidth. Into L2
        // (prefetcht2): the non-temporal hint streamed f32 / bf16 / f16 matrices of 1024-value
        // rows at 28-35 GB/s where this reaches 34-45 (2 threads, Zen 4, alternating calls).
        if (b % D::kPrefetchEvery == 0) {
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r)
                __builtin_prefetch(wrow[r] + R * row_bytes + b * D::kBlockBytes, 0, 1);
        }
#pragma GCC unroll 4
        for (int s = 0; s < K; ++s) {
            V w[R];
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) w[r] = D::sub(wrow[r], b, s);
#pragma GCC unroll 8
            for (int c = 0; c < C; ++c) {
                const V xv = I::load(xcol[c] + b * 32 + s * L);
#pragma GCC unroll 8
                for (int r = 0; r < R; ++r) acc[r][c] = I::fma(w[r], xv, acc[r][c]);
            }
        }
    }
    // Tail (float weight types only; block types have cols % 32 == 0).
    for (int64_t off = n_blocks * 32; off < cols; off += L) {
        const int len = cols - off < L ? int(cols - off) : L;
        V w[R];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) w[r] = D::part(wrow[r], off, len);
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) {
            const V xv = I::load_part(xcol[c] + off, len);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) acc[r][c] = I::fma(w[r], xv, acc[r][c]);
        }
    }
    // Four rows' sums at a time where the ISA has hsum4 (the same tree and bits as hsum; AVX-512):
    // in one process, alternating with one hsum a sum, bf16 weights at width 128 0.96-0.97x
    // the time, width 8 0.98x, f32 1024 x 1024 at width 6 0.97x, width 1 1.00x.
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
        int r = 0;
        if constexpr (requires(V v) { I::hsum4(v, v, v, v); })
#pragma GCC unroll 8
            for (; r + 4 <= R; r += 4)
                _mm_storeu_ps(y + c * ldy + r, I::hsum4(acc[r][c], acc[r + 1][c], acc[r + 2][c], acc[r + 3][c]));
#pragma GCC unroll 8
        for (; r < R; ++r) y[c * ldy + r] = I::hsum(acc[r][c]);
    }
}

// Runs the tile for a column group of c columns, c in [1, Cmax].
template <class I, class D, int R, int Cmax = I::kMaxCols>
void gemm_tile_cols(const uint8_t* const* wrow, size_t row_bytes, const float* const* xcol, int c,
                    int64_t cols, float* y, int64_t ldy) {
    if (c == Cmax) return gemm_tile<I, D, R, Cmax>(wrow, row_bytes, xcol, cols, y, ldy);
    if constexpr (Cmax > 1) gemm_tile_cols<I, D, R, Cmax - 1>(wrow, row_bytes, xcol, c, cols, y, ldy);
}

// Runs the tile with R rows, R one of I's tile heights (8 only for up to 2 columns).
template <class I, class D>
void gemm_tile_rows(int R, const uint8_t* const* wrow, size_t row_bytes, const float* const* xcol,
                    int c, int64_t cols, float* y, int64_t ldy) {
    switch (R) {
        case 2: return gemm_tile_cols<I, D, 2>(wrow, row_bytes, xcol, c, cols, y, ldy);
        case 3: return gemm_tile_cols<I, D, 3>(wrow, row_bytes, xcol, c, cols, y, ldy);
        case 4: return gemm_tile_cols<I, D, 4>(wrow, row_bytes, xcol, c, cols, y, ldy);
        case 8: return gemm_tile_cols<I, D, 8, 2>(wrow, row_bytes, xcol, c, cols, y, ldy);
        default: return gemm_tile_cols<I, D, 1>(wrow, row_bytes, xcol, c, cols, y, ldy);
    }
}

// Rows [r0, r1) for all n columns. Rows go in chunks of 16 (the unit matmul() hands to a
// thread); inside a chunk every column group of up to I::kMaxCols columns runs over the chunk's
// rows in tiles of I::rows_for(c) rows (leftover rows one at a time), so the chunk's weights are
// read from memory once and stay in L1/L2 while further column groups pass over them.
template <class I, class D>
void gemm_rows_impl(const WeightMatrix& w, const float* x, int64_t n, float* y, int64_t ldy,
                    int64_t r0, int64_t r1) {
    constexpr int kChunk = 16;
    const int64_t cols = w.cols;
    const uint8_t* wrow[kChunk];
    const float* xcol[I::kMaxCols];
    for (int64_t c0 = r0; c0 < r1; c0 += kChunk) {
        const int64_t c1 = c0 + kChunk < r1 ? c0 + kChunk : r1;
        for (int64_t j0 = 0; j0 < n; j0 += I::kMaxCols) {
            const int c = int(n - j0 < I::kMaxCols ? n - j0 : I::kMaxCols);
            for (int i = 0; i < c; ++i) xcol[i] = x + (j0 + i) * cols;
            const int R = I::rows_for(c);
            int64_t r = c0;
            for (; r + R <= c1; r += R) {
                for (int i = 0; i < R; ++i) wrow[i] = w.data + size_t(r + i) * w.row_bytes;
                gemm_tile_rows<I, D>(R, wrow, w.row_bytes, xcol, c, cols, y + j0 * ldy + r, ldy);
            }
            for (; r < c1; ++r) {
                wrow[0] = w.data + size_t(r) * w.row_bytes;
                gemm_tile_cols<I, D, 1>(wrow, w.row_bytes, xcol, c, cols, y + j0 * ldy + r, ldy);
            }
        }
    }
}

}  // namespace nextn::x86
