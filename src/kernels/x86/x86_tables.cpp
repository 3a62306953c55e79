// The x86 kernel tables, assembled from the ISA translation units' entry points
// (x86_kernels.h). This file is built without ISA flags, like dispatch.cpp, so that no inline
// code is emitted here with AVX instructions and shared with generic code.
#include "kernels/x86/x86_tables.h"

#include "kernels/int8_dot.h"
#include "kernels/ref/ref.h"
#include "kernels/table_settings.h"
#include "kernels/x86/x86_kernels.h"

namespace nextn::x86 {

namespace {

KernelTable make_avx2_table() {
    KernelTable t;
    t.isa = "avx2";
    t.gemm_rows = avx2::gemm_rows;
    t.gemm_i8_rows = avx2::gemm_i8_rows;
    t.quantize_columns = avx2::quantize_columns;
    t.int8_dot_fast = true;
    t.row_groups = row_group_layouts();
    t.gemm_bf16_rows = ref::gemm_bf16_rows;  // no bf16 dot product in AVX2
    t.rmsnorm = avx2::rmsnorm;
    t.l2norm = avx2::l2norm;
    t.silu = avx2::silu;
    t.sigmoid = avx2::sigmoid;
    t.swiglu = avx2::swiglu;
    t.softmax = avx2::softmax;
    t.key_scores = avx2::key_scores;
    t.weighted_rows = avx2::weighted_rows;
    t.weighted_rows_f16 = avx2::weighted_rows_f16;
    t.weighted_rows_q8_0 = avx2::weighted_rows_q8_0;
    t.causal_conv = avx2::causal_conv;
    t.rope_neox = avx2::rope_neox;
    t.gdn_recurrence_heads = avx2::gdn_recurrence_heads;
    t.stream_sum = avx2::stream_sum;
    t.int8_peak_probe = avx2::int8_peak_probe;
    t.fma_peak_probe = avx2::fma_peak_probe;
    t.bf16_peak_probe = ref::bf16_peak_probe;
    return t;
}

// Row-group matmuls at least this wide go through AMX tiles when they are on: a tile dot product
// covers 16 tokens, so narrower batches leave most of it idle.
constexpr int64_t kAmxFromWidth = 8;

using GemmI8Rows = void (*)(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy,
                            int64_t r0, int64_t r1);

// The avx512 table's row-group matmul at widths under kAmxFromWidth: `Narrow`.
template <GemmI8Rows Narrow>
void gemm_i8_rows_avx512_amx(const WeightMatrix& w, const QuantizedColumns& x, float* y,
                             int64_t ldy, int64_t r0, int64_t r1) {
    // (The K types have no AMX form: their wide products stay on the AVX-512 tiles.)
    const bool amx_type = w.type == WType::Q4_0R || w.type == WType::Q8_0R;
    if (x.n >= kAmxFromWidth && amx_type) return amx::gemm_row_groups(w, x, y, ldy, r0, r1);
    Narrow(w, x, y, ldy, r0, r1);
}

// The avx512 table whose row-group matmuls up to kAmxFromWidth columns (all of them without
// AMX) run `narrow`, which prefetches as `narrow_fetch` says.
template <GemmI8Rows Narrow>
KernelTable avx512_table_with(const char* narrow_fetch) {
    KernelTable t;
    t.isa = "avx512";
    t.gemm_rows = avx512::gemm_rows;
    t.gemm_i8_rows = Narrow;
    t.narrow_fetch = narrow_fetch;
    t.quantize_columns = avx512::quantize_columns;
    t.int8_dot_fast = true;
    t.row_groups = row_group_layouts();
    t.share_narrow_tails = avx512::shares_narrow_tails_on_this_cpu();
    if (amx_from_env() && x86::cpu_supports_amx_int8()) {
        t.gemm_i8_rows = gemm_i8_rows_avx512_amx<Narrow>;
        t.amx_from_width = kAmxFromWidth;
    }
    // AVX512_BF16 (Zen 4, Sapphire Rapids and later) adds the bf16 dot product; without it
    // the table stays the same for everything else.
    t.bf16_dot_fast = x86::cpu_supports_avx512bf16();
    t.gemm_bf16_rows = t.bf16_dot_fast ? avx512bf16::gemm_bf16_rows : ref::gemm_bf16_rows;
    t.rmsnorm = avx512::rmsnorm;
    t.l2norm = avx512::l2norm;
    t.silu = avx512::silu;
    t.sigmoid = avx512::sigmoid;
    t.swiglu = avx512::swiglu;
    t.softmax = avx512::softmax;
    t.key_scores = avx512::key_scores;
    t.weighted_rows = avx512::weighted_rows;
    t.weighted_rows_f16 = avx512::weighted_rows_f16;
    t.weighted_rows_q8_0 = avx512::weighted_rows_q8_0;
    t.causal_conv = avx512::causal_conv;
    t.rope_neox = avx512::rope_neox;
    t.gdn_recurrence_heads = avx512::gdn_recurrence_heads;
    t.stream_sum = avx512::stream_sum;
    t.int8_peak_probe = avx512::int8_peak_probe;
    t.fma_peak_probe = avx512::fma_peak_probe;
    t.bf16_peak_probe = t.bf16_dot_fast ? avx512bf16::bf16_peak_probe : ref::bf16_peak_probe;
    return t;
}

}  // namespace

const KernelTable* avx2_table() {
    static const KernelTable table = make_avx2_table();
    return &table;
}

// AVX2 plus AVX-VNNI's 256-bit dot products for the int8-dot kernels and the q8_0 key scores.
const KernelTable* avxvnni_table() {
    static const KernelTable table = [] {
        KernelTable t = make_avx2_table();
        t.isa = "avxvnni";
        t.gemm_i8_rows = avxvnni::gemm_i8_rows;
        t.quantize_columns = avxvnni::quantize_columns;
        t.int8_peak_probe = avxvnni::int8_peak_probe;
        t.key_scores = avxvnni::key_scores;
        return t;
    }();
    return &table;
}

const KernelTable* avx512_table() {
    static const KernelTable table = [] {
        switch (row_group_fetch_from_env()) {
            case RowGroupFetchSetting::Cursor:
                return avx512_table_with<avx512::gemm_i8_rows_cursor>("cursor");
            case RowGroupFetchSetting::Streams:
                return avx512_table_with<avx512::gemm_i8_rows_group_streams>("group streams");
            case RowGroupFetchSetting::Auto:
                break;
        }
        if (!avx512::prefetches_cursor_on_this_cpu())
            return avx512_table_with<avx512::gemm_i8_rows_group_streams>("group streams");
        // AMD: the cursor, timed against group streams while decoding (kernels.h says why).
        static const KernelTable streams =
            avx512_table_with<avx512::gemm_i8_rows_group_streams>("group streams");
        KernelTable t = avx512_table_with<avx512::gemm_i8_rows_cursor>("cursor");
        t.timed_alternative = &streams;
        return t;
    }();
    return &table;
}

}  // namespace nextn::x86
