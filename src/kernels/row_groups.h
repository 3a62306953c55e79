#pragma once
// Q4_0R and Q8_0R (and the GGUF K-quants Q4_KR, Q5_KR, Q6_KR below): Q4_0 / Q8_0 weights in groups
// of 16 rows, laid out so that the 16 int32 lanes of an AVX-512 vector are 16 rows. The chunked
// layouts (kernels/int8_dot.h) put a row's 16 blocks in the lanes, so every row's sum ends in a
// 16-lane reduction, and a tile must fetch several rows' streams; here a row's sum builds up in its
// own lane and a group is one stream. docs/speed-log.md ("A layout that removes the reduction",
// "Q4_0 in 16-row groups in the engine") has the measurements.
//
// Group g (rows 16g .. 16g+15) starts at data + g * group_bytes, group_bytes = 16 * row_bytes.
// Q4_0R and Q8_0R hold the group's blocks in pairs, each pair one stretch of bytes read in order:
//   pair p (blocks 2p, 2p + 1) at p * pair_bytes (row_group_span_bytes):
//     codes of block 2p, then of block 2p + 1, each [V, 64] with V = 4 (Q4_0R) or 8 (Q8_0R)
//          vectors: vector i, lane r (bytes 4r .. 4r+3) holds bytes 4i .. 4i+3 of row 16g+r's
//          block qs:
//            Q4_0R: low nibble element 4i+t, high nibble element 4i+t+16 (t = 0..3), the code
//                   0..15 (value (code - 8) * d);
//            Q8_0R: element 4i+t as q + 128 (unsigned: the dot product multiplies u8 x s8);
//     then the two blocks' scales, [2, 16] f16: block b's d of row 16g+r at 16 * (b % 2) + r
//          (an odd last block: its pair's second codes and scales are zero padding).
//   So block b's codes start at row_group_codes_at(b) and its scales at row_group_d_at(b).
//   With the scales after all of a group's codes (until session 51), a tile read two streams a
//   group, codes and scales, and the 2-core Zen 5 VM's hardware prefetcher served them at about
//   half the rate of one stream; docs/speed-log.md "session 51" has the measurements.
// The K-quant types below are one stream a group too, in spans (row_group_span_bytes): a span
// holds the scales of its super-block (Q6_KR: of its two) and then its 8 (16) blocks' codes, each
// [V, 64]. Scales first: the tile meets a span's scale lines as the stream reaches them (the
// block's scales are wanted with its first codes), so a hardware prefetcher sees one stream
// running forward. Block b's codes start at row_group_codes_at(b), its super-block's scales at
// row_group_super_scales_at(b). (Until session 55 a group held all its codes first, then all its
// scales: two streams a group.) An odd last Q6_KR super-block leaves its span's second scales
// and codes zero.
// Q4_KR (GGUF Q4_K: cols % 256 == 0, value (d * sc) * code - dmin * mn per 32-value block, d and
// dmin f16 per 256 values, sc and mn 6-bit): codes as Q4_0R's (the code 0..15 itself); a
// super-block's scales 320 bytes:
//            d [16] f16 at +0, dmin [16] f16 at +32 (lane r: row 16g+r), then for its block k
//            (0..7) sc [16] u8 at 64 + 32k and mn [16] u8 at 64 + 32k + 16.
//          4.625 bits a value (the file's 4.5 plus the scales' spread to whole bytes), where the
//          chunked Q4_1FX holds each block's d * sc and -(dmin * mn) as f32: 6 bits a value.
// Q5_KR (GGUF Q5_K: as Q4_K with codes 0..31): codes [blocks, 5, 64], vectors 0..3 the codes' low 4
// bits as Q4_KR's, vector 4 their fifth bits: lane r, byte t, bit s the fifth bit of step s's
// element t (step s < 4: element 4s + t; s >= 4: element 16 + 4(s - 4) + t); scales as Q4_KR's.
//          5.625 bits a value (the file's 5.5 plus the scales' spread), where Q8_1FX takes 10.
// Q6_KR (GGUF Q6_K: cols % 256 == 0, value d * sc * (q - 32), q 0..63, an int8 sc per 16 values,
// an f16 d per 256): codes [blocks, 6, 64], as a Q6_KX chunk's with lanes for rows: vector k
// (0..3), lane r, byte t holds the low 4 bits of element 8k + t (low nibble: step 2k) and of
// element 8k + 4 + t (high nibble: step 2k + 1); vector 4 + h, lane r, byte t holds at bits 2i,
// 2i + 1 the high 2 bits of element 16h + 4i + t (step 4h + i). A super-block's scales 288
// bytes: d [16] f16 at +0, then for its block k the sc [16] int8 of the block's first 16 values
// at 32 + 32k and of its last 16 at 32 + 32k + 16.
//          6.5625 bits a value (the file's), where the chunked Q6_KX takes 7.
// Q3_KR (GGUF Q3_K: value d * (sc - 32) * q3, q3 = low 2 bits + 4 x high bit - 4, an int8 sc - 32
// per 16 values, an f16 d per 256): Q6_KR's scales, spans and arithmetic, with q = q3 + 32 (28..35)
// built from codes [blocks, 3, 64]: vector h (0..1), lane r, byte t holds at bits 2i, 2i + 1 the
// low 2 bits of element 16h + 4i + t (step 4h + i: as Q6_KR's vector 4 + h), and vector 2, lane
// r, byte t at bit s the high bit of element 4s + t (step s: as Q5_KR's fifth bits).
//          3.5625 bits a value (the file's 3.4375, with its 6-bit scales as bytes).
// Q2_KR (GGUF Q2_K: cols % 256 == 0, value (d * sc) * q - dmin * mn per 16 values, q 0..3, sc and
// mn 4-bit, d and dmin f16 per 256): codes [blocks, 2, 64] as Q3_KR's vectors 0 and 1 (vector h,
// lane r, byte t, bits 2i, 2i + 1: element 16h + 4i + t, step 4h + i); a super-block's scales 320
// bytes, as Q4_KR's: d [16] f16 at +0, dmin [16] f16 at +32, then for its block k 32 bytes at
// 64 + 32k, lane r's two at 2r (the block's first 16 values) and 2r + 1 (its last 16), each the
// file's byte sc | mn << 4 (interleaved so that one widening to 16 bits puts a row's two in its
// 32-bit lane).
//          2.625 bits a value (the file's).
// A matrix holds whole groups: rows past `rows` in the last group are zero. So unlike every
// other type, row r does not start at data + r * row_bytes; row_bytes is a group's bytes / 16
// (the bytes a row adds), which keeps nbytes() and the bandwidth arithmetic per row.
//
// Product with int8 activations (QuantizedColumns, chunk layout): the 4 codes a vector's lane r
// meets (elements 4s..4s+3 of block b) are step s of lane b % 16 of chunk b / 16, so a step
// broadcasts them to every row (Q4_0R: vector i's low nibbles meet step i, its high ones step
// 4 + i; Q8_0R: vector i meets step i). Output (r, j):
//   acc = 0; for each block b in order:
//     isum = -offset * xsum[b] + sum over the block's 32 elements of wcode * xcode
//            (exact in int32; offset 8 for Q4_0R, 128 for Q8_0R)
//     acc  = fma(float(isum), dw * dx, acc)
// Q6_KR, as Q6_KX (kernels/int8_dot.h): isum_a, isum_b over steps 0..3 and 4..7 of the codes q,
// xhalf the block's first 16 activation codes' sum:
//     i = sc_a * (isum_a - 32 * xhalf) + sc_b * (isum_b - 32 * (xsum - xhalf))  (exact in int32)
//     acc = fma(float(i), d * dx, acc)
// Q4_KR and Q5_KR, as the chunked affine types (kernels/int8_dot.h): dw = d * sc and
// dm = -(dmin * mn), both exact in f32 (11 bits times 6), so the values are Q4_1FX's bit for bit;
// per block
//     isum = sum of wcode * xcode;  acc = fma(float(isum), dw * dx, acc);
//     acc  = fma(float(xsum[b]), dm * dx, acc)
// Q2_KR: isum_a, isum_b over steps 0..3 and 4..7 (from 0), and the mins' integer term
// mi = mn_a * xhalf + mn_b * (xsum - xhalf):
//     acc = fma(sc_a * isum_a + sc_b * isum_b, d * dx, acc)   (exact in int32, and in f32)
//     acc = fma(float(mi), -dmin * dx, acc)
// with no reduction across lanes, so the scalar reference and the vector kernel agree bit for
// bit, and a row's value never depends on the batch width or on which rows run with it.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/quant_k.h"
#include "kernels/weight.h"

