#pragma once
// BF16 weights times activations rounded to bf16, with the CPU's bf16 dot product (AVX512_BF16's
// vdpbf16ps: 32 products per instruction, where the f32 path widens each bf16 weight and spends
// two fused multiply-adds per 32 values). Opt-in (--bf16-activations): each activation loses
// the low 16 bits of its f32 mantissa, as llama.cpp's bf16 CPU path does, so the results are not
// the f32 reference's; the golden fixtures' f32 tolerances hold only without it.
//
// The arithmetic, which every implementation (ref::gemm_bf16_rows, the AVX512_BF16 kernel)
// computes bit for bit, for every batch width, row range and thread count:
//   Activations: xb = bf16_dot_round(x): round to nearest even, f32 subnormals read as zero
//     (what vcvtne2ps2bf16 does), NaN kept a quiet NaN.
//   Output (r, j): 16 f32 lanes start at +0. For each 32-value block b (a ragged last block
//   padded with +0 weights and activations), lane l takes the block's values 2l + 1 and then 2l:
//     acc[l] = ftz(fma(daz(w[32b + 2l + 1]), daz(xb[32b + 2l + 1]), acc[l]))
//     acc[l] = ftz(fma(daz(w[32b + 2l]),     daz(xb[32b + 2l]),     acc[l]))
//   (Intel's definition of vdpbf16ps: bf16 subnormal inputs read as zero, subnormal results
//   flushed to zero, round to nearest even; a product of two bf16 values is exact in f32, so the
//   fma rounds once, as the instruction does.) Then the lanes are summed by the AVX-512 hsum
//   tree: a[i] = acc[i] + acc[i + 8], b[i] = a[i] + a[i + 4], (b[0] + b[2]) + (b[1] + b[3]).
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/half.h"

namespace nextn {

// Activations for gemm_bf16_rows: x[n, cols] rounded once per matmul input (not once per row
// tile), each column padded with +0 to a whole number of 32-value blocks.
struct Bf16Columns {
    int64_t n = 0;       // columns (tokens)
    int64_t stride = 0;  // values per column: cols rounded up to a multiple of 32
    std::vector<uint16_t> values;  // [n, stride] bf16 bits

    const uint16_t* column(int64_t j) const { return values.data() + j * stride; }
};

// f32 -> bf16 bits for the bf16-dot kernels: f32_to_bf16, but a subnormal reads as a signed zero.
inline uint16_t bf16_dot_round(float x) {
    uint32_t bits;
    std::memcpy(&bits, &x, 4);
    if ((bits & 0x7f800000u) == 0) bits &= 0x80000000u;
    float flushed;
    std::memcpy(&flushed, &bits, 4);
    return f32_to_bf16(flushed);
}

// Fills out from x[n, cols] with bf16_dot_round (no allocation once it is large enough).
// Defined in bf16_dot.cpp, a translation unit without ISA flags: an inline copy compiled in an
// ISA unit could be the one the linker keeps for every caller.
void round_columns_bf16(const float* x, int64_t n, int64_t cols, Bf16Columns& out);

}  // namespace nextn
