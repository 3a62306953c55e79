// The environment settings of the kernel tables (table_settings.h).
#include "kernels/table_settings.h"

#include <cstdlib>
#include <string>

#include "core/error.h"

namespace nextn {

namespace {

// Whether the int8 tables hold a block type in 16-row groups: the environment variable `name`
// says "rows" or "chunked"; unset or empty gives `fallback`. Anything else is an Error naming it.
bool row_groups_from_env(const char* name, bool fallback) {
    const char* layout = std::getenv(name);
    if (!layout || !*layout) return fallback;
    if (std::string(layout) == "rows") return true;
    if (std::string(layout) == "chunked") return false;
    fail(name, "=", layout, ": unknown weight layout (known: chunked, rows)");
}

}  // namespace

// The int8 tables' layouts (avx2, avxvnni, avx512; neon, dotprod): Q4_0, Q8_0, and GGUF Q4_K,
// Q5_K and Q6_K in 16-row groups by default. On ARM no speed was measured (no ARM machine has run
// them): there the K-quants' groups are the compact layout (arm/arm_tables.cpp), and Q4_0 and
// Q8_0 follow x86's choice at the same bytes. The K-quants: kernels_bench BM_GemmQ4K / BM_GemmQ6K
// on the 2-core Xeon VM, 16-row groups over chunked, 0.44-0.90x the time at widths 1-8
// (docs/speed-log.md, "GGUF Q4_K and Q6_K in 16-row groups"). AVX-512: in the 0.8B model on the
// 2-core Zen 5 (tools/layout_ab) they took 0.89-1.00x the chunked layouts' time at widths 1, 2 and
// 4, and 0.83-0.92x for a 128-token prefill (gemm_row_groups_avx512.cpp; docs/speed-log.md, "Q4_0
// in 16-row groups"). The 256-bit kernels (x86/row_groups_256.h) on the 2-core Xeon VM: 0.78-0.97x
// at every width measured (docs/speed-log.md, "row groups for the 256-bit tables"). Q5_K:
// kernels_bench BM_GemmQ4K/N/1/5 against Q8_1FX, widths 1/2/4/8, avx512 0.56/0.58/0.65/0.54x the
// time, avxvnni 0.66/0.61/0.59/0.84x, avx2 0.56/0.58/0.55/0.64x (the 256-bit kernels
// took 1.13-1.24x at width 1 until the fifth-bit unpacking, x86/int8_dot_tiles.h q5_fifth_bits, was
// forced inline).
RowGroupLayouts row_group_layouts() {
    RowGroupLayouts groups;
    groups.q4_0 = row_groups_from_env("NEXTN_Q4_0_LAYOUT", true);
    groups.q8_0 = row_groups_from_env("NEXTN_Q8_0_LAYOUT", true);
    groups.q4_k = row_groups_from_env("NEXTN_Q4_K_LAYOUT", true);
    groups.q6_k = row_groups_from_env("NEXTN_Q6_K_LAYOUT", true);
    groups.q5_k = row_groups_from_env("NEXTN_Q5_K_LAYOUT", true);
    return groups;
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

// How the avx512 table's decode-width row-group matmuls prefetch: NEXTN_ROW_GROUP_FETCH says
// "cursor", "streams" or "auto"; unset or empty is auto. Anything else is an Error naming it.
RowGroupFetchSetting row_group_fetch_from_env() {
    const char* fetch = std::getenv("NEXTN_ROW_GROUP_FETCH");
    if (!fetch || !*fetch || std::string(fetch) == "auto") return RowGroupFetchSetting::Auto;
    if (std::string(fetch) == "cursor") return RowGroupFetchSetting::Cursor;
    if (std::string(fetch) == "streams") return RowGroupFetchSetting::Streams;
    fail("NEXTN_ROW_GROUP_FETCH=", fetch, ": unknown setting (known: auto, cursor, streams)");
}

}  // namespace nextn
