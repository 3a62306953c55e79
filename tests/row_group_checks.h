#pragma once
// Shapes and checks shared by the row-group layout tests (kernels_row_groups_test,
// kernels_k_quant_rows_test, kernels_gguf_rows_test):
// a row-group matrix's int8 product called directly on row ranges that start and end inside
// 16-row groups (a matmul's row split falls on whole groups, so the width tests never reach
// them), on every table and, on x86, on the AVX-512 kernel with each way of prefetching and with
// and without GFNI. The rows in range must get the reference's bits, the others stay untouched.
// And the layout variables read in a fresh process (a death test's child).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "kernel_test_helpers.h"
#include "core/error.h"
#include "kernels/int8_dot.h"
#include "kernels/kernels.h"
#if NEXTN_X86_KERNELS
#include "kernels/x86/x86_kernels.h"
#endif

namespace nextn::test {

using RowRange = std::pair<int64_t, int64_t>;

struct Shape {
    int64_t rows, cols;
};
// Whole 32-value blocks: 37 and 5 rows leave part of a last group; 96 and 160 columns odd block
// counts (3, 5: scale padding) and ragged activation chunks; 544 a second chunk of one block; 61
// and 150 rows tiles of four groups (the narrowest widths' tiles), the last partial, or followed
// by a pair; 2144 columns (67 blocks) rows long enough for four-group tiles at widths 5-8 too
// (group_stream_tile_groups), 100 rows such a tile and three groups.
inline const std::vector<Shape> kBlockShapes = {{37, 96},  {16, 1024}, {5, 32},   {40, 160},  {19, 544},
                                                {64, 512}, {61, 96},   {150, 64}, {100, 2144}};
// Whole 256-value super-blocks (the K-quants, IQ4_XS): 37, 5 and 19 rows leave part of a last
// group; 61 and 150 rows make tiles of four groups, the last partial or followed by a pair; 768
// columns 3 super-blocks (24 blocks: a ragged second activation chunk); 2560 five chunks; 100 rows
// of 2304 columns, rows long enough for four-group tiles at widths 5-8 too, and three groups.
inline const std::vector<Shape> kSuperBlockShapes = {{37, 256}, {16, 1024}, {5, 512},  {19, 768},
                                                     {61, 256}, {150, 512}, {3, 2560}, {100, 2304}};

// Calls product(qx, y, r0, r1) for each width n and range and compares y (prefilled with -1) with
// the reference's; `what` names the case in a failure. Returns false after the first failure.
template <class Product>
bool ranges_equal_reference(const WeightMatrix& w, std::initializer_list<int64_t> widths,
                            std::initializer_list<RowRange> ranges, uint32_t seed, const std::string& what,
                            Product&& product) {
    for (int64_t n : widths) {
        const std::vector<float> x = random_normal(size_t(n * w.cols), seed);
        QuantizedColumns qx;
        resize_columns(n, w.cols, qx);
        ref::quantize_columns(x.data(), w.cols, qx, 0, n);
        for (auto [r0, r1] : ranges) {
            std::vector<float> want(size_t(n * w.rows), -1.0f), got(want.size(), -1.0f);
            ref::gemm_i8_rows(w, qx, want.data(), w.rows, r0, r1);
            product(qx, got.data(), r0, r1);
            EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
                << what << " " << wtype_name(w.type) << " rows " << r0 << ".." << r1 << " n=" << n;
            if (::testing::Test::HasFailure()) return false;
        }
    }
    return true;
}

// Every table's gemm_i8_rows on those ranges.
inline void expect_every_table_on_ranges(const WeightMatrix& w, std::initializer_list<int64_t> widths,
                                         std::initializer_list<RowRange> ranges, uint32_t seed) {
    for (const std::string& isa : available_isas())
        if (!ranges_equal_reference(w, widths, ranges, seed, isa,
                                    [&](const QuantizedColumns& qx, float* y, int64_t r0, int64_t r1) {
                                        kernels_for(isa).gemm_i8_rows(w, qx, y, w.rows, r0, r1);
                                    }))
            return;
}

// Every table's matmul of w with n = 1..16 random columns, on one thread and on two, gives the
// reference's bits for those columns: column j of a width-n product is column j of the width-16
// one, so a column's value never depends on the batch width or the thread count.
inline void expect_every_table_bitwise_for_every_width(const WeightMatrix& w, uint32_t seed) {
    const std::vector<float> x = random_normal(size_t(16 * w.cols), seed);
    const std::vector<float> want = matmul_on(reference_kernels(), w, x, 16, 1);
    for (const std::string& isa : available_isas())
        for (int64_t n = 1; n <= 16; ++n)
            for (int threads : {1, 2}) {
                const std::vector<float> got = matmul_on(kernels_for(isa), w, x, n, threads);
                ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
                    << isa << " " << wtype_name(w.type) << " " << w.rows << "x" << w.cols
                    << " n=" << n << " threads=" << threads;
            }
}

// Five columns at the activation codes' extremes (+-127: columns of one sign, then signs in runs
// that differ by column): every table's matmul of w gives the reference's bits, the integer sums
// at their largest.
inline void expect_every_table_bitwise_on_extreme_activations(const WeightMatrix& w, const std::string& what) {
    std::vector<float> x(size_t(5 * w.cols));
    for (size_t i = 0; i < x.size(); ++i) {
        const size_t col = i / size_t(w.cols);
        x[i] = col == 0 ? 3.0f : col == 1 ? -3.0f : (i / (col + 3)) % 2 ? 3.0f : -3.0f;
    }
    const std::vector<float> want = matmul_on(reference_kernels(), w, x, 5, 1);
    for (const std::string& isa : available_isas()) {
        const std::vector<float> got = matmul_on(kernels_for(isa), w, x, 5, 2);
        ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float))) << isa << " " << what;
    }
}

