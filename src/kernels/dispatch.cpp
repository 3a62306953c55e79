#include <cstdlib>
#include <string>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/kernels.h"
#include "kernels/ref/ref.h"

namespace nextn {

const KernelTable& reference_kernels() {
    static const KernelTable table = [] {
        KernelTable t;
        t.isa = "scalar";
        t.gemm_rows = ref::gemm_rows;
        return t;
    }();
    return table;
}

const KernelTable& kernels() {
    static const KernelTable& chosen = []() -> const KernelTable& {
        const char* forced = std::getenv("NEXTN_ISA");
        if (forced && std::string(forced) != "scalar" && std::string(forced) != "")
            fail("NEXTN_ISA=", forced, " is not available (available: scalar)");
        return reference_kernels();
    }();
    return chosen;
}

void matmul(const KernelTable& k, const WeightMatrix& w, const float* x, int64_t n, float* y,
            ThreadPool& pool) {
    // Split rows in blocks of 16 so each thread gets whole blocks; a row is always computed by
    // one thread with the same code, whatever the split.
    const int64_t block = 16;
    const int64_t n_blocks = (w.rows + block - 1) / block;
    pool.run(n_blocks, [&](int64_t b0, int64_t b1) {
        int64_t r1 = b1 * block < w.rows ? b1 * block : w.rows;
        k.gemm_rows(w, x, n, y, w.rows, b0 * block, r1);
    });
}

}  // namespace nextn
