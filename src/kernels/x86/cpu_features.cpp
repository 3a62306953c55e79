// CPU feature checks for the x86 tables (compiled without ISA flags, so safe on any x86-64).
#include "kernels/x86/x86_kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__x86_64__) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace nextn::x86 {

#if defined(__x86_64__) || defined(__i386__)
namespace {

// Bit `bit` of register `reg` (0 eax, 1 ebx, 2 ecx, 3 edx) of CPUID leaf `leaf`, sub-leaf
// `subleaf`: for the features clang 14's __builtin_cpu_supports does not know (f16c, avxvnni).
bool cpuid_bit(unsigned leaf, unsigned subleaf, int reg, int bit) {
    unsigned r[4] = {};
    if (!__get_cpuid_count(leaf, subleaf, &r[0], &r[1], &r[2], &r[3])) return false;
    return (r[reg] >> bit) & 1u;
}

}  // namespace

// __builtin_cpu_supports("avx2") also checks that the OS saves the YMM register state (XCR0),
// which F16C and AVX-VNNI use as well.
bool cpu_supports_avx2() {
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           cpuid_bit(1, 0, 2, 29);  // CPUID.1:ECX[29] F16C
}

// AVX-VNNI: 256-bit int8 dot products with a VEX encoding (CPUs without AVX-512 VNNI too).
bool cpu_supports_avxvnni() {
    return cpu_supports_avx2() && cpuid_bit(7, 1, 0, 4);  // CPUID.(7,1):EAX[4] AVX-VNNI
}

// The avx512 translation units are compiled with F/BW/VL/DQ/VNNI, so the compiler may use any of
// them; require all. Not BF16: only the opt-in bf16-dot GEMM needs it (cpu_supports_avx512bf16),
// and requiring it had sent Ice Lake and Cascade Lake, which have VNNI but no BF16, to AVX2.
bool cpu_supports_avx512() {
    return cpu_supports_avx2() && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vnni");
}

bool cpu_supports_avx512bf16() { return cpu_supports_avx512() && __builtin_cpu_supports("avx512bf16"); }

#if defined(__x86_64__) && defined(__linux__)
// CPUID.(7,0):EDX bit 24 AMX-TILE, bit 25 AMX-INT8. Linux (5.16 on) enables the 8 KB tile data
// state per process only on request (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA);
// until then a tile instruction faults, so a refused request means no AMX.
bool cpu_supports_amx_int8() {
    static const bool usable = [] {
        if (!cpu_supports_avx512()) return false;
        if (!cpuid_bit(7, 0, 3, 24) || !cpuid_bit(7, 0, 3, 25)) return false;
        constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
        return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
    }();
    return usable;
}
#else
bool cpu_supports_amx_int8() { return false; }
#endif
#else
bool cpu_supports_avx2() { return false; }
bool cpu_supports_avxvnni() { return false; }
bool cpu_supports_avx512() { return false; }
bool cpu_supports_avx512bf16() { return false; }
bool cpu_supports_amx_int8() { return false; }
#endif

}  // namespace nextn::x86
