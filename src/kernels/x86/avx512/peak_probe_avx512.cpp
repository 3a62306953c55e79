// AVX-512 compute-peak probes: one vpdpbusd (64 multiply-adds) / vfmadd231ps (16) per chain and
// repetition, every chain in a register (KernelTable::int8_peak_probe / fma_peak_probe).
#include <immintrin.h>

#include "kernels/x86/peak_probe.h"
#include "kernels/x86/x86_kernels.h"

namespace nextn::avx512 {

void int8_peak_probe(const uint8_t* a, const int8_t* b, int64_t reps, int32_t* acc) {
    x86::run_peak_chains(
        _mm512_loadu_si512(b), reps, [&](int i) { return _mm512_loadu_si512(a + 64 * i); },
        [&](int i) { return _mm512_loadu_si512(acc + 16 * i); },
        [&](int i, __m512i v) { _mm512_storeu_si512(acc + 16 * i, v); },
        [](__m512i s, __m512i x, __m512i y) { return _mm512_dpbusd_epi32(s, x, y); });
}

void fma_peak_probe(const float* a, const float* b, int64_t reps, float* acc) {
    x86::run_peak_chains(
        _mm512_loadu_ps(b), reps, [&](int i) { return _mm512_loadu_ps(a + 16 * i); },
        [&](int i) { return _mm512_loadu_ps(acc + 16 * i); },
        [&](int i, __m512 v) { _mm512_storeu_ps(acc + 16 * i, v); },
        [](__m512 s, __m512 x, __m512 y) { return _mm512_fmadd_ps(x, y, s); });
}

}  // namespace nextn::avx512
