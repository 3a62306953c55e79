// The ARM kernel tables: the reference's, with the entries an ARM kernel exists for replaced.
#include "kernels/arm/arm_kernels.h"
#include "kernels/table_settings.h"

namespace nextn::arm {

const KernelTable* neon_table() {
    static const KernelTable table = [] {
        KernelTable t = reference_kernels();
        t.isa = "neon";
        t.gemm_rows = neon::gemm_rows;
        t.gemm_i8_rows = neon::gemm_i8_rows;
        t.quantize_columns = neon::quantize_columns;
        t.gdn_recurrence_heads = neon::gdn_recurrence_heads;
        t.stream_sum = neon::stream_sum;
        t.rmsnorm = neon::rmsnorm;
        t.l2norm = neon::l2norm;
        t.silu = neon::silu;
        t.sigmoid = neon::sigmoid;
        t.swiglu = neon::swiglu;
        t.softmax = neon::softmax;
        t.causal_conv = neon::causal_conv;
        t.rope_neox = neon::rope_neox;
        t.key_scores = neon::key_scores;
        t.weighted_rows = neon::weighted_rows;
        t.weighted_rows_f16 = neon::weighted_rows_f16;
        t.weighted_rows_q8_0 = neon::weighted_rows_q8_0;
        t.fma_peak_probe = neon::fma_peak_probe;
        t.int8_peak_probe = neon::int8_peak_probe;
        // The int8-dot types are what the model loads block and K-quant weights as once this is
        // set: in 16-row groups, as on x86 (NEXTN_Q4_0_LAYOUT etc. choose). For the K-quants the
        // groups are the compact layout (Q4_K 4.625 bits a value where the chunked Q4_1FX takes
        // 6, Q5_K 5.625 where Q8_1FX takes 10); Q4_0 and Q8_0 take the same bytes either way.
        t.int8_dot_fast = true;
        t.row_groups = row_group_layouts();
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
        t.key_scores = dotprod::key_scores;
        return t;
    }();
    return &table;
}

}  // namespace nextn::arm
