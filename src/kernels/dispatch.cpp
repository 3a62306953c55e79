// Chooses the kernel table once; the threaded Gated-DeltaNet driver (the matmul drivers are in
// matmul.cpp).
#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/int8_dot.h"
#include "kernels/kernels.h"
#include "kernels/row_groups.h"
#include "kernels/ref/ref.h"
#include "kernels/x86/x86_kernels.h"

namespace nextn {

namespace {

struct Candidate {
    const char* name;
    bool (*supported)();
    const KernelTable* (*table)();
};

bool always() { return true; }

const KernelTable* scalar_table() {
    static const KernelTable table = [] {
        KernelTable t;
        t.isa = "scalar";
        t.gemm_rows = ref::gemm_rows;
        t.gemm_i8_rows = ref::gemm_i8_rows;
        t.quantize_columns = ref::quantize_columns;
        t.gemm_bf16_rows = ref::gemm_bf16_rows;
        t.rmsnorm = ref::rmsnorm;
        t.l2norm = ref::l2norm;
        t.silu = ref::silu;
        t.sigmoid = ref::sigmoid;
        t.swiglu = ref::swiglu;
        t.softmax = ref::softmax;
        t.key_scores = ref::key_scores;
        t.weighted_rows = ref::weighted_rows;
        t.weighted_rows_f16 = ref::weighted_rows_f16;
        t.weighted_rows_q8_0 = ref::weighted_rows_q8_0;
        t.causal_conv = ref::causal_conv;
        t.rope_neox = ref::rope_neox;
        t.gdn_recurrence_heads = ref::gdn_recurrence_heads;
        t.stream_sum = ref::stream_sum;
        t.int8_peak_probe = ref::int8_peak_probe;
        t.fma_peak_probe = ref::fma_peak_probe;
        t.bf16_peak_probe = ref::bf16_peak_probe;
        return t;
    }();
    return &table;
}

// Whether the int8 tables hold a block type in 16-row groups: the environment variable `name`
// says "rows" or "chunked"; unset or empty gives `fallback`. Anything else is an Error naming it.
bool row_groups_from_env(const char* name, bool fallback) {
    const char* layout = std::getenv(name);
    if (!layout || !*layout) return fallback;
    if (std::string(layout) == "rows") return true;
    if (std::string(layout) == "chunked") return false;
    fail(name, "=", layout, ": unknown weight layout (known: chunked, rows)");
}

// The int8 tables' layouts (avx2, avxvnni, avx512): Q4_0, Q8_0, and GGUF Q4_K, Q5_K and Q6_K in
// 16-row groups by default. The K-quants: kernels_bench BM_GemmQ4K / BM_GemmQ6K on the 2-core
// Xeon VM, 16-row groups over chunked, 0.44-0.90x the time at widths 1-8 (docs/speed-log.md,
// "GGUF Q4_K and Q6_K in 16-row groups").
// AVX-512: in the 0.8B model on the 2-core Zen 5 (tools/layout_ab) they took 0.89-1.00x the
// chunked layouts' time at widths 1, 2 and 4, and 0.83-0.92x for a 128-token prefill
// (gemm_row_groups_avx512.cpp; docs/speed-log.md, "Q4_0 in 16-row groups"). The 256-bit kernels
// (x86/row_groups_256.h) on the 2-core Xeon VM: 0.78-0.97x at every width measured
// (docs/speed-log.md, "row groups for the 256-bit tables"). Q5_K: kernels_bench BM_GemmQ4K/N/1/5
// against Q8_1FX, widths 1/2/4/8, avx512 0.56/0.58/0.65/0.54x the time, avxvnni
// 0.66/0.61/0.59/0.84x, avx2 0.56/0.58/0.55/0.64x (the 256-bit kernels took 1.13-1.24x at width 1
// until the fifth-bit unpacking, x86/int8_dot_tiles.h q5_fifth_bits, was forced inline).
RowGroupLayouts row_group_layouts() {
    RowGroupLayouts groups;
    groups.q4_0 = row_groups_from_env("NEXTN_Q4_0_LAYOUT", true);
    groups.q8_0 = row_groups_from_env("NEXTN_Q8_0_LAYOUT", true);
    groups.q4_k = row_groups_from_env("NEXTN_Q4_K_LAYOUT", true);
    groups.q6_k = row_groups_from_env("NEXTN_Q6_K_LAYOUT", true);
    groups.q5_k = row_groups_from_env("NEXTN_Q5_K_LAYOUT", true);
    return groups;
}

// Built here, in a translation unit without ISA flags (see x86/x86_kernels.h).
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

// Whether the avx512 table uses AMX tiles where the CPU has them: NEXTN_AMX says "on" or "off";
// unset or empty is off, because the AMX kernel is not yet faster than the AVX-512 one (2-core
// Sapphire-Rapids-class VM, AMX time over AVX-512 time: a 256 x 1024 matrix in L2, one thread,
// Q8_0R widths 8, 16, 64 0.73-0.74, 0.78-0.79, 0.91-1.12, Q4_0R 1.45-1.56, 1.01-1.02, 1.14-1.16;
// a 512-token prefill of the 0.8B 1.03-1.41 (Q8_0) and 1.19-1.28 (Q4_0): the vector unit's
// scaling of each block's 16 x 16 sums does not overlap the tile unit's work; x86/amx/).
// Anything else is an Error naming it.
bool amx_from_env() {
    const char* amx = std::getenv("NEXTN_AMX");
    if (!amx || !*amx || std::string(amx) == "off") return false;
    if (std::string(amx) == "on") return true;
    fail("NEXTN_AMX=", amx, ": unknown setting (known: on, off)");
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

// How the avx512 table's decode-width row-group matmuls prefetch: NEXTN_ROW_GROUP_FETCH says
// "cursor", "streams" or "auto"; unset or empty is auto. Anything else is an Error naming it.
enum class RowGroupFetchSetting { Auto, Cursor, Streams };
RowGroupFetchSetting row_group_fetch_from_env() {
    const char* fetch = std::getenv("NEXTN_ROW_GROUP_FETCH");
    if (!fetch || !*fetch || std::string(fetch) == "auto") return RowGroupFetchSetting::Auto;
    if (std::string(fetch) == "cursor") return RowGroupFetchSetting::Cursor;
    if (std::string(fetch) == "streams") return RowGroupFetchSetting::Streams;
    fail("NEXTN_ROW_GROUP_FETCH=", fetch, ": unknown setting (known: auto, cursor, streams)");
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

// Worst to best. A NEON or CUDA back-end adds its entry here (guarded by its architecture).
constexpr Candidate kCandidates[] = {
    {"scalar", always, scalar_table},
    {"avx2", x86::cpu_supports_avx2, avx2_table},
    {"avxvnni", x86::cpu_supports_avxvnni, avxvnni_table},
    {"avx512", x86::cpu_supports_avx512, avx512_table},
};

std::string candidate_names() {
    std::string names;
    for (const Candidate& c : kCandidates) names += (names.empty() ? "" : ", ") + std::string(c.name);
    return names;
}

}  // namespace

const KernelTable& reference_kernels() { return *scalar_table(); }

std::string narrow_fetch_summary(const KernelTable& k) {
    if (!k.timed_alternative) return k.narrow_fetch;
    return std::string(k.narrow_fetch) + " or " + k.timed_alternative->narrow_fetch +
           ", timed against each other while decoding";
}

std::vector<std::string> available_isas() {
    std::vector<std::string> names;
    for (const Candidate& c : kCandidates)
        if (c.supported()) names.push_back(c.name);
    return names;
}

const KernelTable& kernels_for(const std::string& isa) {
    for (const Candidate& c : kCandidates) {
        if (isa != c.name) continue;
        if (!c.supported())
            fail("kernel ISA '", isa, "' is not supported by this CPU (available: ",
                 [] {
                     std::string s;
                     for (const std::string& n : available_isas()) s += (s.empty() ? "" : ", ") + n;
                     return s;
                 }(),
                 ")");
        return *c.table();
    }
    fail("unknown kernel ISA '", isa, "' (known: ", candidate_names(), ")");
}

const KernelTable& kernels() {
    static const KernelTable& chosen = []() -> const KernelTable& {
        // The layout variables are checked on every CPU, before NEXTN_ISA: a bad value is an error
        // naming it even where no table reads it.
        row_group_layouts();
        amx_from_env();
        row_group_fetch_from_env();
        const char* forced = std::getenv("NEXTN_ISA");
        if (forced && *forced) {
            try {
                return kernels_for(forced);
            } catch (const Error& e) {
                fail("NEXTN_ISA=", forced, ": ", e.what());
            }
        }
        return kernels_for(available_isas().back());
    }();
    return chosen;
}

void gdn_recurrence(const KernelTable& kt, const float* state_in, float* state_out,
                    int64_t out_stride, const float* q, const float* k, const float* v,
                    const float* g, const float* beta, int64_t T, int Hk, int Hv, int Dk, int Dv,
                    bool tiled_heads, float* out, ThreadPool& pool, GdnHeadsDone heads_done) {
    if (Hk <= 0 || Hv <= 0 || Hv % Hk || Dk <= 0 || Dv <= 0)
        fail("gdn_recurrence: bad head layout Hk=", Hk, " Hv=", Hv, " Dk=", Dk, " Dv=", Dv);
    auto heads = [&](int j0, int j1) {
        kt.gdn_recurrence_heads(state_in, state_out, out_stride, q, k, v, g, beta, T, Hk, Hv, Dk,
                                Dv, tiled_heads, out, j0, j1);
        if (heads_done.fn) heads_done.fn(heads_done.ctx, j0, j1);
    };
    if (int64_t(Hv) * Dk * Dv * T < kMinParallelWork) {  // too little work to wake threads
        heads(0, Hv);
        return;
    }
    pool.run(Hv, [&](int64_t j0, int64_t j1) { heads(int(j0), int(j1)); });
}

}  // namespace nextn
