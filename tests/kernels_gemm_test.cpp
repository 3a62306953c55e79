// Small-N GEMM: every ISA against the scalar reference (within a summation-order bound), the
// reference against a double-precision sum, and bitwise batch invariance (width n vs n calls of
// width 1, 1 vs 2 threads, any row split) for every weight type and ISA.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "error_of.h"
#include "kernel_test_helpers.h"
#include "kernels/kernels.h"
#include "kernels/ref/ref.h"

namespace nextn {
namespace {

std::vector<float> random_values(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) {
        do x = dist(rng);
        while (x == 0.0f);  // never zeros
    }
    return v;
}

const WType kTypes[] = {WType::F32, WType::BF16, WType::F16, WType::Q8_0, WType::Q4_0, WType::Q4_1};

bool is_block_type(WType t) { return t == WType::Q8_0 || t == WType::Q4_0 || t == WType::Q4_1; }

// Shapes with row counts that leave remainders for every tile height and, for float types,
// column counts that leave vector tails; short block rows (512 and 544 values, attention-head
// sized) among them.
struct Shape {
    int64_t rows, cols;
};
std::vector<Shape> shapes_for(WType t) {
    if (is_block_type(t)) return {{37, 96}, {19, 256}, {5, 32}, {21, 512}, {3, 544}};
    return {{37, 100}, {19, 256}, {5, 7}, {3, 33}};
}

WeightMatrix random_weight(WType t, Shape s, uint32_t seed) {
    const std::vector<float> w = random_values(size_t(s.rows * s.cols), seed);
    WeightMatrix m = make_weight_f32(w.data(), s.rows, s.cols, t);
    EXPECT_EQ(m.type, t);
    return m;
}

using test::matmul_on;

// Any two summation orders of K terms each lie within gamma_K * sum|terms| of the exact sum
// (Higham, Accuracy and Stability, eq. 3.5), so they differ by at most twice that.
float order_bound(const std::vector<float>& wrow, const float* x, int64_t K) {
    double mag = 0.0;
    for (int64_t k = 0; k < K; ++k) mag += std::fabs(double(wrow[k]) * x[k]);
    const double u = std::ldexp(1.0, -24);
    return float(2.0 * (K * u / (1.0 - K * u)) * mag) + 1e-30f;
}

TEST(KernelsGemm, ReferenceMatchesDoubleSum) {
    for (WType t : kTypes) {
        for (Shape s : shapes_for(t)) {
            const WeightMatrix w = random_weight(t, s, 1);
            const int64_t n = 3;
            const std::vector<float> x = random_values(size_t(n * s.cols), 2);
            const std::vector<float> y = matmul_on(reference_kernels(), w, x, n, 1);
            std::vector<float> row(size_t(s.cols));
            for (int64_t r = 0; r < s.rows; ++r) {
                weight_row_f32(w, r, row.data());
                for (int64_t j = 0; j < n; ++j) {
                    double exact = 0.0;
                    for (int64_t k = 0; k < s.cols; ++k) exact += double(row[k]) * x[j * s.cols + k];
                    EXPECT_NEAR(y[j * s.rows + r], exact, order_bound(row, &x[j * s.cols], s.cols) / 2)
                        << wtype_name(t) << " r=" << r << " j=" << j;
                }
            }
        }
    }
}

// The reference is an f32 sum in index order (kernels/ref/gemm_ref.cpp): the oracle is the same
// on every machine only if its order is fixed. Two columns where the order decides the result:
// 2^24 + 1 rounds to 2^24 (a tie, to even), so [2^24, 1, -2^24] sums to 0 in index order (1 the
// other way), and [-2^24, 1, 2^24] to 1 (0 the other way).
TEST(KernelsGemm, ReferenceSumsEachRowInIndexOrder) {
    const float big = 16777216.0f;  // 2^24
    const float ones[3] = {1.0f, 1.0f, 1.0f};
    WeightMatrix w = make_weight_f32(ones, 1, 3, WType::F32);
    const float x[6] = {big, 1.0f, -big, -big, 1.0f, big};
    float y[2] = {-1.0f, -1.0f};
    ref::gemm_rows(w, x, 2, y, 1, 0, 1);
    EXPECT_EQ(y[0], 0.0f);
    EXPECT_EQ(y[1], 1.0f);
}

TEST(KernelsGemm, EveryIsaMatchesReference) {
    for (const std::string& isa : available_isas()) {
        const KernelTable& k = kernels_for(isa);
        for (WType t : kTypes) {
            for (Shape s : shapes_for(t)) {
                const WeightMatrix w = random_weight(t, s, 3);
                const int64_t n = 7;
                const std::vector<float> x = random_values(size_t(n * s.cols), 4, -2.0f, 2.0f);
                const std::vector<float> ref = matmul_on(reference_kernels(), w, x, n, 1);
                const std::vector<float> got = matmul_on(k, w, x, n, 2);
                std::vector<float> row(size_t(s.cols));
                for (int64_t r = 0; r < s.rows; ++r) {
                    weight_row_f32(w, r, row.data());
                    for (int64_t j = 0; j < n; ++j)
                        ASSERT_NEAR(got[j * s.rows + r], ref[j * s.rows + r],
                                    order_bound(row, &x[j * s.cols], s.cols))
                            << isa << " " << wtype_name(t) << " [" << s.rows << "x" << s.cols
                            << "] r=" << r << " j=" << j;
                }
            }
        }
    }
}

TEST(KernelsGemm, BatchInvariantBitwise) {
    for (const std::string& isa : available_isas()) {
        const KernelTable& k = kernels_for(isa);
        for (WType t : kTypes) {
            for (Shape s : shapes_for(t)) {
                const WeightMatrix w = random_weight(t, s, 5);
                const int64_t max_n = 16;
                const std::vector<float> x = random_values(size_t(max_n * s.cols), 6, -3.0f, 3.0f);
                // Width 1, one column at a time, single thread: the baseline bits.
                std::vector<float> single(size_t(max_n * s.rows));
                for (int64_t j = 0; j < max_n; ++j) {
                    std::vector<float> xj(x.begin() + j * s.cols, x.begin() + (j + 1) * s.cols);
                    const std::vector<float> yj = matmul_on(k, w, xj, 1, 1);
                    std::memcpy(&single[j * s.rows], yj.data(), size_t(s.rows) * 4);
                }
                for (int64_t n = 1; n <= max_n; ++n) {
                    for (int threads : {1, 2}) {
                        const std::vector<float> y = matmul_on(k, w, x, n, threads);
                        ASSERT_EQ(0, std::memcmp(y.data(), single.data(), size_t(n * s.rows) * 4))
                            << isa << " " << wtype_name(t) << " [" << s.rows << "x" << s.cols
                            << "] n=" << n << " threads=" << threads;
                    }
                }
                // A column's bits do not depend on its neighbours either: shift by one column.
                const std::vector<float> x_shift(x.begin() + s.cols, x.end());
                const std::vector<float> y_shift = matmul_on(k, w, x_shift, max_n - 1, 2);
                ASSERT_EQ(0, std::memcmp(y_shift.data(), &single[s.rows],
                                         size_t((max_n - 1) * s.rows) * 4))
                    << isa << " " << wtype_name(t) << " shifted columns";
            }
        }
    }
}

// Row ranges that cut tiles anywhere (what other thread counts or pool splits would do) give
// the same bits as one call over all rows, and a call writes its own rows only: each range is
// computed alone into a buffer of NaN, and every row outside it must still hold NaN (a tile
// rounded up past its range's end would race with the thread that owns those rows).
TEST(KernelsGemm, RowSplitInvariantBitwise) {
    for (const std::string& isa : available_isas()) {
        const KernelTable& k = kernels_for(isa);
        for (WType t : kTypes) {
            const Shape s = shapes_for(t)[0];
            const WeightMatrix w = random_weight(t, s, 7);
            const int64_t n = 5;
            const std::vector<float> x = random_values(size_t(n * s.cols), 8);
            std::vector<float> whole(size_t(n * s.rows));  // [n, rows]
            k.gemm_rows(w, x.data(), n, whole.data(), s.rows, 0, s.rows);
            for (int64_t cut : {int64_t(1), int64_t(3), int64_t(5), s.rows - 2}) {
                // The later range first: a call that wrote past its end would not be overwritten.
                for (auto [r0, r1] : {std::pair{cut, s.rows}, std::pair{int64_t(0), cut}}) {
                    std::vector<float> part(whole.size(), std::nanf(""));
                    k.gemm_rows(w, x.data(), n, part.data(), s.rows, r0, r1);
                    for (int64_t j = 0; j < n; ++j)
                        for (int64_t r = 0; r < s.rows; ++r) {
                            const float got = part[size_t(j * s.rows + r)];
                            const float want = whole[size_t(j * s.rows + r)];
                            if (r >= r0 && r < r1)
                                ASSERT_EQ(0, std::memcmp(&got, &want, 4))
                                    << isa << " " << wtype_name(t) << " rows [" << r0 << ", " << r1
                                    << ") column " << j << " row " << r;
                            else
                                ASSERT_TRUE(std::isnan(got))
                                    << isa << " " << wtype_name(t) << " rows [" << r0 << ", " << r1
                                    << ") wrote row " << r << " of column " << j;
                        }
                }
            }
        }
    }
}

// Widths beyond one tile (prefill; attention's scores of a block of 8 tokens x 4 query heads
// over the f32 or f16 K cache) are column groups of the same tile, for every type gemm_rows
// reads (kTypes: BatchInvariantBitwise stops at width 16).
TEST(KernelsGemm, WideBatchMatchesColumns) {
    const Shape s{21, 64};
    for (const std::string& isa : available_isas())
        for (WType t : kTypes) {
            const KernelTable& k = kernels_for(isa);
            const WeightMatrix w = random_weight(t, s, 9);
            const int64_t n = 37;
            const std::vector<float> x = random_values(size_t(n * s.cols), 10);
            const std::vector<float> y = matmul_on(k, w, x, n, 2);
            for (int64_t j = 0; j < n; ++j) {
                std::vector<float> xj(x.begin() + j * s.cols, x.begin() + (j + 1) * s.cols);
                const std::vector<float> yj = matmul_on(k, w, xj, 1, 1);
                ASSERT_EQ(0, std::memcmp(&y[j * s.rows], yj.data(), size_t(s.rows) * 4))
                    << isa << " " << wtype_name(t) << " j=" << j;
            }
        }
}

TEST(KernelsGemm, RejectsMalformedWeight) {
    ThreadPool pool(1);
    WeightMatrix w;
    float x = 1.0f, y = 0.0f;
    EXPECT_THROW(matmul(w, &x, 1, &y, pool), Error);
    std::vector<float> v(40, 1.0f);
    w = make_weight_f32(v.data(), 1, 40, WType::F32);
    w.type = WType::Q8_0;  // 40 columns cannot be Q8_0
    EXPECT_THROW(matmul(w, v.data(), 1, &y, pool), Error);
}

TEST(KernelsDispatch, IsaSelection) {
    const std::vector<std::string> isas = available_isas();
    ASSERT_FALSE(isas.empty());
    EXPECT_EQ(isas.front(), "scalar");
    EXPECT_STREQ(kernels_for("scalar").isa, "scalar");
    EXPECT_THROW(kernels_for("sse9"), Error);
    const char* forced = std::getenv("NEXTN_ISA");
    EXPECT_STREQ(kernels().isa, forced && *forced ? forced : isas.back().c_str());
}

TEST(KernelsDispatchDeathTest, UnknownForcedIsaIsAnError) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");  // fresh process: kernels() not yet chosen
    EXPECT_EXIT(
        {
            setenv("NEXTN_ISA", "neon9", 1);
            try {
                kernels();
            } catch (const Error& e) {
                std::fprintf(stderr, "%s\n", e.what());
                std::exit(3);
            }
            std::exit(0);
        },
        testing::ExitedWithCode(3), "NEXTN_ISA=neon9: unknown kernel ISA 'neon9'");
}

