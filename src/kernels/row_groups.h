#pragma once
// Q4_0R and Q8_0R: Q4_0 / Q8_0 weights in groups of 16 rows, laid out so that the 16 int32 lanes
// of an AVX-512 vector are 16 rows. The chunked layouts (kernels/int8_dot.h) put a row's 16
// blocks in the lanes, so every row's sum ends in a 16-lane reduction, and a tile must fetch
// several rows' streams; here a row's sum builds up in its own lane and a group is one stream.
// README ("A layout that removes the reduction", "Q4_0 in 16-row groups in the engine") has the
// measurements.
//
// Group g (rows 16g .. 16g+15) starts at data + g * group_bytes, group_bytes = 16 * row_bytes:
//   codes  [blocks, V, 64] with V = 4 (Q4_0R) or 8 (Q8_0R) vectors a block: vector i, lane r
//          (bytes 4r .. 4r+3) holds bytes 4i .. 4i+3 of row 16g+r's block qs:
//            Q4_0R: low nibble element 4i+t, high nibble element 4i+t+16 (t = 0..3), the code
//                   0..15 (value (code - 8) * d);
//            Q8_0R: element 4i+t as q + 128 (unsigned: the dot product multiplies u8 x s8);
//   scales [blocks, 16] f16: block b's d of row 16g+r at b * 16 + r, padded to 64 bytes.
// A matrix holds whole groups: rows past `rows` in the last group are zero. So unlike every
// other type, row r does not start at data + r * row_bytes; row_bytes is a group's bytes / 16
// (the bytes a row adds), which keeps nbytes() and the bandwidth arithmetic per row.
//
// Product with int8 activations (QuantizedColumns, chunk layout): the 4 codes a vector's lane r
// meets (elements 4s..4s+3 of block b) are step s of lane b % 16 of chunk b / 16, so a step
// broadcasts them to every row (Q4_0R: vector i's low nibbles meet step i, its high ones step
// 4 + i; Q8_0R: vector i meets step i). Output (r, j):
//   acc = 0; for each block b in order:
//     isum = -offset * xsum[b] + sum over the block's 32 elements of wcode * xcode  (exact in int32;
//            offset 8 for Q4_0R, 128 for Q8_0R)
//     acc  = fma(float(isum), dw * dx, acc)
// with no reduction across lanes, so the scalar reference and the vector kernel agree bit for
// bit, and a row's value never depends on the batch width or on which rows run with it.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/weight.h"

namespace nextn {

struct QuantizedColumns;
class ThreadPool;

// kRowGroupRows and is_row_group_type: kernels/weight.h (WeightMatrix::stored_rows needs them).
// The code bytes of one block of a group: 16 rows x 16 (Q4_0R) or 32 (Q8_0R) bytes.
constexpr int64_t row_group_block_code_bytes(WType t) { return t == WType::Q8_0R ? 512 : 256; }
// The additive offset of the stored codes: value = (code - offset) * d.
constexpr int32_t row_group_code_offset(WType t) { return t == WType::Q8_0R ? 128 : 8; }

// Bytes of one 16-row group of `cols` values (0 when cols % 32 != 0 or t is no row-group type).
// Inline, as the other layout helpers here: the AVX-512 unit uses them without calling into the
// library (kernel_ab compiles that unit alone, its namespace renamed).
inline size_t row_group_bytes(WType t, int64_t cols) {
    if (!is_row_group_type(t) || cols <= 0 || cols % 32) return 0;
    const size_t blocks = size_t(cols / 32);
    return blocks * size_t(row_group_block_code_bytes(t)) + (blocks * 32 + 63) / 64 * 64;  // codes, scales
}
// Groups holding `rows` rows.
inline int64_t row_groups(int64_t rows) { return (rows + kRowGroupRows - 1) / kRowGroupRows; }
// The lanes of group g that are rows in [r0, r1), as a bit mask (lane i: bit i): the rows a
// kernel working on rows [r0, r1) stores from that group.
inline uint16_t row_group_lanes(int64_t g, int64_t r0, int64_t r1) {
    const int64_t lo = std::max<int64_t>(r0 - g * kRowGroupRows, 0), hi = std::min<int64_t>(r1 - g * kRowGroupRows, kRowGroupRows);
    return uint16_t(((1u << hi) - 1u) & ~((1u << lo) - 1u));
}
// Byte offset inside a group where the scales start.
inline size_t row_group_scales_offset(WType t, int64_t cols) {
    return size_t(cols / 32) * size_t(row_group_block_code_bytes(t));
}
// What a kernel walks a row-group matrix of `cols` values by.
struct RowGroupGeometry {
    int64_t blocks;      // 32-value blocks per row
    size_t group_bytes;  // one group: codes, then scales
    size_t scales;       // offset of the scales in a group
};
inline RowGroupGeometry row_group_geometry(WType t, int64_t cols) {
    return {cols / 32, row_group_bytes(t, cols), row_group_scales_offset(t, cols)};
}

// An empty Q4_0R / Q8_0R matrix [rows, cols] to fill with row_groups_store_row: its padding (the
// last group's rows past `rows`, each group's scale padding) zeroed, the rest as it comes (its
// pages first touched by whoever stores the rows). `what` names it in the memory errors.
WeightMatrix allocate_row_groups(WType t, int64_t rows, int64_t cols, const std::string& what);
// A Q4_0 (Q8_0) matrix as Q4_0R (Q8_0R): the same blocks, its rows stored on `pool` when given.
WeightMatrix repack_as_row_groups(const WeightMatrix& blocks, WType target, ThreadPool* pool = nullptr);
// Writes row `row` (the block type's blocks, `cols` values) into its lane of its group at base
// (a t matrix's bytes). Rows of one group may be written concurrently: they touch distinct bytes.
void row_groups_store_row(WType t, const uint8_t* block_row, int64_t cols, int64_t row, uint8_t* base);
// Row `row` of a Q4_0R / Q8_0R matrix as f32: exactly the block type's values.
void row_groups_row_f32(const WeightMatrix& w, int64_t row, float* out);

namespace ref {
// Scalar reference of the product for rows [r0, r1): y[j * ldy + r], the arithmetic above.
void gemm_row_groups(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy,
                     int64_t r0, int64_t r1);
}  // namespace ref

}  // namespace nextn
