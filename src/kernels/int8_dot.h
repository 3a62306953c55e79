#pragma once
// Block-quantized weights (Q8_0, Q4_0, Q4_1, Q6_K, and the affine K-quant / MLX codes) multiplied
// by int8-quantized activations with integer dot products (AVX-512 VNNI, AVX-VNNI, or AVX2's
// pmaddubsw on x86; SDOT on ARM later). Decoding blocks to f32 costs several instructions per
// 16 values; here one instruction forms 64 products (AVX-512) or 32, so decode streams weights
// at memory speed and a verify batch of a few tokens costs little more than one.
//
// Chunked layout (WType::Q8_0X, Q4_0X, Q4_1X, Q4_1FX, Q8_1FX, Q6_KX): a row's 32-value blocks are taken 16 at a time
// (a chunk of 512 values; a ragged last chunk is padded with zero blocks). Inside a chunk the
// 16 blocks are interleaved so that vector lane l (of 16 int32 lanes) only ever meets block l:
//   step s (0..7), lane l, byte i (0..3) is element 4s+i of the chunk's block l.
// After the chunk's 8 steps lane l holds block l's whole integer dot product, and one
// convert + fused multiply-add per chunk applies the 16 blocks' scales at once.
//   Q8_0X codes: step s at byte s*64 + 4l + i, stored as q + 128 (unsigned: the dot-product
//     instruction multiplies u8 x s8), 512 bytes per chunk.
//   Q4_0X / Q4_1X codes: the two nibbles of byte k*64 + 4l + i (k = 0..3) are step 2k (low)
//     and step 2k+1 (high), holding the block's 4-bit code 0..15; 256 bytes per chunk.
//   Q4_1FX codes: as Q4_1X. Q8_1FX codes: as Q8_0X, but the code itself (0..255, no offset).
//   Q6_KX codes (GGUF Q6_K: q in 0..63, value d * sc * (q - 32), an int8 sc per 16 values):
//     the low 4 bits as Q4_0X (256 bytes), then 128 bytes of high bits: bits 2t, 2t+1 of byte
//     256 + j*64 + 4l + i are the high 2 bits of step 4j + t; 384 bytes per chunk.
// Row: [chunks x code bytes] [chunks x 16 scales d] (affine types Q4_1X, Q4_1FX, Q8_1FX: then
// [chunks x 16 offsets m]), scales and offsets f16 (the FX types: f32), padded to 64 bytes so
// every row and every code step stays 64-byte aligned. Q6_KX: d is the f16 super-block scale of
// each block, and the second plane holds per chunk 16 int8 sc of the blocks' first 16 values
// (steps 0..3), then 16 of their last 16 (steps 4..7).
//
// Activations (QuantizedColumns), per column and chunk: int8 codes of each 32-value block in the
// same step/lane/byte order (d = max|x|/127, q = round-half-even(x * (1/d)), clamped to +-127),
// the per-block scale d, the per-block code sum and the sum of its first 16 codes. Padding
// blocks are all zero.
//
// Output (r, j): 16 float lanes start at 0; per chunk, lane l (block l) with
//   isum = sum over steps and bytes of wcode * xcode (exact in int32)
//   Q8_0X: acc = fma(float(isum - 128 * xsum), dw * dx, acc)
//   Q4_0X: acc = fma(float(isum -   8 * xsum), dw * dx, acc)
//   affine:  acc = fma(float(isum), dw * dx, acc); acc = fma(float(xsum), dm * dx, acc)
//   Q6_KX: isum_a, isum_b over steps 0..3 and 4..7, xhalf the first 16 codes' sum:
//     i = sc_a * (isum_a - 32 * xhalf) + sc_b * (isum_b - 32 * (xsum - xhalf))  (|i| < 2^24)
//     acc = fma(float(i), dw * dx, acc)
// then the 16 lanes are summed by the fixed tree of the AVX-512 hsum. Every ISA and the scalar
// reference compute exactly this, so they agree bit for bit, for every batch width.
#include <cstdint>
#include <vector>

