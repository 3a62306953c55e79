#pragma once
// The int8-dot kernels (kernels/int8_dot.h) in 256-bit AVX2 form, shared by two translation
// units that differ only in how 4-byte dot products are formed (a `Dot` policy): x86/avxvnni/
// (AVX-VNNI's vpdpbusd) and x86/avx2/ (pmaddubsw + pmaddwd, for AVX2 CPUs without AVX-VNNI).
// Each 64-byte code step is two 32-byte halves: lanes 0..7 and 8..15 of the reference's 16,
// kept in two accumulators; the final sum adds the halves first, which is the first level of
// the reference's hsum tree, then follows the AVX2 tree (halves of 128, then lane pairs) as the
// reference does. The integer sums are exact with either policy, so both give the reference's
// bits.
//
// Include only from an ISA translation unit. Everything here has internal linkage, so the two
// units' copies (compiled with and without -mavxvnni) are never merged by the linker.
//
// A Dot policy provides, for u8 weight codes w and s8 activation codes x:
//   Dot::W Dot::prepare<EightBit>(w)          once per weight vector (shared by the columns)
//   __m256i Dot::dot<EightBit>(acc, pw, x)    acc + per int32 lane the sum of its 4 products
//   __m256i Dot::dot_pair(acc, w0, x0, w1, x1)  the same for two steps of codes up to 63
//   Dot::kSignedEightBit                      8-bit codes are multiplied as w - 128: the
//                                             chunk's sum starts 128 * xsum higher
//   Dot::kLatencyBound                        each dot product waits on the last one into the
//                                             same sum (x86/row_groups_256.h then splits sums)
//   Dot::kWidensLate                          products are int16 pair sums first: then
//   __m256i Dot::pairs(pw, x)                   the int16 pair sums of one step (no widening)
//   __m256i Dot::widen(pairs16)                 their int32 lane sums (x86/row_groups_256.h adds
//                                               several steps of small codes before one widen)
#include <immintrin.h>

#include <limits>

#include "kernels/int8_dot.h"
#include "kernels/x86/avx2/isa_avx2.h"
#include "kernels/x86/int8_dot_tiles.h"

namespace nextn::x86 {
namespace {

using avx2::Isa;

// Lanes h*8 .. h*8+7 of a chunk's 16 scales (f16 or f32).
template <WType T>
__m256 load_scales_256(const uint8_t* plane, int64_t boff, int h) {
    if constexpr (int8_dot_f32_scales(T))
        return _mm256_loadu_ps(reinterpret_cast<const float*>(plane) + boff + 8 * h);
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(plane + (boff + 8 * h) * 2)));
}

