// The compute-peak probes bench divides prefill's work by: every ISA's probe gives the scalar
// reference's values bit for bit on random inputs, the reference gives the closed form (reps
// times one repetition's sums), and the measured peak is a positive rate.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "core/thread_pool.h"
#include "error_of.h"
#include "kernels/kernels.h"
#include "kernels/measure.h"

namespace nextn {
namespace {

constexpr int C = kPeakProbeChains;

struct Int8Inputs {
    std::vector<uint8_t> a;  // [C, 64], codes 0..255
    std::vector<int8_t> b;   // [64], -128..127
    std::vector<int32_t> acc;
};

Int8Inputs random_int8(uint32_t seed) {
    std::mt19937 rng(seed);
    Int8Inputs in{std::vector<uint8_t>(size_t(C * 64)), std::vector<int8_t>(64), std::vector<int32_t>(size_t(C * 16))};
    // Codes a < 128, |b| <= 127: AVX2's pmaddubsw pair sums (at most 2 * 127 * 127 = 32258) stay
    // below its saturation at 32767, as the probe's contract asks, and 53 repetitions of four
    // products stay far inside int32.
    for (auto& x : in.a) x = uint8_t(rng() % 128);
    for (auto& x : in.b) x = int8_t(int(rng() % 255) - 127);
    for (auto& x : in.acc) x = int32_t(rng() % 2001) - 1000;
    return in;
}

TEST(PeakProbe, Int8EveryIsaEqualsReference) {
    for (int64_t reps : {0, 1, 37}) {
        const Int8Inputs in = random_int8(uint32_t(reps) + 1);
        std::vector<int32_t> want = in.acc;
        reference_kernels().int8_peak_probe(in.a.data(), in.b.data(), reps, want.data());
        for (const std::string& isa : available_isas()) {
            std::vector<int32_t> got = in.acc;
            kernels_for(isa).int8_peak_probe(in.a.data(), in.b.data(), reps, got.data());
            EXPECT_EQ(got, want) << isa << " reps " << reps;
        }
    }
}

TEST(PeakProbe, Int8ReferenceIsRepsTimesOneRepetition) {
    const Int8Inputs in = random_int8(9);
    const int64_t reps = 53;
    std::vector<int32_t> got = in.acc;
    reference_kernels().int8_peak_probe(in.a.data(), in.b.data(), reps, got.data());
    for (int i = 0; i < C; ++i)
        for (int l = 0; l < 16; ++l) {
            int64_t once = 0;
            for (int j = 0; j < 4; ++j) once += int64_t(in.a[size_t(i * 64 + 4 * l + j)]) * in.b[size_t(4 * l + j)];
            EXPECT_EQ(got[size_t(i * 16 + l)], in.acc[size_t(i * 16 + l)] + reps * once) << i << "," << l;
        }
}

TEST(PeakProbe, FmaEveryIsaEqualsReferenceBitwise) {
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> a(size_t(C * 16)), b(16), acc(size_t(C * 16));
    for (float& x : a) x = dist(rng);
    for (float& x : b) x = dist(rng);
    for (float& x : acc) x = dist(rng);
    for (int64_t reps : {0, 1, 37}) {
        std::vector<float> want = acc;
        reference_kernels().fma_peak_probe(a.data(), b.data(), reps, want.data());
        for (const std::string& isa : available_isas()) {
            std::vector<float> got = acc;
            kernels_for(isa).fma_peak_probe(a.data(), b.data(), reps, got.data());
            for (size_t i = 0; i < got.size(); ++i)
                ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
                    << isa << " reps " << reps << " element " << i;
        }
    }
    // The reference is the chain of fused multiply-adds it claims.
    std::vector<float> want = acc, got = acc;
    for (int r = 0; r < 37; ++r)
        for (size_t i = 0; i < want.size(); ++i) want[i] = std::fma(a[i], b[i % 16], want[i]);
    reference_kernels().fma_peak_probe(a.data(), b.data(), 37, got.data());
    EXPECT_EQ(got, want);
}

TEST(PeakProbe, Bf16EveryIsaEqualsReferenceBitwise) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<uint16_t> a(size_t(C * 32)), b(32);
    std::vector<float> acc(size_t(C * 16));
    for (uint16_t& x : a) x = f32_to_bf16(dist(rng));
    for (uint16_t& x : b) x = f32_to_bf16(dist(rng));
    for (float& x : acc) x = dist(rng);
    for (int64_t reps : {0, 1, 37}) {
        std::vector<float> want = acc;
        reference_kernels().bf16_peak_probe(a.data(), b.data(), reps, want.data());
        for (const std::string& isa : available_isas()) {
            std::vector<float> got = acc;
            kernels_for(isa).bf16_peak_probe(a.data(), b.data(), reps, got.data());
            for (size_t i = 0; i < got.size(); ++i)
                ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
                    << isa << " reps " << reps << " element " << i;
        }
    }
    // The reference is the chain of bf16 dot steps it claims: per lane l of chain i, the odd
    // product a[i, 2l + 1] b[2l + 1], then the even one, each one fused multiply-add (these
    // values are normal, so the subnormal rules do not enter).
    std::vector<float> want = acc, got = acc;
    for (int r = 0; r < 37; ++r)
        for (int i = 0; i < C; ++i)
            for (int l = 0; l < 16; ++l) {
                float& x = want[size_t(i * 16 + l)];
                x = std::fma(bf16_to_f32(a[size_t(i * 32 + 2 * l + 1)]), bf16_to_f32(b[size_t(2 * l + 1)]), x);
                x = std::fma(bf16_to_f32(a[size_t(i * 32 + 2 * l)]), bf16_to_f32(b[size_t(2 * l)]), x);
            }
    reference_kernels().bf16_peak_probe(a.data(), b.data(), 37, got.data());
    EXPECT_EQ(got, want);
}

// A rate within what two x86 cores can do: at most two 512-bit dot-product instructions a cycle
// (64 int8 or 32 bf16 pairs, or 16 f32 fused multiply-adds, each pair 2 ops) at 6 GHz is
// 1.5e12 ops/s a core, so 1e13 for two leaves room and still catches a units slip.
TEST(PeakProbe, MeasuredPeakIsAPlausibleRate) {
    ThreadPool pool(2);
    for (PeakKind kind : {PeakKind::Int8, PeakKind::F32, PeakKind::Bf16}) {
        const double ops = measure_compute_peak_ops(kernels(), pool, kind, 0.002);
        EXPECT_TRUE(std::isfinite(ops) && ops > 1e8 && ops < 1e13)
            << peak_kind_name(kind) << " " << ops;
    }
}

// The read probe's buffer is four times the last-level cache, within [kReadProbeTargetBytes,
// kReadProbeMaxBytes], and a quarter of the available memory at most unless that is below
// kReadProbeBytes.
TEST(ReadProbe, BufferIsFourTimesTheCacheWithinItsBounds) {
    constexpr size_t MB = size_t(1) << 20, plenty = size_t(64) << 30;
    EXPECT_EQ(read_probe_bytes_for(260 * MB, plenty), 1040 * MB);  // the Xeon VM's 260 MB L3
    EXPECT_EQ(read_probe_bytes_for(32 * MB, plenty), kReadProbeTargetBytes);  // a small L3
    EXPECT_EQ(read_probe_bytes_for(0, plenty), kReadProbeTargetBytes);        // unknown cache
    EXPECT_EQ(read_probe_bytes_for(1152 * MB, plenty), kReadProbeMaxBytes);   // capped at 4 GB
    EXPECT_EQ(read_probe_bytes_for(260 * MB, 2400 * MB), 600 * MB);  // a quarter of 2.4 GB free
    EXPECT_EQ(read_probe_bytes_for(260 * MB, 400 * MB), kReadProbeBytes);  // never below the floor
    const size_t here = read_probe_bytes();
    EXPECT_GE(here, kReadProbeBytes);
    EXPECT_LE(here, kReadProbeMaxBytes);
}

// One ReadProbe serves repeated probes and probes of a prefix of its buffer (bench's
// weight-sized probe); a prefix too small to split among the threads is refused, and a request
// past the buffer reads the whole buffer. Rates stay below what two cores can load from their
// own caches: three 64-byte loads a cycle at 6 GHz, 2.3 TB/s for two.
TEST(ReadProbe, ReusedBufferGivesPositiveRatesAndRefusesTooSmallAPrefix) {
    ThreadPool pool(2);
    constexpr size_t MB = size_t(1) << 20;
    const ReadProbe probe(pool, 8 * MB);
    EXPECT_EQ(probe.bytes(), 8 * MB);
    for (size_t bytes : {8 * MB, 1 * MB, 64 * MB}) {
        const double gbs = probe.measure_gbs(kernels(), bytes);
        EXPECT_TRUE(std::isfinite(gbs) && gbs > 0.1 && gbs < 2304) << bytes << " bytes: " << gbs;
    }
    try {
        probe.measure_gbs(kernels(), 256);
        ADD_FAILURE() << "a 256-byte prefix was probed";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("256 bytes too small"), std::string::npos) << e.what();
    }
}