#include "kernels/weight.h"

namespace nextn {

class ThreadPool;

inline constexpr int kI8ChunkBlocks = 16;   // blocks per chunk (one per int32 lane)
inline constexpr int64_t kI8ChunkValues = 512;
inline constexpr int kI8Steps = 8;          // 64-byte activation steps per chunk

// True for the types gemm_i8_rows multiplies: Q8_0X, Q4_0X, Q4_1X, Q4_1FX, Q8_1FX, Q6_KX, and
// the row-group types Q4_0R, Q8_0R, Q4_KR, Q5_KR, Q6_KR (16-row groups, kernels/row_groups.h: not
// chunked, but the same activations).
bool is_int8_dot_type(WType t);
// The int8-dot type holding a block type's values: Q8_0 -> Q8_0X (Q8_0R where groups.q8_0),
// Q4_0 -> Q4_0X (Q4_0R where groups.q4_0), Q4_1 -> Q4_1X; any other type is returned unchanged.
// groups: the layouts of a table whose kernel reads them (KernelTable::row_groups).
WType int8_dot_type_for(WType t, RowGroupLayouts groups = {});
// The block type whose values an int8-dot type holds (Q8_0X -> Q8_0, Q4_0R -> Q4_0, ...; the FX
// types and Q6_KX have none and are returned unchanged).
WType int8_dot_source_type(WType t);
// For building a chunked type from values (f32, a draft head's rows): its block type, or an
// Error naming `who` for the types only made from a checkpoint's codes (FX types, Q6_KX).
WType int8_dot_block_source(WType t, const char* who);
// Bytes of one row of an int8-dot type (0 when cols % 32 != 0, for the K types cols % 256 != 0;
// the row-group types: a 16-row group's / 16).
size_t int8_dot_row_bytes(WType t, int64_t cols);
// Chunks per row.
inline int64_t int8_dot_chunks(int64_t cols) { return (cols + kI8ChunkValues - 1) / kI8ChunkValues; }
// Properties of the chunked types: 8-bit codes (else 4-bit), affine (a second plane of
// per-block offsets), f32 scale planes (else f16).
constexpr bool int8_dot_eight_bit(WType t) { return t == WType::Q8_0X || t == WType::Q8_1FX; }
constexpr bool int8_dot_affine(WType t) {
    return t == WType::Q4_1X || t == WType::Q4_1FX || t == WType::Q8_1FX;
}
constexpr bool int8_dot_f32_scales(WType t) { return t == WType::Q4_1FX || t == WType::Q8_1FX; }
// Q6_KX: a second scale per 16 values (the plane of int8 sub-block scales).
constexpr bool int8_dot_sub_scales(WType t) { return t == WType::Q6_KX; }
// Scale planes after the codes: d, then m (affine) or the sub-block scales (Q6_KX).
constexpr int int8_dot_scale_planes(WType t) {
    return int8_dot_affine(t) || int8_dot_sub_scales(t) ? 2 : 1;
}
// Code bytes per chunk: 512 for the 8-bit types, 384 for Q6_KX, 256 for the 4-bit ones.
constexpr int64_t int8_dot_chunk_code_bytes(WType t) {
    return int8_dot_eight_bit(t) ? 512 : int8_dot_sub_scales(t) ? 384 : 256;
}
// Bytes per block in a scale plane: 4 (f32) or 2 (f16; Q6_KX's sub-scales: two int8).
constexpr size_t int8_dot_scale_bytes(WType t) { return int8_dot_f32_scales(t) ? 4 : 2; }
// Byte offset inside a row of `chunks` chunks where scale plane `plane` starts (0: scales d,
// 1: offsets m of the affine types, or Q6_KX's sub-block scales); block b's value sits
// b * int8_dot_scale_bytes(t) further (Q6_KX's plane 1: chunk c's 32 bytes at c * 32, laid out
// as the layout above says).
inline size_t int8_dot_plane_offset(WType t, int64_t chunks, int plane) {
    return size_t(chunks * int8_dot_chunk_code_bytes(t)) +
           size_t(plane) * size_t(chunks * kI8ChunkBlocks) * int8_dot_scale_bytes(t);
}

// A Q8_0 / Q4_0 / Q4_1 matrix in its chunked layout (same values, same scales), its rows
// repacked on `pool` when given. Other types are returned unchanged.
WeightMatrix repack_for_int8_dot(const WeightMatrix& w, ThreadPool* pool = nullptr);
// The same into `target`, an int8-dot type holding w's block type (int8_dot_source_type(target)
// == w.type; Q4_0 may go to Q4_0X or Q4_0R, Q8_0 to Q8_0X or Q8_0R). Error for any other pair.
WeightMatrix repack_for_int8_dot(const WeightMatrix& w, WType target, ThreadPool* pool = nullptr);
// One row of `cols` values in `source` blocks (Q8_0, Q4_0, Q4_1) written to dst in the chunked
// layout of int8_dot_type_for(source): int8_dot_row_bytes bytes, padding zeroed.
void repack_row_for_int8_dot(const uint8_t* src, WType source, int64_t cols, uint8_t* dst);

// An affine tensor [rows, cols] (formats/dequant.h affine_code_bits: GGUF Q4_K, Q5_K, Q5_1,
// MLX 2..8-bit) as Q4_1FX (codes up to 4 bits) or Q8_1FX, holding exactly the values
// dequantize_to_f32 gives: e.g. Q4_K's d * sc * q - dmin * m becomes code * (d * sc) +
// (-(dmin * m)), the products exact in f32. Returns false for any other tensor.
// Rows are repacked on `pool` when given.
bool repack_affine_for_int8_dot(const RawTensor& t, int64_t rows, int64_t cols, WeightMatrix& out,
                                ThreadPool* pool = nullptr);

// A GGUF Q6_K tensor [rows, cols] as Q6_KX, holding exactly the values dequantize_to_f32 gives.
// Returns false for any other tensor.
// Rows are repacked on `pool` when given.
bool repack_q6_k_for_int8_dot(const RawTensor& t, int64_t rows, int64_t cols, WeightMatrix& out,
                              ThreadPool* pool = nullptr);

// Row `row` of an int8-dot matrix as f32: exactly the source block type's values.
void int8_dot_row_f32(const WeightMatrix& w, int64_t row, float* out);

struct QuantizedColumns {
    int64_t n = 0;       // columns (tokens)
    int64_t chunks = 0;  // chunks per column
    std::vector<int8_t> codes;   // [n, chunks * 512]
    std::vector<float> scales;   // [n, chunks * 16] one per block
    std::vector<int32_t> sums;   // [n, chunks * 16] sum of the block's codes
    std::vector<int32_t> half_sums;  // [n, chunks * 16] sum of the block's first 16 codes
    // [n, chunks * 16] the block's two half sums as int16s (each at most 16 * 127): the first 16
    // codes' sum in the low half, the last 16's in the high half. One pmaddwd with two int16
    // factors then forms a * first + b * second (Q6_K's two sub-block starts, scaled).
    std::vector<int32_t> half_pairs;
    // [n, chunks * 16] -8 and -128 times the block's code sum: the start of a block's sums
    // against Q4_0 / Q8_0 codes stored with that offset added. A broadcast load, where computing
    // it from the sum took a shift and a subtraction per (column, block) on the ports that run
    // the dot products.
    std::vector<int32_t> starts8, starts128;
    // [n, chunks * 16] the same for Q6_K's two sub-blocks (codes stored with 32 added): -32 times
    // the sum of the block's first 16 codes, and of its last 16.
    std::vector<int32_t> q6_starts_first, q6_starts_second;
    // [n, chunks * 16] the code sums as floats (exact), for the affine types' mins term: a
    // broadcast load, where converting the sum in the tile took a scalar convert and a broadcast
    // from a register.
    std::vector<float> float_sums;

