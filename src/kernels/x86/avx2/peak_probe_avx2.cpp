// AVX2 compute-peak probes (KernelTable::int8_peak_probe / fma_peak_probe). 256-bit registers
// hold half a chain's 16 lanes, so each half runs all its repetitions in turn (16 registers do
// not hold 2 x 10 accumulators; integer sums and per-lane FMA chains do not depend on that
// order). The int8 dot product is AVX2's: pmaddubsw (u8 x s8 pairs to s16; the probe's small
// codes never saturate), pmaddwd by ones, add, 32 multiply-adds in three instructions.
#include <immintrin.h>

#include "kernels/kernels.h"
#include "kernels/x86/x86_kernels.h"

namespace nextn::avx2 {

void int8_peak_probe(const uint8_t* a, const int8_t* b, int64_t reps, int32_t* acc) {
    constexpr int C = kPeakProbeChains;
    const __m256i ones = _mm256_set1_epi16(1);
    for (int h = 0; h < 2; ++h) {  // lanes 8h..8h+7: bytes 32h..32h+31
        const __m256i vb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 32 * h));
        __m256i va[C], vacc[C];
#pragma GCC unroll 16
        for (int i = 0; i < C; ++i) {
            va[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + 64 * i + 32 * h));
            vacc[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + 16 * i + 8 * h));
        }
        for (int64_t r = 0; r < reps; ++r)
#pragma GCC unroll 16
            for (int i = 0; i < C; ++i)
                vacc[i] = _mm256_add_epi32(vacc[i], _mm256_madd_epi16(_mm256_maddubs_epi16(va[i], vb), ones));
#pragma GCC unroll 16
        for (int i = 0; i < C; ++i)
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + 16 * i + 8 * h), vacc[i]);
    }
}

void fma_peak_probe(const float* a, const float* b, int64_t reps, float* acc) {
    constexpr int C = kPeakProbeChains;
    for (int h = 0; h < 2; ++h) {
        const __m256 vb = _mm256_loadu_ps(b + 8 * h);
        __m256 va[C], vacc[C];
#pragma GCC unroll 16
        for (int i = 0; i < C; ++i) {
            va[i] = _mm256_loadu_ps(a + 16 * i + 8 * h);
            vacc[i] = _mm256_loadu_ps(acc + 16 * i + 8 * h);
        }
        for (int64_t r = 0; r < reps; ++r)
#pragma GCC unroll 16
            for (int i = 0; i < C; ++i) vacc[i] = _mm256_fmadd_ps(va[i], vb, vacc[i]);
#pragma GCC unroll 16
        for (int i = 0; i < C; ++i) _mm256_storeu_ps(acc + 16 * i + 8 * h, vacc[i]);
    }
}

}  // namespace nextn::avx2
