// The int8-dot matmul on baseline Armv8-A NEON (CPUs without the dot-product extension, such as
// the Cortex-A72 of a Raspberry Pi 4): each 4-byte dot product from widening multiplies and two
// pairwise adds, exact in int32 (a product of two int8 fits int16).
#include "kernels/arm/arm_kernels.h"
#include "kernels/arm/gemm_i8_arm.h"

namespace nextn::arm::neon {

namespace {

struct WideningDot {
    int32x4_t operator()(int32x4_t acc, int8x16_t a, int8x16_t b) const {
        const int16x8_t lo = vmull_s8(vget_low_s8(a), vget_low_s8(b));  // products 0..7
        const int16x8_t hi = vmull_high_s8(a, b);                       // products 8..15
        // [p0+p1, p2+p3, ...] per half, then the pairs of pairs: lane k = bytes 4k..4k+3.
        return vaddq_s32(acc, vpaddq_s32(vpaddlq_s16(lo), vpaddlq_s16(hi)));
    }
};

}  // namespace

void gemm_i8_rows(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy,
                  int64_t r0, int64_t r1) {
    gemm_i8_rows_with<WideningDot>(w, x, y, ldy, r0, r1);
}

void int8_peak_probe(const uint8_t* a, const int8_t* b, int64_t reps, int32_t* acc) {
    int8_peak_probe_with<WideningDot>(a, b, reps, acc);
}

}  // namespace nextn::arm::neon