// R rows x C columns of the 8-bit and 4-bit types; [.][.][2]: the two 8-lane halves.
template <class Dot, WType T, int R, int C, bool Stream>
void tile_256(const uint8_t* const* wrow, const TilePrefetchPlan& plan, int64_t chunks, size_t d_off, size_t m_off,
              const QuantizedColumns& x, int64_t j0, float* y, int64_t ldy) {
    constexpr bool kEight = int8_dot_eight_bit(T);
    constexpr int64_t kChunkBytes = int8_dot_chunk_code_bytes(T);
    const __m256i low_nibbles = _mm256_set1_epi8(15);
    __m256 acc[R][C][2];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) acc[r][c][0] = acc[r][c][1] = _mm256_setzero_ps();
    // 8-bit codes the policy multiplies as w - 128 get 128 * xsum back in the start value.
    constexpr int kBias = kEight && Dot::kSignedEightBit ? 128 : 0;
    // Tiles of several columns fetch two tiles ahead (the 512-bit kernel's comment says why);
    // with 256-bit dot products this pays for 8-bit tiles too. kernel_ab ISA=avx2, 0.8B
    // forwards against one tile ahead: q4_0 width 2, 3, 4, 8 0.859, 0.861, 0.889, 0.918x the
    // time, q8_0 width 2, 4 0.894, 0.930x; single columns unchanged (0.964, 1.026x: noise).
    NextTilePrefetch<> prefetch(plan, wrow, j0, {}, C > 1 ? 2 : 1);
    const StreamPrefetch<Stream> stream(plan, j0);
    for (int64_t ch = 0; ch < chunks; ++ch) {
        const int64_t xoff = ch * kI8ChunkValues, boff = ch * kI8ChunkBlocks;
        prefetch.at_chunk(ch);
        __m256i isum[R][C][2];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
            for (int c = 0; c < C; ++c) isum[r][c][0] = isum[r][c][1] = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int s = 0; s < kI8Steps; s += kEight ? 1 : 2) {
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const uint8_t* p = wrow[r] + ch * kChunkBytes + (kEight ? s : s / 2) * 64;
                stream.line(p);
#pragma GCC unroll 8
                for (int h = 0; h < 2; ++h) {
                    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 * h));
                    auto xload = [&](int c, int step) {
                        return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(
                            x.codes_of(j0 + c) + xoff + 32 * h + step * 64));
                    };
                    if constexpr (kEight) {
                        const auto w = Dot::template prepare<true>(v);
#pragma GCC unroll 8
                        for (int c = 0; c < C; ++c)
                            isum[r][c][h] = Dot::template dot<true>(isum[r][c][h], w, xload(c, s));
                    } else {  // low nibbles are step s, high nibbles step s + 1
                        const auto lo = Dot::template prepare<false>(_mm256_and_si256(v, low_nibbles));
                        const auto hi = Dot::template prepare<false>(
                            _mm256_and_si256(_mm256_srli_epi16(v, 4), low_nibbles));
#pragma GCC unroll 8
                        for (int c = 0; c < C; ++c)
                            isum[r][c][h] = Dot::dot_pair(isum[r][c][h], lo, xload(c, s), hi, xload(c, s + 1));
                    }
                }
            }
        }
        if (ch == chunks - 1) stream.planes(wrow, R, d_off);
        __m256i xsum[C][2], start[C][2];  // per column, shared by the rows
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c)
#pragma GCC unroll 2
            for (int h = 0; h < 2; ++h) {
                xsum[c][h] = _mm256_loadu_si256(
                    reinterpret_cast<const __m256i*>(x.sums_of(j0 + c) + boff + 8 * h));
                start[c][h] = chunk_start<Isa, T, kBias>(xsum[c][h]);
            }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
            for (int h = 0; h < 2; ++h) {
                const __m256 dw = load_scales_256<T>(wrow[r] + d_off, boff, h);
                const __m256 dm = int8_dot_affine(T) ? load_scales_256<T>(wrow[r] + m_off, boff, h)
                                                     : _mm256_setzero_ps();
#pragma GCC unroll 8
                for (int c = 0; c < C; ++c) {
                    const __m256 dx = _mm256_loadu_ps(x.scales_of(j0 + c) + boff + 8 * h);
                    const __m256i exact = Isa::add_i32(isum[r][c][h], start[c][h]);
                    acc[r][c][h] = scale_chunk<Isa, T>(exact, xsum[c][h], dw, dm, dx, acc[r][c][h]);
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

// Q6_KX, R rows x C columns: per row and half, the 8 code steps are rebuilt from the low-nibble
// and high-bit planes and meet every column; steps 0..3 and 4..7 (the sub-blocks) sum apart.
template <class Dot, int R, int C, bool Stream>
void tile_q6_256(const uint8_t* const* wrow, const TilePrefetchPlan& plan, int64_t chunks, size_t d_off, size_t sc_off,
                 const QuantizedColumns& x, int64_t j0, float* y, int64_t ldy) {
    constexpr int64_t kChunkBytes = int8_dot_chunk_code_bytes(WType::Q6_KX);
    __m256 acc[R][C][2];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) acc[r][c][0] = acc[r][c][1] = _mm256_setzero_ps();
    auto load = [](const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); };
    NextTilePrefetch<> prefetch(plan, wrow, j0);
    const StreamPrefetch<Stream> stream(plan, j0);
    for (int64_t ch = 0; ch < chunks; ++ch) {
        const int64_t xoff = ch * kI8ChunkValues, boff = ch * kI8ChunkBlocks;
        prefetch.at_chunk(ch);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const uint8_t* p = wrow[r] + ch * kChunkBytes;
            const uint8_t* sc = wrow[r] + sc_off + ch * 32;
#pragma GCC unroll 6
            for (int k = 0; k < 6; ++k) stream.line(p + k * 64);  // 4 low-nibble, 2 high-bit lines
#pragma GCC unroll 2
            for (int h = 0; h < 2; ++h) {
                __m256i isum[C][2];  // the two sub-block sums, from their starts
#pragma GCC unroll 8
                for (int c = 0; c < C; ++c) {
                    auto sums = [&](const int32_t* p) {
                        return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + boff + 8 * h));
                    };
                    const __m256i xhalf = sums(x.half_sums_of(j0 + c));
                    isum[c][0] = q6_start_first<Isa>(xhalf);
                    isum[c][1] = q6_start_second<Isa>(sums(x.sums_of(j0 + c)), xhalf);
                }
                auto codes = [&](int s) {
                    return Dot::template prepare<false>(q6_step_codes<Isa>(
                        load(p + (s / 2) * 64 + 32 * h), load(p + 256 + (s / 4) * 64 + 32 * h), s));
                };
#pragma GCC unroll 4
                for (int s = 0; s < kI8Steps; s += 2) {  // steps s, s + 1: one sub-block
                    const auto w0 = codes(s), w1 = codes(s + 1);
#pragma GCC unroll 8
                    for (int c = 0; c < C; ++c) {
                        const uint8_t* xs = reinterpret_cast<const uint8_t*>(x.codes_of(j0 + c) + xoff + 32 * h);
                        isum[c][s / 4] = Dot::dot_pair(isum[c][s / 4], w0, load(xs + s * 64), w1,
                                                       load(xs + (s + 1) * 64));
                    }
                }
                const __m256 dw = load_scales_256<WType::Q6_KX>(wrow[r] + d_off, boff, h);
                const __m256 sca = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                    _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc + 8 * h))));
                const __m256 scb = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                    _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc + 16 + 8 * h))));
