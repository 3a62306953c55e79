// AVX-512 compute-peak probes: one vpdpbusd (64 multiply-adds) / vfmadd231ps (16) per chain and
// repetition, every chain in a register (KernelTable::int8_peak_probe / fma_peak_probe).
#include <immintrin.h>

#include "kernels/kernels.h"
#include "kernels/x86/x86_kernels.h"

namespace nextn::avx512 {

void int8_peak_probe(const uint8_t* a, const int8_t* b, int64_t reps, int32_t* acc) {
    constexpr int C = kPeakProbeChains;
    const __m512i vb = _mm512_loadu_si512(b);
    __m512i va[C], vacc[C];
#pragma GCC unroll 16
    for (int i = 0; i < C; ++i) {
        va[i] = _mm512_loadu_si512(a + 64 * i);
        vacc[i] = _mm512_loadu_si512(acc + 16 * i);
    }
    for (int64_t r = 0; r < reps; ++r)
#pragma GCC unroll 16
        for (int i = 0; i < C; ++i) vacc[i] = _mm512_dpbusd_epi32(vacc[i], va[i], vb);
#pragma GCC unroll 16
    for (int i = 0; i < C; ++i) _mm512_storeu_si512(acc + 16 * i, vacc[i]);
}

void fma_peak_probe(const float* a, const float* b, int64_t reps, float* acc) {
    constexpr int C = kPeakProbeChains;
    const __m512 vb = _mm512_loadu_ps(b);
    __m512 va[C], vacc[C];
#pragma GCC unroll 16
    for (int i = 0; i < C; ++i) {
        va[i] = _mm512_loadu_ps(a + 16 * i);
        vacc[i] = _mm512_loadu_ps(acc + 16 * i);
    }
    for (int64_t r = 0; r < reps; ++r)
#pragma GCC unroll 16
        for (int i = 0; i < C; ++i) vacc[i] = _mm512_fmadd_ps(va[i], vb, vacc[i]);
#pragma GCC unroll 16
    for (int i = 0; i < C; ++i) _mm512_storeu_ps(acc + 16 * i, vacc[i]);
}

}  // namespace nextn::avx512
