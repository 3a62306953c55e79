#pragma once
// NEON vector primitives and value decoders for the shared templates (simd/vec_ops.h,
// simd/key_scores.h): 4 f32 lanes a vector. Include only from translation units under arm/.
// Internal linkage (an anonymous namespace): the dotprod files compile these with their own
// -march flags, and the linker must not keep their copy for a CPU without the extension.
//
// Where x86 and NEON instructions differ at the edges, these follow x86's, so that the templates
// compute the same thing on both: max(a, b) is a > b ? a : b (x86's maxps: b when either is NaN;
// NEON's fmax would give NaN), and exp is the AVX2 table's polynomial step for step.
#include <arm_neon.h>

#include <cstdint>

#include "kernels/quant.h"
#include "kernels/simd/staged_rows.h"

namespace nextn::arm {
namespace {

struct NeonIsa {
    using V = float32x4_t;
    static constexpr int L = 4;

    // Lanes below n set (n in 0..4).
    static uint32x4_t mask(int n) {
        const uint32_t lanes[4] = {0, 1, 2, 3};
        return vcltq_u32(vld1q_u32(lanes), vdupq_n_u32(uint32_t(n)));
    }
    static V zero() { return vdupq_n_f32(0.0f); }
    static V set1(float v) { return vdupq_n_f32(v); }
    static V load(const float* p) { return vld1q_f32(p); }
    // The first n (1..4) floats at p, zeros past them; reads nothing past p + n.
    static V load_part(const float* p, int n) {
        float lanes[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (int i = 0; i < n; ++i) lanes[i] = p[i];
        return vld1q_f32(lanes);
    }
    static void store(float* p, V v) { vst1q_f32(p, v); }
    static void store_part(float* p, V v, int n) {
        float lanes[4];
        vst1q_f32(lanes, v);
        for (int i = 0; i < n; ++i) p[i] = lanes[i];
    }
    // NEON has no non-temporal vector store short of assembly: an ordinary store.
    static void stream(float* p, V v, int n) {
        if (n == L) return store(p, v);
        store_part(p, v, n);
    }
    static void fence() {}
    static V keep(V v, int n) {
        return vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(v), mask(n)));
    }
    // 4 halves at p widened to f32 (exact): attention's key tiles (simd/key_scores.h), whose
    // accumulators take at most kKeyAccumulators of the 32 registers (kInt8KeyAccumulators pairs
    // of an int32 and an f32 one for Q8_0 keys), leaving the rest for the keys of a value.
    static V widen_halves(const uint8_t* p) {
        return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p))));
    }
    static constexpr int kKeyAccumulators = 16;
    static constexpr int kInt8KeyAccumulators = 8;
    static V add(V a, V b) { return vaddq_f32(a, b); }
    static V sub(V a, V b) { return vsubq_f32(a, b); }
    static V mul(V a, V b) { return vmulq_f32(a, b); }
    static V div(V a, V b) { return vdivq_f32(a, b); }
    static V max(V a, V b) { return vbslq_f32(vcgtq_f32(a, b), a, b); }
    static V min(V a, V b) { return vbslq_f32(vcltq_f32(a, b), a, b); }
    static V fma(V a, V b, V c) { return vfmaq_f32(c, a, b); }  // a * b + c, one rounding

    // int32 lanes (the Q8_0 key scores' sums)
    using Vi = int32x4_t;
    static V to_float(Vi v) { return vcvtq_f32_s32(v); }
    static Vi load_i(const uint8_t* p) { return vreinterpretq_s32_u8(vld1q_u8(p)); }
    static Vi splat_i32(int32_t v) { return vdupq_n_s32(v); }
    // acc + per int32 lane the sum of its 4 products u8 (u) x s8 (s), exact: each byte widened to
    // int16, the products widened to int32, then two pairwise adds (baseline Armv8-A has no
    // mixed-sign dot product).
    static Vi dot_u8s8(Vi acc, Vi u, Vi s) {
        const uint8x16_t ub = vreinterpretq_u8_s32(u);
        const int8x16_t sb = vreinterpretq_s8_s32(s);
        const int16x8_t u_lo = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(ub)));
        const int16x8_t u_hi = vreinterpretq_s16_u16(vmovl_high_u8(ub));
        const int16x8_t s_lo = vmovl_s8(vget_low_s8(sb)), s_hi = vmovl_high_s8(sb);
        const int32x4_t p0 = vmull_s16(vget_low_s16(u_lo), vget_low_s16(s_lo));  // lane 0's 4
        const int32x4_t p1 = vmull_high_s16(u_lo, s_lo);                         // lane 1's
        const int32x4_t p2 = vmull_s16(vget_low_s16(u_hi), vget_low_s16(s_hi));
        const int32x4_t p3 = vmull_high_s16(u_hi, s_hi);
        return vaddq_s32(acc, vpaddq_s32(vpaddq_s32(p0, p1), vpaddq_s32(p2, p3)));
    }

    // Fixed tree: the halves, then the pair.
    static float hsum(V v) {
        const float32x2_t h = vadd_f32(vget_low_f32(v), vget_high_f32(v));
        return vget_lane_f32(h, 0) + vget_lane_f32(h, 1);
    }
    static float hmax(V v) {
        const V m = max(v, vcombine_f32(vget_high_f32(v), vget_low_f32(v)));
        const float a = vgetq_lane_f32(m, 0), b = vgetq_lane_f32(m, 1);
        return a > b ? a : b;
    }

    // exp(x), ~2 ulp, as the AVX2 table's: x = n ln2 + r, |r| <= ln2/2, degree-7 Taylor
    // polynomial, times 2^n applied as two exponent-field scalings. Overflow gives +inf,
    // x < -87.3 gives 0, NaN stays NaN.
    static V exp(V x) {
        const V xc = min(max(x, set1(-87.33654f)), set1(88.72283f));
        const V n = vrndnq_f32(vmulq_f32(xc, set1(1.44269504f)));  // to nearest, ties to even
        V r = vfmsq_f32(xc, n, set1(0.693145752f));                // xc - n * c, one rounding
        r = vfmsq_f32(r, n, set1(1.42860677e-6f));
        V p = set1(1.0f / 5040.0f);
        p = fma(p, r, set1(1.0f / 720.0f));
        p = fma(p, r, set1(1.0f / 120.0f));
        p = fma(p, r, set1(1.0f / 24.0f));
        p = fma(p, r, set1(1.0f / 6.0f));
        p = fma(p, r, set1(0.5f));
        p = fma(p, r, set1(1.0f));
        p = fma(p, r, set1(1.0f));
        const int32x4_t ni = vcvtq_s32_f32(n);  // n is a whole number: exact
        const int32x4_t n1 = vshrq_n_s32(ni, 1);
        const int32x4_t n2 = vsubq_s32(ni, n1);
        auto pow2 = [](int32x4_t e) {
            return vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(e, vdupq_n_s32(127)), 23));
        };
        V y = vmulq_f32(vmulq_f32(p, pow2(n1)), pow2(n2));
        y = vbslq_f32(vcgtq_f32(x, set1(88.72283f)), set1(__builtin_inff()), y);
        y = vbslq_f32(vcltq_f32(x, set1(-87.33654f)), zero(), y);
        return vbslq_f32(vceqq_f32(x, x), y, x);  // NaN: x itself
    }
};

