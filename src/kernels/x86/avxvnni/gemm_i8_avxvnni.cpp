// AVX-VNNI (the 256-bit VEX dot products of CPUs without AVX-512, e.g. Intel 12th gen and later
// cores): the chunked int8-dot weight types times int8 activations, and the activation
// quantizer, bit for bit the scalar reference's results (kernels/int8_dot.h). Each 64-byte code
// step is two 32-byte halves: lanes 0..7 and 8..15 of the reference's 16, kept in two
// accumulators; the final sum adds the halves first, which is the first level of the reference's
// hsum tree, then follows the AVX2 tree (halves of 128, then lane pairs) as the reference does.
#pragma GCC optimize("fp-contract=off")
#include <immintrin.h>

#include "kernels/int8_dot.h"
#include "kernels/x86/avx2/isa_avx2.h"
#include "kernels/x86/int8_dot_tiles.h"
#include "kernels/x86/x86_kernels.h"

namespace nextn::avxvnni {

namespace {

using avx2::Isa;


// Lanes h*8 .. h*8+7 of a chunk's 16 scales (f16 or f32).
template <WType T>
__m256 load_scales(const uint8_t* plane, int64_t boff, int h) {
    if constexpr (int8_dot_f32_scales(T))
        return _mm256_loadu_ps(reinterpret_cast<const float*>(plane) + boff + 8 * h);
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(plane + (boff + 8 * h) * 2)));
}


// R rows x C columns; [.][.][2]: the two 8-lane halves.
template <WType T, int R, int C>
void tile(const uint8_t* const* wrow, int64_t chunks, size_t d_off, size_t m_off,
          const QuantizedColumns& x, int64_t j0, float* y, int64_t ldy) {
    constexpr int64_t kChunkBytes = int8_dot_chunk_code_bytes(T);
    const __m256i low_nibbles = _mm256_set1_epi8(15);
    __m256 acc[R][C][2];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) acc[r][c][0] = acc[r][c][1] = _mm256_setzero_ps();
    for (int64_t ch = 0; ch < chunks; ++ch) {
        const int64_t xoff = ch * kI8ChunkValues, boff = ch * kI8ChunkBlocks;
        __m256i isum[R][C][2];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
            for (int c = 0; c < C; ++c) isum[r][c][0] = isum[r][c][1] = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int s = 0; s < kI8Steps; s += int8_dot_eight_bit(T) ? 1 : 2) {
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const uint8_t* p = wrow[r] + ch * kChunkBytes + (int8_dot_eight_bit(T) ? s : s / 2) * 64;
#pragma GCC unroll 8
                for (int h = 0; h < 2; ++h) {
                    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 * h));
#pragma GCC unroll 8
                    for (int c = 0; c < C; ++c) {
                        const int8_t* xs = x.codes_of(j0 + c) + xoff + 32 * h;
                        auto xload = [&](int step) {
                            return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xs + step * 64));
                        };
                        if constexpr (int8_dot_eight_bit(T)) {
                            isum[r][c][h] = _mm256_dpbusd_avx_epi32(isum[r][c][h], v, xload(s));
                        } else {  // low nibbles are step s, high nibbles step s + 1
                            const __m256i lo = _mm256_and_si256(v, low_nibbles);
                            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low_nibbles);
                            isum[r][c][h] = _mm256_dpbusd_avx_epi32(isum[r][c][h], lo, xload(s));
                            isum[r][c][h] = _mm256_dpbusd_avx_epi32(isum[r][c][h], hi, xload(s + 1));
                        }
                    }
                }
            }
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
            for (int h = 0; h < 2; ++h) {
                const __m256 dw = load_scales<T>(wrow[r] + d_off, boff, h);
                const __m256 dm = int8_dot_affine(T) ? load_scales<T>(wrow[r] + m_off, boff, h) : _mm256_setzero_ps();
#pragma GCC unroll 8
                for (int c = 0; c < C; ++c) {
                    const __m256 dx = _mm256_loadu_ps(x.scales_of(j0 + c) + boff + 8 * h);
                    const __m256i xsum = _mm256_loadu_si256(
                        reinterpret_cast<const __m256i*>(x.sums_of(j0 + c) + boff + 8 * h));
                    acc[r][c][h] = x86::scale_chunk<Isa, T>(isum[r][c][h], xsum, dw, dm, dx, acc[r][c][h]);
                }
            }
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c)
            y[(j0 + c) * ldy + r] = Isa::hsum(_mm256_add_ps(acc[r][c][0], acc[r][c][1]));
}

