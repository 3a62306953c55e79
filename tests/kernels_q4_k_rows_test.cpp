// GGUF Q4_K in 16-row groups (Q4_KR, kernels/row_groups.h): the repack holds exactly the values
// dequantize_to_f32 gives (so Q4_1FX's), padding zeroed, in 4.625 bits a value; the scalar
// reference agrees with the chunked Q4_1FX reference and with the exact sum to within f32
// summation-order error; every table's kernel equals the reference bit for bit on random blocks
// (negative and zero super-block scales included, rows that are not whole groups, row ranges that
// start inside a group, widths 1..16, 1 and 2 threads, each AVX-512 prefetch way, with and
// without GFNI); and the environment chooses the layout.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "core/thread_pool.h"
#include "formats/dequant.h"
#include "kernel_test_helpers.h"
#include "kernels/int8_dot.h"
#include "kernels/kernels.h"
#include "kernels/quant.h"
#include "kernels/row_groups.h"
#if defined(__x86_64__)
#include "kernels/x86/x86_kernels.h"
#endif

namespace nextn {
namespace {

using test::matmul_on;
using test::random_normal;

constexpr size_t kQ4KBlockBytes = 144;  // f16 d, f16 dmin, scales[12], qs[128]

// A random GGUF Q4_K tensor [rows, cols]: random codes and 6-bit scales and mins; d and dmin
// mostly small positive f16, with every 7th super-block's d negative and every 11th's d or
// dmin zero (the kernels negate dmin * mn by its sign bit, which must give the reference's -0).
struct Q4KTensor {
    std::vector<uint8_t> bytes;
    RawTensor t;
    Q4KTensor(int64_t rows, int64_t cols, uint32_t seed) : bytes(size_t(rows * cols / 256) * kQ4KBlockBytes) {
        std::mt19937 rng(seed);
        std::uniform_int_distribution<int> byte(0, 255);
        std::uniform_real_distribution<float> scale(1e-4f, 2e-2f);
        for (uint8_t& x : bytes) x = uint8_t(byte(rng));
        for (size_t b = 0; b < bytes.size() / kQ4KBlockBytes; ++b) {
            float d = scale(rng), dmin = scale(rng);
            if (b % 7 == 3) d = -d;
            if (b % 11 == 5) d = 0.0f;
            if (b % 11 == 6) dmin = 0.0f;
            const uint16_t hd = f32_to_f16(d), hm = f32_to_f16(dmin);
            std::memcpy(&bytes[b * kQ4KBlockBytes], &hd, 2);
            std::memcpy(&bytes[b * kQ4KBlockBytes + 2], &hm, 2);
        }
        t.name = "q4_k";
        t.file = "test";
        t.dtype = DType::Q4_K;
        t.shape = {rows, cols};
        t.data = bytes.data();
        t.nbytes = bytes.size();
    }
};

struct Shape {
    int64_t rows, cols;
};
// 37, 5 and 19 rows leave part of a last group; 61 and 150 rows make tiles of four groups (the
// narrowest widths' tiles), the last partial or followed by a pair; 768 columns 3 super-blocks
// (24 blocks: a ragged second activation chunk); 2560 five chunks.
const Shape kShapes[] = {{37, 256}, {16, 1024}, {5, 512}, {19, 768}, {61, 256}, {150, 512}, {3, 2560}};

WeightMatrix q4_k_rows(const Q4KTensor& q) {
    WeightMatrix w;
    EXPECT_TRUE(repack_q4_k_as_row_groups(q.t, q.t.shape[0], q.t.shape[1], w));
    return w;
}

TEST(KernelsQ4KRows, HoldEveryValueAndZeroPadding) {
    for (Shape s : kShapes) {
        SCOPED_TRACE(std::to_string(s.rows) + "x" + std::to_string(s.cols));
        const Q4KTensor q(s.rows, s.cols, 1);
        const WeightMatrix w = q4_k_rows(q);
        ASSERT_EQ(WType::Q4_KR, w.type);
        // 4.625 bits a value: 16 code bytes and 2.5 scale bytes a 32-value row block.
        EXPECT_EQ(size_t(row_groups(s.rows) * 16 * (s.cols / 32)) * 37 / 2, w.nbytes());
        std::vector<float> want(size_t(s.rows * s.cols)), got(size_t(s.cols));
        dequantize_to_f32(q.t, want.data());
        for (int64_t r = 0; r < s.rows; ++r) {
            weight_row_f32(w, r, got.data());
            ASSERT_EQ(0, std::memcmp(got.data(), want.data() + r * s.cols, got.size() * sizeof(float))) << "row " << r;
        }
        // The last group's rows past `rows`: every byte of their lanes zero.
        const size_t group_bytes = row_group_bytes(WType::Q4_KR, s.cols);
        const uint8_t* last = w.data + size_t(row_groups(s.rows) - 1) * group_bytes;
        for (int64_t r = s.rows; r < w.stored_rows(); ++r) {
            const int lane = int(r % kRowGroupRows);
            for (int64_t b = 0; b < s.cols / 32; ++b)
                for (int v = 0; v < 4; ++v)
                    for (int i = 0; i < 4; ++i) ASSERT_EQ(0, last[b * 256 + v * 64 + 4 * lane + i]) << "row " << r;
            const uint8_t* scales = last + row_group_scales_offset(WType::Q4_KR, s.cols);
            for (int64_t sb = 0; sb < s.cols / 256; ++sb) {
                const uint8_t* super = scales + sb * kQ4KGroupScaleBytes;
                for (int i = 0; i < 2; ++i) {
                    ASSERT_EQ(0, super[2 * lane + i]) << "d, row " << r;
                    ASSERT_EQ(0, super[32 + 2 * lane + i]) << "dmin, row " << r;
                }
                for (int k = 0; k < 8; ++k) {
                    ASSERT_EQ(0, super[64 + 32 * k + lane]) << "sc, row " << r;
                    ASSERT_EQ(0, super[64 + 32 * k + 16 + lane]) << "mn, row " << r;
                }
            }
        }
        // Rows stored on a pool: the same bytes.
        ThreadPool pool(2);
        WeightMatrix pooled;
        ASSERT_TRUE(repack_q4_k_as_row_groups(q.t, s.rows, s.cols, pooled, &pool));
        ASSERT_EQ(0, std::memcmp(pooled.data, w.data, w.nbytes()));
    }
}

TEST(KernelsQ4KRows, RefusesOtherTensorsAndShapes) {
    WeightMatrix w;
    const Q4KTensor q(4, 512, 2);
    EXPECT_FALSE(repack_q4_k_as_row_groups(q.t, 8, 512, w)) << "more values than the tensor";
    EXPECT_FALSE(repack_q4_k_as_row_groups(q.t, 4, 256, w)) << "fewer values than the tensor";
    RawTensor short_bytes = q.t;
    short_bytes.nbytes -= 1;
    EXPECT_FALSE(repack_q4_k_as_row_groups(short_bytes, 4, 512, w)) << "bytes not whole blocks";
    RawTensor q6k = q.t;
    q6k.dtype = DType::Q6_K;
    EXPECT_FALSE(repack_q4_k_as_row_groups(q6k, 4, 512, w)) << "not Q4_K";
    EXPECT_TRUE(w.empty());
    // Columns that are not whole super-blocks: no Q4_KR row (GGUF never writes such a Q4_K).
    EXPECT_EQ(0u, row_group_bytes(WType::Q4_KR, 288));
    EXPECT_EQ(0u, int8_dot_row_bytes(WType::Q4_KR, 288));
}

// The reference on Q4_KR against the chunked Q4_1FX reference (the same values: a different
// summation order) and the exact sum of the dequantized weights times the quantized activations.
TEST(KernelsQ4KRows, ReferenceAgreesWithQ4_1FXAndTheExactSum) {
    for (Shape s : kShapes) {
        SCOPED_TRACE(std::to_string(s.rows) + "x" + std::to_string(s.cols));
        const Q4KTensor q(s.rows, s.cols, 3);
        const WeightMatrix rows = q4_k_rows(q);
        WeightMatrix chunked;
        ASSERT_TRUE(repack_affine_for_int8_dot(q.t, s.rows, s.cols, chunked));
        ASSERT_EQ(WType::Q4_1FX, chunked.type);
        const int64_t n = 3;
        const std::vector<float> x = random_normal(size_t(n * s.cols), 4);
        QuantizedColumns qx;
        resize_columns(n, s.cols, qx);
        ref::quantize_columns(x.data(), s.cols, qx, 0, n);
        std::vector<float> got(size_t(n * s.rows)), other(got.size());
        ref::gemm_i8_rows(rows, qx, got.data(), s.rows, 0, s.rows);
        ref::gemm_i8_rows(chunked, qx, other.data(), s.rows, 0, s.rows);
        std::vector<float> wrow(size_t(s.cols));
        for (int64_t r = 0; r < s.rows; ++r) {
            weight_row_f32(rows, r, wrow.data());
            for (int64_t j = 0; j < n; ++j) {
                double exact = 0, magnitude = 0;
                for (int64_t k = 0; k < s.cols; ++k) {
                    const int64_t b = k / 32, e = k % 32;
                    const int8_t code = qx.codes_of(j)[(b / 16) * 512 + (e / 4) * 64 + 4 * (b % 16) + e % 4];
                    const double xv = double(code) * qx.scales_of(j)[b];
                    exact += double(wrow[size_t(k)]) * xv;
                    magnitude += std::fabs(double(wrow[size_t(k)]) * xv);
                }
                // Each block adds two rounded products and two rounded fmas, each a few ulps of
                // the running magnitude (the two terms cancel in part: the magnitude counts the
                // weights' values, which the scaled codes and mins make up).
                const double tol = 8e-7 * magnitude * double(s.cols / 32 + 2);
                const float g = got[size_t(j * s.rows + r)];
                EXPECT_NEAR(exact, g, tol) << "row " << r << " col " << j;
                EXPECT_NEAR(other[size_t(j * s.rows + r)], g, 2 * tol) << "row " << r << " col " << j;
            }
        }
    }
}

// Every table gives the reference's bits for every width and thread count.
TEST(KernelsQ4KRows, EveryTableEqualsReferenceBitwiseForEveryWidth) {
    for (Shape s : kShapes) {
        const Q4KTensor q(s.rows, s.cols, 5);
        const WeightMatrix w = q4_k_rows(q);
        const std::vector<float> x = random_normal(size_t(16 * s.cols), 6);
        const std::vector<float> want = matmul_on(reference_kernels(), w, x, 16, 1);
        for (const std::string& isa : available_isas())
            for (int64_t n = 1; n <= 16; ++n)
                for (int threads : {1, 2}) {
                    const std::vector<float> got = matmul_on(kernels_for(isa), w, x, n, threads);
                    ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
                        << isa << " " << s.rows << "x" << s.cols << " n=" << n << " threads=" << threads;
                }
    }
}

// The extremes: every code 15 with scales and mins 63, activations at +-127 (the integer sums
// at their largest), on every table.
TEST(KernelsQ4KRows, ExtremeCodesEveryTableEqualsReference) {
    Q4KTensor q(21, 512, 7);
    for (size_t b = 0; b < q.bytes.size(); b += kQ4KBlockBytes) {
        std::memset(&q.bytes[b + 4], 0xff, 12);   // every 6-bit scale and min 63
        std::memset(&q.bytes[b + 16], 0xff, 128);  // every code 15
    }
    const WeightMatrix w = q4_k_rows(q);
    std::vector<float> x(size_t(3 * 512));
    for (size_t i = 0; i < x.size(); ++i) x[i] = (i / 5) % 2 ? 3.0f : -3.0f;
    const std::vector<float> want = matmul_on(reference_kernels(), w, x, 3, 1);
    for (const std::string& isa : available_isas()) {
        const std::vector<float> got = matmul_on(kernels_for(isa), w, x, 3, 2);
        ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float))) << isa;
    }
}

