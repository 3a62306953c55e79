#include "kernels/quant_k.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/half.h"
#include "kernels/quant.h"

namespace nextn {

namespace {

// The f16 nearest to v that is >= v (v >= 0 and finite, well inside the f16 range here).
uint16_t f16_at_least(float v) {
    uint16_t h = f32_to_f16(v);
    if (f16_to_f32(h) < v) ++h;  // positive f16 bits order as their values
    return h;
}

// Smallest integer k >= 0 with k * step >= need (0 when need <= 0 or step is 0), at most hi.
int steps_covering(float need, float step, int hi) {
    if (need <= 0.0f || step <= 0.0f) return 0;
    int k = int(std::ceil(need / step));
    while (k > 0 && float(k - 1) * step >= need) --k;  // the division's rounding
    while (k < hi && float(k) * step < need) ++k;
    return std::min(k, hi);
}

int clamp_round(float v, int lo, int hi) { return std::clamp(int(std::lrintf(v)), lo, hi); }

// The 12 bytes of 6-bit scales and mins of a Q4_K block, as formats/dequant.cpp k_scale_min reads
// them: sub-blocks 0..3 in the low 6 bits of bytes 0..3 (scales) and 4..7 (mins); 4..7 in the
// nibbles of bytes 8..11, their top 2 bits in the top bits of bytes 0..7.
void pack_q4_k_scales(const int* sc, const int* mn, uint8_t* s) {
    std::memset(s, 0, 12);
    for (int j = 0; j < 4; ++j) {
        s[j] = uint8_t(sc[j]);
        s[j + 4] = uint8_t(mn[j]);
    }
    for (int j = 4; j < 8; ++j) {
        s[j + 4] = uint8_t((sc[j] & 15) | (mn[j] & 15) << 4);
        s[j - 4] = uint8_t(s[j - 4] | (sc[j] >> 4) << 6);
        s[j] = uint8_t(s[j] | (mn[j] >> 4) << 6);
    }
}

// The scales and mins of a super-block's Subs sub-blocks (Q4_K, Q5_K: 8 of 32 values, 6-bit
// scales; Q2_K: 16 of 16, 4-bit), codes 0..top: per sub-block j the offset dmin * mn[j] covers
// its smallest value below zero and the step d * sc[j] spans the rest in top steps, mn[j] and sc[j]
// rounded up, dmin and d the largest need / scale_max rounded up to an f16.
template <int Subs>
struct AffineScales {
    uint16_t d_h = 0, dmin_h = 0;
    float d = 0.0f, dmin = 0.0f;
    int sc[Subs] = {}, mn[Subs] = {};
};
template <int Subs>
AffineScales<Subs> affine_scales(const float* x, int top, int scale_max) {
    constexpr int kLen = int(kKQuantValues) / Subs;
    AffineScales<Subs> a;
    float low[Subs], high[Subs];  // per sub-block: what the offset must cover, the top value
    float max_low = 0.0f;
    for (int j = 0; j < Subs; ++j) {
        const float* v = x + kLen * j;
        low[j] = std::max(0.0f, -*std::min_element(v, v + kLen));
        high[j] = *std::max_element(v, v + kLen);
        max_low = std::max(max_low, low[j]);
    }
    a.dmin_h = f16_at_least(max_low / float(scale_max));
    a.dmin = f16_to_f32(a.dmin_h);
    float span_max = 0.0f, span[Subs];
    for (int j = 0; j < Subs; ++j) {
        a.mn[j] = steps_covering(low[j], a.dmin, scale_max);
        span[j] = high[j] + a.dmin * float(a.mn[j]);  // from the offset's floor to the top value
        span_max = std::max(span_max, span[j]);
    }
    a.d_h = f16_at_least(span_max / (float(top) * float(scale_max)));
    a.d = f16_to_f32(a.d_h);
    for (int j = 0; j < Subs; ++j) a.sc[j] = steps_covering(span[j], float(top) * a.d, scale_max);
    return a;
}

// Q4_K (Bits 4) or Q5_K (Bits 5) blocks: the same scales and mins, codes of Bits bits.
template <int Bits>
void quantize_row_affine_k(const float* x, int64_t n, uint8_t* out) {
    constexpr int kTop = (1 << Bits) - 1;  // the largest code: 15 or 31
    constexpr int64_t kBlockBytes = Bits == 4 ? kQ4KBlockBytes : kQ5KBlockBytes;
    for (int64_t b = 0; b < n / kKQuantValues; ++b, x += kKQuantValues, out += kBlockBytes) {
        const AffineScales<8> a = affine_scales<8>(x, kTop, 63);
        const float d = a.d, dmin = a.dmin;
        const int* sc = a.sc;
        const int* mn = a.mn;
        std::memcpy(out, &a.d_h, 2);
        std::memcpy(out + 2, &a.dmin_h, 2);
        pack_q4_k_scales(sc, mn, out + 4);
        uint8_t* qh = out + 16;  // Q5_K only
        uint8_t* qs = out + (Bits == 4 ? 16 : 48);
        std::memset(out + 16, 0, size_t(kBlockBytes - 16));
        for (int j = 0; j < 8; ++j) {
            const float step = d * float(sc[j]), offset = dmin * float(mn[j]);
            for (int l = 0; l < 32; ++l) {
                const int q = step > 0.0f ? clamp_round((x[32 * j + l] + offset) / step, 0, kTop) : 0;
                // Sub-blocks 2c and 2c + 1: the low and high nibbles of qs[32c + l].
                qs[32 * (j / 2) + l] = uint8_t(qs[32 * (j / 2) + l] | (q & 15) << (4 * (j % 2)));
                if constexpr (Bits == 5) qh[l] = uint8_t(qh[l] | (q >> 4) << j);
            }
        }
    }
}

}  // namespace

void quantize_row_q2_k(const float* x, int64_t n, uint8_t* out) {
    for (int64_t b = 0; b < n / kKQuantValues; ++b, x += kKQuantValues, out += kQ2KBlockBytes) {
        const AffineScales<16> a = affine_scales<16>(x, 3, 15);
        std::memset(out, 0, size_t(kQ2KBlockBytes));
        uint8_t* qs = out + 16;
        for (int j = 0; j < 16; ++j) {
            out[j] = uint8_t(a.sc[j] | a.mn[j] << 4);
            const float step = a.d * float(a.sc[j]), offset = a.dmin * float(a.mn[j]);
            for (int l = 0; l < 16; ++l) {
                const int e = 16 * j + l;
                const int q = step > 0.0f ? clamp_round((x[e] + offset) / step, 0, 3) : 0;
                // As formats/dequant.cpp reads them: value 128h + 32s + l at bits 2s of qs[32h + l].
                qs[32 * (e / 128) + e % 32] = uint8_t(qs[32 * (e / 128) + e % 32] | q << (2 * ((e / 32) % 4)));
            }
        }
        std::memcpy(out + 80, &a.d_h, 2);
        std::memcpy(out + 82, &a.dmin_h, 2);
    }
}

void quantize_row_q4_k(const float* x, int64_t n, uint8_t* out) { quantize_row_affine_k<4>(x, n, out); }
void quantize_row_q5_k(const float* x, int64_t n, uint8_t* out) { quantize_row_affine_k<5>(x, n, out); }

void quantize_row_q6_k(const float* x, int64_t n, uint8_t* out) {
    for (int64_t b = 0; b < n / kKQuantValues; ++b, x += kKQuantValues, out += kQ6KBlockBytes) {
        float amax[16], max_amax = 0.0f;
        for (int j = 0; j < 16; ++j) {
            amax[j] = 0.0f;
            for (int l = 0; l < 16; ++l) amax[j] = std::max(amax[j], std::fabs(x[16 * j + l]));
            max_amax = std::max(max_amax, amax[j]);
        }
        const uint16_t d_h = f16_at_least(max_amax / (31.0f * 127.0f));
        const float d = f16_to_f32(d_h);
        int8_t sc[16];
        uint8_t q[kKQuantValues];
        for (int j = 0; j < 16; ++j) {
            sc[j] = int8_t(steps_covering(amax[j], 31.0f * d, 127));
            const float step = d * float(sc[j]);
            for (int l = 0; l < 16; ++l)
                q[16 * j + l] = uint8_t(step > 0.0f ? clamp_round(x[16 * j + l] / step, -32, 31) + 32 : 32);
        }
        // As formats/dequant.cpp q6_k_block_codes reads them: value 128h + 32g + l takes its low
        // nibble from ql[64h + l + 32 (g % 2)] (the high nibble for g >= 2) and its high 2 bits
        // from bits 2g of qh[32h + l].
        uint8_t* ql = out;
        uint8_t* qh = out + 128;
        std::memset(out, 0, 192);
        for (int h = 0; h < 2; ++h)
            for (int g = 0; g < 4; ++g)
                for (int l = 0; l < 32; ++l) {
                    const uint8_t code = q[128 * h + 32 * g + l];
                    uint8_t& low = ql[64 * h + l + 32 * (g % 2)];
                    low = uint8_t(low | (code & 15) << (g < 2 ? 0 : 4));
                    qh[32 * h + l] = uint8_t(qh[32 * h + l] | (code >> 4) << (2 * g));
                }
        std::memcpy(out + 192, sc, 16);
        std::memcpy(out + 208, &d_h, 2);
    }
}

}  // namespace nextn
