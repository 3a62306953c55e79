// AVX2 compute-peak probes (KernelTable::int8_peak_probe / fma_peak_probe), half a chain per
// 256-bit register, the halves in turn (x86/peak_probe.h). The int8 dot product is AVX2's:
// pmaddubsw (u8 x s8 pairs to s16; the probe's small codes never saturate), pmaddwd by ones,
// add: 32 multiply-adds in three instructions.
#include <immintrin.h>

#include "kernels/x86/peak_probe.h"
#include "kernels/x86/x86_kernels.h"

namespace nextn::avx2 {

void int8_peak_probe(const uint8_t* a, const int8_t* b, int64_t reps, int32_t* acc) {
    const __m256i ones = _mm256_set1_epi16(1);
    x86::int8_peak_probe_256(a, b, reps, acc, [ones](__m256i s, __m256i x, __m256i y) {
        // The products do not depend on the accumulator: without this the compiler computes
        // them once outside the loop, which then times only the adds (the probe read twice
        // the AVX-512 peak).
        asm volatile("" : "+x"(x));
        return _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_maddubs_epi16(x, y), ones));
    });
}

void fma_peak_probe(const float* a, const float* b, int64_t reps, float* acc) {
    for (int h = 0; h < 2; ++h)  // each lane's chain is unchanged by running the halves in turn
        simd::run_peak_chains(
            _mm256_loadu_ps(b + 8 * h), reps,
            [&](int i) { return _mm256_loadu_ps(a + 16 * i + 8 * h); },
            [&](int i) { return _mm256_loadu_ps(acc + 16 * i + 8 * h); },
            [&](int i, __m256 v) { _mm256_storeu_ps(acc + 16 * i + 8 * h, v); },
            [](__m256 s, __m256 x, __m256 y) { return _mm256_fmadd_ps(x, y, s); });
}

}  // namespace nextn::avx2
