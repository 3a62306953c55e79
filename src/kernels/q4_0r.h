#pragma once
// Q4_0R: Q4_0 weights in groups of 16 rows, laid out so that the 16 int32 lanes of an AVX-512
// vector are 16 rows. The chunked Q4_0X layout (kernels/int8_dot.h) puts a row's 16 blocks in the
// lanes, so every row's sum ends in a 16-lane reduction, and a tile must fetch several rows'
// streams; here a row's sum builds up in its own lane and a group is one stream. On the 2-core
// Zen 5 the prototype (tools/row_interleave) took 0.81x the time at width 1 and 0.67x at width 4
// on a matrix streamed from memory (README, "A layout that removes the reduction").
//
// Group g (rows 16g .. 16g+15) starts at data + g * group_bytes, group_bytes = 16 * row_bytes:
//   codes  [blocks, 4, 64]: block b, vector i (0..3), lane r (bytes 4r .. 4r+3) holds bytes
//          4i .. 4i+3 of row 16g+r's BlockQ4_0 qs: low nibble element 4i+t, high nibble element
//          4i+t+16 (t = 0..3), each the block's code 0..15 (value (code - 8) * d);
//   scales [blocks, 16] f16: block b's d of row 16g+r at b * 16 + r, padded to 64 bytes.
// A matrix holds whole groups: rows past `rows` in the last group are zero. So unlike every
// other type, row r does not start at data + r * row_bytes; row_bytes is a group's bytes / 16
// (the bytes a row adds), which keeps nbytes() and the bandwidth arithmetic per row.
//
// Product with int8 activations (QuantizedColumns, chunk layout): in the chunk layout the 4
// codes a vector's lane r meets (elements 4i..4i+3, or 16+4i..16+4i+3, of block b) are step i
// (or 4+i) of lane b % 16 of chunk b / 16, so a step broadcasts them to every row. Output (r, j):
//   acc = 0; for each block b in order:
//     isum = -8 * xsum[b] + sum over the block's 32 elements of code * xcode   (exact in int32)
//     acc  = fma(float(isum), dw * dx, acc)
// with no reduction across lanes, so the scalar reference and the vector kernel agree bit for
// bit, and a row's value never depends on the batch width or on which rows run with it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/weight.h"

namespace nextn {

struct QuantizedColumns;
class ThreadPool;

inline constexpr int64_t kQ4_0RGroupRows = 16;

// Bytes of one 16-row group of `cols` values (0 when cols % 32 != 0). Inline, as the other layout
// helpers here: the AVX-512 unit uses them without calling into the library (kernel_ab compiles
// that unit alone, its namespace renamed).
inline size_t q4_0r_group_bytes(int64_t cols) {
    if (cols <= 0 || cols % 32) return 0;
    const size_t blocks = size_t(cols / 32);
    return blocks * 256 + (blocks * 32 + 63) / 64 * 64;  // codes, then scales padded to 64 bytes
}
// Groups holding `rows` rows.
inline int64_t q4_0r_groups(int64_t rows) { return (rows + kQ4_0RGroupRows - 1) / kQ4_0RGroupRows; }
// Byte offset inside a group where the scales start.
inline size_t q4_0r_scales_offset(int64_t cols) { return size_t(cols / 32) * 256; }

// An empty Q4_0R matrix [rows, cols] to fill with q4_0r_store_row: its padding (the last group's
// rows past `rows`, each group's scale padding) zeroed, the rest as it comes (its pages first
// touched by whoever stores the rows). `what` names it in the memory errors.
WeightMatrix allocate_q4_0r(int64_t rows, int64_t cols, const std::string& what);
// A Q4_0 matrix as Q4_0R (same blocks), its rows stored on `pool` when given.
WeightMatrix repack_q4_0_as_q4_0r(const WeightMatrix& q4_0, ThreadPool* pool = nullptr);
// Writes row `row` (Q4_0 blocks, `cols` values) into its lane of its group at base (a Q4_0R
// matrix's bytes). Rows of one group may be written concurrently: they touch distinct bytes.
void q4_0r_store_row(const uint8_t* q4_0_row, int64_t cols, int64_t row, uint8_t* base);
// Row `row` of a Q4_0R matrix as f32: exactly Q4_0's values.
void q4_0r_row_f32(const WeightMatrix& w, int64_t row, float* out);

namespace ref {
// Scalar reference of the Q4_0R product for rows [r0, r1): y[j * ldy + r], the arithmetic above.
void gemm_q4_0r_rows(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy,
                     int64_t r0, int64_t r1);
}  // namespace ref

}  // namespace nextn
