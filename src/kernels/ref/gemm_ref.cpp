// Scalar reference GEMM: the oracle. Each row is decoded to the exact f32 values every ISA
// uses (weight_row_f32), then each output is a straight-line sum in index order with separate
// multiply and add (contraction into FMA is switched off so the oracle is the same everywhere).
#pragma GCC optimize("fp-contract=off")
#include "kernels/ref/ref.h"

namespace nextn::ref {

void gemm_rows(const WeightMatrix& w, const float* x, int64_t n, float* y, int64_t ldy,
               int64_t r0, int64_t r1) {
    const int64_t cols = w.cols;
    struct Row;
    float* row = thread_buffer<float, Row>(size_t(cols));  // [cols]
    for (int64_t r = r0; r < r1; ++r) {
        weight_row_f32(w, r, row);
        for (int64_t j = 0; j < n; ++j) {
            const float* xj = x + j * cols;
            float acc = 0.0f;
            for (int64_t k = 0; k < cols; ++k) acc += row[k] * xj[k];
            y[j * ldy + r] = acc;
        }
    }
}

float stream_sum(const float* x, int64_t n) {
    float acc = 0.0f;
    for (int64_t i = 0; i < n; ++i) acc += x[i];
    return acc;
}

}  // namespace nextn::ref
