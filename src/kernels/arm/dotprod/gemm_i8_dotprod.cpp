// The int8-dot matmul on Armv8.2-A's dot-product extension: SDOT forms lane k's 4-byte dot
// product in one instruction (16 products per instruction).
#include "kernels/arm/arm_kernels.h"
#include "kernels/arm/gemm_i8_arm.h"

namespace nextn::arm::dotprod {

namespace {

struct SignedDot {
    int32x4_t operator()(int32x4_t acc, int8x16_t a, int8x16_t b) const {
        return vdotq_s32(acc, a, b);
    }
};

}  // namespace

void gemm_i8_rows(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy,
                  int64_t r0, int64_t r1) {
    gemm_i8_rows_with<SignedDot>(w, x, y, ldy, r0, r1);
}

}  // namespace nextn::arm::dotprod

namespace nextn::arm::dotprod {

// The int8 peak on SDOT (a < 128, read as signed): kPeakProbeChains x 4 independent chains.
void int8_peak_probe(const uint8_t* a, const int8_t* b, int64_t reps, int32_t* acc) {
    constexpr int C = kPeakProbeChains;
    int8x16_t av[C][4], bv[4];
    int32x4_t accv[C][4];
    for (int q = 0; q < 4; ++q) bv[q] = vld1q_s8(b + 16 * q);
    for (int i = 0; i < C; ++i)
        for (int q = 0; q < 4; ++q) {
            av[i][q] = vreinterpretq_s8_u8(vld1q_u8(a + i * 64 + 16 * q));
            accv[i][q] = vld1q_s32(acc + i * 16 + 4 * q);
        }
    for (int64_t r = 0; r < reps; ++r)
        for (int i = 0; i < C; ++i)
            for (int q = 0; q < 4; ++q) accv[i][q] = vdotq_s32(accv[i][q], av[i][q], bv[q]);
    for (int i = 0; i < C; ++i)
        for (int q = 0; q < 4; ++q) vst1q_s32(acc + i * 16 + 4 * q, accv[i][q]);
}

}  // namespace nextn::arm::dotprod
