#pragma once
// The int8-dot matmul for the 16-row-group types (Q4_0R, Q8_0R, Q4_KR, Q5_KR, Q6_KR, Q3_KR, Q2_KR,
// IQ4_NLR, MXFP4R, IQ4_XSR: kernels/row_groups.h) on NEON: ref::gemm_row_groups' arithmetic with
// one row per int32 lane. Included (through gemm_i8_arm.h) by one translation unit per dot product.
//
// A block's code vector is 64 bytes, 16 rows x 4 codes: four 16-byte vectors of 4 rows each. The
// dot product adds, in lane k of vector q, row 4q + k's 4 codes times the step's 4 activation
// codes, which are broadcast to every lane. So a row's sum builds up in its own lane, as in the
// x86 kernels, and never meets another row's: the reference's bits for every width and row split.
// The dot multiplies signed by signed bytes:
//   - Q8_0R's codes (q + 128) have their top bit flipped back to q, so the dot is the reference's
//     isum, its -128 * xsum included, exactly; so do IQ4_NLR's and MXFP4R's table codes, once
//     their nibbles are looked up;
//   - the 4-, 5- and 6-bit codes are the same as signed bytes, and Q4_0R's offset of 8 is taken
//     off as the reference does, -8 * xsum.
// A tile is one group times up to kMaxGroupCols columns: the group's codes are read from memory
// once for all of them (a wider batch takes further passes, which find the group in cache).
#include <arm_neon.h>

#include <algorithm>
#include <cstring>

#include "kernels/arm/column_passes.h"
#include "kernels/int8_dot.h"
#include "kernels/row_groups.h"

// Internal linkage: each including file compiles these with its own -march flags.
namespace nextn::arm {
namespace {

constexpr int kMaxGroupCols = 4;

// Sixteen int8 (Q6 sub-block scales: of 16 rows, or of a chunk's 16 blocks) widened to int32.
inline void load_sub_scales(const uint8_t* p, int32x4_t out[4]) {
    const int8x16_t v = vld1q_s8(reinterpret_cast<const int8_t*>(p));
    const int16x8_t lo = vmovl_s8(vget_low_s8(v)), hi = vmovl_s8(vget_high_s8(v));
    out[0] = vmovl_s16(vget_low_s16(lo));
    out[1] = vmovl_s16(vget_high_s16(lo));
    out[2] = vmovl_s16(vget_low_s16(hi));
    out[3] = vmovl_s16(vget_high_s16(hi));
}

// Sixteen f16 (one per row of a group) as f32, [4] vectors (the widening is exact).
inline void load_f16_lanes(const uint8_t* p, float32x4_t out[4]) {
    const uint16_t* h = reinterpret_cast<const uint16_t*>(p);
    for (int q = 0; q < 4; ++q) out[q] = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(h + 4 * q)));
}

// Sixteen u8 (a K-quant block's 6-bit sc or mn, one per row) as f32, [4] vectors.
inline void load_u8_lanes(const uint8_t* p, float32x4_t out[4]) {
    const uint8x16_t v = vld1q_u8(p);
    const uint16x8_t lo = vmovl_u8(vget_low_u8(v)), hi = vmovl_u8(vget_high_u8(v));
    out[0] = vcvtq_f32_u32(vmovl_u16(vget_low_u16(lo)));
    out[1] = vcvtq_f32_u32(vmovl_u16(vget_high_u16(lo)));
    out[2] = vcvtq_f32_u32(vmovl_u16(vget_low_u16(hi)));
    out[3] = vcvtq_f32_u32(vmovl_u16(vget_high_u16(hi)));
}

// Sixteen u8 (one per row) widened to int32, [4] vectors.
inline void load_u8_ints(uint8x16_t v, int32x4_t out[4]) {
    const uint16x8_t lo = vmovl_u8(vget_low_u8(v)), hi = vmovl_u8(vget_high_u8(v));
    out[0] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(lo)));
    out[1] = vreinterpretq_s32_u32(vmovl_u16(vget_high_u16(lo)));
    out[2] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(hi)));
    out[3] = vreinterpretq_s32_u32(vmovl_u16(vget_high_u16(hi)));
}