namespace nextn {

struct QuantizedColumns;
class ThreadPool;

// kRowGroupRows and is_row_group_type: kernels/weight.h (WeightMatrix::stored_rows needs them).
// The code bytes of one block of a group: 16 rows x 16 (Q4_0R, Q4_KR), 20 (Q5_KR), 24 (Q6_KR), 12
// (Q3_KR), 8 (Q2_KR) or 32 (Q8_0R) bytes.
constexpr int64_t row_group_block_code_bytes(WType t) {
    return t == WType::Q8_0R   ? 512
           : t == WType::Q6_KR ? 384
           : t == WType::Q5_KR ? 320
           : t == WType::Q3_KR ? 192
           : t == WType::Q2_KR ? 128
                               : 256;
}
// IQ4_NLR and MXFP4R: Q4_0R's bytes, each nibble an index into the type's table of 16 values
// (GGUF IQ4_NL's int8 table; MXFP4's e2m1 values doubled, ggml's kvalues_mxfp4), held here + 128:
// the u8 codes the dot products read (offset 128, as Q8_0R's). A lookup (a byte shuffle) after
// the nibbles are unpacked; the rest is Q4_0R's arithmetic with Q8_0R's offset.
constexpr bool row_group_table_codes(WType t) {
    return t == WType::IQ4_NLR || t == WType::MXFP4R || t == WType::IQ4_XSR;
}
// IQ4_XSR: as IQ4_NLR, but each block's 16 scales are f32 (64 bytes, lane r at + 4r), as GGUF
// IQ4_XS's d * (sc - 32) needs up to 16 significant bits.
constexpr bool row_group_f32_scales(WType t) { return t == WType::IQ4_XSR; }
inline constexpr uint8_t kIq4NlTableCodes[16] = {1,   24,  45,  63,  79,  93,  106, 118,
                                                 129, 141, 153, 166, 181, 197, 217, 241};
inline constexpr uint8_t kMxfp4TableCodes[16] = {128, 129, 130, 131, 132, 134, 136, 140,
                                                 128, 127, 126, 125, 124, 122, 120, 116};
constexpr const uint8_t* row_group_code_table(WType t) {
    return t == WType::IQ4_NLR || t == WType::IQ4_XSR ? kIq4NlTableCodes
           : t == WType::MXFP4R                       ? kMxfp4TableCodes
                                                      : nullptr;
}
// Q4_0R, Q8_0R and the table types: a pair of blocks' codes and their scales together (the
// header's layout).
constexpr bool row_group_paired(WType t) {
    return t == WType::Q4_0R || t == WType::Q8_0R || row_group_table_codes(t);
}
constexpr bool row_group_k_quant(WType t) {
    return t == WType::Q4_KR || t == WType::Q5_KR || t == WType::Q6_KR || t == WType::Q3_KR ||
           t == WType::Q2_KR;
}
// Q6_KR and Q3_KR: an int8 scale per 16 values (the block's two sub-blocks summed apart, joined
// by their scales), an f16 d per super-block, the codes offset by 32 (Q3_KR's made so).
constexpr bool row_group_sub_block_scales(WType t) {
    return t == WType::Q6_KR || t == WType::Q3_KR;
}
// Q4_KR and Q5_KR: a code offset per block and row (their mins), and Q4_KR's scales.
constexpr bool row_group_affine_k(WType t) { return t == WType::Q4_KR || t == WType::Q5_KR; }
// The kernels' two sums a block, one per 16 values (steps 0..3 and 4..7), joined by their scales:
// Q6_KR and Q3_KR, and Q2_KR (whose mins then add a term, as Q4_KR's do).
constexpr bool row_group_sub_block_sums(WType t) {
    return row_group_sub_block_scales(t) || t == WType::Q2_KR;
}
// Q4_KR and Q6_KR: a super-block's scale bytes in a group (Q4_KR: d, dmin, 8 x (sc, mn); Q6_KR: d,
// 8 x (sc_a, sc_b); Q2_KR as Q4_KR); kKQuantValues (kernels/quant_k.h) values a super-block.
inline constexpr int64_t kQ4KGroupScaleBytes = 320;
inline constexpr int64_t kQ6KGroupScaleBytes = 288;
// A span: the stretch of a group's one stream that holds some blocks' codes and their scales (the
// header's layout): a pair of blocks (Q4_0R, Q8_0R), a super-block (Q4_KR, Q5_KR) or two (Q6_KR,
// whose 288 scale bytes would leave one super-block's codes off 64-byte alignment).
constexpr int64_t row_group_span_blocks(WType t) {
    return row_group_paired(t)             ? 2
           : row_group_sub_block_scales(t) ? 2 * kKQuantValues / 32
                                           : kKQuantValues / 32;
}
constexpr int64_t row_group_span_scale_bytes(WType t) {
    return row_group_paired(t)             ? (row_group_f32_scales(t) ? 128 : 64)
           : row_group_sub_block_scales(t) ? 2 * kQ6KGroupScaleBytes
                                           : kQ4KGroupScaleBytes;
}
constexpr int64_t row_group_span_bytes(WType t) {
    return row_group_span_blocks(t) * row_group_block_code_bytes(t) + row_group_span_scale_bytes(t);
}
// Offset in a group of block b's codes (every row-group type): the K-quants' spans hold their
// scales first, the pairs theirs last.
constexpr int64_t row_group_codes_at(WType t, int64_t b) {
    const int64_t span = row_group_span_blocks(t);
    return (b / span) * row_group_span_bytes(t) +
           (row_group_k_quant(t) ? row_group_span_scale_bytes(t) : 0) +
           (b % span) * row_group_block_code_bytes(t);
}
// Q4_0R, Q8_0R and the table types: offset in a group of block b's 16 f16 scales (lane r: the 2
// bytes at + 2r; IQ4_XSR f32, the 4 at + 4r).
constexpr int64_t row_group_d_at(WType t, int64_t b) {
    return (b / 2) * row_group_span_bytes(t) + 2 * row_group_block_code_bytes(t) +
           (b % 2) * (row_group_f32_scales(t) ? 64 : 32);
}
// The K-quants: offset in a group of the scale bytes of block b's super-block.
constexpr int64_t row_group_super_scales_at(WType t, int64_t b) {
    const int64_t span = row_group_span_blocks(t);
    return (b / span) * row_group_span_bytes(t) +
           (b % span) / (kKQuantValues / 32) *
               (row_group_sub_block_scales(t) ? kQ6KGroupScaleBytes : kQ4KGroupScaleBytes);
}
// The K-quants: offset in a group of block b's own scale bytes, after its super-block's d (and
// dmin): Q4_KR, Q5_KR its sc [16], its mn 16 bytes on; Q6_KR its sc_a [16], its sc_b 16 bytes on;
// Q2_KR its 16 pairs of bytes.
constexpr int64_t row_group_block_scales_at(WType t, int64_t b) {
    return row_group_super_scales_at(t, b) + (row_group_sub_block_scales(t) ? 32 : 64) +
           (b % 8) * 32;
}
// The additive offset of the stored codes: value = (code - offset) * d (Q4_KR: none, its mins
// carry the offset; Q6_KR: none here, its sub-block sums start at -32 x their activation sums).
constexpr int32_t row_group_code_offset(WType t) {
    return t == WType::Q8_0R || row_group_table_codes(t) ? 128 : t == WType::Q4_0R ? 8 : 0;
}
// The columns a row-group type holds: whole 32-value blocks (the K-quants: whole super-blocks).
constexpr bool row_group_cols_fit(WType t, int64_t cols) {
    return cols > 0 && cols % (row_group_k_quant(t) ? kKQuantValues : 32) == 0;
}
// Bytes of one 16-row group of `cols` values (0 when the columns do not fit the type, or t is no
// row-group type): whole spans (the last one's missing blocks zero). Inline, as the other layout
// helpers here: the AVX-512 unit uses them without calling into the library (kernel_ab compiles
// that unit alone, its namespace renamed).
inline size_t row_group_bytes(WType t, int64_t cols) {
    if (!is_row_group_type(t) || !row_group_cols_fit(t, cols)) return 0;
    const int64_t span = row_group_span_blocks(t);
    return size_t((cols / 32 + span - 1) / span * row_group_span_bytes(t));
}
// Calls f.template operator()<T>() with T the row-group type `type` (nothing for any other type):
// the kernels' one list of these types (as visit_int8_dot_type is the chunked types'), so a type
// added here reaches every table's dispatch.
template <class F>
void visit_row_group_type(WType type, F&& f) {
    switch (type) {
        case WType::Q4_0R: return f.template operator()<WType::Q4_0R>();
        case WType::Q8_0R: return f.template operator()<WType::Q8_0R>();
        case WType::Q4_KR: return f.template operator()<WType::Q4_KR>();
        case WType::Q5_KR: return f.template operator()<WType::Q5_KR>();
        case WType::Q6_KR: return f.template operator()<WType::Q6_KR>();
        case WType::Q3_KR: return f.template operator()<WType::Q3_KR>();
        case WType::Q2_KR: return f.template operator()<WType::Q2_KR>();
        case WType::IQ4_NLR: return f.template operator()<WType::IQ4_NLR>();
        case WType::MXFP4R: return f.template operator()<WType::MXFP4R>();
        case WType::IQ4_XSR: return f.template operator()<WType::IQ4_XSR>();
        default: return;  // the callers check is_row_group_type
    }
}

// Groups holding `rows` rows.
inline int64_t row_groups(int64_t rows) { return (rows + kRowGroupRows - 1) / kRowGroupRows; }
// The lanes of group g that are rows in [r0, r1), as a bit mask (lane i: bit i): the rows a
// kernel working on rows [r0, r1) stores from that group.
inline uint16_t row_group_lanes(int64_t g, int64_t r0, int64_t r1) {
    const int64_t lo = std::max<int64_t>(r0 - g * kRowGroupRows, 0), hi = std::min<int64_t>(r1 - g * kRowGroupRows, kRowGroupRows);
    return uint16_t(((1u << hi) - 1u) & ~((1u << lo) - 1u));
}
// What a kernel walks a row-group matrix of `cols` values by.
struct RowGroupGeometry {
    int64_t blocks;      // 32-value blocks per row
    size_t group_bytes;  // one group
};
inline RowGroupGeometry row_group_geometry(WType t, int64_t cols) {
    return {cols / 32, row_group_bytes(t, cols)};
}

// An empty row-group matrix [rows, cols] to fill with row_groups_store_row: its padding (the
// last group's rows past `rows`, a short last span's missing blocks) zeroed, the rest as it comes
// (its pages first touched by whoever stores the rows). `what` names it in the memory errors.
WeightMatrix allocate_row_groups(WType t, int64_t rows, int64_t cols, const std::string& what);
// A GGUF IQ4_NL, MXFP4 or IQ4_XS tensor [rows, cols] as IQ4_NLR, MXFP4R or IQ4_XSR (the same
// values), its rows stored on `pool` when given; false (out untouched) when t is none of them or
// does not fit: cols % 32 (IQ4_XS: % 256), or an MXFP4 block whose scale 2^(e - 128) is no f16 (e
// outside 104..143) with a nonzero value.
bool repack_table_codes_as_row_groups(const RawTensor& t, int64_t rows, int64_t cols,
                                      WeightMatrix& out, ThreadPool* pool = nullptr);
// A GGUF Q3_K (Q2_K) tensor [rows, cols] as Q3_KR (Q2_KR), or false (out untouched) when it does
// not fit.
bool repack_q3_k_as_row_groups(const RawTensor& t, int64_t rows, int64_t cols, WeightMatrix& out,
                               ThreadPool* pool = nullptr);
bool repack_q2_k_as_row_groups(const RawTensor& t, int64_t rows, int64_t cols, WeightMatrix& out,
                               ThreadPool* pool = nullptr);
// A Q4_0 (Q8_0) matrix as Q4_0R (Q8_0R): the same blocks, its rows stored on `pool` when given.
WeightMatrix repack_as_row_groups(const WeightMatrix& blocks, WType target, ThreadPool* pool = nullptr);
// Writes row `row` (the block type's blocks, `cols` values: Q4_0 / Q8_0 blocks, or for the
// K-quant types the GGUF Q4_K / Q5_K / Q6_K blocks) into its lane of its group at base (a t matrix's bytes). Rows of one group may be written concurrently: they touch distinct bytes.
void row_groups_store_row(WType t, const uint8_t* block_row, int64_t cols, int64_t row, uint8_t* base);
// Row `row` of a row-group matrix as f32: exactly the block type's values (Q4_KR: the Q4_K
// tensor's, as dequantize_to_f32 gives them).
void row_groups_row_f32(const WeightMatrix& w, int64_t row, float* out);
// A GGUF Q4_K (Q6_K, Q5_K) tensor [rows, cols] as Q4_KR (Q6_KR, Q5_KR), holding exactly the values
// dequantize_to_f32 gives, its rows stored on `pool` when given. Returns false (out untouched)
// when t is not a tensor of that type with rows * cols values.
bool repack_q4_k_as_row_groups(const RawTensor& t, int64_t rows, int64_t cols, WeightMatrix& out,
                               ThreadPool* pool = nullptr);
bool repack_q6_k_as_row_groups(const RawTensor& t, int64_t rows, int64_t cols, WeightMatrix& out,
                               ThreadPool* pool = nullptr);
bool repack_q5_k_as_row_groups(const RawTensor& t, int64_t rows, int64_t cols, WeightMatrix& out,
                               ThreadPool* pool = nullptr);

namespace ref {
// Scalar reference of the product for rows [r0, r1): y[j * ldy + r], the arithmetic above.
void gemm_row_groups(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy,
                     int64_t r0, int64_t r1);
}  // namespace ref

}  // namespace nextn