#pragma GCC unroll 8
                for (int c = 0; c < C; ++c) {
                    const __m256 dx = _mm256_loadu_ps(x.scales_of(j0 + c) + boff + 8 * h);
                    acc[r][c][h] = scale_chunk_q6<Isa>(isum[c][0], isum[c][1], sca, scb, dw, dx,
                                                       acc[r][c][h]);
                }
            }
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c)
            y[(j0 + c) * ldy + r] = Isa::hsum(_mm256_add_ps(acc[r][c][0], acc[r][c][1]));
    stream.planes(wrow, R, d_off);
}

template <class Dot, WType T, int R, int Cmax, bool Stream>
void tile_cols_256(int c, const uint8_t* const* wrow, const TilePrefetchPlan& plan, int64_t chunks, size_t d_off, size_t m_off,
                   const QuantizedColumns& x, int64_t j0, float* y, int64_t ldy) {
    if (c == Cmax) {
        if constexpr (T == WType::Q6_KX)
            return tile_q6_256<Dot, R, Cmax, Stream>(wrow, plan, chunks, d_off, m_off, x, j0, y, ldy);
        else
            return tile_256<Dot, T, R, Cmax, Stream>(wrow, plan, chunks, d_off, m_off, x, j0, y, ldy);
    }
    if constexpr (Cmax > 1)
        tile_cols_256<Dot, T, R, Cmax - 1, Stream>(c, wrow, plan, chunks, d_off, m_off, x, j0, y, ldy);
}

// 16 ymm registers: 4 rows x 1 column (8 sums, 8 accumulators spill to the stack at chunk
// ends), 2 rows x 2 columns; Q6_KX works one row at a time (2 x 1, 1 x 2: its per-row sums
// and codes use the registers).
template <class Dot, WType T>
void gemm_i8_rows_256(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy,
                      int64_t r0, int64_t r1) {
    constexpr int kMaxCols = 2;
    constexpr bool kQ6 = T == WType::Q6_KX;
    const int64_t chunks = x.chunks;
    const size_t d_off = int8_dot_plane_offset(T, chunks, 0);
    const size_t m_off = int8_dot_plane_offset(T, chunks, 1);
    // Streaming is a template parameter, as in the 512-bit kernel (which says why).
    const bool stream = streams_on_this_cpu(x.n);
    const TilePrefetchPlans<kQ6 ? 2 : 4, kQ6 ? 1 : 2, 1> plans(w.row_bytes, chunks, prefetch_burst_lines_for_this_cpu(),
                                                               stream);
    auto run = [&]<bool Stream>() {
        x86::int8_dot_rows<kMaxCols, kQ6 ? 2 : 4, kQ6 ? 1 : 2>(
            w, x.n, r0, r1, [&]<int R>(int c, const uint8_t* const* wrow, int64_t j0, int64_t r) {
                tile_cols_256<Dot, T, R, kMaxCols, Stream>(c, wrow, plans.template for_rows<R>(), chunks, d_off, m_off,
                                                           x, j0, y + r, ldy);
            });
    };
    if (stream) return run.template operator()<true>();
    run.template operator()<false>();
}

// Per 32-value block, the operations of ref::quantize_columns in 8-lane form.
void quantize_columns_256(const float* x, int64_t cols, QuantizedColumns& out, int64_t j0, int64_t j1) {
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256 lim = _mm256_set1_ps(127.0f), neg_lim = _mm256_set1_ps(-127.0f);
    quantize_columns_with(x, cols, out, j0, j1, [&](const float* p, int64_t left, int8_t* q, int32_t* sum,
                                                    int32_t* half) {
        __m256 v[4];  // the block's 32 values, zeros past cols
        for (int i = 0; i < 4; ++i) {
            const int64_t n = left - i * 8;
            v[i] = n >= 8 ? _mm256_loadu_ps(p + i * 8)
                   : n <= 0 ? _mm256_setzero_ps()
                            : Isa::load_part(p + i * 8, int(n));
        }
        // x * 0 is NaN exactly for NaN and infinite x.
        const __m256 zero = _mm256_setzero_ps();
        __m256 nonfinite = zero;
        for (int i = 0; i < 4; ++i)
            nonfinite = _mm256_or_ps(nonfinite, _mm256_cmp_ps(_mm256_mul_ps(v[i], zero), zero, _CMP_UNORD_Q));
        if (_mm256_movemask_ps(nonfinite) != 0) return std::numeric_limits<float>::quiet_NaN();
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
            if (e < 16) *half += w[e];
        }
        return d;
    });
}

}  // namespace
}  // namespace nextn::x86
