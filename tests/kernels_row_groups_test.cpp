// Q4_0 and Q8_0 in 16-row groups (kernels/row_groups.h): the layouts hold exactly the block
// values (repacked or built row by row, to the same bytes, padding zeroed); the scalar reference
// agrees with the chunked reference on the same values to within f32 summation-order error, and with the
// exact sum to within the activation rounding; every table's kernel equals the reference bit for
// bit on random data (row counts that are not whole groups, odd block counts, ragged chunks, row
// ranges that start inside a group, widths 1..16, 1 and 2 threads, with and without GFNI), so a
// column's value never depends on the batch width; and the load path picks the layout where the
// table reads it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "core/thread_pool.h"
#include "error_of.h"
#include "kernel_test_helpers.h"
#include "kernels/int8_dot.h"
#include "kernels/kernels.h"
#include "kernels/quant.h"
#include "kernels/row_groups.h"
#include "model/weights.h"
#include "row_group_checks.h"
#if NEXTN_X86_KERNELS
#include "kernels/x86/x86_kernels.h"
#endif

namespace nextn {
namespace {

using test::matmul_on;
using test::random_normal;

using test::Shape;
const std::vector<Shape>& kShapes = test::kBlockShapes;

const WType kRowGroupTypes[] = {WType::Q4_0R, WType::Q8_0R};

// A random matrix in `type`'s block type (Q4_0 for Q4_0R, Q8_0 for Q8_0R).
WeightMatrix blocks_for(WType type, Shape s, uint32_t seed) {
    const std::vector<float> w = random_normal(size_t(s.rows * s.cols), seed);
    return make_weight_f32(w.data(), s.rows, s.cols, int8_dot_source_type(type));
}

TEST(KernelsRowGroups, HoldEveryBlockValueAndZeroPadding) {
    for (WType type : kRowGroupTypes) {
        for (Shape s : kShapes) {
            SCOPED_TRACE(std::string(wtype_name(type)) + " " + std::to_string(s.rows) + "x" + std::to_string(s.cols));
            const std::vector<float> values = random_normal(size_t(s.rows * s.cols), 1);
            const WeightMatrix q = make_weight_f32(values.data(), s.rows, s.cols, int8_dot_source_type(type));
            const WeightMatrix r = repack_for_int8_dot(q, type);
            const WeightMatrix built = make_weight_f32(values.data(), s.rows, s.cols, type);
            ASSERT_EQ(type, r.type);
            ASSERT_EQ(type, built.type);
            const size_t group = row_group_bytes(type, s.cols);
            EXPECT_EQ(0u, group % 64) << "groups stay 64-byte aligned";
            EXPECT_EQ(size_t(row_groups(s.rows)) * group, r.nbytes());
            EXPECT_EQ(wtype_matrix_bytes(type, s.rows, s.cols), r.nbytes());
            // Repacked and built row by row: the same bytes, padding included.
            ASSERT_EQ(r.nbytes(), built.nbytes());
            EXPECT_EQ(0, std::memcmp(r.data, built.data, r.nbytes()));
            std::vector<float> a(size_t(s.cols)), b(size_t(s.cols));
            for (int64_t row = 0; row < s.rows; ++row) {
                weight_row_f32(q, row, a.data());
                weight_row_f32(r, row, b.data());
                ASSERT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << "row " << row;
            }
            // The last group's lanes past the rows, and the padding of odd block counts (the last
            // pair's missing second block: its codes and scales), are 0.
            const uint8_t* last = r.data + size_t(row_groups(s.rows) - 1) * group;
            const int64_t code_bytes = row_group_block_code_bytes(type), blocks = s.cols / 32;
            for (int64_t lane = s.rows % 16 == 0 ? 16 : s.rows % 16; lane < 16; ++lane)
                for (int64_t blk = 0; blk < blocks; ++blk) {
                    for (int64_t i = 0; i < code_bytes / 64; ++i)
                        for (int t = 0; t < 4; ++t)
                            ASSERT_EQ(0,
                                      last[row_group_codes_at(type, blk) + i * 64 + 4 * lane + t]);
                    for (int byte = 0; byte < 2; ++byte)
                        ASSERT_EQ(0, last[row_group_d_at(type, blk) + lane * 2 + byte]);
                }
            if (blocks % 2) {
                const size_t codes_end = size_t(row_group_codes_at(type, blocks - 1) + code_bytes);
                const size_t d = size_t(row_group_d_at(type, blocks - 1));
                for (int64_t g = 0; g < row_groups(s.rows); ++g)
                    for (size_t at = 0; at < group; ++at) {
                        if ((at >= codes_end && at < d) || at >= d + 32) {
                            ASSERT_EQ(0, r.data[size_t(g) * group + at])
                                << "group " << g << " padding byte " << at;
                        }
                    }
            }
            // A deep copy keeps every byte.
            const WeightMatrix copy = clone_weight(r);
            EXPECT_EQ(0, std::memcmp(r.data, copy.data, r.nbytes()));
        }
    }
}

// The layout the header states, at offsets worked out by hand: Q8_0R with 3 blocks (96 columns)
// has two pairs of 2 x 512 code bytes + 64 scale bytes (1088 bytes a pair), the second pair
// holding only block 2; Q4_0R pairs take 2 x 256 + 64 = 576 bytes.
TEST(KernelsRowGroups, PairsOfBlocksHoldTheirScalesAfterTheirCodes) {
    EXPECT_EQ(2176u, row_group_bytes(WType::Q8_0R, 96));
    EXPECT_EQ(1152u, row_group_bytes(WType::Q4_0R, 128));
    EXPECT_EQ(1088, row_group_codes_at(WType::Q8_0R, 2));
    EXPECT_EQ(2112, row_group_d_at(WType::Q8_0R, 2));
    EXPECT_EQ(1056, row_group_d_at(WType::Q8_0R, 1));
    EXPECT_EQ(256, row_group_codes_at(WType::Q4_0R, 1));
    EXPECT_EQ(576 + 512 + 32, row_group_d_at(WType::Q4_0R, 3));
    // Row 17 (group 1, lane 1), block 2, element 5 of a Q8_0R [20, 96] matrix: step 1, byte 1.
    std::vector<float> v(20 * 96, 0.0f);
    v[17 * 96 + 2 * 32 + 5] = 3.0f;  // the block's largest: code 127, d = 3 / 127
    const WeightMatrix r = make_weight_f32(v.data(), 20, 96, WType::Q8_0R);
    const uint8_t* group1 = r.data + 2176;
    EXPECT_EQ(127 + 128, group1[1088 + 1 * 64 + 4 * 1 + 1]);
    EXPECT_EQ(128, group1[1088 + 1 * 64 + 4 * 1 + 0]);  // a zero
    uint16_t d;
    std::memcpy(&d, group1 + 2112 + 2 * 1, 2);
    EXPECT_NEAR(3.0f / 127.0f, f16_to_f32(d), 3.0f / 127.0f / 1024);  // an f16 of 3 / 127
}

TEST(KernelsRowGroups, OnlyTheirBlockTypesBecomeThem) {
    const std::vector<float> v = random_normal(64, 2);
    const WeightMatrix q8 = make_weight_f32(v.data(), 2, 32, WType::Q8_0);
    const WeightMatrix q4 = make_weight_f32(v.data(), 2, 32, WType::Q4_0);
    EXPECT_THROW(repack_for_int8_dot(q8, WType::Q4_0R), Error);
    EXPECT_THROW(repack_for_int8_dot(q4, WType::Q8_0R), Error);
    EXPECT_EQ(WType::Q4_0R, int8_dot_type_for(WType::Q4_0, RowGroupLayouts{true, false}));
    EXPECT_EQ(WType::Q8_0X, int8_dot_type_for(WType::Q8_0, RowGroupLayouts{true, false}));
    EXPECT_EQ(WType::Q8_0R, int8_dot_type_for(WType::Q8_0, RowGroupLayouts{false, true}));
    EXPECT_EQ(WType::Q4_0X, int8_dot_type_for(WType::Q4_0, RowGroupLayouts{false, true}));
    EXPECT_EQ(WType::Q4_1X, int8_dot_type_for(WType::Q4_1, RowGroupLayouts{true, true}));
    EXPECT_EQ(WType::Q4_0, int8_dot_source_type(WType::Q4_0R));
    EXPECT_EQ(WType::Q8_0, int8_dot_source_type(WType::Q8_0R));
    EXPECT_TRUE(is_int8_dot_type(WType::Q4_0R));
    EXPECT_TRUE(is_int8_dot_type(WType::Q8_0R));
}

// The reference, against two independent computations of the same product: the chunked
// reference (Q4_0X / Q8_0X: other layout, other summation order) and the exact sum of weight value x activation
// value in double (the activation codes times their scales).
TEST(KernelsRowGroups, ReferenceAgreesWithTheChunkedLayoutAndTheExactSum) {
    for (WType type : kRowGroupTypes)
        for (Shape s : kShapes) {
            SCOPED_TRACE(std::string(wtype_name(type)) + " " + std::to_string(s.rows) + "x" + std::to_string(s.cols));
            const WeightMatrix q = blocks_for(type, s, 3);
            // Each block adds one rounded product d_w * d_x and one rounded fma.
            test::expect_reference_near_exact_sum(repack_for_int8_dot(q, type), repack_for_int8_dot(q), q, 3, 4, 4e-7);
        }
}

// Every table (the AVX-512 and 256-bit kernels; the scalar table's reference) gives the reference's bits for
// every width and thread count: column j of a width-n product is column j of the width-16 one.
TEST(KernelsRowGroups, EveryTableEqualsReferenceBitwiseForEveryWidth) {
    for (WType type : kRowGroupTypes)
        for (Shape s : kShapes)
            test::expect_every_table_bitwise_for_every_width(
                repack_for_int8_dot(blocks_for(type, s, 5), type), 6);
}

// A prefill's width gives the reference's bits on every table too.
TEST(KernelsRowGroups, EveryTableEqualsReferenceBitwiseAtPrefillWidths) {
    for (WType type : kRowGroupTypes)
        for (Shape s : kShapes)
            test::expect_every_table_bitwise_at_prefill_width(
                repack_for_int8_dot(blocks_for(type, s, 12), type), 13);
}

// Codes at their extremes (Q8_0's -127 and 127 next to -128's absence; Q4_0's 0 and 15) against
// activations at +-127: the integer sums stay exact, every table equals the reference. Mixed
// signs, and whole rows of one value against columns of one sign: the sums at their largest
// (the AVX2 kernel adds a Q4_0 block's 8 steps in int16 lanes, 16 * 15 * 127 = 30480 at most).
TEST(KernelsRowGroups, ExtremeCodesEveryTableEqualsReference) {
    const Shape s{21, 512};
    std::vector<float> wv(size_t(s.rows * s.cols));
    for (size_t i = 0; i < wv.size(); ++i) {
        const size_t row = i / size_t(s.cols);
        // Row 3k: each block's first value -1 (Q4_0 code 0, its scale's sign), the rest 1 (code
        // 15); row 3k + 1: every value 1 (code 0); row 3k + 2: signs in runs of 7.
        wv[i] = row % 3 == 0 ? (i % 32 == 0 ? -1.0f : 1.0f) : row % 3 == 1 ? 1.0f : (i / 7) % 2 ? 1.0f : -1.0f;
    }
    for (WType type : kRowGroupTypes)
        test::expect_every_table_bitwise_on_extreme_activations(make_weight_f32(wv.data(), s.rows, s.cols, type),
                                                                wtype_name(type));
}

// A non-finite activation block gives NaN in that column on every table, and only there.
TEST(KernelsRowGroups, NonFiniteActivationsGiveNaNInTheirColumnOnly) {
    const Shape s{21, 96};
    for (WType type : kRowGroupTypes) {
        const WeightMatrix w = repack_for_int8_dot(blocks_for(type, s, 7), type);
        std::vector<float> x = random_normal(size_t(3 * s.cols), 8);
        x[size_t(s.cols + 40)] = std::nanf("");
        for (const std::string& isa : available_isas()) {
            // Prefilled with zeros (not matmul_on's NaN), so a skipped column cannot pass as NaN.
            ThreadPool pool(1);
            std::vector<float> y(size_t(3 * s.rows), 0.0f);
            matmul(kernels_for(isa), w, x.data(), 3, y.data(), pool);
            for (int64_t r = 0; r < s.rows; ++r) {
                EXPECT_FALSE(std::isnan(y[size_t(r)])) << isa << " row " << r;
                EXPECT_TRUE(std::isnan(y[size_t(s.rows + r)])) << isa << " row " << r;
                EXPECT_FALSE(std::isnan(y[size_t(2 * s.rows + r)])) << isa << " row " << r;
            }
        }
    }
}

// Every table's int8 product called directly on row ranges that start and end inside groups
// (a matmul's row split falls on whole groups, so EveryTableEqualsReferenceBitwiseForEveryWidth
// never reaches them), at widths that take one tile and several column passes: the rows in
// range get the reference's bits, the others stay untouched. The 256-bit kernels take a group's
// two 8-row halves together up to 2 columns and one at a time above, so ranges end in either half.
TEST(KernelsRowGroups, EveryTableOnRowRangesInsideGroupsEqualsReference) {
    const Shape s{70, 160};
    for (WType type : kRowGroupTypes)
        test::expect_every_table_on_ranges(repack_for_int8_dot(blocks_for(type, s, 9), type), {1, 2, 3, 4, 5, 8, 9},
                                           {{5, 29}, {0, 70}, {17, 18}, {33, 70}, {48, 64}, {5, 70}, {8, 16}, {3, 12}, {66, 70}},
                                           10);
}

// NEXTN_Q4_0_LAYOUT and NEXTN_Q8_0_LAYOUT choose an int8 table's layouts once, in a fresh
// process: "rows" and "chunked" set them, an unknown value is an error naming it.
TEST(KernelsRowGroupsDeathTest, LayoutsChosenByEnvironment) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");  // fresh process: the table not yet built
    int tables = 0;
    for (const std::string& isa : available_isas()) {
        if (isa == "scalar") continue;  // no int8 kernels: it keeps the block types
        ++tables;
        // Defaults: both in groups.
        const int all = test::kDefaultLayoutsCode;
        EXPECT_EXIT(test::exit_with_layouts(isa, "NEXTN_Q8_0_LAYOUT", ""), testing::ExitedWithCode(all), "") << isa;
        EXPECT_EXIT(test::exit_with_layouts(isa, "NEXTN_Q4_0_LAYOUT", "chunked"), testing::ExitedWithCode(all - 1), "")
            << isa;
        EXPECT_EXIT(test::exit_with_layouts(isa, "NEXTN_Q8_0_LAYOUT", "chunked"), testing::ExitedWithCode(all - 2), "")
            << isa;
        EXPECT_EXIT(test::exit_with_layouts(isa, "NEXTN_Q8_0_LAYOUT", "rows"), testing::ExitedWithCode(all), "") << isa;
        EXPECT_EXIT(test::exit_with_layouts(isa, "NEXTN_Q4_0_LAYOUT", "diagonal"), testing::ExitedWithCode(3),
                    "NEXTN_Q4_0_LAYOUT=diagonal: unknown weight layout")
            << isa;
    }
    if (tables == 0) GTEST_SKIP() << "no int8 table in this build or on this CPU";
}

#if NEXTN_X86_KERNELS
using test::have_avx512;

// The AVX-512 kernel called directly on row ranges that start and end inside groups (0..70 and
// 5..70 under group streams: a tile of four or three groups, then the rest), Q4_0R with and
// without GFNI, each way of prefetching forced (the CPU picks one per width; the other is some
// other CPU's), at widths that take one column pass or several (group streams go up to 8
// columns a pass, the cursor 4, or 5 where a last column would be left alone: widths 5, 9, 13):
// the rows in range get the reference's bits, the others stay untouched.
TEST(KernelsRowGroups, Avx512RowRangesInsideGroupsEqualReference) {
    if (!have_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
    const Shape s{70, 160};
    for (WType type : kRowGroupTypes)
        test::expect_avx512_every_fetch_way_on_ranges(
            repack_for_int8_dot(blocks_for(type, s, 9), type),
            {1, 2, 5, 8, 9, 13, 16, test::kPrefillWidth},
            {{5, 29}, {0, 70}, {17, 18}, {33, 70}, {48, 64}, {5, 70}}, 10);
}

// NEXTN_ROW_GROUP_FETCH chooses, once, how the avx512 table's decode-width row-group matmuls
// prefetch: "cursor" and "streams" fix one way and time nothing; auto (unset, empty) times the
// cursor against group streams on AMD and keeps group streams elsewhere; anything else is an error
// naming it. The child's exit code: 10 cursor / 20 group streams, plus 1 with a timed alternative
// (which prefetches the other way and has none of its own).
[[noreturn]] void exit_with_row_group_fetch(const char* setting) {
    setenv("NEXTN_ROW_GROUP_FETCH", setting, 1);
    try {
        const KernelTable& t = kernels_for("avx512");
        const std::string fetch = t.narrow_fetch;
        int code = fetch == "cursor" ? 10 : fetch == "group streams" ? 20 : 0;
        if (t.timed_alternative) {
            const std::string other = t.timed_alternative->narrow_fetch;
            const bool other_way =
                other != fetch && (other == "cursor" || other == "group streams");
            code += other_way && !t.timed_alternative->timed_alternative ? 1 : 30;
        }
        std::exit(code);
    } catch (const Error& e) {
        std::fprintf(stderr, "%s\n", e.what());
        std::exit(3);
    }
}

TEST(KernelsRowGroupsDeathTest, RowGroupFetchChosenByEnvironment) {
    if (!have_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
    GTEST_FLAG_SET(death_test_style, "threadsafe");  // fresh process: the table not yet built
    EXPECT_EXIT(exit_with_row_group_fetch("cursor"), testing::ExitedWithCode(10), "");
    EXPECT_EXIT(exit_with_row_group_fetch("streams"), testing::ExitedWithCode(20), "");
    const int auto_code = __builtin_cpu_is("amd") ? 11 : 20;
    EXPECT_EXIT(exit_with_row_group_fetch(""), testing::ExitedWithCode(auto_code), "");
    EXPECT_EXIT(exit_with_row_group_fetch("auto"), testing::ExitedWithCode(auto_code), "");
    EXPECT_EXIT(
        exit_with_row_group_fetch("sideways"), testing::ExitedWithCode(3),
        "NEXTN_ROW_GROUP_FETCH=sideways: unknown setting \\(known: auto, cursor, streams\\)");
}

#endif

// kernels() checks the layout variables on any CPU and for any forced ISA, and the error names the
// variable itself (not NEXTN_ISA).
TEST(KernelsRowGroupsDeathTest, BadLayoutIsAnErrorOnEveryTable) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");  // fresh process: kernels() not yet chosen
    EXPECT_EXIT(
        {
            setenv("NEXTN_ISA", "scalar", 1);
            setenv("NEXTN_Q8_0_LAYOUT", "sideways", 1);
            try {
                kernels();
            } catch (const Error& e) {
                std::fprintf(stderr, "%s\n", e.what());
                std::exit(std::string(e.what()).rfind("NEXTN_Q8_0_LAYOUT=sideways: unknown weight layout", 0) == 0 ? 3 : 4);
            }
            std::exit(0);
        },
        testing::ExitedWithCode(3), "NEXTN_Q8_0_LAYOUT=sideways: unknown weight layout");
}

// The load policy: on the int8 tables (avx2, avxvnni, avx512, neon, dotprod) Q4_0 and Q8_0 are
// held in row groups (unless the environment asks for chunked), on the scalar table as they are;
// with f32 activations always as they are.
// And a checkpoint tensor bound for this table (make_weight with the table's layouts, as the
// binder calls it) gets that type.
TEST(KernelsRowGroups, LoadPicksTheLayoutTheTableReads) {
    const std::string isa = kernels().isa;
    auto chunked_by_env = [](const char* name) {
        const char* v = std::getenv(name);
        return v && std::string(v) == "chunked";
    };
    for (WType block : {WType::Q4_0, WType::Q8_0}) {
        const bool q4 = block == WType::Q4_0;
        const WType grouped = q4 ? WType::Q4_0R : WType::Q8_0R, chunked = q4 ? WType::Q4_0X : WType::Q8_0X;
        WType want = block;
        if (isa != "scalar")
            want = chunked_by_env(q4 ? "NEXTN_Q4_0_LAYOUT" : "NEXTN_Q8_0_LAYOUT") ? chunked : grouped;
        EXPECT_EQ(want, kernel_storage_type(block, /*int8_activations=*/true)) << isa;
        EXPECT_EQ(block, kernel_storage_type(block, /*int8_activations=*/false)) << isa;
        if (isa == "scalar") continue;  // no int8 layout to build
        const std::vector<float> values = random_normal(size_t(20 * 64), 12);
        RawTensor t;
        t.name = "w";
        t.file = "test";
        t.dtype = DType::F32;
        t.shape = {20, 64};
        t.data = reinterpret_cast<const uint8_t*>(values.data());
        t.nbytes = values.size() * sizeof(float);
        EXPECT_EQ(want, make_weight(t, 20, 64, block, {nullptr, true, kernels().row_groups}).type) << isa;
    }
}

// allocate_row_groups refuses a shape with no rows, as one with columns of no whole blocks, with
// the shape in the message; repack_as_row_groups refuses a target that is not a 16-row layout
// even when that target's block type is the matrix's (Q8_0X is made from Q8_0 too), naming both.
TEST(KernelsRowGroups, RefuseEmptyShapesAndTargetsOfOtherLayouts) {
    for (int64_t rows : {0, -1})
        EXPECT_NE(std::string::npos, test::error_of([&] {
                                         allocate_row_groups(WType::Q8_0R, rows, 64, "test");
                                     }).find("bad shape"))
            << rows << " rows";
    EXPECT_NE(std::string::npos, test::error_of([] {
                                     allocate_row_groups(WType::Q4_0R, 16, 48, "test");
                                 }).find("bad shape"));
    const std::vector<float> v = random_normal(64, 2);
    const WeightMatrix q8 = make_weight_f32(v.data(), 2, 32, WType::Q8_0);
    const std::string refused = test::error_of([&] { repack_as_row_groups(q8, WType::Q8_0X); });
    EXPECT_NE(std::string::npos, refused.find("cannot become")) << refused;
}

}  // namespace
}  // namespace nextn
