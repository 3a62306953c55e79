// The AMX-INT8 row-group kernel (x86/amx/): called directly, it gives the scalar reference's bits
// for Q4_0R and Q8_0R at every width 1..40 (whole and partial 16-token tiles), on rows that are
// not whole groups, on row ranges that start and end inside groups (rows outside untouched), on
// rows longer than one gathered pass of blocks (the accumulators carried through y) and at the
// codes' extremes; NEXTN_AMX turns it off or is an error naming itself. SKIPPED where the CPU or
// the OS has no AMX-INT8.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "kernel_test_helpers.h"
#include "kernels/int8_dot.h"
#include "kernels/kernels.h"
#include "kernels/row_groups.h"
#if NEXTN_X86_KERNELS
#include "kernels/x86/x86_kernels.h"
#endif

namespace nextn {
namespace {

#if NEXTN_X86_KERNELS
using test::random_normal;

const WType kRowGroupTypes[] = {WType::Q4_0R, WType::Q8_0R};

// rows x cols of `type` from random values, and n random activation columns quantized.
struct Case {
    WeightMatrix w;
    QuantizedColumns x;
};
Case make_case(WType type, int64_t rows, int64_t cols, int64_t n, uint32_t seed) {
    const std::vector<float> wv = random_normal(size_t(rows * cols), seed);
    Case c{make_weight_f32(wv.data(), rows, cols, type), {}};
    const std::vector<float> xv = random_normal(size_t(n * cols), seed + 1);
    resize_columns(n, cols, c.x);
    ref::quantize_columns(xv.data(), cols, c.x, 0, n);
    return c;
}

// y for rows [r0, r1) of every column by the reference and by AMX, both into buffers prefilled
// with -1 (so rows outside the range must stay -1 in both).
void expect_same_bits(const Case& c, int64_t r0, int64_t r1, const std::string& what) {
    const int64_t rows = c.w.rows, n = c.x.n;
    std::vector<float> want(size_t(n * rows), -1.0f), got(want.size(), -1.0f);
    ref::gemm_i8_rows(c.w, c.x, want.data(), rows, r0, r1);
    amx::gemm_row_groups(c.w, c.x, got.data(), rows, r0, r1);
    ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
        << what << " rows " << r0 << ".." << r1 << " n=" << n;
}

constexpr const char* kNoAmx = "no AMX-INT8 on this CPU or OS";

TEST(KernelsAmx, EqualsReferenceBitwiseForEveryWidth) {
    if (!x86::cpu_supports_amx_int8()) GTEST_SKIP() << kNoAmx;
    for (WType type : kRowGroupTypes)
        for (int64_t n = 1; n <= 40; ++n) {
            const Case c = make_case(type, 37, 160, n, uint32_t(11 + n));  // a part group, 5 blocks
            expect_same_bits(c, 0, 37, wtype_name(type));
        }
}

TEST(KernelsAmx, RowRangesInsideGroupsAndLongRowsEqualReference) {
    if (!x86::cpu_supports_amx_int8()) GTEST_SKIP() << kNoAmx;
    // 1056 and 2080 columns: 33 and 65 blocks, one block past each gathered pass of 32.
    const std::pair<int64_t, int64_t> shapes[] = {{70, 1056}, {21, 2080}, {48, 32}};
    for (WType type : kRowGroupTypes)
        for (auto [rows, cols] : shapes)
            for (int64_t n : {1, 9, 16, 17, 33}) {
                const Case c = make_case(type, rows, cols, n, uint32_t(rows + cols + n));
                for (auto [r0, r1] : {std::pair<int64_t, int64_t>{5, std::min<int64_t>(29, rows)}, {0, rows}, {17, 18},
                                      {rows - 3, rows}})
                    expect_same_bits(c, r0, r1, std::string(wtype_name(type)) + " " + std::to_string(cols) + " cols");
            }
}

// Codes at their extremes (Q8_0's +-127, Q4_0's 0 and 15) against activations at +-127: the
// tile's int32 sums stay exact.
TEST(KernelsAmx, ExtremeCodesEqualReference) {
    if (!x86::cpu_supports_amx_int8()) GTEST_SKIP() << kNoAmx;
    const int64_t rows = 21, cols = 512, n = 19;
    std::vector<float> wv(size_t(rows * cols)), xv(size_t(n * cols));
    for (size_t i = 0; i < wv.size(); ++i) wv[i] = (i / 7) % 2 ? 1.0f : -1.0f;
    for (size_t i = 0; i < xv.size(); ++i) xv[i] = (i / 5) % 2 ? 3.0f : -3.0f;
    for (WType type : kRowGroupTypes) {
        Case c{make_weight_f32(wv.data(), rows, cols, type), {}};
        resize_columns(n, cols, c.x);
        ref::quantize_columns(xv.data(), cols, c.x, 0, n);
        expect_same_bits(c, 0, rows, wtype_name(type));
    }
}

// NEXTN_AMX=on makes the avx512 table use AMX from its width; off, unset or empty leaves it
// without (the default while the kernel is not faster); any other value is an error naming it. Each in a fresh process (the table is built once).
// Exits 1 where the table uses AMX from some width above 1 (and a matmul of that width through
// the table equals the reference bitwise; 3 if not), 0 where it has no AMX, 100 on an error.
int amx_in_fresh_table(const char* setting) {
    setenv("NEXTN_AMX", setting, 1);
    try {
        const KernelTable& table = kernels_for("avx512");
        const int64_t from = table.amx_from_width;
        if (from > 1) {  // the table's route through AMX gives the reference's bits
            const int64_t rows = 37, cols = 160, n = from + 1;
            const std::vector<float> wv = random_normal(size_t(rows * cols), 40);
            const WeightMatrix w = make_weight_f32(wv.data(), rows, cols, WType::Q8_0R);
            const std::vector<float> x = random_normal(size_t(n * cols), 41);
            const std::vector<float> want = test::matmul_on(reference_kernels(), w, x, n, 1);
            const std::vector<float> got = test::matmul_on(table, w, x, n, 2);
            std::exit(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0 ? 1 : 3);
        }
        std::exit(from == 0 ? 0 : 2);
    } catch (const Error& e) {
        std::fprintf(stderr, "%s\n", e.what());
        std::exit(100);
    }
}

TEST(KernelsAmxDeathTest, ChosenByEnvironment) {
    if (!x86::cpu_supports_amx_int8()) GTEST_SKIP() << kNoAmx;
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(amx_in_fresh_table("off"), testing::ExitedWithCode(0), "");
    EXPECT_EXIT(amx_in_fresh_table("on"), testing::ExitedWithCode(1), "");
    EXPECT_EXIT(amx_in_fresh_table(""), testing::ExitedWithCode(0), "");
    EXPECT_EXIT(amx_in_fresh_table("maybe"), testing::ExitedWithCode(100), "NEXTN_AMX=maybe: unknown setting");
}
#endif

}  // namespace
}  // namespace nextn
