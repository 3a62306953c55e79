#pragma once
// Block-quantized weight formats, byte-compatible with ggml (GGUF files store exactly these
// blocks, so a GGUF Q8_0/Q4_0 tensor is used as-is), and their scalar quantizers/dequantizers.
// The dequantized value of every element is defined here once; the GEMM kernels of every ISA
// decode to exactly these f32 values and differ from each other only in summation order.
#include <cstdint>

namespace nextn {

inline constexpr int kQuantBlock = 32;  // values per Q8_0 / Q4_0 block

// 32 values: x[i] = qs[i] * d.
struct BlockQ8_0 {
    uint16_t d;  // f16 scale
    int8_t qs[32];
};
static_assert(sizeof(BlockQ8_0) == 34, "ggml block_q8_0 is 34 bytes");

// 32 values: x[i] = (code(i) - 8) * d with code(i) = qs[i] & 15 and code(i + 16) = qs[i] >> 4.
struct BlockQ4_0 {
    uint16_t d;  // f16 scale
    uint8_t qs[16];
};
static_assert(sizeof(BlockQ4_0) == 18, "ggml block_q4_0 is 18 bytes");

// 32 values: x[i] = code(i) * d + m, codes as in Q4_0 (affine 4-bit: per-group scale and
// offset; holds MLX affine 4-bit weights, whose group-64 scale/bias repeat over two blocks).
struct BlockQ4_1 {
    uint16_t d;  // f16 scale
    uint16_t m;  // f16 offset (the group minimum)
    uint8_t qs[16];
};
static_assert(sizeof(BlockQ4_1) == 20, "ggml block_q4_1 is 20 bytes");

// f32 -> IEEE binary16, round to nearest even, overflow to inf, NaN stays NaN, subnormals kept.
uint16_t f32_to_f16(float f);

// n must be a multiple of kQuantBlock. Quantization follows ggml's reference rounding:
// Q8_0: d = max|x| / 127, q = round(x / d) (half away from zero).
// Q4_0: m = the value of largest magnitude (first on ties), d = m / -8, code = min(15, trunc(x/d + 8.5)).
void quantize_row_q8_0(const float* x, int64_t n, BlockQ8_0* out);
void quantize_row_q4_0(const float* x, int64_t n, BlockQ4_0* out);
// Q4_1: d = (max - min) / 15, m = min, code = min(15, trunc((x - min) / d + 0.5)).
void quantize_row_q4_1(const float* x, int64_t n, BlockQ4_1* out);
void dequantize_row_q8_0(const BlockQ8_0* blocks, int64_t n, float* out);
void dequantize_row_q4_0(const BlockQ4_0* blocks, int64_t n, float* out);
// code * d + m as one product and one sum, each rounded (no fused multiply-add).
void dequantize_row_q4_1(const BlockQ4_1* blocks, int64_t n, float* out);

}  // namespace nextn
