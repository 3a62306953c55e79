#pragma once
// Scalar reference kernels (plain C++, no intrinsics).
#include "kernels/kernels.h"

namespace nextn::ref {

void gemm_rows(const WeightMatrix& w, const float* x, int64_t n, float* y, int64_t ldy,
               int64_t r0, int64_t r1);

}  // namespace nextn::ref
