#pragma once
// Q8_0 weights multiplied by int8-quantized activations (int8 dot products: AVX-512 VNNI on
// x86, SDOT on ARM later). Decoding Q8_0 blocks to f32 costs more instructions than the
// multiply itself; with both sides in int8 a 64-value block pair is one dot-product
// instruction per column, so decode runs closer to memory bandwidth.
//
// Weight layout (WType::Q8_0P), per row, for each pair p of 32-value blocks (2p, 2p+1):
//   64 code bytes, then the two f16 scales (block 2p, block 2p+1) = 68 bytes.
//   Code byte 4l+i (lane l in 0..15, i in 0..3) holds element 4(l/2)+i of block 2p+(l%2),
//   stored as q+128 (unsigned; the dot-product instruction multiplies u8 x s8).
//   An odd last block is paired with an all-zero block whose scale is 0.
// Activation layout (QuantizedColumns), per column, the same lanes: int8 codes of 32-value
// blocks (d = max|x|/127, q = round-to-nearest-even(x/d)), the per-lane scale d, and the
// per-lane correction -128 * (sum of the lane's 4 codes), which cancels the +128 of the weight
// codes inside the integer sum.
//
// Output (r, j): 16 float lanes start at 0; for each pair, lane l gets
//   isum = corr + sum_i wcode*xcode (exact int32), acc = fma(float(isum), dw * dx, acc);
// then the lanes are summed by the fixed tree of the AVX-512 hsum. Every ISA and the scalar
// reference compute exactly this, so they agree bit for bit, for every batch width.
#include <cstdint>
#include <vector>

#include "kernels/weight.h"

namespace nextn {

inline constexpr int64_t kQ8PairValues = 64;
inline constexpr size_t kQ8PairBytes = 68;

struct QuantizedColumns {
    int64_t n = 0;      // columns (tokens)
    int64_t pairs = 0;  // block pairs per column
    std::vector<int8_t> codes;   // [n, pairs * 64]
    std::vector<float> scales;   // [n, pairs * 16] per lane
    std::vector<int32_t> corr;   // [n, pairs * 16] per lane

    const int8_t* codes_of(int64_t j) const { return codes.data() + j * pairs * 64; }
    const float* scales_of(int64_t j) const { return scales.data() + j * pairs * 16; }
    const int32_t* corr_of(int64_t j) const { return corr.data() + j * pairs * 16; }
};

// x: [n, cols]. Reuses out's buffers (no allocation once they are large enough).
void quantize_columns(const float* x, int64_t n, int64_t cols, QuantizedColumns& out);

// A Q8_0 matrix in the Q8_0P layout (same values, same scales).
WeightMatrix repack_q8_0_pairs(const WeightMatrix& w);

// Row `row` of a Q8_0P matrix as f32 (the Q8_0 values: code * d).
void q8_0p_row_f32(const WeightMatrix& w, int64_t row, float* out);

namespace ref {
// Scalar reference of the Q8_0P x int8 product for rows [r0, r1): y[j, r], y: [n, ldy].
void gemm_q8p_rows(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy,
                   int64_t r0, int64_t r1);
}  // namespace ref

}  // namespace nextn
