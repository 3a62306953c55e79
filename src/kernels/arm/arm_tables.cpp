// The ARM kernel tables: the reference's, with the entries an ARM kernel exists for replaced.
#include "kernels/arm/arm_kernels.h"

namespace nextn::arm {

const KernelTable* neon_table() {
    static const KernelTable table = [] {
        KernelTable t = reference_kernels();
        t.isa = "neon";
        t.gemm_rows = neon::gemm_rows;
        t.gemm_i8_rows = neon::gemm_i8_rows;
        t.gdn_recurrence_heads = neon::gdn_recurrence_heads;
        t.stream_sum = neon::stream_sum;
        t.fma_peak_probe = neon::fma_peak_probe;
        t.int8_peak_probe = neon::int8_peak_probe;
        // The int8-dot types (chunked; no row-group kernel here, so row_groups stays empty) are
        // what the model loads block and K-quant weights as once this is set.
        t.int8_dot_fast = true;
        return t;
    }();
    return &table;
}

const KernelTable* dotprod_table() {
    static const KernelTable table = [] {
        KernelTable t = *neon_table();
        t.isa = "dotprod";
        t.gemm_i8_rows = dotprod::gemm_i8_rows;
        t.int8_peak_probe = dotprod::int8_peak_probe;
        return t;
    }();
    return &table;
}

}  // namespace nextn::arm
