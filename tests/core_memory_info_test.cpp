// memory_info: MemAvailable read in bytes (the file gives kB), the up-front memory check's
// boundary and message, and the two size formats its messages use.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "core/error.h"
#include "core/memory_info.h"
#include "error_of.h"

namespace nextn {
namespace {

// A /proc/meminfo field in kB, read here with sscanf, apart from the code under test; 0 when
// absent. `format` is e.g. "MemAvailable: %zu kB".
size_t meminfo_kb(const char* format) {
    std::ifstream in("/proc/meminfo");
    std::string line;
    while (std::getline(in, line)) {
        size_t kb = 0;
        if (std::sscanf(line.c_str(), format, &kb) == 1) return kb;
    }
    return 0;
}

size_t mem_available_kb() { return meminfo_kb("MemAvailable: %zu kB"); }

TEST(MemoryInfo, AvailableIsMemAvailableInBytes) {
    const size_t kb = mem_available_kb();
    if (kb == 0) GTEST_SKIP() << "SKIPPED: no MemAvailable in /proc/meminfo";
    const double got = double(read_memory_info().available), want = 1024.0 * double(kb);
    // The figure moves between the two reads; kB taken as 1000 bytes would be 2.3% off.
    EXPECT_NEAR(got / want, 1.0, 0.005) << got << " bytes against " << kb << " kB";
}

TEST(MemoryInfo, RequireMemoryFailsOnlyBeyondWhatIsAvailable) {
    EXPECT_NO_THROW(require_memory(size_t(5) << 30, size_t(5) << 30, "x"));
    EXPECT_NO_THROW(require_memory(size_t(9) << 40, 0, "x"));  // 0: unknown, no check
    EXPECT_EQ(test::error_of([] {
                  require_memory(size_t(2'600'000'000), size_t(1'260'000'000), "the cache",
                                 "try --ctx 512", "the test's figure");
              }),
              "the cache needs 2.6 GB of memory but only 1.3 GB is available (the test's "
              "figure); try --ctx 512");
}

TEST(MemoryInfo, SizesSwitchToGigabytesAtOne) {
    EXPECT_EQ(size_text(999'900'000), "999.9 MB");
    EXPECT_EQ(size_text(1'000'000'000), "1.00 GB");
    EXPECT_EQ(size_text(12'340'000), "12.3 MB");
    EXPECT_EQ(gigabytes(1'260'000'000), "1.3 GB");
}

// MemoryInfo::swap_free is SwapFree, in bytes (the file gives kB). Swap moves slowly; 1 MiB of
// slack covers a page-out between the two reads. (On a machine without swap both are 0.)
TEST(MemoryInfo, SwapFreeIsSwapFreeInBytes) {
    const size_t kb = meminfo_kb("SwapFree: %zu kB");
    const double got = double(read_memory_info().swap_free), want = 1024.0 * double(kb);
    EXPECT_NEAR(got, want, double(1 << 20)) << got << " bytes against " << kb << " kB";
}

// Without a hint the message ends at the source, which defaults to MemAvailable
// (memory_info.h: "naming `what`, where the available figure comes from (`source`), then
// `hint`"): no "; " dangling after it.
TEST(MemoryInfo, RequireMemoryWithoutAHintEndsAtTheSource) {
    EXPECT_EQ(
        test::error_of([] { require_memory(size_t(2'600'000'000), size_t(1'260'000'000), "x"); }),
        "x needs 2.6 GB of memory but only 1.3 GB is available (MemAvailable in /proc/meminfo)");
    // One byte over is over.
    EXPECT_NE(test::error_of([] { require_memory(size_t(5) << 30 | 1, size_t(5) << 30, "y"); }),
              "(no error)");
}

}  // namespace
}  // namespace nextn
