#pragma GCC optimize("fp-contract=off")  // the reference rounds dw * dx on its own, as the kernel does
#include "kernels/row_groups.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "core/thread_pool.h"
#include "formats/dequant.h"
#include "formats/ggml_types.h"
#include "kernels/int8_dot.h"
#include "kernels/quant.h"
#include "kernels/quant_k.h"

namespace nextn {

WeightMatrix allocate_row_groups(WType t, int64_t rows, int64_t cols, const std::string& what) {
    WeightMatrix w;
    w.type = t;
    w.rows = rows;
    w.cols = cols;
    const size_t group_bytes = row_group_bytes(t, cols);
    if (rows <= 0 || group_bytes == 0)
        fail(wtype_name(t), " matrix ", what, ": bad shape [", rows, ", ", cols, "]");
    w.row_bytes = group_bytes / kRowGroupRows;
    const std::string named = what + " (" + wtype_name(w.type) + ")";
    require_weight_memory(w.nbytes(), named);
    w.owner = allocate_weight_memory(w.nbytes(), named, /*zeroed=*/false);
    w.data = static_cast<const uint8_t*>(w.owner.get());
    auto* base = static_cast<uint8_t*>(w.owner.get());
    const int64_t groups = row_groups(rows);
    if (rows % kRowGroupRows) std::memset(base + size_t(groups - 1) * group_bytes, 0, group_bytes);
    // A last span short of blocks (Q4_0R, Q8_0R: an odd block count; Q6_KR: an odd super-block
    // count): zeroed whole, so its missing blocks' codes and scales are zero (the rows' stores
    // fill in the rest).
    const int64_t blocks = cols / 32, span = row_group_span_blocks(t);
    if (blocks % span) {
        const size_t last_span = size_t((blocks / span) * row_group_span_bytes(t));
        for (int64_t g = 0; g < groups; ++g)
            std::memset(base + size_t(g) * group_bytes + last_span, 0, group_bytes - last_span);
    }
    return w;
}

WeightMatrix repack_as_row_groups(const WeightMatrix& blocks, WType target, ThreadPool* pool) {
    if (!is_row_group_type(target) || int8_dot_source_type(target) != blocks.type)
        fail("repack_as_row_groups: a ", wtype_name(blocks.type), " matrix cannot become ", wtype_name(target));
    WeightMatrix w = allocate_row_groups(target, blocks.rows, blocks.cols,
                                         std::to_string(blocks.rows) + "x" + std::to_string(blocks.cols) + " weight");
    auto* base = const_cast<uint8_t*>(w.data);
    // Whole groups per task, so each group's lines are written by one thread.
    run_on(pool, row_groups(blocks.rows), [&](int64_t g0, int64_t g1) {
        for (int64_t r = g0 * kRowGroupRows; r < std::min(blocks.rows, g1 * kRowGroupRows); ++r)
            row_groups_store_row(target, blocks.data + size_t(r) * blocks.row_bytes, blocks.cols, r, base);
    });
    return w;
}

namespace {

// Row `row`'s group in a t matrix of `cols` values at base, and its lane there.
struct GroupLane {
    uint8_t* group;
    int lane;
};
GroupLane lane_of(WType t, int64_t cols, int64_t row, uint8_t* base) {
    return {base + size_t(row / kRowGroupRows) * row_group_bytes(t, cols), int(row % kRowGroupRows)};
}

// A lane's two scale bytes of block b in a K-quant group (Q4_KR, Q5_KR: its sc and mn; Q6_KR,
// Q3_KR: its two sub-blocks' sc), 16 bytes apart.
void store_block_scales(uint8_t* group, WType t, int64_t b, int lane, uint8_t first, uint8_t second) {
    group[row_group_block_scales_at(t, b) + size_t(lane)] = first;
    group[row_group_block_scales_at(t, b) + 16 + size_t(lane)] = second;
}

// Q5_KR: the code of step s's element t (bytes 4s..4s+3 of a lane's step) in a block's 32 codes q:
// steps 0..3 are elements 4s + t, steps 4..7 elements 16 + 4(s - 4) + t.
uint8_t q5_k_step_element(int s, int t, const uint8_t* q) {
    return q[s < 4 ? 4 * s + t : 16 + 4 * (s - 4) + t];
}
// Q6_KR: the bytes of element e's low 4 bits (nibble q6_low_shift(e)) and high 2 bits (at bit
// q6_high_shift(e)) in lane `lane` of a block's codes: step s = e / 4 is nibble s % 2 of vector
// s / 2, and bits 2 (s % 4) of vector 4 + s / 4.
size_t q6_low_byte(int lane, int e) { return size_t(e / 8) * 64 + size_t(4 * lane + e % 4); }
int q6_low_shift(int e) { return 4 * (e / 4 % 2); }
size_t q6_high_byte(int lane, int e) { return 256 + size_t(e / 16) * 64 + size_t(4 * lane + e % 4); }
int q6_high_shift(int e) { return 2 * (e / 4 % 4); }

// The store_*_row functions: row `row` of a K-quant tensor, its GGUF blocks at `blocks`, into its
// lane of its group at base; every byte of the lane is written. store_affine_k_row: Q4_KR, or
// with `five` Q5_KR (a Q5_K row: its codes' fifth bits in vector 4).
void store_affine_k_row(bool five, const uint8_t* blocks, int64_t cols, int64_t row, uint8_t* base) {
    const WType t = five ? WType::Q5_KR : WType::Q4_KR;
    const auto [group, lane] = lane_of(t, cols, row, base);
    uint8_t codes[kKQuantValues], sc[8], mn[8];
    uint16_t d, dmin;
    for (int64_t sb = 0; sb < cols / kKQuantValues; ++sb) {
        if (five)
            q5_k_block_codes(blocks + size_t(sb) * kQ5KBlockBytes, codes, sc, mn, &d, &dmin);
        else
            q4_k_block_codes(blocks + size_t(sb) * kQ4KBlockBytes, codes, sc, mn, &d, &dmin);
        uint8_t* super = group + row_group_super_scales_at(t, sb * 8);
        std::memcpy(super + 2 * lane, &d, 2);
        std::memcpy(super + 32 + 2 * lane, &dmin, 2);
        for (int k = 0; k < 8; ++k) {
            const int64_t b = sb * 8 + k;
            // Q4_0R's nibble order: byte 4i + t of lane r holds element 4i + t (low) and 4i + t + 16.
            uint8_t* lane_codes = group + row_group_codes_at(t, b) + 4 * lane;
            const uint8_t* q = codes + k * 32;
            for (int e = 0; e < 16; ++e) lane_codes[(e / 4) * 64 + e % 4] = uint8_t((q[e] & 15) | (q[e + 16] & 15) << 4);
            if (five)  // byte t, bit s: the fifth bit of step s's element t
                for (int t4 = 0; t4 < 4; ++t4) {
                    uint8_t bits = 0;
                    for (int s = 0; s < 8; ++s) bits = uint8_t(bits | (q5_k_step_element(s, t4, q) >> 4) << s);
                    lane_codes[256 + t4] = bits;
                }
            store_block_scales(group, t, b, lane, sc[k], mn[k]);
        }
    }
}

void store_q6_k_row(const uint8_t* blocks, int64_t cols, int64_t row, uint8_t* base) {
    const auto [group, lane] = lane_of(WType::Q6_KR, cols, row, base);
    uint8_t codes[kKQuantValues];
    int8_t sc[16];
    uint16_t d;
    for (int64_t sb = 0; sb < cols / kKQuantValues; ++sb) {
        q6_k_block_codes(blocks + size_t(sb) * kQ6KBlockBytes, codes, sc, &d);
        std::memcpy(group + row_group_super_scales_at(WType::Q6_KR, sb * 8) + 2 * lane, &d, 2);
        for (int k = 0; k < 8; ++k) {
            const int64_t b = sb * 8 + k;
            uint8_t lane_codes[384] = {};  // the block's code bytes; only this lane's are copied
            for (int e = 0; e < 32; ++e) {
                const uint8_t q = codes[k * 32 + e];
                lane_codes[q6_low_byte(lane, e)] |= uint8_t((q & 15) << q6_low_shift(e));
                lane_codes[q6_high_byte(lane, e)] |= uint8_t((q >> 4) << q6_high_shift(e));
            }
            uint8_t* block = group + row_group_codes_at(WType::Q6_KR, b);
            for (int v = 0; v < 6; ++v) std::memcpy(block + v * 64 + 4 * lane, lane_codes + v * 64 + 4 * lane, 4);
            store_block_scales(group, WType::Q6_KR, b, lane, uint8_t(sc[2 * k]), uint8_t(sc[2 * k + 1]));
        }
    }
}

// Row `row` of a GGUF IQ4_XS tensor (its blocks at `blocks`) into its lane of its IQ4_XSR group at
// base: each 32 values' nibbles as Q4_0R's (IQ4_XS orders a sub-block's 16 bytes as Q4_0 does)
// and their scale d * (sc - 32) as an f32, exactly block_iq4_xs's dl.
void store_iq4_xs_row(const uint8_t* blocks, int64_t cols, int64_t row, uint8_t* base) {
    constexpr WType t = WType::IQ4_XSR;
    const auto [group, lane] = lane_of(t, cols, row, base);
    for (int64_t b = 0; b < cols / kQuantBlock; ++b) {
        float dl;
        const uint8_t* nibbles = iq4_xs_sub_block(blocks + size_t(b / 8) * 136, int(b % 8), &dl);
        uint8_t* codes = group + row_group_codes_at(t, b) + 4 * lane;
        for (int i = 0; i < 4; ++i) std::memcpy(codes + i * 64, nibbles + 4 * i, 4);
        std::memcpy(group + row_group_d_at(t, b) + 4 * lane, &dl, 4);
    }
}

// Q3_KR's and Q2_KR's planes of low 2 bits, a lane's 4 bytes of each of a block's two: element e
// of the block's 32 codes q (step s = e / 4) at bits 2 (s % 4) of byte e % 4 of plane s / 4.
void pack_two_bit_planes(const uint8_t* q, uint8_t (&planes)[2][4]) {
    for (int e = 0; e < 32; ++e) {
        const int s = e / 4;
        planes[s / 4][e % 4] |= uint8_t((q[e] & 3) << (2 * (s % 4)));
    }
}

// Row `row` of a GGUF Q3_K tensor into its lane of its Q3_KR group: the codes' low 2 bits where
// Q6_KR keeps its high ones, their high bits as Q5_KR keeps its fifth, the scales as Q6_KR's.
void store_q3_k_row(const uint8_t* blocks, int64_t cols, int64_t row, uint8_t* base) {
    constexpr WType t = WType::Q3_KR;
    const auto [group, lane] = lane_of(t, cols, row, base);
    uint8_t codes[kKQuantValues];
    int8_t sc[16];
    uint16_t d;
    for (int64_t sb = 0; sb < cols / kKQuantValues; ++sb) {
        q3_k_block_codes(blocks + size_t(sb) * kQ3KBlockBytes, codes, sc, &d);
        std::memcpy(group + row_group_super_scales_at(t, sb * 8) + 2 * lane, &d, 2);
        for (int k = 0; k < 8; ++k) {
            const int64_t b = sb * 8 + k;
            // This lane's 4 bytes of each code vector.
            uint8_t low_bits[2][4] = {}, high_bits[4] = {};
            pack_two_bit_planes(codes + k * 32, low_bits);
            for (int e = 0; e < 32; ++e)
                high_bits[e % 4] |= uint8_t((codes[k * 32 + e] >> 2) << (e / 4));
            uint8_t* block = group + row_group_codes_at(t, b);
            for (int v = 0; v < 2; ++v) std::memcpy(block + v * 64 + 4 * lane, low_bits[v], 4);
            std::memcpy(block + 128 + 4 * lane, high_bits, 4);
            store_block_scales(group, t, b, lane, uint8_t(sc[2 * k]), uint8_t(sc[2 * k + 1]));
        }
    }
}

// Row `row` of a GGUF Q2_K tensor into its lane of its Q2_KR group: the codes as Q3_KR's low 2
// bits, d and dmin as Q4_KR's, each block's two scale bytes as the file has them, side by side.
void store_q2_k_row(const uint8_t* blocks, int64_t cols, int64_t row, uint8_t* base) {
    constexpr WType t = WType::Q2_KR;
    const auto [group, lane] = lane_of(t, cols, row, base);
    uint8_t codes[kKQuantValues], scales[16];
    uint16_t d, dmin;
    for (int64_t sb = 0; sb < cols / kKQuantValues; ++sb) {
        q2_k_block_codes(blocks + size_t(sb) * kQ2KBlockBytes, codes, scales, &d, &dmin);
        uint8_t* super = group + row_group_super_scales_at(t, sb * 8);
        std::memcpy(super + 2 * lane, &d, 2);
        std::memcpy(super + 32 + 2 * lane, &dmin, 2);
        for (int k = 0; k < 8; ++k) {
            const int64_t b = sb * 8 + k;
            uint8_t lane_codes[2][4] = {};  // this lane's 4 bytes of each code vector
            pack_two_bit_planes(codes + k * 32, lane_codes);
            uint8_t* block = group + row_group_codes_at(t, b);
            for (int v = 0; v < 2; ++v) std::memcpy(block + v * 64 + 4 * lane, lane_codes[v], 4);
            std::memcpy(group + row_group_block_scales_at(t, b) + 2 * lane, scales + 2 * k, 2);
        }
    }
}

// A K-quant tensor (GGUF Q4_K, Q5_K or Q6_K blocks: k_quant_dtype(target)) [rows, cols] as the
// row-group type `target`, or false.
bool repack_k_quant(const RawTensor& t, WType target, int64_t rows, int64_t cols, WeightMatrix& out, ThreadPool* pool) {
    int64_t block_values = 0;
    size_t block_bytes = 0;
    if (t.dtype != k_quant_dtype(target) || !dtype_block_layout(t.dtype, &block_values, &block_bytes) || rows <= 0 ||
        !row_group_cols_fit(target, cols) || rows * cols != t.numel() ||
        t.nbytes != size_t(rows * cols / block_values) * block_bytes)
        return false;
    WeightMatrix w = allocate_row_groups(target, rows, cols, t.name);
    auto* base = const_cast<uint8_t*>(w.data);
    const size_t row_blocks = size_t(cols / block_values) * block_bytes;
    // Whole groups per task, so each group's lines are written by one thread.
    run_on(pool, row_groups(rows), [&](int64_t g0, int64_t g1) {
        for (int64_t r = g0 * kRowGroupRows; r < std::min(rows, g1 * kRowGroupRows); ++r)
            row_groups_store_row(target, t.data + size_t(r) * row_blocks, cols, r, base);
    });
    out = std::move(w);
    return true;
}

}  // namespace

void row_groups_store_row(WType t, const uint8_t* block_row, int64_t cols, int64_t row, uint8_t* base) {
    if (row_group_affine_k(t)) return store_affine_k_row(t == WType::Q5_KR, block_row, cols, row, base);
    if (t == WType::Q6_KR) return store_q6_k_row(block_row, cols, row, base);
    if (t == WType::Q3_KR) return store_q3_k_row(block_row, cols, row, base);
    if (t == WType::Q2_KR) return store_q2_k_row(block_row, cols, row, base);
    const auto [group, lane] = lane_of(t, cols, row, base);
    for (int64_t b = 0; b < cols / kQuantBlock; ++b) {
        uint8_t* codes = group + row_group_codes_at(t, b) + 4 * lane;
        uint8_t* d = group + row_group_d_at(t, b) + 2 * lane;
        if (t == WType::Q8_0R) {
            const BlockQ8_0& blk = reinterpret_cast<const BlockQ8_0*>(block_row)[b];
            for (int e = 0; e < 32; ++e) codes[(e / 4) * 64 + e % 4] = uint8_t(blk.qs[e] + 128);
            std::memcpy(d, &blk.d, 2);
        } else {
            const BlockQ4_0& blk = reinterpret_cast<const BlockQ4_0*>(block_row)[b];
            for (int i = 0; i < 4; ++i) std::memcpy(codes + i * 64, blk.qs + 4 * i, 4);
            std::memcpy(d, &blk.d, 2);
        }
    }
}

bool repack_table_codes_as_row_groups(const RawTensor& t, int64_t rows, int64_t cols,
                                      WeightMatrix& out, ThreadPool* pool) {
    const WType target = t.dtype == DType::IQ4_NL   ? WType::IQ4_NLR
                         : t.dtype == DType::MXFP4  ? WType::MXFP4R
                         : t.dtype == DType::IQ4_XS ? WType::IQ4_XSR
                                                    : WType::Native;
    int64_t block_values = 0;
    size_t block_bytes = 0;
    if (target == WType::Native || !dtype_block_layout(t.dtype, &block_values, &block_bytes) ||
        rows <= 0 || !row_group_cols_fit(target, cols) || cols % block_values ||
        rows * cols != t.numel() || t.nbytes != size_t(rows * cols / block_values) * block_bytes)
        return false;
    uint16_t d;
    if (t.dtype == DType::MXFP4)
        for (size_t b = 0; b < t.nbytes / block_bytes; ++b)
            if (!mxfp4_f16_scale(t.data + b * block_bytes, &d)) return false;
    WeightMatrix w = allocate_row_groups(target, rows, cols, t.name);
    auto* base = const_cast<uint8_t*>(w.data);
    const size_t row_blocks = size_t(cols / block_values) * block_bytes;
    // Whole groups per task, so each group's lines are written by one thread. IQ4_XS rows go
    // straight in (store_iq4_xs_row); the others as Q4_0 blocks (an f16 scale and 16 bytes of
    // nibbles in IQ4_NL's and MXFP4's order): IQ4_NL's bytes are such blocks already; MXFP4's
    // take the f16 form of their E8M0 scale.
    run_on(pool, row_groups(rows), [&](int64_t g0, int64_t g1) {
        std::vector<BlockQ4_0> row(target == WType::IQ4_XSR ? 0 : size_t(cols / kQuantBlock));  // [cols / 32]
        for (int64_t r = g0 * kRowGroupRows; r < std::min(rows, g1 * kRowGroupRows); ++r) {
            const uint8_t* src = t.data + size_t(r) * row_blocks;
            if (target == WType::IQ4_XSR) {
                store_iq4_xs_row(src, cols, r, base);
                continue;
            }
            for (size_t b = 0; b < row.size(); ++b) {
                const uint8_t* block = src + b * block_bytes;
                if (t.dtype == DType::IQ4_NL) {
                    std::memcpy(&row[b], block, sizeof(BlockQ4_0));
                } else {
                    mxfp4_f16_scale(block, &row[b].d);
                    std::memcpy(row[b].qs, block + 1, 16);
                }
            }
            row_groups_store_row(target, reinterpret_cast<const uint8_t*>(row.data()), cols, r,
                                 base);
        }
    });
    out = std::move(w);
    return true;
}

bool repack_q4_k_as_row_groups(const RawTensor& t, int64_t rows, int64_t cols, WeightMatrix& out, ThreadPool* pool) {
    return repack_k_quant(t, WType::Q4_KR, rows, cols, out, pool);
}

bool repack_q6_k_as_row_groups(const RawTensor& t, int64_t rows, int64_t cols, WeightMatrix& out, ThreadPool* pool) {
    return repack_k_quant(t, WType::Q6_KR, rows, cols, out, pool);
}

bool repack_q3_k_as_row_groups(const RawTensor& t, int64_t rows, int64_t cols, WeightMatrix& out,
                               ThreadPool* pool) {
    return repack_k_quant(t, WType::Q3_KR, rows, cols, out, pool);
}

bool repack_q2_k_as_row_groups(const RawTensor& t, int64_t rows, int64_t cols, WeightMatrix& out,
                               ThreadPool* pool) {
    return repack_k_quant(t, WType::Q2_KR, rows, cols, out, pool);
}

bool repack_q5_k_as_row_groups(const RawTensor& t, int64_t rows, int64_t cols, WeightMatrix& out, ThreadPool* pool) {
    return repack_k_quant(t, WType::Q5_KR, rows, cols, out, pool);
}

namespace {

// Row r's value code of element e (0..31) of block b (the stored code less the offset), and its
// scale (Q4_KR: d * sc) and offset (Q4_KR: -(dmin * mn); else 0). Q6_KR, Q3_KR, Q2_KR:
// sub_block_code, d and sub_scale (the scale of the block's half 0 or 1); Q2_KR's mins q2_min
// and q2_dmin.
struct GroupRow {
    const uint8_t* group;
    int lane;
    WType type;
    // Q6_KR's code; Q3_KR's, 28..35, the same way offset by 32; Q2_KR's, 0..3.
    int sub_block_code(int64_t b, int e) const {
        if (type == WType::Q2_KR) {
            const int s = e / 4;
            return (group[row_group_codes_at(type, b) + (s / 4) * 64 + 4 * lane + e % 4] >>
                    (2 * (s % 4))) &
                   3;
        }
        if (type == WType::Q3_KR) {
            const uint8_t* block = group + row_group_codes_at(type, b);
            const int s = e / 4, at = 4 * lane + e % 4;
            return ((block[(s / 4) * 64 + at] >> (2 * (s % 4))) & 3) +
                   4 * ((block[128 + at] >> s) & 1) + 28;
        }
        const uint8_t* block = group + row_group_codes_at(WType::Q6_KR, b);
        return ((block[q6_low_byte(lane, e)] >> q6_low_shift(e)) & 15) |
               ((block[q6_high_byte(lane, e)] >> q6_high_shift(e)) & 3) << 4;
    }
    int sub_scale(int64_t b, int half) const {
        if (type == WType::Q2_KR) return q2_scale_byte(b, half) & 15;
        return int8_t(group[row_group_block_scales_at(type, b) + size_t(16 * half + lane)]);
    }
    // Q2_KR: the file's scale byte (sc | mn << 4) of block b's first (half 0) or last 16 values.
    uint8_t q2_scale_byte(int64_t b, int half) const {
        return group[row_group_block_scales_at(type, b) + size_t(2 * lane + half)];
    }
    int q2_min(int64_t b, int half) const { return q2_scale_byte(b, half) >> 4; }
    float q2_dmin(int64_t b) const {
        return half_at(size_t(row_group_super_scales_at(type, b)) + 32);
    }
    int code(int64_t b, int e) const {
        const int64_t at = row_group_codes_at(type, b);
        if (type == WType::Q8_0R) return int(group[at + (e / 4) * 64 + 4 * lane + e % 4]) - 128;
        const uint8_t byte = group[at + (e % 16 / 4) * 64 + 4 * lane + e % 4];
        int code = e < 16 ? byte & 15 : byte >> 4;
        if (type == WType::Q5_KR) {  // the fifth bit: bit s (the element's step) of byte e % 4
            const int s = e < 16 ? e / 4 : 4 + (e - 16) / 4;
            code |= ((group[at + 256 + 4 * lane + e % 4] >> s) & 1) << 4;
        }
        if (row_group_table_codes(type))
            return row_group_code_table(type)[code] - 128;  // the table's value
        return code - row_group_code_offset(type);
    }
    float half_at(size_t offset) const {
        uint16_t h;
        std::memcpy(&h, group + offset + size_t(lane) * 2, 2);
        return f16_to_f32(h);
    }
    float d(int64_t b) const {
        if (row_group_f32_scales(type)) {
            float f;
            std::memcpy(&f, group + row_group_d_at(type, b) + size_t(lane) * 4, 4);
            return f;
        }
        if (row_group_sub_block_sums(type))
            return half_at(size_t(row_group_super_scales_at(type, b)));
        if (row_group_affine_k(type))
            return half_at(size_t(row_group_super_scales_at(type, b))) *
                   float(group[row_group_block_scales_at(type, b) + size_t(lane)]);
        return half_at(size_t(row_group_d_at(type, b)));
    }
    float m(int64_t b) const {
        if (!row_group_affine_k(type)) return 0.0f;
        return -(half_at(size_t(row_group_super_scales_at(type, b)) + 32) *
                 float(group[row_group_block_scales_at(type, b) + 16 + size_t(lane)]));
    }
};

GroupRow group_row(const WeightMatrix& w, int64_t row) {
    return {w.data + size_t(row / kRowGroupRows) * row_group_bytes(w.type, w.cols),
            int(row % kRowGroupRows), w.type};
}

}  // namespace

void row_groups_row_f32(const WeightMatrix& w, int64_t row, float* out) {
    const GroupRow g = group_row(w, row);
    for (int64_t b = 0; b < w.cols / kQuantBlock; ++b) {
        const float d = g.d(b), m = g.m(b);
        if (w.type == WType::Q2_KR) {  // as block_q2_k: (d * sc) * q - dmin * mn
            for (int e = 0; e < 32; ++e)
                out[b * 32 + e] =
                    d * float(g.sub_scale(b, e / 16)) * float(g.sub_block_code(b, e)) -
                    g.q2_dmin(b) * float(g.q2_min(b, e / 16));
            continue;
        }
        if (row_group_sub_block_scales(
                w.type)) {  // as block_q6_k (and block_q3_k): (d * sc) * (q - 32)
            for (int e = 0; e < 32; ++e)
                out[b * 32 + e] =
                    d * float(g.sub_scale(b, e / 16)) * float(g.sub_block_code(b, e) - 32);
            continue;
        }
        for (int e = 0; e < 32; ++e) {
            const float prod = float(g.code(b, e)) * d;  // the block types' decode
            out[b * 32 + e] = row_group_affine_k(w.type) ? prod + m : prod;  // Q4_K's, Q5_K's: two roundings
        }
    }
}

namespace ref {

void gemm_row_groups(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy,
                     int64_t r0, int64_t r1) {
    const int32_t offset = row_group_code_offset(w.type);
    for (int64_t r = r0; r < r1; ++r) {
        const GroupRow g = group_row(w, r);
        for (int64_t j = 0; j < x.n; ++j) {
            const int8_t* xc = x.codes_of(j);  // [chunks, 8 steps, 16 lanes, 4]
            float acc = 0.0f;
            for (int64_t b = 0; b < w.cols / kQuantBlock; ++b) {
                const int8_t* xb = xc + (b / kI8ChunkBlocks) * kI8ChunkValues + 4 * (b % kI8ChunkBlocks);
                if (row_group_sub_block_sums(w.type)) {
                    int32_t half_sum[2] = {0, 0};
                    for (int e = 0; e < 32; ++e)
                        half_sum[e / 16] +=
                            g.sub_block_code(b, e) * int32_t(xb[(e / 4) * 64 + e % 4]);
                    const int32_t xhalf = x.half_sums_of(j)[b], xsum = x.sums_of(j)[b];
                    if (w.type == WType::Q2_KR) {  // the scaled sums, then the mins' term
                        const int32_t i =
                            g.sub_scale(b, 0) * half_sum[0] + g.sub_scale(b, 1) * half_sum[1];
                        const int32_t mi = g.q2_min(b, 0) * xhalf + g.q2_min(b, 1) * (xsum - xhalf);
                        acc = std::fma(float(i), g.d(b) * x.scales_of(j)[b], acc);
                        acc = std::fma(float(mi), -g.q2_dmin(b) * x.scales_of(j)[b], acc);
                        continue;
                    }
                    // As Q6_KX: the two sub-blocks, each offset by 32.
                    const int32_t i = g.sub_scale(b, 0) * (half_sum[0] - 32 * xhalf) +
                                      g.sub_scale(b, 1) * (half_sum[1] - 32 * (xsum - xhalf));
                    acc = std::fma(float(i), g.d(b) * x.scales_of(j)[b], acc);
                    continue;
                }
                int32_t isum = -offset * x.sums_of(j)[b];  // the stored codes are code + offset
                for (int e = 0; e < 32; ++e)
                    isum += (g.code(b, e) + offset) * int32_t(xb[(e / 4) * 64 + e % 4]);
                acc = std::fma(float(isum), g.d(b) * x.scales_of(j)[b], acc);
                if (row_group_affine_k(w.type))  // the offsets' term, as the chunked affine types
                    acc = std::fma(float(x.sums_of(j)[b]), g.m(b) * x.scales_of(j)[b], acc);
            }
            y[j * ldy + r] = acc;
        }
    }
}

}  // namespace ref

}  // namespace nextn
