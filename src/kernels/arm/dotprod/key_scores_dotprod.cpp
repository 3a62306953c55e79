// Attention's key scores for the dotprod table: simd/key_scores.h over NEON vectors, with the Q8_0
// keys' 4-byte dot products on SDOT (the F32 and F16 keys' passes are the neon table's).
#include "kernels/arm/arm_kernels.h"
#include "kernels/arm/isa_neon.h"
#include "kernels/simd/key_scores.h"

namespace nextn::arm::dotprod {

namespace {

struct DotprodIsa : NeonIsa {
    // acc + per int32 lane the sum of its 4 products u8 (u) x s8 (s), exact. SDOT multiplies
    // signed by signed: u = (u - 128) + 128, and u - 128 is u with its top bit flipped, so the
    // sum is SDOT(u ^ 0x80, s) + 128 * (the lane's sum of s).
    static Vi dot_u8s8(Vi acc, Vi u, Vi s) {
        const int8x16_t centred =
            vreinterpretq_s8_u8(veorq_u8(vreinterpretq_u8_s32(u), vdupq_n_u8(0x80)));
        const int8x16_t sb = vreinterpretq_s8_s32(s);
        const int32x4_t s_sums = vdotq_s32(vdupq_n_s32(0), sb, vdupq_n_s8(1));
        return vaddq_s32(vdotq_s32(acc, centred, sb), vshlq_n_s32(s_sums, 7));
    }
};

}  // namespace

void key_scores(WType type, const uint8_t* tiles, int64_t n, const float* q, int64_t R, int64_t d,
                float* out, int64_t ldo) {
    if (type == WType::Q8_0) return simd::q8_0_key_scores<DotprodIsa>(tiles, n, q, R, d, out, ldo);
    neon::key_scores(type, tiles, n, q, R, d, out, ldo);
}

}  // namespace nextn::arm::dotprod
