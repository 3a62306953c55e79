// GGUF Q4_K, Q5_K and Q6_K in 16-row groups (Q4_KR, Q5_KR, Q6_KR: kernels/row_groups.h): the
// repacks hold exactly the values dequantize_to_f32 gives (so the chunked Q4_1FX's, Q8_1FX's and
// Q6_KX's), padding zeroed, in 4.625, 5.625 and 6.5625 bits a value; the scalar reference agrees with the chunked reference
// and with the exact sum to within f32 summation-order error; every table's kernel equals the
// reference bit for bit on random blocks (negative and zero super-block scales included, rows
// that are not whole groups, row ranges that start inside a group, widths 1..16, 1 and 2
// threads, each AVX-512 prefetch way, with and without GFNI); and the environment chooses the
// layouts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "formats/dequant.h"
#include "kernel_test_helpers.h"
#include "kernels/int8_dot.h"
#include "kernels/kernels.h"
#include "kernels/quant.h"
#include "kernels/quant_k.h"
#include "kernels/row_groups.h"
#include "row_group_checks.h"
#if NEXTN_X86_KERNELS
#include "kernels/x86/x86_kernels.h"
#endif

namespace nextn {
namespace {

using test::matmul_on;
using test::random_normal;

// A GGUF K-quant super-block (256 values): its bytes, and where its f16 super-block scales sit.
struct KQuant {
    DType dtype;
    WType rows_type;      // the 16-row layout
    WType chunked_type;   // the chunked layout
    size_t block_bytes;
    int d_at, dmin_at;    // byte offsets of d and (Q4_K) dmin; -1: none
};
const KQuant kQ4K{DType::Q4_K, WType::Q4_KR, WType::Q4_1FX, 144, 0, 2};  // d, dmin, scales[12], qs[128]
const KQuant kQ6K{DType::Q6_K, WType::Q6_KR, WType::Q6_KX, 210, 208, -1};  // ql[128], qh[64], scales[16], d
const KQuant kQ5K{DType::Q5_K, WType::Q5_KR, WType::Q8_1FX, 176, 0, 2};  // d, dmin, scales[12], qh[32], qs[128]
const KQuant kKQuants[] = {kQ4K, kQ6K, kQ5K};

// A random K-quant tensor [rows, cols]: random codes and sub-block scales (and mins); d (and dmin)
// mostly small positive f16, with every 7th super-block's d negative and every 11th's d or dmin
// zero (the Q4_K kernels negate dmin * mn by its sign bit, which must give the reference's -0).
struct KTensor {
    std::vector<uint8_t> bytes;
    RawTensor t;
    KTensor(const KQuant& k, int64_t rows, int64_t cols, uint32_t seed) : bytes(size_t(rows * cols / 256) * k.block_bytes) {
        std::mt19937 rng(seed);
        std::uniform_int_distribution<int> byte(0, 255);
        std::uniform_real_distribution<float> scale(1e-4f, 2e-2f);
        for (uint8_t& x : bytes) x = uint8_t(byte(rng));
        for (size_t b = 0; b < bytes.size() / k.block_bytes; ++b) {
            float d = scale(rng), dmin = scale(rng);
            if (b % 7 == 3) d = -d;
            if (b % 11 == 5) d = 0.0f;
            if (b % 11 == 6) dmin = 0.0f;
            const uint16_t hd = f32_to_f16(d), hm = f32_to_f16(dmin);
            std::memcpy(&bytes[b * k.block_bytes + size_t(k.d_at)], &hd, 2);
            if (k.dmin_at >= 0) std::memcpy(&bytes[b * k.block_bytes + size_t(k.dmin_at)], &hm, 2);
        }
        t = test::tensor_over(dtype_name(k.dtype), k.dtype, rows, cols, bytes);
    }
};

bool repack_rows(const KQuant& k, const RawTensor& t, int64_t rows, int64_t cols, WeightMatrix& out,
                 ThreadPool* pool = nullptr) {
    return k.dtype == DType::Q4_K   ? repack_q4_k_as_row_groups(t, rows, cols, out, pool)
           : k.dtype == DType::Q5_K ? repack_q5_k_as_row_groups(t, rows, cols, out, pool)
                                    : repack_q6_k_as_row_groups(t, rows, cols, out, pool);
}
bool repack_chunked(const KQuant& k, const RawTensor& t, int64_t rows, int64_t cols, WeightMatrix& out) {
    return repack_k_quant_tensor(t, rows, cols, k.chunked_type, out);
}

using test::Shape;
const std::vector<Shape>& kShapes = test::kSuperBlockShapes;

WeightMatrix rows_of(const KQuant& k, const KTensor& q) {
    WeightMatrix w;
    EXPECT_TRUE(repack_rows(k, q.t, q.t.shape[0], q.t.shape[1], w));
    return w;
}

// The byte offsets inside a group that belong to lane `lane` (the layouts in kernels/row_groups.h,
// worked out here by hand): spans of a super-block (Q4_KR, Q5_KR: 320 scale bytes, then 8 blocks'
// codes) or of two (Q6_KR: 2 x 288 scale bytes, then 16 blocks' codes).
std::vector<size_t> lane_bytes(WType type, int64_t cols, int lane) {
    std::vector<size_t> at;
    const bool q4 = row_group_affine_k(type);  // Q4_KR, Q5_KR
    const int64_t code_bytes = q4 ? (type == WType::Q5_KR ? 320 : 256) : 384;
    const int64_t supers_a_span = q4 ? 1 : 2, scale_bytes = q4 ? 320 : 288;
    const int64_t span_bytes = supers_a_span * (scale_bytes + 8 * code_bytes);
    for (int64_t sb = 0; sb < cols / 256; ++sb) {
        const size_t span = size_t(sb / supers_a_span * span_bytes);
        const size_t super = span + size_t(sb % supers_a_span * scale_bytes);
        for (int i = 0; i < 2; ++i) {
            at.push_back(super + size_t(2 * lane + i));                  // d
            if (q4) at.push_back(super + 32 + size_t(2 * lane + i));     // dmin
        }
        for (int k = 0; k < 8; ++k) {
            const size_t block = super + (q4 ? 64 : 32) + size_t(32 * k);
            at.push_back(block + size_t(lane));       // sc (Q6_K: of the first 16 values)
            at.push_back(block + 16 + size_t(lane));  // mn (Q6_K: sc of the last 16)
            const size_t codes = span + size_t(supers_a_span * scale_bytes +
                                               (sb % supers_a_span * 8 + k) * code_bytes);
            for (int64_t v = 0; v < code_bytes / 64; ++v)
                for (int i = 0; i < 4; ++i) at.push_back(codes + size_t(v * 64 + 4 * lane + i));
        }
    }
    return at;
}

TEST(KernelsKQuantRows, HoldEveryValueAndZeroPadding) {
    for (const KQuant& k : kKQuants)
        for (Shape s : kShapes) {
            SCOPED_TRACE(std::string(dtype_name(k.dtype)) + " " + std::to_string(s.rows) + "x" + std::to_string(s.cols));
            const KTensor q(k, s.rows, s.cols, 1);
            const WeightMatrix w = rows_of(k, q);
            ASSERT_EQ(k.rows_type, w.type);
            // A group: per super-block 320 scale bytes and 16 rows' codes (Q4_K 4 bits a value,
            // Q5_K 5: 4.625 and 5.625 bits a value in all); Q6_K per two super-blocks 2 x 288
            // and 6-bit codes (6.5625), an odd last super-block's span padded with zeros.
            const int64_t supers = s.cols / 256;
            const size_t group_bytes = k.dtype == DType::Q4_K ? size_t(supers * (320 + 8 * 256))
                                       : k.dtype == DType::Q5_K
                                           ? size_t(supers * (320 + 8 * 320))
                                           : size_t((supers + 1) / 2 * 2 * (288 + 8 * 384));
            ASSERT_EQ(group_bytes, row_group_bytes(k.rows_type, s.cols));
            EXPECT_EQ(size_t(row_groups(s.rows)) * group_bytes, w.nbytes());
            std::vector<float> want(size_t(s.rows * s.cols)), got(size_t(s.cols));
            dequantize_to_f32(q.t, want.data());
            for (int64_t r = 0; r < s.rows; ++r) {
                weight_row_f32(w, r, got.data());
                ASSERT_EQ(0, std::memcmp(got.data(), want.data() + r * s.cols, got.size() * sizeof(float))) << "row " << r;
            }
            // Every group's bytes that are no row's (the last group's lanes past `rows`, an odd
            // last Q6_K super-block's missing partner): zero.
            std::vector<bool> owned(group_bytes, false);
            for (int lane = 0; lane < kRowGroupRows; ++lane)
                for (size_t at : lane_bytes(k.rows_type, s.cols, lane)) owned[at] = true;
            for (int64_t g = 0; g < row_groups(s.rows); ++g) {
                const uint8_t* group = w.data + size_t(g) * group_bytes;
                for (size_t at = 0; at < group_bytes; ++at) {
                    if (owned[at]) continue;
                    ASSERT_EQ(0, group[at]) << "group " << g << " padding byte " << at;
                }
            }
            const uint8_t* last = w.data + size_t(row_groups(s.rows) - 1) * group_bytes;
            for (int64_t r = s.rows; r < w.stored_rows(); ++r)
                for (size_t at : lane_bytes(k.rows_type, s.cols, int(r % kRowGroupRows)))
                    ASSERT_EQ(0, last[at]) << "row " << r << " byte " << at;
            // Rows stored on a pool: the same bytes.
            ThreadPool pool(2);
            WeightMatrix pooled;
            ASSERT_TRUE(repack_rows(k, q.t, s.rows, s.cols, pooled, &pool));
            ASSERT_EQ(0, std::memcmp(pooled.data, w.data, w.nbytes()));
        }
}

// The spans at offsets worked out by hand: a Q4_KR super-block takes 320 scale bytes and 8 x 256
// code bytes (2368), a Q5_KR one 320 + 8 x 320 (2880); Q6_KR spans of two super-blocks 2 x 288 +
// 16 x 384 (6720), so 768 columns (3 super-blocks) take two spans, the second half empty.
TEST(KernelsKQuantRows, SpansHoldTheirScalesBeforeTheirCodes) {
    EXPECT_EQ(320, row_group_codes_at(WType::Q4_KR, 0));
    EXPECT_EQ(2368 + 320 + 256, row_group_codes_at(WType::Q4_KR, 9));
    EXPECT_EQ(2368, row_group_super_scales_at(WType::Q4_KR, 8));
    EXPECT_EQ(2368, row_group_super_scales_at(WType::Q4_KR, 15));
    EXPECT_EQ(2u * 2368, row_group_bytes(WType::Q4_KR, 512));
    EXPECT_EQ(2880 + 320, row_group_codes_at(WType::Q5_KR, 8));
    EXPECT_EQ(3u * 2880, row_group_bytes(WType::Q5_KR, 768));
    EXPECT_EQ(576, row_group_codes_at(WType::Q6_KR, 0));
    EXPECT_EQ(576 + 8 * 384, row_group_codes_at(WType::Q6_KR, 8));
    EXPECT_EQ(288, row_group_super_scales_at(WType::Q6_KR, 8));
    EXPECT_EQ(6720 + 576 + 384, row_group_codes_at(WType::Q6_KR, 17));
    EXPECT_EQ(6720, row_group_super_scales_at(WType::Q6_KR, 16));
    EXPECT_EQ(2u * 6720, row_group_bytes(WType::Q6_KR, 768));
}

TEST(KernelsKQuantRows, RefuseOtherTensorsAndShapes) {
    for (const KQuant& k : kKQuants) {
        SCOPED_TRACE(dtype_name(k.dtype));
        WeightMatrix w;
        const KTensor q(k, 4, 512, 2);
        EXPECT_FALSE(repack_rows(k, q.t, 8, 512, w)) << "more values than the tensor";
        EXPECT_FALSE(repack_rows(k, q.t, 4, 256, w)) << "fewer values than the tensor";
        RawTensor short_bytes = q.t;
        short_bytes.nbytes -= 1;
        EXPECT_FALSE(repack_rows(k, short_bytes, 4, 512, w)) << "bytes not whole blocks";
        RawTensor other = q.t;
        other.dtype = k.dtype == DType::Q4_K ? DType::Q5_K : DType::Q4_K;
        EXPECT_FALSE(repack_rows(k, other, 4, 512, w)) << "another type";
        EXPECT_FALSE(repack_k_quant_tensor(q.t, 4, 512, WType::Q4_0R, w)) << "a target of no K-quant";
        EXPECT_FALSE(repack_k_quant_tensor(other, 4, 512, k.rows_type, w)) << "a target of another K-quant";
        EXPECT_TRUE(w.empty());
        // The layout the loader holds the type in: row groups where the table reads them.
        RowGroupLayouts all;
        all.q4_k = all.q5_k = all.q6_k = true;
        EXPECT_EQ(k.rows_type, k_quant_storage_type(k.dtype, all));
        EXPECT_EQ(k.chunked_type, k_quant_storage_type(k.dtype, RowGroupLayouts{}));
        // Columns that are not whole super-blocks: no row (GGUF never writes such a K-quant).
        EXPECT_EQ(0u, row_group_bytes(k.rows_type, 288));
        EXPECT_EQ(0u, int8_dot_row_bytes(k.rows_type, 288));
    }
}

// The reference on the 16-row layouts against the chunked reference (the same values, a
// different summation order) and the exact sum of the dequantized weights times the quantized
// activations.
TEST(KernelsKQuantRows, ReferenceAgreesWithTheChunkedLayoutAndTheExactSum) {
    for (const KQuant& k : kKQuants)
        for (Shape s : kShapes) {
            SCOPED_TRACE(std::string(dtype_name(k.dtype)) + " " + std::to_string(s.rows) + "x" + std::to_string(s.cols));
            const KTensor q(k, s.rows, s.cols, 3);
            WeightMatrix chunked;
            ASSERT_TRUE(repack_chunked(k, q.t, s.rows, s.cols, chunked));
            ASSERT_EQ(k.chunked_type, chunked.type);
            // Each block adds up to two rounded products and two rounded fmas (Q6_K: its integer
            // sum is exact; the rounding of float(i) is the fma's).
            // The values: the chunked layout's reader (kernels_int8_test checks it against the decoder).
            test::expect_reference_near_exact_sum(rows_of(k, q), chunked, chunked, 3, 4, 8e-7);
        }
}

// build_weight from values (synthetic models): the rows encoded into the K-quant's GGUF blocks
// (kernels/quant_k.h) and repacked, the same bytes as that tensor's repack, on a pool or not, in
// the 16-row and the chunked layout; columns that are not whole super-blocks fall back to F32.
TEST(KernelsKQuantRows, BuiltFromValuesIsTheEncodedTensorRepacked) {
    const int64_t rows = 37, cols = 768;
    const std::vector<float> values = random_normal(size_t(rows * cols), 13);
    for (const KQuant& k : kKQuants) {
        SCOPED_TRACE(dtype_name(k.dtype));
        std::vector<uint8_t> blocks(size_t(rows * cols / 256) * k.block_bytes);
        for (int64_t r = 0; r < rows; ++r)
            (k.dtype == DType::Q4_K ? quantize_row_q4_k : k.dtype == DType::Q5_K ? quantize_row_q5_k : quantize_row_q6_k)(
                values.data() + r * cols, cols, blocks.data() + size_t(r * cols / 256) * k.block_bytes);
        const RawTensor t = test::tensor_over("encoded", k.dtype, rows, cols, blocks);
        for (WType type : {k.rows_type, k.chunked_type}) {
            WeightMatrix want;
            ASSERT_TRUE(type == k.rows_type ? repack_rows(k, t, rows, cols, want) : repack_chunked(k, t, rows, cols, want));
            ThreadPool pool(2);
            const WeightMatrix built = make_weight_f32(values.data(), rows, cols, type);
            const WeightMatrix pooled = build_weight(rows, cols, type, &pool, [&](int64_t r, float* out) {
                std::memcpy(out, values.data() + r * cols, size_t(cols) * sizeof(float));
            });
            for (const WeightMatrix* w : {&built, &pooled}) {
                ASSERT_EQ(type, w->type);
                ASSERT_EQ(want.nbytes(), w->nbytes());
                EXPECT_EQ(0, std::memcmp(want.data, w->data, want.nbytes())) << wtype_name(type);
            }
        }
        EXPECT_EQ(WType::F32, make_weight_f32(values.data(), 2, 288, k.rows_type).type);
        EXPECT_EQ(WType::F32, make_weight_f32(values.data(), 2, 288, k.chunked_type).type);
    }
}

// Every table gives the reference's bits for every width and thread count.
TEST(KernelsKQuantRows, EveryTableEqualsReferenceBitwiseForEveryWidth) {
    for (const KQuant& k : kKQuants)
        for (Shape s : kShapes) {
            const KTensor q(k, s.rows, s.cols, 5);
            test::expect_every_table_bitwise_for_every_width(rows_of(k, q), 6);
        }
}

// A prefill's width gives the reference's bits on every table too.
TEST(KernelsKQuantRows, EveryTableEqualsReferenceBitwiseAtPrefillWidths) {
    for (const KQuant& k : kKQuants)
        for (Shape s : {Shape{150, 512}, Shape{19, 768}})
            test::expect_every_table_bitwise_at_prefill_width(
                rows_of(k, KTensor(k, s.rows, s.cols, 12)), 13);
}

// The extremes against activations at +-127, of one sign (the integer sums at their largest) and
// alternating, on every table: Q4_K every code 15 and Q5_K every code 31 with scales and mins 63;
// Q6_K every code 63 with sub-block scales -128 and 127 in turn, or every code 0.
TEST(KernelsKQuantRows, ExtremeCodesEveryTableEqualsReference) {
    std::vector<float> x(size_t(3 * 512));
    for (size_t i = 0; i < x.size(); ++i) x[i] = i < 512 ? 3.0f : i < 1024 ? -3.0f : (i / 5) % 2 ? 3.0f : -3.0f;
    KTensor q4(kQ4K, 21, 512, 7);
    for (size_t b = 0; b < q4.bytes.size(); b += kQ4K.block_bytes) {
        std::memset(&q4.bytes[b + 4], 0xff, 12);   // every 6-bit scale and min 63
        std::memset(&q4.bytes[b + 16], 0xff, 128);  // every code 15
    }
    KTensor q5(kQ5K, 21, 512, 10);
    for (size_t b = 0; b < q5.bytes.size(); b += kQ5K.block_bytes) std::memset(&q5.bytes[b + 4], 0xff, 172);
    KTensor q6_high(kQ6K, 21, 512, 8), q6_low(kQ6K, 21, 512, 9);
    for (size_t b = 0; b < q6_high.bytes.size(); b += kQ6K.block_bytes) {
        std::memset(&q6_high.bytes[b], 0xff, 192);  // every code 63
        std::memset(&q6_low.bytes[b], 0, 192);      // every code 0
        for (int i = 0; i < 16; ++i) q6_high.bytes[b + 192 + size_t(i)] = q6_low.bytes[b + 192 + size_t(i)] = i % 2 ? 0x80 : 0x7f;
    }
    const std::pair<const KQuant*, const KTensor*> cases[] = {
        {&kQ4K, &q4}, {&kQ5K, &q5}, {&kQ6K, &q6_high}, {&kQ6K, &q6_low}};
    for (const auto& [k, q] : cases) {
        const WeightMatrix w = rows_of(*k, *q);
        const std::vector<float> want = matmul_on(reference_kernels(), w, x, 3, 1);
        for (const std::string& isa : available_isas()) {
            const std::vector<float> got = matmul_on(kernels_for(isa), w, x, 3, 2);
            ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float))) << isa << " " << dtype_name(k->dtype);
        }
    }
}

