// AVX-512 VNNI: Q8_0P weights x int8 activations (layout and arithmetic: kernels/int8_dot.h).
// A tile is R rows x C columns; each row's 64-byte block pair is loaded once and meets every
// column of the tile with one vpdpbusd, so weights stream once per C columns. The lane order
// and the final hsum tree are those the scalar reference spells out.
#pragma GCC optimize("fp-contract=off")
#include "kernels/int8_dot.h"
#include "kernels/x86/avx512/isa_avx512.h"
#include "kernels/x86/x86_kernels.h"

namespace nextn::avx512 {

namespace {

template <int R, int C>
void tile_q8p(const uint8_t* const* wrow, int64_t pairs, const QuantizedColumns& x,
              const int64_t* col, float* y, int64_t ldy, int64_t r) {
    __m512 acc[R][C];
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) acc[i][c] = _mm512_setzero_ps();
    const int8_t* xc[C];
    const float* xs[C];
    const int32_t* xk[C];
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
        xc[c] = x.codes_of(col[c]);
        xs[c] = x.scales_of(col[c]);
        xk[c] = x.corr_of(col[c]);
    }
    for (int64_t p = 0; p < pairs; ++p) {
        __m512i w[R];
        __m512 dw[R];
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i) {
            const uint8_t* pair = wrow[i] + p * int64_t(kQ8PairBytes);
            // The next tile's rows (R further down) at the same offset: short row streams
            // that the hardware prefetcher picks up too late on its own.
            __builtin_prefetch(pair + R * int64_t(pairs) * int64_t(kQ8PairBytes), 0, 0);
            w[i] = _mm512_loadu_si512(pair);
            uint32_t scales;  // f16 scales of the pair's two blocks
            __builtin_memcpy(&scales, pair + 64, 4);
            dw[i] = _mm512_cvtph_ps(_mm256_set1_epi32(int(scales)));  // lanes alternate blocks
        }
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) {
            const __m512i xv = _mm512_loadu_si512(xc[c] + p * 64);
            const __m512 dx = _mm512_loadu_ps(xs[c] + p * 16);
            const __m512i corr = _mm512_loadu_si512(xk[c] + p * 16);
#pragma GCC unroll 8
            for (int i = 0; i < R; ++i) {
                const __m512i isum = _mm512_dpbusd_epi32(corr, w[i], xv);
                acc[i][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dw[i], dx),
                                            acc[i][c]);
            }
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) y[col[c] * ldy + r + i] = Isa::hsum(acc[i][c]);
}

template <int R, int Cmax = 4>
void tile_q8p_cols(int c, const uint8_t* const* wrow, int64_t pairs, const QuantizedColumns& x,
                   const int64_t* col, float* y, int64_t ldy, int64_t r) {
    if (c == Cmax) return tile_q8p<R, Cmax>(wrow, pairs, x, col, y, ldy, r);
    if constexpr (Cmax > 1) tile_q8p_cols<R, Cmax - 1>(c, wrow, pairs, x, col, y, ldy, r);
}

}  // namespace

void gemm_q8p_rows(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy,
                   int64_t r0, int64_t r1) {
    constexpr int kMaxCols = 4;
    const int64_t pairs = x.pairs;
    int64_t col[kMaxCols];
    const uint8_t* wrow[8];
    // 16-row chunks (the unit matmul hands a thread) stay in cache while column groups pass.
    for (int64_t c0 = r0; c0 < r1; c0 += 16) {
        const int64_t c1 = c0 + 16 < r1 ? c0 + 16 : r1;
        for (int64_t j0 = 0; j0 < x.n; j0 += kMaxCols) {
            const int c = int(x.n - j0 < kMaxCols ? x.n - j0 : kMaxCols);
            for (int i = 0; i < c; ++i) col[i] = j0 + i;
            const int R = c <= 2 ? 8 : 4;
            int64_t r = c0;
            for (; r + R <= c1; r += R) {
                for (int i = 0; i < R; ++i) wrow[i] = w.data + size_t(r + i) * w.row_bytes;
                if (R == 8) {
                    tile_q8p_cols<8, 2>(c, wrow, pairs, x, col, y, ldy, r);
                } else {
                    tile_q8p_cols<4>(c, wrow, pairs, x, col, y, ldy, r);
                }
            }
            for (; r < c1; ++r) {
                wrow[0] = w.data + size_t(r) * w.row_bytes;
                tile_q8p_cols<1>(c, wrow, pairs, x, col, y, ldy, r);
            }
        }
    }
}

}  // namespace nextn::avx512
