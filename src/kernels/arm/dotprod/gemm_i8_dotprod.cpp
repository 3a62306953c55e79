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

void int8_peak_probe(const uint8_t* a, const int8_t* b, int64_t reps, int32_t* acc) {
    int8_peak_probe_with<SignedDot>(a, b, reps, acc);
}

}  // namespace nextn::arm::dotprod
