// AVX512_BF16: BF16D weights times activations rounded to bf16, one vdpbf16ps per 32 values
// (kernels/bf16_dot.h gives the arithmetic, which this computes bit for bit). A tile is R rows x
// C columns: each 64-byte block of a row is loaded once and meets every column of the tile, and
// each column's block (rounded to bf16 once per matmul, round_columns_bf16) meets every row.
// Rounding inside the tiles instead, once per tile with vcvtne2ps2bf16, ran prefill 128 of the
// 0.8B at 166 tok/s, 38% of the bf16 peak: the conversions and the f32 loads took the issue slots.
#pragma GCC optimize("fp-contract=off")
// GCC 12's own AVX-512 headers start extracts from _mm256_undefined_ps(), which its
// -Wmaybe-uninitialized then reports (as in x86/avx512/isa_avx512.h).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>

#include "kernels/bf16_dot.h"
#include "kernels/x86/x86_kernels.h"

namespace nextn::avx512bf16 {

// Everything here has internal linkage, and nothing comes from the avx512 unit's headers: their
// inline functions, compiled here with more ISA flags, could be the copy the linker keeps for a
// CPU without AVX512_BF16.
namespace {

// Tile shapes of the avx512 f32 GEMM (x86/avx512/isa_avx512.h): 8 rows for 1-2 columns, 4 rows
// up to 6 columns, so the R * C accumulators, C activation blocks and a weight block fit in 32
// registers.
constexpr int kMaxCols = 6;
constexpr int rows_for(int c) { return c <= 2 ? 8 : 4; }

// The AVX-512 hsum tree (kernels/bf16_dot.h): halves of 512, of 256, of 128, then lane pairs.
float hsum(__m512 v) {
    const __m256 a = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    b = _mm_add_ps(b, _mm_movehl_ps(b, b));
    b = _mm_add_ss(b, _mm_movehdup_ps(b));
    return _mm_cvtss_f32(b);
}

// hsum of four vectors at once, each by hsum's tree (the same bits): 14 shuffles and adds and
// one store for four sums. hsum and hsum4 repeat Isa's on purpose: sharing them would put inline
// functions of external linkage (Isa's) or internal-linkage helpers called from them into a
// unit built with other flags (see the namespace comment above).
__m128 hsum4(__m512 a, __m512 b, __m512 c, __m512 d) {
    const __m512 ab = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
    const __m512 cd = _mm512_add_ps(_mm512_shuffle_f32x4(c, d, 0x44), _mm512_shuffle_f32x4(c, d, 0xEE));
    const __m512 q = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, 0x88), _mm512_shuffle_f32x4(ab, cd, 0xDD));
    const __m512 h = _mm512_add_ps(q, _mm512_permute_ps(q, 0xEE));
    const __m512 s = _mm512_add_ps(h, _mm512_permute_ps(h, 0x55));
    const __m512i firsts = _mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    return _mm512_castps512_ps128(_mm512_permutexvar_ps(firsts, s));
}

__m512bh load_weights(const uint8_t* p, int len) {
    if (len >= 32) return __m512bh(_mm512_loadu_si512(p));
    return __m512bh(_mm512_maskz_loadu_epi16(__mmask32((uint64_t(1) << len) - 1), p));
}