// The names measure.h gives each peak kind and its probe (bench and the tuning report print
// them): "int8", "f32", "bf16"; "int8 dot products", "fused multiply-adds", "bf16 dot products".
TEST(PeakProbe, KindsAndProbesAreNamedAsDocumented) {
    EXPECT_STREQ(peak_kind_name(PeakKind::Int8), "int8");
    EXPECT_STREQ(peak_kind_name(PeakKind::F32), "f32");
    EXPECT_STREQ(peak_kind_name(PeakKind::Bf16), "bf16");
    EXPECT_STREQ(peak_probe_name(PeakKind::Int8), "int8 dot products");
    EXPECT_STREQ(peak_probe_name(PeakKind::F32), "fused multiply-adds");
    EXPECT_STREQ(peak_probe_name(PeakKind::Bf16), "bf16 dot products");
}

// measure_gemm_cost describes the matrix it timed: its type and shape, one matrix's bytes (an
// f32 [8, 64] matrix: 8 * 64 * 4 = 2048) and one positive time per width 1..max_n.
TEST(GemmCost, DescribesTheTimedMatrix) {
    ThreadPool pool(1);
    const GemmCost cost = measure_gemm_cost(kernels(), WType::F32, 8, 64, 3, pool, 0.0, 0);
    EXPECT_EQ(cost.type, WType::F32);
    EXPECT_EQ(cost.rows, 8);
    EXPECT_EQ(cost.cols, 64);
    EXPECT_EQ(cost.weight_bytes, 2048u);
    ASSERT_EQ(cost.seconds.size(), 3u);
    for (double s : cost.seconds) EXPECT_GT(s, 0.0);
}

// Widths start at 1, so max_n = 0 times nothing and is refused; so is an empty list of weights.
TEST(GemmCost, RefusesNoWidthsAndNoWeights) {
    ThreadPool pool(1);
    EXPECT_EQ(
        test::error_of([&] { measure_gemm_cost(kernels(), WType::F32, 8, 64, 0, pool, 0.0, 0); }),
        "measure_gemm_cost: max_n must be >= 1");
    const std::vector<float> v(8 * 64, 1.0f);
    const WeightMatrix w = make_weight_f32(v.data(), 8, 64, WType::F32);
    EXPECT_EQ(
        test::error_of([&] { time_rotating_gemm(kernels(), std::span(&w, 1), 0, pool, 0.0); }),
        "time_rotating_gemm: max_n must be >= 1");
    EXPECT_EQ(test::error_of([&] { time_rotating_gemm(kernels(), {}, 1, pool, 0.0); }),
              "time_rotating_gemm: no weights");
}

}  // namespace
}  // namespace nextn