// Every table's int8 product called directly on row ranges that start and end inside groups
// (the 256-bit kernels take a group's 8-row halves one at a time above 2 columns, so ranges
// end in either half): the rows in range get the reference's bits, the others stay untouched.
TEST(KernelsKQuantRows, EveryTableOnRowRangesInsideGroupsEqualsReference) {
    for (const KQuant& k : kKQuants)
        test::expect_every_table_on_ranges(rows_of(k, KTensor(k, 70, 512, 9)), {1, 2, 3, 4, 5, 8, 9},
                                           {{5, 29}, {0, 70}, {17, 18}, {33, 70}, {48, 64}, {8, 16}, {3, 12}, {66, 70}}, 10);
}

#if NEXTN_X86_KERNELS
using test::have_avx512;

// The AVX-512 kernel with each way of prefetching forced (the CPU picks one per width) and with
// and without GFNI, on row ranges inside groups, at widths of one column pass and several.
TEST(KernelsKQuantRows, Avx512EveryFetchWayEqualsReference) {
    if (!have_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
    for (const KQuant& k : kKQuants)
        test::expect_avx512_every_fetch_way_on_ranges(
            rows_of(k, KTensor(k, 70, 768, 11)), {1, 2, 3, 4, 5, 8, 9, 16, test::kPrefillWidth},
            {{5, 29}, {0, 70}, {33, 70}, {5, 70}}, 12);
}
#endif

// NEXTN_Q4_K_LAYOUT, NEXTN_Q5_K_LAYOUT and NEXTN_Q6_K_LAYOUT choose an int8 table's K-quant layouts
// once, in a fresh process: row groups by default and for "rows",
// chunked (Q4_1FX, Q8_1FX, Q6_KX) for "chunked", an error naming an unknown value.
TEST(KernelsKQuantRowsDeathTest, LayoutsChosenByEnvironment) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");  // fresh process: the table not yet built
    int tables = 0;
    for (const std::string& isa : available_isas()) {
        if (isa == "scalar") continue;  // no int8 kernels
        ++tables;
        const int all = test::kDefaultLayoutsCode;
        EXPECT_EXIT(test::exit_with_layouts(isa, "NEXTN_Q4_K_LAYOUT", ""), testing::ExitedWithCode(all), "") << isa;
        EXPECT_EXIT(test::exit_with_layouts(isa, "NEXTN_Q6_K_LAYOUT", "rows"), testing::ExitedWithCode(all), "") << isa;
        EXPECT_EXIT(test::exit_with_layouts(isa, "NEXTN_Q4_K_LAYOUT", "chunked"), testing::ExitedWithCode(all - 4), "")
            << isa;
        EXPECT_EXIT(test::exit_with_layouts(isa, "NEXTN_Q6_K_LAYOUT", "chunked"), testing::ExitedWithCode(all - 8), "")
            << isa;
        EXPECT_EXIT(test::exit_with_layouts(isa, "NEXTN_Q5_K_LAYOUT", "chunked"), testing::ExitedWithCode(all - 16), "")
            << isa;
        EXPECT_EXIT(test::exit_with_layouts(isa, "NEXTN_Q5_K_LAYOUT", "rows"), testing::ExitedWithCode(all), "")
            << isa;
        EXPECT_EXIT(test::exit_with_layouts(isa, "NEXTN_Q6_K_LAYOUT", "columns"), testing::ExitedWithCode(3),
                    "NEXTN_Q6_K_LAYOUT=columns: unknown weight layout")
            << isa;
        EXPECT_EXIT(test::exit_with_layouts(isa, "NEXTN_Q5_K_LAYOUT", "packed"), testing::ExitedWithCode(3),
                    "NEXTN_Q5_K_LAYOUT=packed: unknown weight layout")
            << isa;
    }
    if (tables == 0) GTEST_SKIP() << "no int8 table in this build or on this CPU";
}

