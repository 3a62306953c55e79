// bench's probes on NEON (kernels.h stream_sum, fma_peak_probe; the int8 peak probe sits with the
// int8 kernel's dot product, gemm_i8_neon.cpp): the machine's read bandwidth and compute peak as
// NEON code reaches them, rather than as the scalar reference's loops do.
#include <arm_neon.h>

#include "kernels/arm/arm_kernels.h"

namespace nextn::arm::neon {

// Four interleaved streams of 16 KB runs (the access pattern of a matmul reading several rows),
// two vector sums each, then a scalar tail.
float stream_sum(const float* x, int64_t n) {
    constexpr int S = 4;
    constexpr int64_t kRun = 4096;  // floats per stream per group
    constexpr int64_t kGroup = S * kRun;
    float32x4_t a[S][2];
    for (int s = 0; s < S; ++s) a[s][0] = a[s][1] = vdupq_n_f32(0.0f);
    int64_t g = 0;
    for (; g + kGroup <= n; g += kGroup) {
        for (int64_t i = 0; i < kRun; i += 8) {
            for (int s = 0; s < S; ++s) {
                const float* p = x + g + s * kRun + i;
                a[s][0] = vaddq_f32(a[s][0], vld1q_f32(p));
                a[s][1] = vaddq_f32(a[s][1], vld1q_f32(p + 4));
            }
        }
    }
    float32x4_t total = vdupq_n_f32(0.0f);
    for (int s = 0; s < S; ++s) total = vaddq_f32(total, vaddq_f32(a[s][0], a[s][1]));
    float sum = vaddvq_f32(total);
    for (; g < n; ++g) sum += x[g];
    return sum;
}

// acc[i, l] = fma(a[i, l], b[l], acc[i, l]) per rep: kPeakProbeChains x 4 independent vector
// chains held in registers.
void fma_peak_probe(const float* a, const float* b, int64_t reps, float* acc) {
    constexpr int C = kPeakProbeChains;
    float32x4_t av[C][4], bv[4], accv[C][4];
    for (int q = 0; q < 4; ++q) bv[q] = vld1q_f32(b + 4 * q);
    for (int i = 0; i < C; ++i)
        for (int q = 0; q < 4; ++q) {
            av[i][q] = vld1q_f32(a + i * 16 + 4 * q);
            accv[i][q] = vld1q_f32(acc + i * 16 + 4 * q);
        }
    for (int64_t r = 0; r < reps; ++r)
        for (int i = 0; i < C; ++i)
            for (int q = 0; q < 4; ++q) accv[i][q] = vfmaq_f32(accv[i][q], av[i][q], bv[q]);
    for (int i = 0; i < C; ++i)
        for (int q = 0; q < 4; ++q) vst1q_f32(acc + i * 16 + 4 * q, accv[i][q]);
}

}  // namespace nextn::arm::neon
