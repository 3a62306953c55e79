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

// Q4_K (Bits 4) or Q5_K (Bits 5) blocks: the same scales and mins, codes of Bits bits.
template <int Bits>
void quantize_row_affine_k(const float* x, int64_t n, uint8_t* out) {
    constexpr int kTop = (1 << Bits) - 1;  // the largest code: 15 or 31
    constexpr int64_t kBlockBytes = Bits == 4 ? kQ4KBlockBytes : kQ5KBlockBytes;
    for (int64_t b = 0; b < n / kKQuantValues; ++b, x += kKQuantValues, out += kBlockBytes) {
        float low[8], high[8];  // per sub-block: what the offset must cover, the top value
        float max_low = 0.0f;
        for (int j = 0; j < 8; ++j) {
            const float* v = x + 32 * j;
            low[j] = std::max(0.0f, -*std::min_element(v, v + 32));
            high[j] = *std::max_element(v, v + 32);
            max_low = std::max(max_low, low[j]);
        }
        const uint16_t dmin_h = f16_at_least(max_low / 63.0f);
        const float dmin = f16_to_f32(dmin_h);
        int mn[8], sc[8];
        float span_max = 0.0f, span[8];
        for (int j = 0; j < 8; ++j) {
            mn[j] = steps_covering(low[j], dmin, 63);
            span[j] = high[j] + dmin * float(mn[j]);  // from the offset's floor to the top value
            span_max = std::max(span_max, span[j]);
        }
        const uint16_t d_h = f16_at_least(span_max / (float(kTop) * 63.0f));
        const float d = f16_to_f32(d_h);
        for (int j = 0; j < 8; ++j) sc[j] = steps_covering(span[j], float(kTop) * d, 63);
        std::memcpy(out, &d_h, 2);
        std::memcpy(out + 2, &dmin_h, 2);
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
        float low[16], high[16];  // per sub-block: what the offset must cover, the top value
        float max_low = 0.0f;
        for (int j = 0; j < 16; ++j) {
            const float* v = x + 16 * j;
            low[j] = std::max(0.0f, -*std::min_element(v, v + 16));
            high[j] = *std::max_element(v, v + 16);
            max_low = std::max(max_low, low[j]);
        }
        const uint16_t dmin_h = f16_at_least(max_low / 15.0f);
        const float dmin = f16_to_f32(dmin_h);
        int mn[16], sc[16];
        float span_max = 0.0f, span[16];
        for (int j = 0; j < 16; ++j) {
            mn[j] = steps_covering(low[j], dmin, 15);
            span[j] = high[j] + dmin * float(mn[j]);  // from the offset's floor to the top value
            span_max = std::max(span_max, span[j]);
        }
        const uint16_t d_h = f16_at_least(span_max / (3.0f * 15.0f));
        const float d = f16_to_f32(d_h);
        std::memset(out, 0, size_t(kQ2KBlockBytes));
        uint8_t* qs = out + 16;
        for (int j = 0; j < 16; ++j) {
            sc[j] = steps_covering(span[j], 3.0f * d, 15);
            out[j] = uint8_t(sc[j] | mn[j] << 4);
            const float step = d * float(sc[j]), offset = dmin * float(mn[j]);
            for (int l = 0; l < 16; ++l) {
                const int e = 16 * j + l;
                const int q = step > 0.0f ? clamp_round((x[e] + offset) / step, 0, 3) : 0;
                // As formats/dequant.cpp reads them: value 128h + 32s + l at bits 2s of qs[32h + l].
                qs[32 * (e / 128) + e % 32] = uint8_t(qs[32 * (e / 128) + e % 32] | q << (2 * ((e / 32) % 4)));
            }
        }
        std::memcpy(out + 80, &d_h, 2);
        std::memcpy(out + 82, &dmin_h, 2);
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