// The ISA names kernels.h lists for NEXTN_ISA (scalar|avx2|avxvnni|avx512; on aarch64
// scalar|neon|dotprod), worst to best, are
// what an unknown name's error offers; reference_kernels() is the scalar table.
TEST(KernelsDispatch, UnknownIsaListsTheKnownOnes) {
#if NEXTN_X86_KERNELS
    EXPECT_EQ(test::error_of([] { kernels_for("sse9"); }),
              "unknown kernel ISA 'sse9' (known: scalar, avx2, avxvnni, avx512)");
#elif NEXTN_ARM_KERNELS
    EXPECT_EQ(test::error_of([] { kernels_for("avx2"); }),
              "unknown kernel ISA 'avx2' (known: scalar, neon, dotprod)");
#else
    EXPECT_EQ(test::error_of([] { kernels_for("avx2"); }),
              "unknown kernel ISA 'avx2' (known: scalar)");
#endif
    EXPECT_STREQ(reference_kernels().isa, "scalar");
    EXPECT_EQ(&reference_kernels(), &kernels_for("scalar"));
}

// narrow_fetch_summary (kernels.h): a table's narrow_fetch alone, or with a timed alternative
// "<its> or <the alternative's>, timed against each other while decoding".
TEST(KernelsDispatch, NarrowFetchSummary) {
    KernelTable streams, cursor;
    streams.narrow_fetch = "group streams";
    cursor.narrow_fetch = "cursor";
    EXPECT_EQ(narrow_fetch_summary(streams), "group streams");
    EXPECT_EQ(narrow_fetch_summary(reference_kernels()), "");
    cursor.timed_alternative = &streams;
    EXPECT_EQ(narrow_fetch_summary(cursor),
              "cursor or group streams, timed against each other while decoding");
}