// A prefill's width (above the 16 of a verify: the cursor's passes of four columns, only the
// first one fetching, Q6_KR's codes unpacked once a tile): every table's matmul of w with
// kPrefillWidth random columns gives the reference's bits, on one thread and on two.
inline constexpr int64_t kPrefillWidth = 40;  // 10 passes of 4 columns
inline void expect_every_table_bitwise_at_prefill_width(const WeightMatrix& w, uint32_t seed) {
    const std::vector<float> x = random_normal(size_t(kPrefillWidth * w.cols), seed);
    const std::vector<float> want = matmul_on(reference_kernels(), w, x, kPrefillWidth, 1);
    for (const std::string& isa : available_isas())
        for (int threads : {1, 2}) {
            const std::vector<float> got =
                matmul_on(kernels_for(isa), w, x, kPrefillWidth, threads);
            ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
                << isa << " " << wtype_name(w.type) << " " << w.rows << "x" << w.cols
                << " threads=" << threads;
        }
}

#if NEXTN_X86_KERNELS
inline bool have_avx512() {
    const std::vector<std::string> isas = available_isas();
    return std::find(isas.begin(), isas.end(), "avx512") != isas.end();
}

// The AVX-512 row-group kernel on those ranges, with and without GFNI (where the CPU has it),
// each way of prefetching forced (the CPU picks one per width; the others are some other CPU's).
inline void expect_avx512_every_fetch_way_on_ranges(const WeightMatrix& w, std::initializer_list<int64_t> widths,
                                                    std::initializer_list<RowRange> ranges, uint32_t seed) {
    for (bool gfni : {false, true}) {
        if (gfni && !__builtin_cpu_supports("gfni")) continue;
        for (avx512::RowGroupFetch fetch :
             {avx512::RowGroupFetch::ForThisCpu, avx512::RowGroupFetch::Cursor,
              avx512::RowGroupFetch::GroupStreams, avx512::RowGroupFetch::NarrowGroupStreams,
              avx512::RowGroupFetch::HardwareStream}) {
            const std::string what =
                std::string(gfni ? "GFNI" : "shift and mask") + ", fetch " + std::to_string(int(fetch));
            if (!ranges_equal_reference(w, widths, ranges, seed, what,
                                        [&](const QuantizedColumns& qx, float* y, int64_t r0, int64_t r1) {
                                            avx512::gemm_row_groups(w, qx, y, w.rows, r0, r1, gfni, fetch);
                                        }))
                return;
        }
    }
}
#endif

// The layouts table `isa` reads, as an exit code: 64 plus 1 (Q4_0 in row groups), 2 (Q8_0), 4
// (Q4_K), 8 (Q6_K), 16 (Q5_K). For a death test's child: sets `variable` to `layout` first (the
// table is built on first use, in the child), and exits 3 with the error when the value is bad.
[[noreturn]] inline void exit_with_layouts(const std::string& isa, const char* variable, const char* layout) {
    // The other variables unset: the defaults are what the caller expects, whatever the shell set.
    for (const char* v : {"NEXTN_Q4_0_LAYOUT", "NEXTN_Q8_0_LAYOUT", "NEXTN_Q4_K_LAYOUT", "NEXTN_Q5_K_LAYOUT",
                          "NEXTN_Q6_K_LAYOUT"})
        unsetenv(v);
    setenv(variable, layout, 1);
    try {
        const RowGroupLayouts g = kernels_for(isa).row_groups;
        std::exit(64 + (g.q4_0 ? 1 : 0) + (g.q8_0 ? 2 : 0) + (g.q4_k ? 4 : 0) + (g.q6_k ? 8 : 0) + (g.q5_k ? 16 : 0));
    } catch (const Error& e) {
        std::fprintf(stderr, "%s\n", e.what());
        std::exit(3);
    }
}
// exit_with_layouts' code for the defaults: every type in row groups.
inline constexpr int kDefaultLayoutsCode = 64 + 1 + 2 + 4 + 8 + 16;

}  // namespace nextn::test