// Bytes shifted right by n (0..7) bits, n known only at run time.
inline uint8x16_t shift_right(uint8x16_t v, int n) { return vshlq_u8(v, vdupq_n_s8(int8_t(-n))); }

// Step s (0..7) of the block whose codes start at `codes`, as signed bytes: w[q] holds rows
// 4q..4q+3, 4 codes each (kernels/row_groups.h has the layouts).
template <WType T>
inline void group_step(const uint8_t* codes, int s, int8x16_t w[4]) {
    const uint8x16_t low_mask = vdupq_n_u8(15);
    for (int q = 0; q < 4; ++q) {
        uint8x16_t code;
        if constexpr (T == WType::Q8_0R) {
            code = veorq_u8(vld1q_u8(codes + s * 64 + 16 * q), vdupq_n_u8(0x80));
        } else if constexpr (T == WType::Q2_KR) {
            // Vector s / 4, bits 2 (s % 4) and up: the codes (Q3_KR's low 2 bits).
            const uint8x16_t two_bits = vld1q_u8(codes + (s / 4) * 64 + 16 * q);
            code = vandq_u8(shift_right(two_bits, 2 * (s % 4)), vdupq_n_u8(3));
        } else if constexpr (T == WType::Q3_KR) {
            // Vector s / 4, bits 2 (s % 4) and up: the codes' low 2 bits; vector 2, bit s: their
            // high bit; + 28, so that Q6_KR's offset of 32 serves (kernels/row_groups.h).
            const uint8x16_t two_bits = vld1q_u8(codes + (s / 4) * 64 + 16 * q);
            const uint8x16_t high = vld1q_u8(codes + 128 + 16 * q);
            code = vandq_u8(shift_right(two_bits, 2 * (s % 4)), vdupq_n_u8(3));
            code = vorrq_u8(code, vshlq_n_u8(vandq_u8(shift_right(high, s), vdupq_n_u8(1)), 2));
            code = vaddq_u8(code, vdupq_n_u8(28));
        } else if constexpr (T == WType::Q6_KR) {
            // Vector s / 2: low nibble step 2k, high nibble 2k + 1; vector 4 + s / 4, bits
            // 2 (s % 4) and up: the codes' high 2 bits.
            const uint8x16_t v = vld1q_u8(codes + (s / 2) * 64 + 16 * q);
            const uint8x16_t high_bits = vld1q_u8(codes + 256 + (s / 4) * 64 + 16 * q);
            code = s % 2 ? vshrq_n_u8(v, 4) : vandq_u8(v, low_mask);
            code = vorrq_u8(
                code, vshlq_n_u8(vandq_u8(shift_right(high_bits, 2 * (s % 4)), vdupq_n_u8(3)), 4));
        } else {
            // Q4_0R, Q4_KR, Q5_KR, IQ4_NLR, MXFP4R: vector s % 4, the low nibbles steps 0..3, the
            // high ones 4..7; Q5_KR's fifth bits in vector 4, bit s of each byte; the table types'
            // nibbles index their table (its values + 128, flipped back to the values).
            const uint8x16_t v = vld1q_u8(codes + (s % 4) * 64 + 16 * q);
            code = s < 4 ? vandq_u8(v, low_mask) : vshrq_n_u8(v, 4);
            if constexpr (T == WType::Q5_KR) {
                const uint8x16_t fifth = vld1q_u8(codes + 256 + 16 * q);
                code =
                    vorrq_u8(code, vshlq_n_u8(vandq_u8(shift_right(fifth, s), vdupq_n_u8(1)), 4));
            }
            if constexpr (row_group_table_codes(T))  // the table's code, its top bit flipped back:
                code =
                    veorq_u8(vqtbl1q_u8(vld1q_u8(row_group_code_table(T)), code), vdupq_n_u8(0x80));
        }
        w[q] = vreinterpretq_s8_u8(code);
    }
}

// The 4 activation codes of step s of block b (x's chunk layout), broadcast to every lane.
inline int8x16_t broadcast_step(const int8_t* column_codes, int64_t b, int s) {
    const int64_t at = (b / kI8ChunkBlocks) * kI8ChunkValues + 4 * (b % kI8ChunkBlocks) + s * 64;
    int32_t v;
    std::memcpy(&v, column_codes + at, 4);
    return vreinterpretq_s8_s32(vdupq_n_s32(v));
}

