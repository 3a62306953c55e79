// CPU feature checks for the x86 tables (compiled without ISA flags, so safe on any x86-64).
#include "kernels/x86/x86_kernels.h"

namespace nextn::x86 {

#if defined(__x86_64__) || defined(__i386__)
// __builtin_cpu_supports also checks that the OS saves the wider register state (XCR0).
bool cpu_supports_avx2() {
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("f16c");
}

// AVX-VNNI: 256-bit int8 dot products with a VEX encoding (CPUs without AVX-512 VNNI too).
bool cpu_supports_avxvnni() { return cpu_supports_avx2() && __builtin_cpu_supports("avxvnni"); }

// The avx512 translation units are compiled with F/BW/VL/DQ/VNNI, so the compiler may use any of
// them; require all. Not BF16: only the opt-in bf16-dot GEMM needs it (cpu_supports_avx512bf16),
// and requiring it had sent Ice Lake and Cascade Lake, which have VNNI but no BF16, to AVX2.
bool cpu_supports_avx512() {
    return cpu_supports_avx2() && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vnni");
}

bool cpu_supports_avx512bf16() { return cpu_supports_avx512() && __builtin_cpu_supports("avx512bf16"); }
#else
bool cpu_supports_avx2() { return false; }
bool cpu_supports_avxvnni() { return false; }
bool cpu_supports_avx512() { return false; }
bool cpu_supports_avx512bf16() { return false; }
#endif

}  // namespace nextn::x86
