#pragma once
// Dequantization of block-quantized checkpoint tensors (GGUF ggml blocks, MLX affine) to f32,
// exactly as the reference implementations define it (ggml's dequantize_row_*, MLX's
// w = scale * q + bias in f32).
#include "formats/raw_tensor.h"

namespace nextn {

// Element `index` of an F32, F16 or BF16 array (BF16 for any other type).
float load_float(const uint8_t* base, size_t index, DType t);

// Writes all t.numel() values of a quantized tensor to out. Throws Error for types it lacks.
void dequantize_to_f32(const RawTensor& t, float* out);

// A tensor viewed as [rows, cols = shape.back()] (any dtype dequantize_to_f32 takes, block
// types with whole blocks per row), read one row at a time as the f32 values dequantize_to_f32
// gives: load-time conversion streams rows through it instead of widening a whole tensor. The
// constructor checks the type and sizes (throws Error); read() then neither throws nor
// allocates, so pool workers may read different rows at once. Keeps a pointer to t.
class TensorRows {
public:
    explicit TensorRows(const RawTensor& t);
    int64_t rows() const { return rows_; }
    int64_t cols() const { return cols_; }
    void read(int64_t row, float* out) const;  // out: [cols]

private:
    using BlockDecoder = void (*)(const uint8_t*, float*);
    const RawTensor* t_;
    int64_t rows_ = 0, cols_ = 0;
    size_t row_bytes_ = 0;
    BlockDecoder decode_ = nullptr;  // block types only
    int64_t block_ = 0;
    size_t block_bytes_ = 0;
};

// Writes rows [first_row, first_row + n_rows) of a tensor viewed as [rows, shape.back()].
void dequantize_rows_to_f32(const RawTensor& t, int64_t first_row, int64_t n_rows, float* out);

// Code-form access for kernels that keep codes instead of floats; the values are exactly
// dequantize_to_f32's.
//
// Affine tensors: value = code * d + m with one d and m per 32 values (product and sum each
// rounded in f32): GGUF Q4_K and Q5_K (d = super-scale * sub-scale, m = -(super-min * sub-min),
// both products exact in f32), Q5_1, and MLX affine 2..8-bit with a group size that is a
// multiple of 32 (d = scale, m = bias). Returns the width the codes fit in, 4 (codes 0..15:
// Q4_K, MLX <= 4-bit) or 8 (Q5_K, Q5_1, MLX 5..8-bit), or 0 when t has no such form or is not
// [rows, cols].
int affine_code_bits(const RawTensor& t, int64_t rows, int64_t cols);
// Row `row` of an affine tensor: codes[cols], d[cols / 32], m[cols / 32].
void affine_row(const RawTensor& t, int64_t row, int64_t cols, uint8_t* codes, float* d, float* m);
// One GGUF Q5_0 block: value j = codes[j] * d exactly, codes in -16..15, d its f16 scale bits
// (so a Q5_0 tensor is a Q8_0 tensor with the same values).
void q5_0_block_codes(const uint8_t* block, int8_t* codes, uint16_t* d);
// GGUF types whose every block is a Q8_0 block with the same values (int8 codes times an f16
// scale): Q5_0, IQ4_NL (its table's int8 values), MXFP4 (its doubled e2m1 values times 2^(e -
// 128), exact for e = kMxfp4SmallestQ8_0Exponent..kMxfp4LargestQ8_0Exponent; a block with a
// smaller scale, all its values under 2^-21 in magnitude, is rounded to multiples of 2^-24, and
// a tensor with a larger one has no such form).
constexpr int kMxfp4SmallestQ8_0Exponent = 104;  // 2^-24, the smallest f16
constexpr int kMxfp4LargestQ8_0Exponent = 143;   // 2^15
bool has_q8_0_block_form(const RawTensor& t);
// One block of such a tensor of type `type` as Q8_0: codes[32], d its f16 scale bits.
void q8_0_block_form(DType type, const uint8_t* block, int8_t* codes, uint16_t* d);
// An MXFP4 block's scale 2^(e - 128) as f16 bits: exact for e = 104..143, and 0 for a block whose
// values are all zero; false for any other block (its scale is no f16).
bool mxfp4_f16_scale(const uint8_t* block, uint16_t* d);
// Sub-block s (0..7) of a GGUF IQ4_XS block: its 16 bytes of table indices (value j the low
// nibble of byte j, j + 16 its high) and its scale d * (sc - 32) as block_iq4_xs computes it.
const uint8_t* iq4_xs_sub_block(const uint8_t* block, int s, float* scale);
// One GGUF Q3_K block (256 values): value j = (d * scales[j / 16]) * (codes[j] - 4), codes in
// 0..7 (the low 2 bits + 4 x the high bit), scales in -32..31 (the 6-bit scale - 32), d its f16
// bits.
void q3_k_block_codes(const uint8_t* block, uint8_t* codes, int8_t* scales, uint16_t* d);
// One GGUF Q2_K block (256 values): value j = (d * (scales[j / 16] & 15)) * codes[j] - dmin *
// (scales[j / 16] >> 4), codes in 0..3, scales the file's 16 bytes (scale | min << 4), d and
// dmin their f16 bits.
void q2_k_block_codes(const uint8_t* block, uint8_t* codes, uint8_t* scales, uint16_t* d,
                      uint16_t* dmin);
// One GGUF Q3_K block (110 bytes) written as the GGUF Q6_K block (210 bytes) with the same
// values: code + 32 as the 6-bit code, scale - 32 as the int8 scale, the same d (block_q6_k's
// (d * scale) * (code - 32) is then block_q3_k's product, bit for bit).
void q3_k_block_as_q6_k(const uint8_t* q3_k, uint8_t* q6_k);
// One GGUF Q6_K block (256 values): value j = d * scales[j / 16] * (codes[j] - 32), codes in
// 0..63, d its f16 scale bits.
void q6_k_block_codes(const uint8_t* block, uint8_t* codes, int8_t* scales, uint16_t* d);
// One GGUF Q4_K block (256 values): value j = (d * scales[j / 32]) * codes[j] - dmin * mins[j / 32]
// (each product exact in f32), codes in 0..15, scales and mins in 0..63, d and dmin f16 bits.
void q4_k_block_codes(const uint8_t* block, uint8_t* codes, uint8_t* scales, uint8_t* mins,
                      uint16_t* d, uint16_t* dmin);
// The same for a GGUF Q5_K block: codes in 0..31.
void q5_k_block_codes(const uint8_t* block, uint8_t* codes, uint8_t* scales, uint8_t* mins,
                      uint16_t* d, uint16_t* dmin);

}  // namespace nextn
