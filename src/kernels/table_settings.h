#pragma once
// The environment settings the kernel tables are built from, read once when the table is chosen
// (dispatch.cpp) and checked on every CPU, so that a bad value is an Error naming it even where
// no table reads it.
#include "kernels/weight.h"

namespace nextn {

// The int8 tables' weight layouts: NEXTN_Q4_0_LAYOUT, NEXTN_Q8_0_LAYOUT, NEXTN_Q4_K_LAYOUT,
// NEXTN_Q6_K_LAYOUT and NEXTN_Q5_K_LAYOUT, each "rows" (16-row groups, the default) or "chunked".
RowGroupLayouts row_group_layouts();

// NEXTN_AMX: "on" sends the avx512 table's wide Q4_0/Q8_0 products through AMX tiles where the
// CPU has them; unset, empty or "off" does not.
bool amx_from_env();

// NEXTN_ROW_GROUP_FETCH: how the avx512 table's decode-width row-group matmuls prefetch.
enum class RowGroupFetchSetting { Auto, Cursor, Streams };
RowGroupFetchSetting row_group_fetch_from_env();

}  // namespace nextn
