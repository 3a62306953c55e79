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

// Writes rows [first_row, first_row + n_rows) of a tensor viewed as [rows, shape.back()] (any
// dtype dequantize_to_f32 takes), e.g. embedding lookups without converting the whole matrix.
void dequantize_rows_to_f32(const RawTensor& t, int64_t first_row, int64_t n_rows, float* out);

// Tensors whose values are 4-bit codes with one scale and offset per 32 values,
// value = code * d + m (product and sum each rounded in f32): GGUF Q4_K (d = super-scale *
// sub-scale, m = -(super-min * sub-min), both products exact in f32) and MLX affine 4-bit with a
// group size that is a multiple of 32 (d = scale, m = bias). True when t has that form, with
// shape [rows, cols].
bool is_affine4(const RawTensor& t, int64_t rows, int64_t cols);
// Row `row` of such a tensor: codes[cols] (0..15), d[cols / 32], m[cols / 32]. Exactly the values
// dequantize_to_f32 gives, as code * d + m.
void affine4_row(const RawTensor& t, int64_t row, int64_t cols, uint8_t* codes, float* d, float* m);

}  // namespace nextn
