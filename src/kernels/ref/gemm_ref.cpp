// Scalar reference GEMM: the oracle. Straight-line sums in index order.
#include "kernels/ref/ref.h"

#include "core/error.h"

namespace nextn::ref {

void gemm_rows(const WeightMatrix& w, const float* x, int64_t n, float* y, int64_t ldy,
               int64_t r0, int64_t r1) {
    if (w.type != WType::F32) fail("reference gemm: unsupported weight type ", wtype_name(w.type));
    const int64_t cols = w.cols;
    for (int64_t r = r0; r < r1; ++r) {
        const float* wr = reinterpret_cast<const float*>(w.data + size_t(r) * w.row_bytes);
        for (int64_t j = 0; j < n; ++j) {
            const float* xj = x + j * cols;
            float acc = 0.0f;
            for (int64_t k = 0; k < cols; ++k) acc += wr[k] * xj[k];
            y[j * ldy + r] = acc;
        }
    }
}

}  // namespace nextn::ref
