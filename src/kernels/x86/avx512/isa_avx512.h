#pragma once
// AVX-512 vector primitives and weight decoders for the shared templates (x86/gemm_tile.h,
// simd/vec_ops.h, simd/key_scores.h). Include only from translation units in x86/avx512/.
// GCC 12 reports the deliberately undefined pass-through operands inside the AVX-512 intrinsics
// headers (_mm512_undefined_*) as uninitialized once they are inlined here; they are not.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstdint>

#include "kernels/quant.h"
#include "kernels/simd/staged_rows.h"

namespace nextn::avx512 {

// vgf2p8affineqb: each byte of v times the bit matrix `matrix` (in every qword), xor Imm. The
// matrix's byte 7 - i picks the input bits whose parity is output bit i. Written as asm so that
// the units need no -mgfni, which would let the compiler use GFNI anywhere in them: they must
// also run on AVX-512 CPUs without GFNI (Skylake-SP, Cascade Lake), where the kernels take shifts
// and masks instead.
template <int Imm>
[[gnu::always_inline]] inline __m512i gfni_affine(__m512i v, __m512i matrix) {
    __m512i r;
    asm("vgf2p8affineqb %3, %2, %1, %0" : "=v"(r) : "v"(v), "v"(matrix), "i"(Imm));
    return r;
}
// The bit matrix that moves input bit `from` + k to output bit `to` + k (k < n), or with `spread`
// input bit `from` to output bits `to` .. `to` + n - 1; the other output bits zero.
constexpr long long gfni_bit_matrix(int from, int to, int n, bool spread = false) {
    unsigned long long a = 0;
    for (int k = 0; k < n; ++k) a |= (1ull << (spread ? from : from + k)) << (8 * (7 - (to + k)));
    return static_cast<long long>(a);
}

// The high nibbles of v's bytes, in the low halves (the high halves zero), for the 4-bit int8-dot
// kernels: with GFNI one vgf2p8affineqb (shift_matrix: kHighNibblesToLow) instead of a shift and
// a mask.
template <bool Gfni>
[[gnu::always_inline]] inline __m512i high_nibbles(__m512i v, __m512i low_nibbles, __m512i shift_matrix) {
    if constexpr (Gfni)
        return gfni_affine<0>(v, shift_matrix);
    else
        return _mm512_and_si512(_mm512_srli_epi16(v, 4), low_nibbles);
}
constexpr long long kHighNibblesToLow = gfni_bit_matrix(4, 0, 4);  // high_nibbles' GFNI bit matrix
static_assert(kHighNibblesToLow == 0x1020408000000000LL);

struct Isa {
    using V = __m512;
    static constexpr int L = 16;
    // GEMM tile: c activation columns x rows_for(c) weight rows, sized so that the R*c
    // accumulators, R decoded weight vectors and one activation vector fit in 32 registers.
    // 8 rows for 1-2 columns (more loads in flight for decode); 4 rows up to 6 columns. Measured
    // on Zen 5: 4 x 6 beats 2 x 8 and 3 x 8, and 6 x 3 loses to 4 x 3 (heights that do not
    // divide the 16-row chunk leave single-row tiles).
    static constexpr int kMaxCols = 6;
    static constexpr int rows_for(int c) { return c <= 2 ? 8 : 4; }

