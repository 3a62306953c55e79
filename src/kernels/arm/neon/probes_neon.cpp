// bench's f32 compute-peak probe on NEON (kernels.h fma_peak_probe; the int8 one sits with the
// int8 kernel's dot product, gemm_i8_arm.h, and the read probe with the shared templates,
// ops_neon.cpp): the peak as NEON code reaches it, rather than as the reference's loops do.
#include <arm_neon.h>

#include "kernels/arm/arm_kernels.h"
#include "kernels/simd/peak_chains.h"

namespace nextn::arm::neon {

// acc[i, l] = fma(a[i, l], b[l], acc[i, l]) per rep. A chain's 16 lanes are 4 registers: each
// quarter runs all its repetitions in turn (each lane's chain is the same either way), so that
// the 10 chains and their operands stay in registers.
void fma_peak_probe(const float* a, const float* b, int64_t reps, float* acc) {
    for (int q = 0; q < 4; ++q)
        simd::run_peak_chains(
            vld1q_f32(b + 4 * q), reps, [&](int i) { return vld1q_f32(a + 16 * i + 4 * q); },
            [&](int i) { return vld1q_f32(acc + 16 * i + 4 * q); },
            [&](int i, float32x4_t v) { vst1q_f32(acc + 16 * i + 4 * q, v); },
            [](float32x4_t s, float32x4_t x, float32x4_t y) { return vfmaq_f32(s, x, y); });
}

}  // namespace nextn::arm::neon
