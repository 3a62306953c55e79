#pragma once
// The int8-dot matmul on NEON: ref::gemm_i8_rows' arithmetic (kernels/int8_dot.h), vectorised
// over a chunk's 16 blocks. Included by one translation unit per dot product: neon/ (baseline
// Armv8-A: widening multiplies and pairwise adds) and dotprod/ (Armv8.2-A's SDOT).
//
// A chunk step's 64 bytes are four 16-byte vectors; the dot product adds, in lane k of vector q,
// the products of bytes 4k..4k+3, which is block 4q + k's share of the step: exactly the chunk
// layout's lane l = 4q + k. It multiplies signed by signed bytes, where the layout stores
// unsigned codes for x86's u8 x s8 instruction:
//   - the 4-bit codes (0..15) and Q6_KX's 6-bit ones (0..63) are the same as signed bytes;
//   - the 8-bit codes (Q8_0X: q + 128; Q8_1FX: 0..255) have 128 taken off (the top bit
//     flipped), so the dot is the layout's isum - 128 * xsum, exact in int32 either way.
// The float steps are the reference's, lane by lane (a multiply, then a fused multiply-add), and
// the 16 lanes end in its lane_tree_sum: the same bits for every n and row split.
#include <arm_neon.h>

#include "kernels/arm/column_passes.h"
#include "kernels/arm/gemm_row_groups_arm.h"
#include "kernels/int8_dot.h"
#include "kernels/ref/ref.h"
#include "kernels/row_groups.h"
#include "kernels/simd/peak_chains.h"

// Internal linkage: each including file compiles these with its own -march flags.
namespace nextn::arm {
namespace {

// Columns that share one decode of a weight chunk (the chunk is read from memory once per row
// for all of them; a wider batch takes further groups, which find the row in L1).
constexpr int kMaxGroup = 4;

// Step s (0..7) of chunk `codes` as the signed bytes the dot product multiplies, w[q]: blocks
// 4q..4q+3.
template <WType T>
inline void load_step(const uint8_t* codes, int s, int8x16_t w[4]) {
    if constexpr (int8_dot_eight_bit(T)) {
        const uint8x16_t top = vdupq_n_u8(0x80);
        for (int q = 0; q < 4; ++q)
            w[q] = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(codes + s * 64 + 16 * q), top));
    } else {
        // Byte k*64 + 4l + i: low nibble step 2k, high nibble step 2k + 1.
        const uint8_t* p = codes + (s / 2) * 64;
        const bool high = s % 2;
        for (int q = 0; q < 4; ++q) {
            const uint8x16_t b = vld1q_u8(p + 16 * q);
            uint8x16_t code = high ? vshrq_n_u8(b, 4) : vandq_u8(b, vdupq_n_u8(15));
            if constexpr (T == WType::Q6_KX) {
                // Bits 2t, 2t + 1 of byte 256 + j*64 + 4l + i: the high 2 bits of step 4j + t.
                const uint8x16_t hb = vld1q_u8(codes + 256 + (s / 4) * 64 + 16 * q);
                const uint8x16_t two =
                    vandq_u8(vshlq_u8(hb, vdupq_n_s8(int8_t(-2 * (s % 4)))), vdupq_n_u8(3));
                code = vorrq_u8(code, vshlq_n_u8(two, 4));
            }
            w[q] = vreinterpretq_s8_u8(code);
        }
    }
}

// Four consecutive f16 (a scale plane) or f32 values as f32 (the f16 widening is exact).
template <WType T>
inline float32x4_t load_scales(const uint8_t* p) {
    if constexpr (int8_dot_f32_scales(T)) {
        return vld1q_f32(reinterpret_cast<const float*>(p));
    } else {
        return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p))));
    }
}

