// AVX-VNNI int8 compute-peak probe (KernelTable::int8_peak_probe): one 256-bit vpdpbusd (32
// multiply-adds) per half chain and repetition; the halves run in turn as in the AVX2 probe.
#include <immintrin.h>

#include "kernels/kernels.h"
#include "kernels/x86/x86_kernels.h"

namespace nextn::avxvnni {

void int8_peak_probe(const uint8_t* a, const int8_t* b, int64_t reps, int32_t* acc) {
    constexpr int C = kPeakProbeChains;
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
            for (int i = 0; i < C; ++i) vacc[i] = _mm256_dpbusd_avx_epi32(vacc[i], va[i], vb);
#pragma GCC unroll 16
        for (int i = 0; i < C; ++i)
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + 16 * i + 8 * h), vacc[i]);
    }
}

}  // namespace nextn::avxvnni