// Every table's int8 product called directly on row ranges that start and end inside groups
// (the 256-bit kernels take a group's 8-row halves one at a time above 2 columns, so ranges end in
// either half): the rows in range get the reference's bits, the others stay untouched.
TEST(KernelsQ4KRows, EveryTableOnRowRangesInsideGroupsEqualsReference) {
    const Q4KTensor q(70, 512, 9);
    const WeightMatrix w = q4_k_rows(q);
    for (int64_t n : {1, 2, 3, 4, 5, 8, 9}) {
        const std::vector<float> x = random_normal(size_t(n * 512), 10);
        QuantizedColumns qx;
        resize_columns(n, 512, qx);
        ref::quantize_columns(x.data(), 512, qx, 0, n);
        for (const std::string& isa : available_isas())
            for (auto [r0, r1] : {std::pair<int64_t, int64_t>{5, 29}, {0, 70}, {17, 18}, {33, 70}, {48, 64}, {8, 16},
                                  {3, 12}, {66, 70}}) {
                std::vector<float> want(size_t(n * 70), -1.0f), got(want.size(), -1.0f);
                ref::gemm_i8_rows(w, qx, want.data(), 70, r0, r1);
                kernels_for(isa).gemm_i8_rows(w, qx, got.data(), 70, r0, r1);
                ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
                    << isa << " rows " << r0 << ".." << r1 << " n=" << n;
            }
    }
}

