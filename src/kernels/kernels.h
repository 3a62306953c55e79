#pragma once
// The kernel dispatch table: one set of function pointers chosen once at start-up from the
// CPU's features (or NEXTN_ISA). The scalar reference (ref/) is always built and is the oracle
// every faster variant is tested against.
//
// Batch invariance: for every kernel, the arithmetic that produces one output element (its
// reduction order) depends only on that element's inputs, never on the batch width n, the
// element's position in the batch, or the thread count. Greedy speculative decoding relies on
// this to produce bit-identical tokens.
#include <cstdint>
#include <string>

#include "kernels/weight.h"

namespace nextn {

class ThreadPool;

struct KernelTable {
    const char* isa = "scalar";
    // y[j, r] = sum_k W[r, k] * x[j, k] for rows r in [r0, r1), batch j in [0, n).
    // x: [n, w.cols], y: [n, ldy]. One call handles one thread's share of rows.
    void (*gemm_rows)(const WeightMatrix& w, const float* x, int64_t n, float* y, int64_t ldy,
                      int64_t r0, int64_t r1) = nullptr;
};

// The table in use (chosen once; NEXTN_ISA=scalar|avx2|avx512 forces one).
const KernelTable& kernels();
// The scalar reference table, always available.
const KernelTable& reference_kernels();

// y[n, w.rows] = x[n, w.cols] · Wᵀ, threaded over output rows.
void matmul(const KernelTable& k, const WeightMatrix& w, const float* x, int64_t n, float* y,
            ThreadPool& pool);
inline void matmul(const WeightMatrix& w, const float* x, int64_t n, float* y, ThreadPool& pool) {
    matmul(kernels(), w, x, n, y, pool);
}

}  // namespace nextn