    static __mmask16 mask(int n) { return __mmask16((1u << n) - 1u); }
    static V zero() { return _mm512_setzero_ps(); }
    static V set1(float v) { return _mm512_set1_ps(v); }
    static V load(const float* p) { return _mm512_loadu_ps(p); }
    static V load_part(const float* p, int n) { return _mm512_maskz_loadu_ps(mask(n), p); }
    static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
    static void store_part(float* p, V v, int n) { _mm512_mask_storeu_ps(p, mask(n), v); }
    // n lanes to memory that will not be read soon: a full aligned vector bypasses the cache
    // (no read-for-ownership); anything else is an ordinary store. fence() orders them.
    static void stream(float* p, V v, int n) {
        if (n == L && (reinterpret_cast<uintptr_t>(p) & 63) == 0) return _mm512_stream_ps(p, v);
        if (n == L) return store(p, v);
        store_part(p, v, n);
    }
    static void fence() { _mm_sfence(); }
    static V keep(V v, int n) { return _mm512_maskz_mov_ps(mask(n), v); }  // zero lanes >= n
    // L halves at p widened to f32 (exact): attention's key tiles (simd/key_scores.h), whose
    // accumulators take at most kKeyAccumulators registers (kInt8KeyAccumulators pairs of an
    // int32 and an f32 one for Q8_0 keys).
    static V widen_halves(const uint8_t* p) {
        return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    }
    static constexpr int kKeyAccumulators = 24;
    static constexpr int kInt8KeyAccumulators = 12;
    static V add(V a, V b) { return _mm512_add_ps(a, b); }
    static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
    static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
    static V div(V a, V b) { return _mm512_div_ps(a, b); }
    static V max(V a, V b) { return _mm512_max_ps(a, b); }
    static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }  // a * b + c, one rounding
    // int32 lanes (the int8-dot kernels' sums)
    using Vi = __m512i;
    static V to_float(Vi v) { return _mm512_cvtepi32_ps(v); }
    static Vi load_i(const uint8_t* p) { return _mm512_loadu_si512(p); }
    static Vi splat_i32(int32_t v) { return _mm512_set1_epi32(v); }
    // acc + per int32 lane the sum of its 4 products u8 (u) x s8 (s), exact (vpdpbusd).
    static Vi dot_u8s8(Vi acc, Vi u, Vi s) { return _mm512_dpbusd_epi32(acc, u, s); }
    static Vi sub_i32(Vi a, Vi b) { return _mm512_sub_epi32(a, b); }
    static Vi shl_i32(Vi a, unsigned k) { return _mm512_slli_epi32(a, k); }
    static Vi add_i32(Vi a, Vi b) { return _mm512_add_epi32(a, b); }
    static Vi zero_i32() { return _mm512_setzero_si512(); }
    static Vi and_i(Vi a, Vi b) { return _mm512_and_si512(a, b); }
    static Vi or_i(Vi a, Vi b) { return _mm512_or_si512(a, b); }
    static Vi splat_i8(int v) { return _mm512_set1_epi8(char(v)); }
    template <int K>
    static Vi shl_i16(Vi a) { return _mm512_slli_epi16(a, K); }
    template <int K>
    static Vi shr_i16(Vi a) { return _mm512_srli_epi16(a, K); }

    // Fixed tree: halves of 512, of 256, of 128, then lane pairs.
    static float hsum(V v) {
        const __m256 a = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
        __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
        b = _mm_add_ps(b, _mm_movehl_ps(b, b));
        b = _mm_add_ss(b, _mm_movehdup_ps(b));
        return _mm_cvtss_f32(b);
    }
    // hsum of four vectors at once, each by hsum's own tree (the same bits: the int8 tiles'
    // sums still equal the scalar reference's, KernelsInt8 tests it bitwise): 14 shuffles and
    // adds and one 128-bit store for all four, where four hsum calls take 32 and four stores.
    static __m128 hsum4(V a, V b, V c, V d) {
        // Halves of 512: lanes i and i + 8; 128-bit lanes (a0+a2, a1+a3, b0+b2, b1+b3).
        const V ab = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
        const V cd = _mm512_add_ps(_mm512_shuffle_f32x4(c, d, 0x44), _mm512_shuffle_f32x4(c, d, 0xEE));
        // Halves of 256: 128-bit lane k holds vector k's four partial sums.
        const V q = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, 0x88), _mm512_shuffle_f32x4(ab, cd, 0xDD));
        // Halves of 128 (element 0 = s0 + s2, 1 = s1 + s3), then that pair.
        const V h = _mm512_add_ps(q, _mm512_permute_ps(q, 0xEE));
        const V s = _mm512_add_ps(h, _mm512_permute_ps(h, 0x55));
        const __m512i firsts = _mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
        return _mm512_castps512_ps128(_mm512_permutexvar_ps(firsts, s));
    }
    static float hmax(V v) { return _mm512_reduce_max_ps(v); }

    // exp(x), ~2 ulp: x = n ln2 + r, |r| <= ln2/2, degree-7 Taylor polynomial, times 2^n.
    // Overflow gives +inf, x < -87.3 gives 0 (no subnormal results), NaN stays NaN.
    static V exp(V x) {
        const V xc = _mm512_min_ps(_mm512_max_ps(x, set1(-87.33654f)), set1(88.72283f));
        const V n = _mm512_roundscale_ps(_mm512_mul_ps(xc, set1(1.44269504f)),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        V r = _mm512_fnmadd_ps(n, set1(0.693145752f), xc);
        r = _mm512_fnmadd_ps(n, set1(1.42860677e-6f), r);
        V p = set1(1.0f / 5040.0f);
        p = fma(p, r, set1(1.0f / 720.0f));
        p = fma(p, r, set1(1.0f / 120.0f));
        p = fma(p, r, set1(1.0f / 24.0f));
        p = fma(p, r, set1(1.0f / 6.0f));
        p = fma(p, r, set1(0.5f));
        p = fma(p, r, set1(1.0f));
        p = fma(p, r, set1(1.0f));
        V y = _mm512_scalef_ps(p, n);
        y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, set1(88.72283f), _CMP_GT_OQ),
                               set1(__builtin_inff()));
        y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, set1(-87.33654f), _CMP_LT_OQ), zero());
        return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
    }
};

