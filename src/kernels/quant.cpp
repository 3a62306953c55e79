// Separate product and sum in the Q4_1 decode: the value every ISA must reproduce.
#pragma GCC optimize("fp-contract=off")
#include "kernels/quant.h"

#include <bit>
#include <cmath>
#include <cstring>

#include "core/half.h"

namespace nextn {

uint16_t f32_to_f16(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    const uint16_t sign = uint16_t((bits >> 16) & 0x8000u);
    const uint32_t abs = bits & 0x7fffffffu;
    if (abs >= 0x7f800000u)  // inf or NaN (keep NaN quiet and non-zero)
        return uint16_t(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
    if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to >= 65536: inf
    const int32_t exponent = int32_t(abs >> 23) - 127;
    if (exponent >= -14) {  // normal f16: drop 13 mantissa bits with round-to-nearest-even
        uint32_t h = ((uint32_t(exponent + 15)) << 10) | ((abs >> 13) & 0x3ffu);
        const uint32_t rest = abs & 0x1fffu;
        if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // carry may bump the exponent
        return uint16_t(sign | h);
    }
    if (exponent < -25) return sign;  // below half the smallest subnormal: +-0
    // Subnormal f16: value = m * 2^-24 with m = full 24-bit mantissa >> (-exponent - 1).
    const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    const int shift = -exponent - 1;  // 14..24
    uint32_t h = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (h & 1u))) ++h;
    return uint16_t(sign | h);
}

namespace {

// std::round (half away from zero) for |v| < 2^31, without the libm call that made load-time
// quantization slow: v - trunc(v) is exact (for |v| >= 1 Sterbenz's lemma, below 1 trunc is 0).
inline int round_half_away(float v) {
    const int t = int(v);  // truncates toward zero
    const float frac = v - float(t);
    return t + int(frac >= 0.5f) - int(frac <= -0.5f);
}

// max |x| over one block; NaN never wins (the comparison is false), as with std::fmax. The
// maximum does not depend on the order it is taken in, so it runs in 8 independent lanes the
// compiler turns into vector max instructions.
inline float block_amax(const float* xb) {
    float lane[8] = {};
    for (int i = 0; i < kQuantBlock; i += 8)
        for (int j = 0; j < 8; ++j) {
            const float a = std::fabs(xb[i + j]);
            lane[j] = lane[j] < a ? a : lane[j];
        }
    float amax = 0.0f;
    for (float m : lane) amax = amax < m ? m : amax;
    return amax;
}

}  // namespace

void quantize_row_q8_0(const float* x, int64_t n, BlockQ8_0* out) {
    for (int64_t b = 0; b < n / kQuantBlock; ++b) {
        const float* xb = x + b * kQuantBlock;
        const float amax = block_amax(xb);
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        out[b].d = f32_to_f16(d);
        for (int i = 0; i < kQuantBlock; ++i) out[b].qs[i] = int8_t(round_half_away(xb[i] * id));
    }
}

void quantize_row_q4_0(const float* x, int64_t n, BlockQ4_0* out) {
    for (int64_t b = 0; b < n / kQuantBlock; ++b) {
        const float* xb = x + b * kQuantBlock;
        // The first value of the largest magnitude: the largest |x|, then its first position;
        // an all-zero block keeps max = +0.
        const float amax = block_amax(xb);
        float max = 0.0f;
        if (amax > 0.0f) {
            // Byte i is 1 where |x_i| == amax (a loop the compiler vectorises); the first such
            // byte is found eight at a time.
            uint8_t at_max[kQuantBlock];
            for (int i = 0; i < kQuantBlock; ++i) at_max[i] = std::fabs(xb[i]) == amax;
            static_assert(std::endian::native == std::endian::little, "byte 0 is the lowest");
            int first = 0;
            for (int k = 0; k < kQuantBlock; k += 8) {
                uint64_t bytes;
                std::memcpy(&bytes, at_max + k, 8);
                if (bytes) {
                    first = k + std::countr_zero(bytes) / 8;
                    break;
                }
            }
            max = xb[first];
        }
        const float d = max / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        out[b].d = f32_to_f16(d);
        uint8_t codes[kQuantBlock];  // a separate pass, so the compiler vectorises it
        for (int i = 0; i < kQuantBlock; ++i) {
            const int c = int(xb[i] * id + 8.5f);  // truncation toward zero, as ggml's (int8_t) cast
            codes[i] = uint8_t(c < 15 ? (c < 0 ? 0 : c) : 15);
        }
        for (int i = 0; i < 16; ++i) out[b].qs[i] = uint8_t(codes[i] | (codes[i + 16] << 4));
    }
}

void quantize_row_q4_1(const float* x, int64_t n, BlockQ4_1* out) {
    for (int64_t b = 0; b < n / kQuantBlock; ++b) {
        const float* xb = x + b * kQuantBlock;
        float lo = xb[0], hi = xb[0];
        for (int i = 1; i < kQuantBlock; ++i) {
            lo = std::fmin(lo, xb[i]);
            hi = std::fmax(hi, xb[i]);
        }
        const float d = (hi - lo) / 15.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        out[b].d = f32_to_f16(d);
        out[b].m = f32_to_f16(lo);
        auto code = [&](float v) {
            const int c = int((v - lo) * id + 0.5f);
            return uint8_t(c < 15 ? (c < 0 ? 0 : c) : 15);
        };
        for (int i = 0; i < 16; ++i)
            out[b].qs[i] = uint8_t(code(xb[i]) | (code(xb[i + 16]) << 4));
    }
}

void dequantize_row_q8_0(const BlockQ8_0* blocks, int64_t n, float* out) {
    for (int64_t b = 0; b < n / kQuantBlock; ++b) {
        const float d = f16_to_f32(blocks[b].d);
        for (int i = 0; i < kQuantBlock; ++i) out[b * kQuantBlock + i] = float(blocks[b].qs[i]) * d;
    }
}

void dequantize_row_q4_0(const BlockQ4_0* blocks, int64_t n, float* out) {
    for (int64_t b = 0; b < n / kQuantBlock; ++b) {
        const float d = f16_to_f32(blocks[b].d);
        float* o = out + b * kQuantBlock;
        for (int i = 0; i < 16; ++i) {
            o[i] = float(int(blocks[b].qs[i] & 15) - 8) * d;
            o[i + 16] = float(int(blocks[b].qs[i] >> 4) - 8) * d;
        }
    }
}

void dequantize_row_q4_1(const BlockQ4_1* blocks, int64_t n, float* out) {
    for (int64_t b = 0; b < n / kQuantBlock; ++b) {
        const float d = f16_to_f32(blocks[b].d), m = f16_to_f32(blocks[b].m);
        float* o = out + b * kQuantBlock;
        for (int i = 0; i < 16; ++i) {
            o[i] = float(blocks[b].qs[i] & 15) * d + m;
            o[i + 16] = float(blocks[b].qs[i] >> 4) * d + m;
        }
    }
}

}  // namespace nextn
