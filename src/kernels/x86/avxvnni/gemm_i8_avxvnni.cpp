// AVX-VNNI (the 256-bit VEX dot products of CPUs without AVX-512, e.g. Intel 12th gen and later
// cores): the int8-dot kernels of x86/int8_dot_256.h with vpdpbusd, bit for bit the scalar
// reference's results (kernels/int8_dot.h).
#pragma GCC optimize("fp-contract=off")
#include <immintrin.h>

#include "kernels/x86/int8_dot_256.h"
#include "kernels/x86/row_groups_256.h"
#include "kernels/x86/x86_kernels.h"

namespace nextn::avxvnni {

namespace {

// One instruction: u8 x s8, four products per int32 lane, no intermediate saturation.
struct VnniDot {
    using W = __m256i;
    static constexpr bool kSignedEightBit = false;
    // Each product waits on the last (vpdpbusd accumulates): a sum is a chain of its latencies.
    static constexpr bool kLatencyBound = true;
    // Its products widen to int32 as they are made: nothing to gain by adding them in int16.
    static constexpr bool kWidensLate = false;
    template <bool EightBit>
    static W prepare(__m256i w) { return w; }
    template <bool EightBit>
    static __m256i dot(__m256i acc, W w, __m256i x) { return _mm256_dpbusd_avx_epi32(acc, w, x); }
    static __m256i dot_pair(__m256i acc, W w0, __m256i x0, W w1, __m256i x1) {
        return _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(acc, w0, x0), w1, x1);
    }
};

}  // namespace

void gemm_i8_rows(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy,
                  int64_t r0, int64_t r1) {
    if (is_row_group_type(w.type)) return x86::gemm_row_groups_256<VnniDot>(w, x, y, ldy, r0, r1);
    visit_int8_dot_type(w.type, [&]<WType T>() { x86::gemm_i8_rows_256<VnniDot, T>(w, x, y, ldy, r0, r1); });
}

void quantize_columns(const float* x, int64_t cols, QuantizedColumns& out, int64_t j0, int64_t j1) {
    x86::quantize_columns_256(x, cols, out, j0, j1);
}

}  // namespace nextn::avxvnni
