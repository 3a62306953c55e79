// Chooses the kernel table once; the threaded Gated-DeltaNet driver (the matmul drivers are in
// matmul.cpp).
#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/int8_dot.h"
#include "kernels/kernels.h"
#include "kernels/ref/ref.h"
#include "kernels/row_groups.h"
#include "kernels/table_settings.h"
#if NEXTN_X86_KERNELS
#include "kernels/x86/x86_kernels.h"
#include "kernels/x86/x86_tables.h"
#endif
#if NEXTN_ARM_KERNELS
#include "kernels/arm/arm_kernels.h"
#endif

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

// Worst to best. Each back-end's entries are guarded by whether its translation units are built
// (CMakeLists.txt); a CUDA one would join the same way.
constexpr Candidate kCandidates[] = {
    {"scalar", always, scalar_table},
#if NEXTN_X86_KERNELS
    {"avx2", x86::cpu_supports_avx2, x86::avx2_table},
    {"avxvnni", x86::cpu_supports_avxvnni, x86::avxvnni_table},
    {"avx512", x86::cpu_supports_avx512, x86::avx512_table},
#endif
#if NEXTN_ARM_KERNELS
    {"neon", always, arm::neon_table},  // part of every aarch64 CPU
    {"dotprod", arm::cpu_supports_dotprod, arm::dotprod_table},
#endif
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