// Row r against columns [j0, j0 + G): y[j, r]. Dot(acc, a, b) adds to lane k of acc the dot
// product of bytes 4k..4k+3 of a and b (signed).
template <class Dot, WType T, int G>
void row_times_columns(const WeightMatrix& w, const QuantizedColumns& x, int64_t r, int64_t j0,
                       float* y, int64_t ldy) {
    const uint8_t* row = w.data + size_t(r) * w.row_bytes;
    const int64_t chunks = x.chunks;
    const int64_t chunk_bytes = int8_dot_chunk_code_bytes(T);
    const uint8_t* d_plane = row + int8_dot_plane_offset(T, chunks, 0);
    const uint8_t* second_plane = row + int8_dot_plane_offset(T, chunks, 1);  // m or sub-scales
    const size_t scale_bytes = int8_dot_scale_bytes(T);

    float32x4_t acc[G][4];  // [columns, 16 lanes]
    for (int j = 0; j < G; ++j)
        for (int q = 0; q < 4; ++q) acc[j][q] = vdupq_n_f32(0.0f);

    for (int64_t c = 0; c < chunks; ++c) {
        const uint8_t* codes = row + c * chunk_bytes;
        const int8_t* xcodes[G];  // [G] this chunk's 512 activation codes per column
        for (int j = 0; j < G; ++j) xcodes[j] = x.codes_of(j0 + j) + c * kI8ChunkValues;
        // The dot products of steps 0..3, then (separately for Q6_KX's sub-blocks) 4..7. Each
        // starts where the quantizer's starts say (QuantizedColumns): Q4_0X's at -8 * xsum,
        // Q6_KX's sub-blocks at -32 x their code sums, so that they end at the reference's
        // integer terms; Q8_1FX's (whose top bits the dot flipped) at +128 * xsum, the negated
        // -128 start; the others at 0.
        int32x4_t first[G][4], second[G][4];
        for (int j = 0; j < G; ++j) {
            const int64_t b0 = c * kI8ChunkBlocks;  // the chunk's first block
            for (int q = 0; q < 4; ++q) {
                first[j][q] = second[j][q] = vdupq_n_s32(0);
                if constexpr (T == WType::Q4_0X)
                    first[j][q] = vld1q_s32(x.offset_starts_of<8>(j0 + j) + b0 + 4 * q);
                if constexpr (T == WType::Q8_1FX)
                    first[j][q] =
                        vnegq_s32(vld1q_s32(x.offset_starts_of<128>(j0 + j) + b0 + 4 * q));
                if constexpr (T == WType::Q6_KX) {
                    first[j][q] = vld1q_s32(x.q6_starts_of(j0 + j, false) + b0 + 4 * q);
                    second[j][q] = vld1q_s32(x.q6_starts_of(j0 + j, true) + b0 + 4 * q);
                }
            }
        }
        for (int s = 0; s < kI8Steps; ++s) {
            int8x16_t wq[4];
            load_step<T>(codes, s, wq);
            for (int j = 0; j < G; ++j) {
                const int8_t* xs = xcodes[j] + s * 64;
                int32x4_t* isum = s < 4 || T != WType::Q6_KX ? first[j] : second[j];
                for (int q = 0; q < 4; ++q) isum[q] = Dot{}(isum[q], wq[q], vld1q_s8(xs + 16 * q));
            }
        }
        int32x4_t sc_a[4], sc_b[4];  // Q6_KX: the blocks' first and last 16 values' scales
        if constexpr (T == WType::Q6_KX) {
            load_sub_scales(second_plane + c * 32, sc_a);
            load_sub_scales(second_plane + c * 32 + 16, sc_b);
        }
        for (int q = 0; q < 4; ++q) {
            const int64_t b = c * kI8ChunkBlocks + 4 * q;  // the vector's first block
            const float32x4_t dw = load_scales<T>(d_plane + size_t(b) * scale_bytes);
            for (int j = 0; j < G; ++j) {
                const int64_t col = j0 + j;
                const float32x4_t dx = vld1q_f32(x.scales_of(col) + b);
                // The layout's integer term (Q8_0X's sum holds its isum - 128 * xsum already).
                int32x4_t exact = first[j][q];
                if constexpr (T == WType::Q6_KX)  // sc_a * sum_a + sc_b * sum_b
                    exact = vmlaq_s32(vmulq_s32(sc_a[q], first[j][q]), sc_b[q], second[j][q]);
                acc[j][q] = vfmaq_f32(acc[j][q], vcvtq_f32_s32(exact), vmulq_f32(dw, dx));
                if constexpr (int8_dot_affine(T)) {
                    const float32x4_t dm = load_scales<T>(second_plane + size_t(b) * scale_bytes);
                    const float32x4_t xsum = vld1q_f32(x.float_sums_of(col) + b);
                    acc[j][q] = vfmaq_f32(acc[j][q], xsum, vmulq_f32(dm, dx));
                }
            }
        }
    }
    for (int j = 0; j < G; ++j) {
        float lanes[16];
        for (int q = 0; q < 4; ++q) vst1q_f32(lanes + 4 * q, acc[j][q]);
        y[(j0 + j) * ldy + r] = ref::lane_tree_sum(lanes);
    }
}

template <class Dot, WType T>
void rows_of_type(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy,
                  int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
        for_column_passes<kMaxGroup>(
            x.n, [&]<int G>(int64_t j0) { row_times_columns<Dot, T, G>(w, x, r, j0, y, ldy); });
}

// ref::gemm_i8_rows' bits for the chunked and the row-group types (gemm_row_groups_arm.h).
template <class Dot>
void gemm_i8_rows_with(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy,
                       int64_t r0, int64_t r1) {
    if (is_row_group_type(w.type)) return gemm_row_groups_with<Dot>(w, x, y, ldy, r0, r1);
    visit_int8_dot_type(w.type, [&]<WType T>() { rows_of_type<Dot, T>(w, x, y, ldy, r0, r1); });
}

// The int8 peak probe (kernels.h int8_peak_probe) on the same dot product, a < 128 (read as
// signed). A chain's 16 lanes are 4 registers, so each quarter runs all its repetitions in turn
// (32 registers do not hold 4 x 10 accumulators and their operands; integer sums do not depend
// on that order).
template <class Dot>
void int8_peak_probe_with(const uint8_t* a, const int8_t* b, int64_t reps, int32_t* acc) {
    for (int q = 0; q < 4; ++q)  // lanes 4q..4q+3: bytes 16q..16q+15
        simd::run_peak_chains(
            vreinterpretq_s32_s8(vld1q_s8(b + 16 * q)), reps,
            [&](int i) { return vreinterpretq_s32_u8(vld1q_u8(a + 64 * i + 16 * q)); },
            [&](int i) { return vld1q_s32(acc + 16 * i + 4 * q); },
            [&](int i, int32x4_t v) { vst1q_s32(acc + 16 * i + 4 * q, v); },
            [](int32x4_t sum, int32x4_t x, int32x4_t y) {
                // The widening dot's products do not depend on the sum: without this the
                // compiler could form them once outside the loop and time only the adds (as
                // AVX2's probe found, x86/avx2/peak_probe_avx2.cpp).
                asm volatile("" : "+w"(x));
                return Dot{}(sum, vreinterpretq_s8_s32(x), vreinterpretq_s8_s32(y));
            });
}

}  // namespace
}  // namespace nextn::arm