template <WType T, int R, int Cmax>
void tile_cols(int c, const uint8_t* const* wrow, int64_t chunks, size_t d_off, size_t m_off,
               const QuantizedColumns& x, int64_t j0, float* y, int64_t ldy) {
    if (c == Cmax) return tile<T, R, Cmax>(wrow, chunks, d_off, m_off, x, j0, y, ldy);
    if constexpr (Cmax > 1) tile_cols<T, R, Cmax - 1>(c, wrow, chunks, d_off, m_off, x, j0, y, ldy);
}

// 16 ymm registers: 4 rows x 1 column (8 sums, 8 accumulators spill to the stack at chunk
// ends), 2 rows x 2 columns.
template <WType T>
void gemm_i8_impl(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy,
                  int64_t r0, int64_t r1) {
    constexpr int kMaxCols = 2;
    const int64_t chunks = x.chunks;
    const size_t d_off = int8_dot_plane_offset(T, chunks, 0);
    const size_t m_off = int8_dot_plane_offset(T, chunks, 1);
    x86::int8_dot_rows<kMaxCols, 4, 2>(
        w, x.n, r0, r1, [&]<int R>(int c, const uint8_t* const* wrow, int64_t j0, int64_t r) {
            if constexpr (R == 4)  // one column only
                tile<T, 4, 1>(wrow, chunks, d_off, m_off, x, j0, y + r, ldy);
            else
                tile_cols<T, R, kMaxCols>(c, wrow, chunks, d_off, m_off, x, j0, y + r, ldy);
        });
}

}  // namespace

void gemm_i8_rows(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy,
                  int64_t r0, int64_t r1) {
    visit_int8_dot_type(w.type, [&]<WType T>() { gemm_i8_impl<T>(w, x, y, ldy, r0, r1); });
}

// Per 32-value block, the operations of ref::quantize_columns in 8-lane form.
void quantize_columns(const float* x, int64_t cols, QuantizedColumns& out, int64_t j0, int64_t j1) {
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256 lim = _mm256_set1_ps(127.0f), neg_lim = _mm256_set1_ps(-127.0f);
    quantize_columns_with(x, cols, out, j0, j1, [&](const float* p, int64_t left, int8_t* q, int32_t* sum) {
        __m256 v[4];  // the block's 32 values, zeros past cols
        for (int i = 0; i < 4; ++i) {
            const int64_t n = left - i * 8;
            v[i] = n >= 8 ? _mm256_loadu_ps(p + i * 8)
                   : n <= 0 ? _mm256_setzero_ps()
                            : Isa::load_part(p + i * 8, int(n));
        }
        const __m256 m = _mm256_max_ps(
            _mm256_max_ps(_mm256_and_ps(v[0], abs_mask), _mm256_and_ps(v[1], abs_mask)),
            _mm256_max_ps(_mm256_and_ps(v[2], abs_mask), _mm256_and_ps(v[3], abs_mask)));
        const float amax = Isa::hmax(m);  // the max is exact in any order
        const float d = amax / 127.0f;
        const __m256 vinv = _mm256_set1_ps(int8_inverse_scale(d));
        alignas(32) int32_t w[32];
        for (int i = 0; i < 4; ++i) {
            __m256 r = _mm256_round_ps(_mm256_mul_ps(v[i], vinv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            r = _mm256_min_ps(_mm256_max_ps(r, neg_lim), lim);
            _mm256_store_si256(reinterpret_cast<__m256i*>(w + 8 * i), _mm256_cvtps_epi32(r));
        }
        for (int e = 0; e < 32; ++e) {
            q[e] = int8_t(w[e]);
            *sum += w[e];
        }
        return d;
    });
}

}  // namespace nextn::avxvnni
