// Scalar reference of the bf16-dot GEMM (kernels/bf16_dot.h gives the arithmetic): the oracle
// for the AVX512_BF16 kernel, and what a table without one runs.
#pragma GCC optimize("fp-contract=off")
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/bf16_dot.h"
#include "kernels/ref/ref.h"

namespace nextn::ref {

namespace {

// A bf16 value as the dot product reads it: subnormals as signed zeros.
float daz_bf16(uint16_t h) {
    return (h & 0x7f80u) == 0 ? bf16_to_f32(uint16_t(h & 0x8000u)) : bf16_to_f32(h);
}

float ftz(float x) { return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x; }

}  // namespace

float bf16_dot_pair(float acc, const uint16_t* w, const uint16_t* x) {
    acc = ftz(std::fma(daz_bf16(w[1]), daz_bf16(x[1]), acc));
    return ftz(std::fma(daz_bf16(w[0]), daz_bf16(x[0]), acc));
}

void gemm_bf16_rows(const WeightMatrix& w, const Bf16Columns& x, float* y, int64_t ldy,
                    int64_t r0, int64_t r1) {
    const int64_t cols = w.cols, padded = x.stride;
    struct Row;
    uint16_t* row = thread_buffer<uint16_t, Row>(size_t(padded));  // [padded] the row, +0 padded
    std::fill(row + cols, row + padded, uint16_t(0));
    for (int64_t r = r0; r < r1; ++r) {
        std::memcpy(row, w.data + size_t(r) * w.row_bytes, size_t(cols) * 2);
        for (int64_t j = 0; j < x.n; ++j) {
            const uint16_t* xj = x.column(j);
            float acc[16] = {};
            for (int64_t b = 0; b < padded; b += 32)
                for (int l = 0; l < 16; ++l)
                    acc[l] = bf16_dot_pair(acc[l], row + b + 2 * l, xj + b + 2 * l);
            y[j * ldy + r] = lane_tree_sum(acc);
        }
    }
}

void bf16_peak_probe(const uint16_t* a, const uint16_t* b, int64_t reps, float* acc) {
    for (int i = 0; i < kPeakProbeChains; ++i)
        for (int l = 0; l < 16; ++l)
            for (int64_t r = 0; r < reps; ++r)
                acc[i * 16 + l] = bf16_dot_pair(acc[i * 16 + l], a + i * 32 + 2 * l, b + 2 * l);
}

}  // namespace nextn::ref