// Group `group` (16 rows) times columns [j0, j0 + C): acc[c][q] lane k is row 4q + k's sum for
// column j0 + c. Dot(acc, a, b) adds to lane k of acc the dot product of bytes 4k..4k+3 of a and
// b (signed).
template <class Dot, WType T, int C>
void group_times_columns(const uint8_t* group, int64_t blocks, const QuantizedColumns& x,
                         int64_t j0, float32x4_t (&acc)[C][4]) {
    for (int c = 0; c < C; ++c)
        for (int q = 0; q < 4; ++q) acc[c][q] = vdupq_n_f32(0.0f);
    const int8_t* xc[C];
    for (int c = 0; c < C; ++c) xc[c] = x.codes_of(j0 + c);
    for (int64_t b = 0; b < blocks; ++b) {
        const uint8_t* codes = group + row_group_codes_at(T, b);
        // Q6_KR, Q3_KR, Q2_KR: steps 0..3 (the first sub-block) in first, 4..7 in second; else all
        // in first.
        // Each sum starts where the quantizer's starts say (QuantizedColumns): Q4_0R's at
        // -8 * xsum, Q6_KR's sub-blocks at -32 x their code sums, so that they end at the
        // reference's integer terms; the others at 0.
        int32x4_t first[C][4], second[C][4];
        for (int c = 0; c < C; ++c) {
            int32_t first_start = 0, second_start = 0;
            if constexpr (T == WType::Q4_0R) first_start = x.offset_starts_of<8>(j0 + c)[b];
            if constexpr (row_group_sub_block_scales(T)) {
                first_start = x.q6_starts_of(j0 + c, false)[b];
                second_start = x.q6_starts_of(j0 + c, true)[b];
            }
            for (int q = 0; q < 4; ++q) {
                first[c][q] = vdupq_n_s32(first_start);
                second[c][q] = vdupq_n_s32(second_start);
            }
        }
        for (int s = 0; s < kI8Steps; ++s) {
            int8x16_t w[4];
            group_step<T>(codes, s, w);
            for (int c = 0; c < C; ++c) {
                const int8x16_t xs = broadcast_step(xc[c], b, s);
                int32x4_t* isum = row_group_sub_block_sums(T) && s >= 4 ? second[c] : first[c];
                for (int q = 0; q < 4; ++q) isum[q] = Dot{}(isum[q], w[q], xs);
            }
        }
        // The rows' weight scales (Q4_KR, Q5_KR: d * sc, and their mins' factors -(dmin * mn)).
        float32x4_t dw[4], dm[4];
        // Q6_KR, Q3_KR, Q2_KR: the block's first and last 16 values' scales.
        int32x4_t sc_a[4], sc_b[4];
        int32x4_t mn_a[4], mn_b[4];  // Q2_KR: their mins
        if constexpr (T == WType::Q2_KR) {
            load_f16_lanes(group + row_group_super_scales_at(T, b), dw);
            load_f16_lanes(group + row_group_super_scales_at(T, b) + 32, dm);
            // Row r's two scale bytes (sc | mn << 4) at 2r, 2r + 1: deinterleaved.
            const uint8x16x2_t pairs = vld2q_u8(group + row_group_block_scales_at(T, b));
            const uint8x16_t low = vdupq_n_u8(15);
            load_u8_ints(vandq_u8(pairs.val[0], low), sc_a);
            load_u8_ints(vandq_u8(pairs.val[1], low), sc_b);
            load_u8_ints(vshrq_n_u8(pairs.val[0], 4), mn_a);
            load_u8_ints(vshrq_n_u8(pairs.val[1], 4), mn_b);
            for (int q = 0; q < 4; ++q) dm[q] = vnegq_f32(dm[q]);  // -dmin
        } else if constexpr (row_group_f32_scales(T)) {  // IQ4_XSR
            for (int q = 0; q < 4; ++q)
                dw[q] =
                    vld1q_f32(reinterpret_cast<const float*>(group + row_group_d_at(T, b)) + 4 * q);
        } else if constexpr (row_group_paired(T)) {  // Q4_0R, Q8_0R and the table types
            load_f16_lanes(group + row_group_d_at(T, b), dw);
        } else if constexpr (row_group_sub_block_scales(T)) {  // Q6_KR, Q3_KR
            load_f16_lanes(group + row_group_super_scales_at(T, b), dw);
            load_sub_scales(group + row_group_block_scales_at(T, b), sc_a);
            load_sub_scales(group + row_group_block_scales_at(T, b) + 16, sc_b);
        } else {
            float32x4_t d[4], dmin[4], sc[4], mn[4];
            load_f16_lanes(group + row_group_super_scales_at(T, b), d);
            load_f16_lanes(group + row_group_super_scales_at(T, b) + 32, dmin);
            load_u8_lanes(group + row_group_block_scales_at(T, b), sc);
            load_u8_lanes(group + row_group_block_scales_at(T, b) + 16, mn);
            for (int q = 0; q < 4; ++q) {
                dw[q] = vmulq_f32(d[q], sc[q]);
                dm[q] = vnegq_f32(vmulq_f32(dmin[q], mn[q]));
            }
        }
        for (int c = 0; c < C; ++c) {
            const float32x4_t dx = vdupq_n_f32(x.scales_of(j0 + c)[b]);
            for (int q = 0; q < 4; ++q) {
                // The reference's integer term; Q8_0R's sum holds its -128 * xsum already.
                int32x4_t exact = first[c][q];
                if constexpr (row_group_sub_block_sums(T))  // sc_a * sum_a + sc_b * sum_b
                    exact = vmlaq_s32(vmulq_s32(sc_a[q], first[c][q]), sc_b[q], second[c][q]);
                acc[c][q] = vfmaq_f32(acc[c][q], vcvtq_f32_s32(exact), vmulq_f32(dw[q], dx));
                if constexpr (T == WType::Q2_KR) {  // mn_a * xhalf + mn_b * (xsum - xhalf)
                    const int32_t xhalf = x.half_sums_of(j0 + c)[b];
                    const int32_t xsecond = x.sums_of(j0 + c)[b] - xhalf;
                    const int32x4_t mins =
                        vmlaq_n_s32(vmulq_n_s32(mn_a[q], xhalf), mn_b[q], xsecond);
                    acc[c][q] = vfmaq_f32(acc[c][q], vcvtq_f32_s32(mins), vmulq_f32(dm[q], dx));
                }
                if constexpr (row_group_affine_k(T)) {
                    const float32x4_t xsum = vdupq_n_f32(x.float_sums_of(j0 + c)[b]);
                    acc[c][q] = vfmaq_f32(acc[c][q], xsum, vmulq_f32(dm[q], dx));
                }
            }
        }
    }
}