// Value decoders for the shared templates: sub(row, b, s) is values [32b + 4s, 32b + 4s + 4) of
// a row as f32; part(row, off, n) values [off, off + n), zero-padded (float types only).
using NeonDecodeF32 = simd::F32Rows<NeonIsa>;

struct NeonDecodeF16 {
    static constexpr int64_t kBlockBytes = 64;  // bytes of 32 values
    static constexpr int kPrefetchEvery = 1;    // blocks per cache line (prefetch cadence)
    static float32x4_t sub(const uint8_t* row, int64_t b, int s) {
        return NeonIsa::widen_halves(row + (b * 32 + s * 4) * 2);
    }
    static float32x4_t part(const uint8_t* row, int64_t off, int n) {
        uint16_t halves[4] = {0, 0, 0, 0};
        const uint16_t* h = reinterpret_cast<const uint16_t*>(row) + off;
        for (int i = 0; i < n; ++i) halves[i] = h[i];
        return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(halves)));
    }
};

// Q8_0 value rows (a q8_0 KV cache): float(code) * d, as the reference forms it (exact).
struct NeonDecodeQ8_0 {
    static constexpr int64_t kBlockBytes = int64_t(sizeof(BlockQ8_0));  // bytes of 32 values
    static constexpr int kPrefetchEvery = 2;  // blocks per cache line (prefetch cadence)
    static float32x4_t sub(const uint8_t* row, int64_t b, int s) {
        const uint8_t* block = row + b * int64_t(sizeof(BlockQ8_0));
        uint16_t d;
        __builtin_memcpy(&d, block, 2);
        const float32x4_t scale = vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(d)));
        int32_t four;
        __builtin_memcpy(&four, block + 2 + s * 4, 4);
        const int16x8_t codes = vmovl_s8(vreinterpret_s8_s32(vdup_n_s32(four)));
        return vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(codes))), scale);
    }
    static float32x4_t part(const uint8_t*, int64_t, int) { return vdupq_n_f32(0.0f); }
};

}  // namespace
}  // namespace nextn::arm
