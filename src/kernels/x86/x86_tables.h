#pragma once
// The x86 kernel tables dispatch.cpp chooses from (x86_tables.cpp). Each may be used only after
// its cpu_supports_*() (x86_kernels.h) said yes.
#include "kernels/kernels.h"

namespace nextn::x86 {

const KernelTable* avx2_table();
// AVX2 plus AVX-VNNI's 256-bit dot products.
const KernelTable* avxvnni_table();
// AVX-512 F/BW/VL/DQ with VNNI; AVX512_BF16 and AMX where present.
const KernelTable* avx512_table();

}  // namespace nextn::x86
