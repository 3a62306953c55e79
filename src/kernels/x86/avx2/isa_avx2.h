#pragma once
// AVX2+FMA+F16C vector primitives and weight decoders for the shared templates
// (x86/gemm_tile.h, simd/vec_ops.h, simd/key_scores.h). Include only from translation units in
// x86/avx2/.
#include <immintrin.h>

#include <cstdint>

#include "kernels/quant.h"
#include "kernels/simd/staged_rows.h"

namespace nextn::avx2 {

struct Isa {
    using V = __m256;
    static constexpr int L = 8;
    // GEMM tile: c activation columns x rows_for(c) weight rows, sized so that the R*c
    // accumulators, R decoded weight vectors and one activation vector fit in 16 registers.
    static constexpr int kMaxCols = 4;
    static constexpr int rows_for(int c) { return c <= 2 ? 4 : 2; }

    static __m256i mask(int n) {
        return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    }
    static V zero() { return _mm256_setzero_ps(); }
    static V set1(float v) { return _mm256_set1_ps(v); }
    static V load(const float* p) { return _mm256_loadu_ps(p); }
    static V load_part(const float* p, int n) { return _mm256_maskload_ps(p, mask(n)); }
    static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
    static void store_part(float* p, V v, int n) { _mm256_maskstore_ps(p, mask(n), v); }
    // n lanes to memory that will not be read soon: a full aligned vector bypasses the cache
    // (no read-for-ownership); anything else is an ordinary store. fence() orders them.
    static void stream(float* p, V v, int n) {
        if (n == L && (reinterpret_cast<uintptr_t>(p) & 31) == 0) return _mm256_stream_ps(p, v);
        if (n == L) return store(p, v);
        store_part(p, v, n);
    }
    static void fence() { _mm_sfence(); }
    static V keep(V v, int n) { return _mm256_and_ps(v, _mm256_castsi256_ps(mask(n))); }
    // L halves at p widened to f32 (exact): attention's key tiles (simd/key_scores.h), whose
    // accumulators take at most kKeyAccumulators registers (kInt8KeyAccumulators pairs of an
    // int32 and an f32 one for Q8_0 keys).
    static V widen_halves(const uint8_t* p) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    }
    static constexpr int kKeyAccumulators = 12;
    static constexpr int kInt8KeyAccumulators = 6;
    static V add(V a, V b) { return _mm256_add_ps(a, b); }
    static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
    static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
    static V div(V a, V b) { return _mm256_div_ps(a, b); }
    static V max(V a, V b) { return _mm256_max_ps(a, b); }
    static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }  // a * b + c, one rounding
    // int32 lanes (the int8-dot kernels' sums)
    using Vi = __m256i;
    static V to_float(Vi v) { return _mm256_cvtepi32_ps(v); }
    static Vi load_i(const uint8_t* p) {
        return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    }
    static Vi splat_i32(int32_t v) { return _mm256_set1_epi32(v); }
    // acc + per int32 lane the sum of its 4 products u8 (u) x s8 (s), exact. Without AVX-VNNI's
    // vpdpbusd: pmaddubsw's int16 pairs could saturate at u up to 255 (2 * 255 * 127 > 32767),
    // so the even and odd bytes are widened to int16 and multiplied by pmaddwd, each pair
    // within int32.
    static Vi dot_u8s8(Vi acc, Vi u, Vi s) {
        const __m256i u_even = _mm256_and_si256(u, _mm256_set1_epi16(0x00FF));
        const __m256i u_odd = _mm256_srli_epi16(u, 8);
        const __m256i s_even = _mm256_srai_epi16(_mm256_slli_epi16(s, 8), 8);
        const __m256i s_odd = _mm256_srai_epi16(s, 8);
        return _mm256_add_epi32(acc, _mm256_add_epi32(_mm256_madd_epi16(u_even, s_even),
                                                      _mm256_madd_epi16(u_odd, s_odd)));
    }
    static Vi sub_i32(Vi a, Vi b) { return _mm256_sub_epi32(a, b); }
    static Vi shl_i32(Vi a, unsigned k) { return _mm256_slli_epi32(a, int(k)); }
    static Vi add_i32(Vi a, Vi b) { return _mm256_add_epi32(a, b); }
    static Vi zero_i32() { return _mm256_setzero_si256(); }
    static Vi and_i(Vi a, Vi b) { return _mm256_and_si256(a, b); }
    static Vi or_i(Vi a, Vi b) { return _mm256_or_si256(a, b); }
    static Vi splat_i8(int v) { return _mm256_set1_epi8(char(v)); }
    template <int K>
    static Vi shl_i16(Vi a) { return _mm256_slli_epi16(a, K); }
    template <int K>
    static Vi shr_i16(Vi a) { return _mm256_srli_epi16(a, K); }

    // Fixed tree: halves of 256, of 128, then lane pairs.
    static float hsum(V v) {
        __m128 b = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        b = _mm_add_ps(b, _mm_movehl_ps(b, b));
        b = _mm_add_ss(b, _mm_movehdup_ps(b));
        return _mm_cvtss_f32(b);
    }
    static float hmax(V v) {
        __m128 b = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        b = _mm_max_ps(b, _mm_movehl_ps(b, b));
        b = _mm_max_ss(b, _mm_movehdup_ps(b));
        return _mm_cvtss_f32(b);
    }

    // exp(x), ~2 ulp: x = n ln2 + r, |r| <= ln2/2, degree-7 Taylor polynomial, times 2^n applied
    // as two exponent-field scalings (keeps 2^n representable at both ends of the range).
    // Overflow gives +inf, x < -87.3 gives 0, NaN stays NaN.
    static V exp(V x) {
        const V xc = _mm256_min_ps(_mm256_max_ps(x, set1(-87.33654f)), set1(88.72283f));
        const V n = _mm256_round_ps(_mm256_mul_ps(xc, set1(1.44269504f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        V r = _mm256_fnmadd_ps(n, set1(0.693145752f), xc);
        r = _mm256_fnmadd_ps(n, set1(1.42860677e-6f), r);
        V p = set1(1.0f / 5040.0f);
        p = fma(p, r, set1(1.0f / 720.0f));
        p = fma(p, r, set1(1.0f / 120.0f));
        p = fma(p, r, set1(1.0f / 24.0f));
        p = fma(p, r, set1(1.0f / 6.0f));
        p = fma(p, r, set1(0.5f));
        p = fma(p, r, set1(1.0f));
        p = fma(p, r, set1(1.0f));
        const __m256i ni = _mm256_cvtps_epi32(n);
        const __m256i n1 = _mm256_srai_epi32(ni, 1);
        const __m256i n2 = _mm256_sub_epi32(ni, n1);
        auto pow2 = [](__m256i e) {
            return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(e, _mm256_set1_epi32(127)), 23));
        };
        V y = _mm256_mul_ps(_mm256_mul_ps(p, pow2(n1)), pow2(n2));
        y = _mm256_blendv_ps(y, set1(__builtin_inff()), _mm256_cmp_ps(x, set1(88.72283f), _CMP_GT_OQ));
        y = _mm256_blendv_ps(y, zero(), _mm256_cmp_ps(x, set1(-87.33654f), _CMP_LT_OQ));
        return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    }
};

