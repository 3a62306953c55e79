// The activation quantizer (ref::quantize_columns' bits) on NEON: a 32-value block's absolute
// maximum, its codes nearbyint(v / d) clamped to +-127 and their sums, 4 lanes at a time. Every
// step is exact or rounds as the reference's does (the maximum is order-free, the product and
// the rounding to nearest even are the same operations), so the bytes are the reference's.
#include <arm_neon.h>

#include <limits>

#include "kernels/arm/arm_kernels.h"
#include "kernels/int8_dot.h"

namespace nextn::arm::neon {

namespace {

// The block's values p[0, left) as 8 vectors, zeros past them (a last block of a row that is
// not a whole number of blocks).
void load_block(const float* p, int64_t left, float32x4_t v[8]) {
    if (left >= 32) {
        for (int i = 0; i < 8; ++i) v[i] = vld1q_f32(p + 4 * i);
        return;
    }
    float padded[32] = {};
    for (int64_t e = 0; e < left; ++e) padded[e] = p[e];
    for (int i = 0; i < 8; ++i) v[i] = vld1q_f32(padded + 4 * i);
}

}  // namespace

void quantize_columns(const float* x, int64_t cols, QuantizedColumns& out, int64_t j0, int64_t j1) {
    quantize_columns_with(
        x, cols, out, j0, j1,
        [](const float* p, int64_t left, int8_t* q, int32_t* sum, int32_t* half) {
            float32x4_t v[8];
            load_block(p, left, v);
            // Finite values are those whose magnitude is at most the largest float (false for NaN).
            const float32x4_t largest = vdupq_n_f32(std::numeric_limits<float>::max());
            uint32x4_t finite = vdupq_n_u32(~0u);
            float32x4_t amax = vdupq_n_f32(0.0f);
            for (int i = 0; i < 8; ++i) {
                const float32x4_t a = vabsq_f32(v[i]);
                finite = vandq_u32(finite, vcleq_f32(a, largest));
                amax = vmaxq_f32(amax, a);
            }
            if (vminvq_u32(finite) == 0) return std::numeric_limits<float>::quiet_NaN();
            const float d = vmaxvq_f32(amax) / 127.0f;
            const float32x4_t inv = vdupq_n_f32(int8_inverse_scale(d));
            int32x4_t codes[8];
            for (int i = 0; i < 8; ++i) {
                const float32x4_t r =
                    vrndnq_f32(vmulq_f32(v[i], inv));  // nearbyint: to nearest, ties even
                const float32x4_t clamped =
                    vmaxq_f32(vdupq_n_f32(-127.0f), vminq_f32(vdupq_n_f32(127.0f), r));
                codes[i] = vcvtq_s32_f32(clamped);  // a whole number: exact
            }
            for (int i = 0; i < 8; i += 2) {
                const int16x8_t pair = vcombine_s16(vmovn_s32(codes[i]), vmovn_s32(codes[i + 1]));
                vst1_s8(q + 4 * i, vmovn_s16(pair));
            }
            const int32x4_t first =
                vaddq_s32(vaddq_s32(codes[0], codes[1]), vaddq_s32(codes[2], codes[3]));
            const int32x4_t second =
                vaddq_s32(vaddq_s32(codes[4], codes[5]), vaddq_s32(codes[6], codes[7]));
            *half += vaddvq_s32(first);
            *sum += vaddvq_s32(vaddq_s32(first, second));
            return d;
        });
}

}  // namespace nextn::arm::neon