// The shapes a K-quant tensor's values and bytes fit but its 16-row layout does not hold are
// refused with false (out untouched), as repack_q4_k_as_row_groups promises for any tensor it
// cannot take, so the loader falls back instead of failing: rows of half a super-block (a [4, 512]
// tensor read as [16, 128]: the same 2048 values, whole blocks in all), a tensor of no rows, and
// tensors of another type whose bytes have the very size the K-quant's would.
TEST(KernelsKQuantRows, RefuseHalfSuperBlockRowsNoRowsAndOtherTypesOfTheSameSize) {
    for (const KQuant& k : kKQuants) {
        SCOPED_TRACE(dtype_name(k.dtype));
        WeightMatrix w;
        const KTensor q(k, 4, 512, 2);
        RawTensor half_rows = q.t;
        half_rows.shape = {16, 128};
        EXPECT_FALSE(repack_rows(k, half_rows, 16, 128, w)) << "rows of 128 values";
        const KTensor empty(k, 0, 256, 2);
        EXPECT_FALSE(repack_rows(k, empty.t, 0, 256, w)) << "no rows";
        EXPECT_TRUE(w.empty());
    }
    // 32-value blocks of the same bytes a value: Q4_0 (18 bytes a 32) is Q4_K's 144 a 256, Q5_0
    // (22) Q5_K's 176; its dtype, not its size, says what a tensor is.
    for (auto [k, other, block_bytes] :
         {std::tuple{kQ4K, DType::Q4_0, size_t(18)}, std::tuple{kQ5K, DType::Q5_0, size_t(22)}}) {
        SCOPED_TRACE(dtype_name(other));
        const std::vector<uint8_t> bytes(4 * 512 / 32 * block_bytes, 0);
        const RawTensor t = test::tensor_over("same size", other, 4, 512, bytes);
        ASSERT_EQ(KTensor(k, 4, 512, 2).t.nbytes, t.nbytes);
        WeightMatrix w;
        EXPECT_FALSE(repack_rows(k, t, 4, 512, w));
        EXPECT_TRUE(w.empty());
    }
}

// Each K-quant's storage follows its own row-group flag only (a table may read one K-quant's row
// groups and not another's): with one flag set, that type comes in 16-row groups and the other
// two chunked.
TEST(KernelsKQuantRows, EachStorageTypeFollowsItsOwnFlag) {
    for (const KQuant& flagged : kKQuants) {
        RowGroupLayouts one;
        one.q4_k = flagged.dtype == DType::Q4_K;
        one.q5_k = flagged.dtype == DType::Q5_K;
        one.q6_k = flagged.dtype == DType::Q6_K;
        for (const KQuant& k : kKQuants)
            EXPECT_EQ(k.dtype == flagged.dtype ? k.rows_type : k.chunked_type,
                      k_quant_storage_type(k.dtype, one))
                << dtype_name(k.dtype) << " with only " << dtype_name(flagged.dtype) << "'s flag";
    }
}

}  // namespace
}  // namespace nextn