    const int8_t* codes_of(int64_t j) const { return codes.data() + j * chunks * kI8ChunkValues; }
    const float* scales_of(int64_t j) const { return scales.data() + j * chunks * kI8ChunkBlocks; }
    const int32_t* sums_of(int64_t j) const { return sums.data() + j * chunks * kI8ChunkBlocks; }
    const int32_t* half_sums_of(int64_t j) const {
        return half_sums.data() + j * chunks * kI8ChunkBlocks;
    }
    const int32_t* half_pairs_of(int64_t j) const { return half_pairs.data() + j * chunks * kI8ChunkBlocks; }
    // The starts for codes stored with Offset (8 or 128) added.
    template <int Offset>
    const int32_t* offset_starts_of(int64_t j) const {
        static_assert(Offset == 8 || Offset == 128, "starts are made for offsets 8 and 128");
        return (Offset == 8 ? starts8 : starts128).data() + j * chunks * kI8ChunkBlocks;
    }
    const float* float_sums_of(int64_t j) const { return float_sums.data() + j * chunks * kI8ChunkBlocks; }
    const int32_t* q6_starts_of(int64_t j, bool second) const {
        return (second ? q6_starts_second : q6_starts_first).data() + j * chunks * kI8ChunkBlocks;
    }
};

// Sizes out for n columns of `cols` values (no allocation once it is large enough).
void resize_columns(int64_t n, int64_t cols, QuantizedColumns& out);

// The x[n, cols] product operand: sizes `out`, then quantizes every column with the table's
// quantize_columns, threaded over columns when there are several.
struct KernelTable;
void quantize_activations(const KernelTable& k, const float* x, int64_t n, int64_t cols,
                          QuantizedColumns& out, ThreadPool& pool);

// Calls f.template operator()<T>() with T = type, a chunked type (ISA kernels instantiate
// their loops per type this way).
template <class F>
void visit_int8_dot_type(WType type, F&& f) {
    switch (type) {
        case WType::Q8_0X: return f.template operator()<WType::Q8_0X>();
        case WType::Q4_0X: return f.template operator()<WType::Q4_0X>();
        case WType::Q4_1X: return f.template operator()<WType::Q4_1X>();
        case WType::Q4_1FX: return f.template operator()<WType::Q4_1FX>();
        case WType::Q8_1FX: return f.template operator()<WType::Q8_1FX>();
        case WType::Q6_KX: return f.template operator()<WType::Q6_KX>();
        default: return;  // the int8 kernels take the row-group types before they get here
    }
}

// 1/d for an activation block's scale d, or 0 (every code 0) when d is 0 or so small (subnormal)
// that 1/d overflows: then x * (1/d) would be NaN for a zero x, which the vector and scalar
// clamps order differently.
inline float int8_inverse_scale(float d) {
    const float inv = d > 0.0f ? 1.0f / d : 0.0f;
    return inv <= 3.4028234e38f ? inv : 0.0f;
}

// The activation quantizer's walk over columns [j0, j1) and their blocks, shared by every ISA:
// padding blocks get zero codes, scale and sums; for the others block(p, left, q, sum, half)
// reads the block's values p[0, min(left, 32)) (zeros past that), writes their 32 codes to q,
// their sum to *sum and the first 16 codes' sum to *half (in the ISA's registers: a scalar loop
// over q here cost a third of the quantizer's time), and returns the scale d, or NaN when a
// value is NaN or infinite. Such a block is stored as scale NaN with zero codes and sums, so
// every product it enters is NaN, as in f32 arithmetic, and every ISA stores the same bytes
// (their min/max treat NaN differently, so the codes they compute for it are not used). The
// codes go to the chunk layout here: codes 4s..4s+3 are step s of lane l, one 4-byte copy each.
//
// An ISA may also pass chunk(p, codes, scales, sums, half_sums): all 16 blocks of a chunk whose
// 512 values are all present, written straight to their places (codes: the chunk's 512 bytes),
// with the same results block by block; it returns false, having written nothing, when a value
// is NaN or infinite, and the blocks then go one at a time.
struct NoChunkQuantizer {
    bool operator()(const float*, int8_t*, float*, int32_t*, int32_t*) const { return false; }
};

template <class QuantizeBlock, class QuantizeChunk = NoChunkQuantizer>
void quantize_columns_with(const float* x, int64_t cols, QuantizedColumns& out, int64_t j0,
                           int64_t j1, QuantizeBlock&& block, QuantizeChunk&& chunk = {}) {
    const int64_t blocks = out.chunks * kI8ChunkBlocks;
    const int64_t used = (cols + 31) / 32;  // blocks holding values
    for (int64_t j = j0; j < j1; ++j) {
        const float* xj = x + j * cols;
        int8_t* codes = out.codes.data() + j * out.chunks * kI8ChunkValues;  // [chunks, 512]
        float* scales = out.scales.data() + j * blocks;
        int32_t* sums = out.sums.data() + j * blocks;
        int32_t* half_sums = out.half_sums.data() + j * blocks;
        for (int64_t b = 0; b < blocks; ++b) {
            if (b % kI8ChunkBlocks == 0 && (b + kI8ChunkBlocks) * 32 <= cols &&
                chunk(xj + b * 32, codes + b * 32, scales + b, sums + b, half_sums + b)) {
                b += kI8ChunkBlocks - 1;
                continue;
            }
            int8_t* chunk_codes = codes + (b / kI8ChunkBlocks) * kI8ChunkValues;
            const int l = int(b % kI8ChunkBlocks);
            alignas(64) int8_t q[32] = {};
            int32_t sum = 0, half = 0;
            scales[b] = b < used ? block(xj + b * 32, cols - b * 32, q, &sum, &half) : 0.0f;
            if (scales[b] != scales[b]) {  // non-finite input
                __builtin_memset(q, 0, sizeof q);
                sum = half = 0;
            }
            for (int s = 0; s < kI8Steps; ++s) __builtin_memcpy(chunk_codes + s * 64 + 4 * l, q + 4 * s, 4);
            sums[b] = sum;
            half_sums[b] = half;
        }
        int32_t* half_pairs = out.half_pairs.data() + j * blocks;
        int32_t* starts8 = out.starts8.data() + j * blocks;
        int32_t* starts128 = out.starts128.data() + j * blocks;
        int32_t* q6_first = out.q6_starts_first.data() + j * blocks;
        int32_t* q6_second = out.q6_starts_second.data() + j * blocks;
        float* float_sums = out.float_sums.data() + j * blocks;
        for (int64_t b = 0; b < blocks; ++b) {
            half_pairs[b] = int32_t(uint32_t(uint16_t(half_sums[b])) | (uint32_t(sums[b] - half_sums[b]) << 16));
            starts8[b] = -8 * sums[b];  // |sums| <= 32 * 127: exact
            starts128[b] = -128 * sums[b];
            q6_first[b] = -32 * half_sums[b];
            q6_second[b] = -32 * (sums[b] - half_sums[b]);
            float_sums[b] = float(sums[b]);
        }
    }
}

namespace ref {
// Quantizes columns [j0, j1) of x [n, cols] into `out` (already sized by resize_columns).
void quantize_columns(const float* x, int64_t cols, QuantizedColumns& out, int64_t j0, int64_t j1);
// Scalar reference of the chunked product for rows [r0, r1): y[j, r], y: [n, ldy].
void gemm_i8_rows(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy,
                  int64_t r0, int64_t r1);
}  // namespace ref

}  // namespace nextn
