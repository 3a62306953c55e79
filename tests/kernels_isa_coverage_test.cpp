// The kernel tables this CPU should offer, read from a second source: the flags Linux prints in
// /proc/cpuinfo (the kernel's own CPUID reading, with features the OS does not enable removed).
// Every "each ISA equals the reference" test loops over available_isas(); if the feature checks
// in cpu_features.cpp dropped a table the CPU has, those loops would shrink to the reference
// compared with itself and still pass. This test is what fails instead.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/cpu_info.h"
#include "kernels/kernels.h"

namespace nextn {
namespace {

#if NEXTN_ARM_KERNELS
// An aarch64 build: the neon table is always there (every aarch64 CPU has NEON), the dotprod one
// exactly where Linux's "Features" line lists the dot product (asimddp).
TEST(KernelIsaCoverage, TheDotprodTableFollowsTheCpuinfoFeatures) {
    const std::vector<std::string> isas = available_isas();
    EXPECT_NE(std::find(isas.begin(), isas.end(), "neon"), isas.end());
    std::string list;
    for (const std::string& isa : isas) list += " " + isa;
    std::printf("kernel tables checked by the ISA tests here:%s\n", list.c_str());
    std::istringstream words(cpuinfo_field("Features"));
    std::set<std::string> features;
    for (std::string w; words >> w;) features.insert(w);
    // qemu-user (make aarch64) shows the host's /proc/cpuinfo, which has no Features line.
    if (features.empty())
        GTEST_SKIP() << "no ARM 'Features' line in /proc/cpuinfo to check against";
    const bool have = std::find(isas.begin(), isas.end(), "dotprod") != isas.end();
    EXPECT_EQ(have, features.count("asimddp") > 0);
}
#elif !NEXTN_X86_KERNELS
// Built without src/kernels/x86/ (make portable, or a CPU with no SIMD kernels of ours): the
// reference is the one table, whatever the CPU's flags say.
TEST(KernelIsaCoverage, WithoutTheX86KernelsTheReferenceIsTheOneTable) {
    EXPECT_EQ(available_isas(), std::vector<std::string>{"scalar"});
    EXPECT_STREQ(kernels().isa, "scalar");
}
#else
// The first processor's "flags", split into words; empty when there are none (not Linux, or not
// x86, whose cpuinfo calls them "Features").
std::set<std::string> cpuinfo_flags() {
    std::istringstream words(cpuinfo_field("flags"));
    std::set<std::string> flags;
    for (std::string w; words >> w;) flags.insert(w);
    return flags;
}

bool has_all(const std::set<std::string>& flags, std::initializer_list<const char*> names) {
    return std::all_of(names.begin(), names.end(),
                       [&](const char* n) { return flags.count(n) > 0; });
}

// The tables and what each needs, as cpu_features.cpp documents it, in /proc/cpuinfo's names.
struct Expected {
    const char* isa;
    std::initializer_list<const char*> flags;
};
const Expected kTables[] = {
    {"avx2", {"avx2", "fma", "f16c"}},
    {"avxvnni", {"avx2", "fma", "f16c", "avx_vnni"}},
    {"avx512",
     {"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_vnni"}},
};

TEST(KernelIsaCoverage, EveryTableTheCpuinfoFlagsAllowIsAvailable) {
    const std::set<std::string> flags = cpuinfo_flags();
    if (flags.empty()) GTEST_SKIP() << "no x86 'flags' line in /proc/cpuinfo to check against";
    const std::vector<std::string> isas = available_isas();
    for (const Expected& e : kTables) {
        const bool want = has_all(flags, e.flags);
        const bool have = std::find(isas.begin(), isas.end(), e.isa) != isas.end();
        EXPECT_EQ(have, want) << "table '" << e.isa << "': /proc/cpuinfo says the CPU "
                              << (want ? "has" : "lacks") << " its features";
    }
    // The AVX512_BF16 dot product is a feature of the avx512 table, not a table of its own.
    if (has_all(flags, {"avx512_bf16"}) &&
        std::find(isas.begin(), isas.end(), "avx512") != isas.end()) {
        EXPECT_TRUE(kernels_for("avx512").bf16_dot_fast) << "the CPU has AVX512_BF16";
    }
    std::string list;
    for (const std::string& isa : isas) list += " " + isa;
    std::printf("kernel tables checked by the ISA tests here:%s\n", list.c_str());
}

#endif

}  // namespace
}  // namespace nextn