// Rows [r0, r1) of a row-group matrix of type T times every column of x: y[j * ldy + r].
template <class Dot, WType T>
void row_groups_of_type(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy,
                        int64_t r0, int64_t r1) {
    const RowGroupGeometry L = row_group_geometry(T, w.cols);
    for (int64_t g = r0 / kRowGroupRows; g * kRowGroupRows < r1; ++g) {
        const uint8_t* group = w.data + size_t(g) * L.group_bytes;
        const int64_t lo = std::max(r0, g * kRowGroupRows),
                      hi = std::min(r1, (g + 1) * kRowGroupRows);
        for_column_passes<kMaxGroupCols>(x.n, [&]<int C>(int64_t j0) {
            float32x4_t acc[C][4];
            group_times_columns<Dot, T, C>(group, L.blocks, x, j0, acc);
            for (int c = 0; c < C; ++c) {
                float rows[kRowGroupRows];
                for (int q = 0; q < 4; ++q) vst1q_f32(rows + 4 * q, acc[c][q]);
                for (int64_t r = lo; r < hi; ++r)
                    y[(j0 + c) * ldy + r] = rows[r - g * kRowGroupRows];
            }
        });
    }
}

// ref::gemm_row_groups' bits for every row-group type.
template <class Dot>
void gemm_row_groups_with(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy,
                          int64_t r0, int64_t r1) {
    visit_row_group_type(w.type, [&]<WType T>() { row_groups_of_type<Dot, T>(w, x, y, ldy, r0, r1); });
}

}  // namespace
}  // namespace nextn::arm