// Weight decoders: sub(row, b, s) is values [32b + 16s, 32b + 16s + 16) of the row as f32;
// part(row, off, n) is values [off, off + n) zero-padded (float types only).
using DecodeF32 = simd::F32Rows<Isa>;  // f32 rows: a plain load per vector

inline __m512 widen_bf16(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

struct DecodeBF16 {
    static constexpr int64_t kBlockBytes = 64;  // bytes of 32 values
    static constexpr int kPrefetchEvery = 1;  // blocks per cache line (prefetch cadence)
    static __m512 sub(const uint8_t* row, int64_t b, int s) {
        return widen_bf16(_mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(row + (b * 32 + s * 16) * 2)));
    }
    static __m512 part(const uint8_t* row, int64_t off, int n) {
        return widen_bf16(_mm256_maskz_loadu_epi16(Isa::mask(n), row + off * 2));
    }
};

struct DecodeF16 {
    static constexpr int64_t kBlockBytes = 64;  // bytes of 32 values
    static constexpr int kPrefetchEvery = 1;  // blocks per cache line (prefetch cadence)
    static __m512 sub(const uint8_t* row, int64_t b, int s) {
        return _mm512_cvtph_ps(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + (b * 32 + s * 16) * 2)));
    }
    static __m512 part(const uint8_t* row, int64_t off, int n) {
        return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(Isa::mask(n), row + off * 2));
    }
};

// A block's f16 scale (at `block`) widened and broadcast to every lane: one broadcast of the
// half and one vector conversion, where a scalar conversion and then a broadcast took more
// shuffle-port work (BM_WeightedRows q8_0 4 rows, one thread: 4096 positions 117-119 -> 102 us,
// 32768 994-1034 -> 891-944).
inline __m512 splat_block_scale(const uint8_t* block) {
    uint16_t d;
    __builtin_memcpy(&d, block, 2);
    return _mm512_cvtph_ps(_mm256_set1_epi16(short(d)));
}

struct DecodeQ8_0 {
    static constexpr int64_t kBlockBytes = int64_t(sizeof(BlockQ8_0));  // bytes of 32 values
    static constexpr int kPrefetchEvery = 2;  // blocks per cache line (prefetch cadence)
    static __m512 sub(const uint8_t* row, int64_t b, int s) {
        const uint8_t* blk = row + b * int64_t(sizeof(BlockQ8_0));
        const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2 + s * 16));
        return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), splat_block_scale(blk));
    }
    static __m512 part(const uint8_t*, int64_t, int) { return _mm512_setzero_ps(); }
};

// The 16 possible values (code - 8) * d of a block form a table; vpermps picks lane values
// by the low 4 bits of each index, so a byte of codes indexes it directly (low nibble) or after
// one shift (high nibble). Table entries are the exact products the reference computes.
struct DecodeQ4_0 {
    static constexpr int64_t kBlockBytes = int64_t(sizeof(BlockQ4_0));  // bytes of 32 values
    static constexpr int kPrefetchEvery = 4;  // blocks per cache line (prefetch cadence)
    static __m512 sub(const uint8_t* row, int64_t b, int s) {
        const uint8_t* blk = row + b * int64_t(sizeof(BlockQ4_0));
        const __m512 table =
            _mm512_mul_ps(_mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7),
                          splat_block_scale(blk));
        __m512i idx = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2)));
        if (s == 1) idx = _mm512_srli_epi32(idx, 4);  // values 16..31 are the high nibbles
        return _mm512_permutexvar_ps(idx, table);
    }
    static __m512 part(const uint8_t*, int64_t, int) { return _mm512_setzero_ps(); }
};

// As Q4_0 with table entries code * d + m (product and sum rounded separately, as the
// reference does).
struct DecodeQ4_1 {
    static constexpr int64_t kBlockBytes = int64_t(sizeof(BlockQ4_1));  // bytes of 32 values
    static constexpr int kPrefetchEvery = 3;  // blocks per cache line (prefetch cadence)
    static __m512 sub(const uint8_t* row, int64_t b, int s) {
        const uint8_t* blk = row + b * int64_t(sizeof(BlockQ4_1));
        const __m512 table = _mm512_add_ps(
            _mm512_mul_ps(_mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                          splat_block_scale(blk)),
            splat_block_scale(blk + 2));
        __m512i idx = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 4)));
        if (s == 1) idx = _mm512_srli_epi32(idx, 4);
        return _mm512_permutexvar_ps(idx, table);
    }
    static __m512 part(const uint8_t*, int64_t, int) { return _mm512_setzero_ps(); }
};

}  // namespace nextn::avx512
