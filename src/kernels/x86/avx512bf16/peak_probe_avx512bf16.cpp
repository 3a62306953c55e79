// AVX512_BF16 compute-peak probe: one vdpbf16ps (32 multiply-adds) per chain and repetition,
// every chain in a register (KernelTable::bf16_peak_probe).
#include <immintrin.h>

#include "kernels/x86/peak_probe.h"
#include "kernels/x86/x86_kernels.h"

namespace nextn::avx512bf16 {

void bf16_peak_probe(const uint16_t* a, const uint16_t* b, int64_t reps, float* acc) {
    simd::run_peak_chains(
        _mm512_castsi512_ps(_mm512_loadu_si512(b)), reps,
        [&](int i) { return _mm512_castsi512_ps(_mm512_loadu_si512(a + 32 * i)); },
        [&](int i) { return _mm512_loadu_ps(acc + 16 * i); },
        [&](int i, __m512 v) { _mm512_storeu_ps(acc + 16 * i, v); },
        [](__m512 s, __m512 x, __m512 y) {
            return _mm512_dpbf16_ps(s, __m512bh(_mm512_castps_si512(x)), __m512bh(_mm512_castps_si512(y)));
        });
}

}  // namespace nextn::avx512bf16