// prefetch: whether to fetch the next tile's rows (only the first column group does: the later
// ones find the chunk in L2 already).
template <int R, int C>
void tile(const uint8_t* const* wrow, size_t row_bytes, const uint16_t* const* xcol, int64_t cols,
          float* y, int64_t ldy, bool prefetch) {
    __m512 acc[R][C];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
    for (int64_t k = 0; k < cols; k += 32) {
        const int len = cols - k < 32 ? int(cols - k) : 32;
        // The next tile's rows (R rows on, same offset) into L2, one line per row and block: rows
        // are short streams the hardware prefetcher alone picks up late (as in x86/gemm_tile.h).
        if (prefetch)
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) __builtin_prefetch(wrow[r] + R * row_bytes + k * 2, 0, 1);
        __m512bh xv[C];
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) xv[c] = __m512bh(_mm512_loadu_si512(xcol[c] + k));  // +0 padded
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const __m512bh w = load_weights(wrow[r] + k * 2, len);
#pragma GCC unroll 8
            for (int c = 0; c < C; ++c) acc[r][c] = _mm512_dpbf16_ps(acc[r][c], w, xv[c]);
        }
    }
    // Four rows' sums at a time where the tile has them (hsum4): with 1024-value rows the R x C
    // reductions are a real share of a tile. In one process, alternating with one hsum a sum:
    // 3584 x 1024 and 1024 x 3584 at width 128 0.93x and 0.91x the time, width 512 0.89x, width 8
    // 0.95x, width 1 0.99x.
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
        int r = 0;
#pragma GCC unroll 8
        for (; r + 4 <= R; r += 4)
            _mm_storeu_ps(y + c * ldy + r, hsum4(acc[r][c], acc[r + 1][c], acc[r + 2][c], acc[r + 3][c]));
#pragma GCC unroll 8
        for (; r < R; ++r) y[c * ldy + r] = hsum(acc[r][c]);
    }
}

template <int R, int Cmax = kMaxCols>
void tile_cols(int c, const uint8_t* const* wrow, size_t row_bytes, const uint16_t* const* xcol,
               int64_t cols, float* y, int64_t ldy, bool prefetch) {
    if (c == Cmax) return tile<R, Cmax>(wrow, row_bytes, xcol, cols, y, ldy, prefetch);
    if constexpr (Cmax > 1) tile_cols<R, Cmax - 1>(c, wrow, row_bytes, xcol, cols, y, ldy, prefetch);
}

}  // namespace

// Rows in chunks of up to kChunkBytes of weights (a chunk stays in L2 while every column group
// passes over it: with 16-row chunks, as the f32 GEMM has, a 512-token prefill re-read each
// 3.6 MB input of the 0.8B's down projection from memory once per 16 rows and ran 187 tok/s),
// columns in groups of up to kMaxCols, rows in tiles of rows_for(c), leftover rows one at a
// time. The grouping only decides the order in which outputs are computed, never how.
void gemm_bf16_rows(const WeightMatrix& w, const Bf16Columns& x, float* y, int64_t ldy,
                    int64_t r0, int64_t r1) {
    constexpr size_t kChunkBytes = size_t(256) << 10;
    const int64_t cols = w.cols, n = x.n;
    const int64_t chunk = std::max<int64_t>(16, int64_t(kChunkBytes / w.row_bytes) / 8 * 8);
    const uint8_t* wrow[8];
    const uint16_t* xcol[kMaxCols];
    for (int64_t c0 = r0; c0 < r1; c0 += chunk) {
        const int64_t c1 = c0 + chunk < r1 ? c0 + chunk : r1;
        for (int64_t j0 = 0; j0 < n; j0 += kMaxCols) {
            const int c = int(n - j0 < kMaxCols ? n - j0 : kMaxCols);
            for (int i = 0; i < c; ++i) xcol[i] = x.column(j0 + i);
            float* yj = y + j0 * ldy;
            const bool eight = rows_for(c) == 8;
            const int R = eight ? 8 : 4;
            int64_t r = c0;
            for (; r + R <= c1; r += R) {
                for (int i = 0; i < R; ++i) wrow[i] = w.data + size_t(r + i) * w.row_bytes;
                if (eight)
                    tile_cols<8, 2>(c, wrow, w.row_bytes, xcol, cols, yj + r, ldy, j0 == 0);
                else
                    tile_cols<4>(c, wrow, w.row_bytes, xcol, cols, yj + r, ldy, j0 == 0);
            }
            for (; r < c1; ++r) {
                wrow[0] = w.data + size_t(r) * w.row_bytes;
                tile_cols<1>(c, wrow, w.row_bytes, xcol, cols, yj + r, ldy, j0 == 0);
            }
        }
    }
}

}  // namespace nextn::avx512bf16
