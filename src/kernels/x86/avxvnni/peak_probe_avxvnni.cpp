// AVX-VNNI int8 compute-peak probe (KernelTable::int8_peak_probe): one 256-bit vpdpbusd (32
// multiply-adds) per half chain and repetition (x86/peak_probe.h).
#include <immintrin.h>

#include "kernels/x86/peak_probe.h"
#include "kernels/x86/x86_kernels.h"

namespace nextn::avxvnni {

void int8_peak_probe(const uint8_t* a, const int8_t* b, int64_t reps, int32_t* acc) {
    x86::int8_peak_probe_256(a, b, reps, acc,
                             [](__m256i s, __m256i x, __m256i y) { return _mm256_dpbusd_avx_epi32(s, x, y); });
}

}  // namespace nextn::avxvnni
