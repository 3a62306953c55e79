// AVX2 without AVX-VNNI (Haswell to Ice Lake client cores, Zen 1 to 3): the int8-dot kernels of
// x86/int8_dot_256.h with pmaddubsw + pmaddwd, bit for bit the scalar reference's results
// (kernels/int8_dot.h).
#pragma GCC optimize("fp-contract=off")
#include <immintrin.h>

#include "kernels/x86/int8_dot_256.h"
#include "kernels/x86/row_groups_256.h"
#include "kernels/x86/x86_kernels.h"

namespace nextn::avx2 {

namespace {

// pmaddubsw multiplies u8 x s8 and adds pairs into a saturating int16: exact for the 4- and
// 6-bit codes (2 * 63 * 127 < 32767), but 8-bit codes (up to 255) could saturate. Those are
// multiplied as s = w - 128 instead: |s| (at most 128, unsigned) times x with the sign of s
// (|x| <= 127) keeps each pair within 2 * 128 * 127 = 32512, and the chunk's sum gets
// 128 * xsum back (exact in int32). pmaddwd then adds the int16 pairs into int32 lanes.
struct MaddubsDot {
    struct W {
        __m256i magnitude, sign;
    };
    static constexpr bool kSignedEightBit = true;
    // A sum's chain is the closing 32-bit add (1 cycle), not the products.
    static constexpr bool kLatencyBound = false;
    template <bool EightBit>
    static W prepare(__m256i w) {
        if constexpr (EightBit) {
            const __m256i s = _mm256_xor_si256(w, _mm256_set1_epi8(char(0x80)));
            return {_mm256_abs_epi8(s), s};
        } else {
            return {w, w};
        }
    }
    template <bool EightBit>
    static __m256i dot(__m256i acc, W w, __m256i x) {
        const __m256i xs = EightBit ? _mm256_sign_epi8(x, w.sign) : x;
        const __m256i pairs = _mm256_maddubs_epi16(w.magnitude, xs);
        return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
    }
    // Two steps of codes up to 63 (the 4-bit and Q6_K codes): their int16 pairs add without
    // overflow (2 * 2 * 63 * 127 = 32004 < 32767), so one pmaddwd serves both.
    static __m256i dot_pair(__m256i acc, W w0, __m256i x0, W w1, __m256i x1) {
        return _mm256_add_epi32(acc, widen(_mm256_add_epi16(pairs(w0, x0), pairs(w1, x1))));
    }
    // The row-group tiles add more steps of small codes in int16 before one pmaddwd (pairs, then
    // widen): steps of codes up to m fit 32767 / (2 * m * 127) at a time, 8 of 4-bit codes.
    static constexpr bool kWidensLate = true;
    static __m256i pairs(W w, __m256i x) { return _mm256_maddubs_epi16(w.magnitude, x); }
    static __m256i widen(__m256i pairs16) { return _mm256_madd_epi16(pairs16, _mm256_set1_epi16(1)); }
};

}  // namespace

void gemm_i8_rows(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy,
                  int64_t r0, int64_t r1) {
    if (is_row_group_type(w.type)) return x86::gemm_row_groups_256<MaddubsDot>(w, x, y, ldy, r0, r1);
    visit_int8_dot_type(w.type, [&]<WType T>() { x86::gemm_i8_rows_256<MaddubsDot, T>(w, x, y, ldy, r0, r1); });
}

void quantize_columns(const float* x, int64_t cols, QuantizedColumns& out, int64_t j0, int64_t j1) {
    x86::quantize_columns_256(x, cols, out, j0, j1);
}

}  // namespace nextn::avx2