// gdn_recurrence refuses a head layout it cannot split: no key or value heads, value heads not a
// multiple of the key heads, or empty head dimensions; the message gives all four numbers.
TEST(KernelsDispatch, GdnRecurrenceRefusesABadHeadLayout) {
    ThreadPool pool(1);
    std::vector<float> buffer(1024, 0.0f);
    float* b = buffer.data();
    auto call = [&](int Hk, int Hv, int Dk, int Dv) {
        return test::error_of([&] {
            gdn_recurrence(reference_kernels(), b, b, 0, b, b, b, b, b, 1, Hk, Hv, Dk, Dv, false, b,
                           pool);
        });
    };
    EXPECT_EQ(call(2, 3, 4, 4), "gdn_recurrence: bad head layout Hk=2 Hv=3 Dk=4 Dv=4");
    EXPECT_EQ(call(0, 2, 4, 4), "gdn_recurrence: bad head layout Hk=0 Hv=2 Dk=4 Dv=4");
    EXPECT_EQ(call(2, 0, 4, 4), "gdn_recurrence: bad head layout Hk=2 Hv=0 Dk=4 Dv=4");
    EXPECT_EQ(call(1, 2, 0, 4), "gdn_recurrence: bad head layout Hk=1 Hv=2 Dk=0 Dv=4");
    EXPECT_EQ(call(1, 2, 4, -1), "gdn_recurrence: bad head layout Hk=1 Hv=2 Dk=4 Dv=-1");
}

// NEXTN_ISA (kernels.h) forces a supported table by name; set but empty it forces nothing, and
// the best table this CPU supports (available_isas' last) is chosen. Each in a fresh process:
// kernels() chooses once. The child exits 0 when the choice is right, 1 when not, 3 on an error.
[[noreturn]] void exit_with_forced_isa(const char* forced, const std::string& want) {
    setenv("NEXTN_ISA", forced, 1);
    try {
        std::exit(kernels().isa == want ? 0 : 1);
    } catch (const Error& e) {
        std::fprintf(stderr, "%s\n", e.what());
        std::exit(3);
    }
}

TEST(KernelsDispatchDeathTest, ForcedIsaIsUsedAndEmptyForcesNothing) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    const std::vector<std::string> isas = available_isas();
    EXPECT_EXIT(exit_with_forced_isa("", isas.back()), testing::ExitedWithCode(0), "");
    for (const std::string& isa : isas)
        EXPECT_EXIT(exit_with_forced_isa(isa.c_str(), isa), testing::ExitedWithCode(0), "") << isa;
}

}  // namespace
}  // namespace nextn