#if defined(__x86_64__)
bool have_avx512() {
    const std::vector<std::string> isas = available_isas();
    return std::find(isas.begin(), isas.end(), "avx512") != isas.end();
}

// The AVX-512 kernel with each way of prefetching forced (the CPU picks one per width) and with
// and without GFNI, on row ranges inside groups, at widths of one column pass and several.
TEST(KernelsQ4KRows, Avx512EveryFetchWayEqualsReference) {
    if (!have_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
    const Q4KTensor q(70, 768, 11);
    const WeightMatrix w = q4_k_rows(q);
    for (int64_t n : {1, 2, 4, 5, 8, 9, 16}) {
        const std::vector<float> x = random_normal(size_t(n * 768), 12);
        QuantizedColumns qx;
        resize_columns(n, 768, qx);
        ref::quantize_columns(x.data(), 768, qx, 0, n);
        for (bool gfni : {false, true}) {
            if (gfni && !__builtin_cpu_supports("gfni")) continue;
            for (auto [r0, r1] : {std::pair<int64_t, int64_t>{5, 29}, {0, 70}, {33, 70}, {5, 70}})
                for (avx512::RowGroupFetch fetch : {avx512::RowGroupFetch::ForThisCpu, avx512::RowGroupFetch::Cursor,
                                                 avx512::RowGroupFetch::GroupStreams}) {
                    std::vector<float> want(size_t(n * 70), -1.0f), got(want.size(), -1.0f);
                    ref::gemm_i8_rows(w, qx, want.data(), 70, r0, r1);
                    avx512::gemm_row_groups(w, qx, got.data(), 70, r0, r1, gfni, fetch);
                    ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
                        << "rows " << r0 << ".." << r1 << " n=" << n << (gfni ? " GFNI" : " shift and mask")
                        << " fetch " << int(fetch);
                }
        }
    }
}

// NEXTN_Q4_K_LAYOUT chooses an int8 table's Q4_K layout once, in a fresh process: row groups by
// default and for "rows", Q4_1FX for "chunked", an error naming an unknown value.
int q4_k_layout_in_fresh_table(const std::string& isa, const char* layout) {
    setenv("NEXTN_Q4_K_LAYOUT", layout, 1);
    try {
        std::exit(kernels_for(isa).row_groups.q4_k ? 17 : 16);
    } catch (const Error& e) {
        std::fprintf(stderr, "%s\n", e.what());
        std::exit(3);
    }
}

TEST(KernelsQ4KRowsDeathTest, LayoutChosenByEnvironment) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");  // fresh process: the table not yet built
    int tables = 0;
    for (const std::string& isa : available_isas()) {
        if (isa == "scalar") continue;  // no int8 kernels
        ++tables;
        EXPECT_EXIT(q4_k_layout_in_fresh_table(isa, ""), testing::ExitedWithCode(17), "") << isa;
        EXPECT_EXIT(q4_k_layout_in_fresh_table(isa, "rows"), testing::ExitedWithCode(17), "") << isa;
        EXPECT_EXIT(q4_k_layout_in_fresh_table(isa, "chunked"), testing::ExitedWithCode(16), "") << isa;
        EXPECT_EXIT(q4_k_layout_in_fresh_table(isa, "columns"), testing::ExitedWithCode(3),
                    "NEXTN_Q4_K_LAYOUT=columns: unknown weight layout")
            << isa;
    }
    if (tables == 0) GTEST_SKIP() << "no int8 table on this CPU (no AVX2)";
}
#endif

}  // namespace
}  // namespace nextn