// Weight decoders: sub(row, b, s) is values [32b + 8s, 32b + 8s + 8) of the row as f32;
// part(row, off, n) is values [off, off + n) zero-padded (float types only).
using DecodeF32 = simd::F32Rows<Isa>;  // f32 rows: a plain load per vector

// The first n of 8 halves at p, zero-padded (no masked 16-bit loads in AVX2).
inline __m128i load_halves_part(const uint8_t* p, int n) {
    uint16_t tmp[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    __builtin_memcpy(tmp, p, size_t(n) * 2);
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(tmp));
}

inline __m256 widen_bf16(__m128i h) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

struct DecodeBF16 {
    static constexpr int64_t kBlockBytes = 64;  // bytes of 32 values
    static constexpr int kPrefetchEvery = 1;  // blocks per cache line (prefetch cadence)
    static __m256 sub(const uint8_t* row, int64_t b, int s) {
        return widen_bf16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + (b * 32 + s * 8) * 2)));
    }
    static __m256 part(const uint8_t* row, int64_t off, int n) {
        return widen_bf16(load_halves_part(row + off * 2, n));
    }
};

struct DecodeF16 {
    static constexpr int64_t kBlockBytes = 64;  // bytes of 32 values
    static constexpr int kPrefetchEvery = 1;  // blocks per cache line (prefetch cadence)
    static __m256 sub(const uint8_t* row, int64_t b, int s) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + (b * 32 + s * 8) * 2)));
    }
    static __m256 part(const uint8_t* row, int64_t off, int n) {
        return _mm256_cvtph_ps(load_halves_part(row + off * 2, n));
    }
};

