// ZeroPagesBuffer (the KV caches and GDN state slots): reads as zeros before any write, keeps
// what is written, copies and moves like a value, and takes no memory until written.
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <utility>

#include "core/zero_pages.h"

namespace nextn {
namespace {

size_t resident_bytes() {
    std::ifstream statm("/proc/self/statm");
    size_t total = 0, resident = 0;
    statm >> total >> resident;
    return resident * size_t(sysconf(_SC_PAGESIZE));
}

TEST(ZeroPagesBuffer, ReadsZeroAndKeepsWrites) {
    for (size_t n : {size_t(1), size_t(1025), size_t(3) << 20}) {  // 3M floats: several huge pages
        ZeroPagesBuffer b(n);
        ASSERT_EQ(n, b.size());
        ASSERT_NE(nullptr, b.data());
        EXPECT_EQ(0u, reinterpret_cast<uintptr_t>(b.data()) % 64) << n;  // the GDN kernel's alignment
        for (size_t i = 0; i < n; i += 997) EXPECT_EQ(0.0f, b.data()[i]) << i;
        EXPECT_EQ(0.0f, b.data()[n - 1]);
        b.data()[n - 1] = -2.0f;
        b.data()[0] = 1.5f;
        EXPECT_EQ(1.5f, b.data()[0]);
        if (n > 1) {
            EXPECT_EQ(-2.0f, b.data()[n - 1]);
        }
    }
    ZeroPagesBuffer empty(0);
    EXPECT_EQ(0u, empty.size());
}

TEST(ZeroPagesBuffer, CopiesAndMovesLikeAValue) {
    ZeroPagesBuffer a(5000);
    for (size_t i = 0; i < a.size(); ++i) a.data()[i] = float(i);
    ZeroPagesBuffer b(a);
    EXPECT_NE(a.data(), b.data());
    for (size_t i = 0; i < b.size(); ++i) ASSERT_EQ(float(i), b.data()[i]);
    b.data()[7] = -1.0f;
    EXPECT_EQ(7.0f, a.data()[7]);  // a deep copy
    ZeroPagesBuffer c(10);
    c = b;
    EXPECT_EQ(5000u, c.size());
    EXPECT_EQ(-1.0f, c.data()[7]);
    const float* moved = c.data();
    ZeroPagesBuffer d(std::move(c));
    EXPECT_EQ(moved, d.data());
    EXPECT_EQ(0u, c.size());
    EXPECT_EQ(nullptr, c.data());
    a = std::move(d);
    EXPECT_EQ(moved, a.data());
    EXPECT_EQ(-1.0f, a.data()[7]);
}

// 512 MB mapped: resident memory barely moves until pages are written (a zero-filled vector
// would add all 512 MB at once), and reading it back maps no private memory either.
TEST(ZeroPagesBuffer, TakesNoMemoryUntilWritten) {
    const size_t before = resident_bytes();
    ZeroPagesBuffer b(size_t(128) << 20);  // 128M floats
    const size_t mapped = resident_bytes();
    EXPECT_LT(mapped, before + (size_t(32) << 20)) << "resident grew by " << (mapped - before);
    // One value a 4 KiB page, all of them read: the kernel's shared zero page answers.
    volatile float sum = 0.0f;
    for (size_t i = 0; i < b.size(); i += 1024) sum = sum + b.data()[i];
    EXPECT_EQ(0.0f, sum);
    EXPECT_LT(resident_bytes(), before + (size_t(32) << 20))
        << "reading grew resident memory by " << (resident_bytes() - before);
    b.data()[0] = 1.0f;
    b.data()[b.size() - 1] = 1.0f;
    EXPECT_LT(resident_bytes(), before + (size_t(64) << 20));
}

// Assigning over a buffer gives its pages back (zero_pages.h: it "copies and moves like a
// value"; the KV caches are reassigned per sequence, and a leaked mapping would hold a whole
// cache's written pages). 64 MB written, then replaced by a move and by a copy of a small
// buffer: resident memory must fall by most of the 64 MB each time.
TEST(ZeroPagesBuffer, AssigningOverABufferReleasesItsPages) {
    const size_t n = size_t(16) << 20;  // 16M floats, 64 MB
    const size_t drop = size_t(48) << 20;
    {
        ZeroPagesBuffer big(n);
        for (size_t i = 0; i < n; i += 1024) big.data()[i] = 1.0f;  // every 4 KiB page
        const size_t written = resident_bytes();
        big = ZeroPagesBuffer(16);
        EXPECT_EQ(16u, big.size());
        EXPECT_GT(written, resident_bytes() + drop) << "move assignment kept the old pages";
    }
    {
        ZeroPagesBuffer big(n);
        for (size_t i = 0; i < n; i += 1024) big.data()[i] = 1.0f;
        const size_t written = resident_bytes();
        const ZeroPagesBuffer small(16);
        big = small;
        EXPECT_EQ(16u, big.size());
        EXPECT_GT(written, resident_bytes() + drop) << "copy assignment kept the old pages";
    }
}

}  // namespace
}  // namespace nextn