// A block's f16 scale (at `block`) widened and broadcast to every lane (as the AVX-512 one's).
inline __m256 splat_block_scale(const uint8_t* block) {
    uint16_t d;
    __builtin_memcpy(&d, block, 2);
    return _mm256_cvtph_ps(_mm_set1_epi16(short(d)));
}

struct DecodeQ8_0 {
    static constexpr int64_t kBlockBytes = int64_t(sizeof(BlockQ8_0));  // bytes of 32 values
    static constexpr int kPrefetchEvery = 2;  // blocks per cache line (prefetch cadence)
    static __m256 sub(const uint8_t* row, int64_t b, int s) {
        const uint8_t* blk = row + b * int64_t(sizeof(BlockQ8_0));
        const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + 2 + s * 8));
        return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), splat_block_scale(blk));
    }
    static __m256 part(const uint8_t*, int64_t, int) { return _mm256_setzero_ps(); }
};

struct DecodeQ4_0 {
    static constexpr int64_t kBlockBytes = int64_t(sizeof(BlockQ4_0));  // bytes of 32 values
    static constexpr int kPrefetchEvery = 4;  // blocks per cache line (prefetch cadence)
    static __m256 sub(const uint8_t* row, int64_t b, int s) {
        const uint8_t* blk = row + b * int64_t(sizeof(BlockQ4_0));
        __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + 2 + (s & 1) * 8));
        if (s >= 2) bytes = _mm_srli_epi16(bytes, 4);  // values 16..31 are the high nibbles
        const __m128i codes = _mm_and_si128(bytes, _mm_set1_epi8(15));
        const __m256i q = _mm256_sub_epi32(_mm256_cvtepu8_epi32(codes), _mm256_set1_epi32(8));
        return _mm256_mul_ps(_mm256_cvtepi32_ps(q), splat_block_scale(blk));
    }
    static __m256 part(const uint8_t*, int64_t, int) { return _mm256_setzero_ps(); }
};

struct DecodeQ4_1 {
    static constexpr int64_t kBlockBytes = int64_t(sizeof(BlockQ4_1));  // bytes of 32 values
    static constexpr int kPrefetchEvery = 3;  // blocks per cache line (prefetch cadence)
    static __m256 sub(const uint8_t* row, int64_t b, int s) {
        const uint8_t* blk = row + b * int64_t(sizeof(BlockQ4_1));
        __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + 4 + (s & 1) * 8));
        if (s >= 2) bytes = _mm_srli_epi16(bytes, 4);
        const __m128i codes = _mm_and_si128(bytes, _mm_set1_epi8(15));
        const __m256 q = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(codes));
        return _mm256_add_ps(_mm256_mul_ps(q, splat_block_scale(blk)), splat_block_scale(blk + 2));
    }
    static __m256 part(const uint8_t*, int64_t, int) { return _mm256_setzero_ps(); }
};

}  // namespace nextn::avx2
