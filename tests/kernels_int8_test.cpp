// Block weights x int8 activations (kernels/int8_dot.h): the chunked layouts hold exactly the
// Q8_0 / Q4_0 / Q4_1 / Q6_K values; activation codes are within half a step of x and every table's
// quantizer equals the reference's bytes; every table's kernel equals the scalar reference bit
// for bit on random data for every chunked type (odd row counts, ragged last chunks, every N up
// to 16 and a prefill's, 1 and 2 threads), so batch invariance holds; the affine references lie
// within a few roundings a block of the exact sum; and the int8 result stays within the bound
// the activation rounding allows of the f32-activation product.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/half.h"
#include "core/thread_pool.h"
#include "formats/dequant.h"
#include "kernel_test_helpers.h"
#include "kernels/int8_dot.h"
#include "kernels/kernels.h"
#include "kernels/quant.h"
#include "row_group_checks.h"
#if NEXTN_X86_KERNELS
#include "kernels/x86/x86_kernels.h"
#endif

namespace nextn {
namespace {

using test::random_normal;

struct Shape {
    int64_t rows, cols;
};
// 96, 160 and 544 columns leave a ragged last chunk (3, 5 and 17 blocks); 37, 19 and 5 rows
// leave tile remainders.
const Shape kShapes[] = {{37, 96}, {19, 512}, {5, 32}, {40, 160}, {16, 1024}, {9, 544}};
const WType kBlockTypes[] = {WType::Q8_0, WType::Q4_0, WType::Q4_1};

WeightMatrix block_weight(WType type, Shape s, uint32_t seed) {
    const std::vector<float> w = random_normal(size_t(s.rows * s.cols), seed);
    return make_weight_f32(w.data(), s.rows, s.cols, type);
}

using test::matmul_on;

TEST(KernelsInt8, RepackKeepsEveryValue) {
    for (WType type : kBlockTypes) {
        for (Shape s : kShapes) {
            WeightMatrix q = block_weight(type, s, 1);
            WeightMatrix p = repack_for_int8_dot(q);
            ASSERT_EQ(int8_dot_type_for(type), p.type);
            ASSERT_EQ(0u, p.row_bytes % 64) << "rows stay 64-byte aligned";
            std::vector<float> a(size_t(s.cols)), b(size_t(s.cols));
            for (int64_t r = 0; r < s.rows; ++r) {
                weight_row_f32(q, r, a.data());
                weight_row_f32(p, r, b.data());
                ASSERT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)))
                    << wtype_name(type) << " row " << r;
            }
        }
    }
    // Other types pass through unchanged.
    WeightMatrix f = block_weight(WType::F32, {3, 64}, 1);
    EXPECT_EQ(f.data, repack_for_int8_dot(f).data);
}

using test::tensor_over;

// Random GGUF blocks of `dtype` ([rows, cols]): finite f16 scales at the byte offsets f16_at of
// each block, random bytes (codes, sub-scales, high bits) everywhere else.
struct BlockTensor {
    std::vector<uint8_t> bytes;
    RawTensor t;
    BlockTensor(const char* name, DType dtype, int64_t rows, int64_t cols, int block_values,
                int block_bytes, std::vector<int> f16_at, uint32_t seed)
        : bytes(size_t(rows * cols / block_values * block_bytes)) {
        std::mt19937 rng(seed);
        std::uniform_int_distribution<int> byte(0, 255);
        std::uniform_real_distribution<float> scale(1e-4f, 2e-2f);
        for (uint8_t& x : bytes) x = uint8_t(byte(rng));
        for (size_t b = 0; b < bytes.size() / size_t(block_bytes); ++b)
            for (int at : f16_at) {
                const uint16_t h = f32_to_f16(scale(rng));
                std::memcpy(bytes.data() + b * size_t(block_bytes) + at, &h, 2);
            }
        t = tensor_over(name, dtype, rows, cols, bytes);
    }
};

// MLX affine `bits`-bit with f32 scales that have no exact f16 form (so Q4_1 cannot hold them).
struct MlxTensor {
    std::vector<uint8_t> codes;
    std::vector<float> scales, biases;
    RawTensor t;
    MlxTensor(int bits, int64_t rows, int64_t cols, int group, uint32_t seed)
        : codes(size_t(rows * cols * bits / 8)), scales(size_t(rows * cols / group)), biases(scales.size()) {
        std::mt19937 rng(seed);
        std::uniform_int_distribution<int> byte(0, 255);
        std::uniform_real_distribution<float> u(-0.05f, 0.05f);
        for (uint8_t& c : codes) c = uint8_t(byte(rng));
        for (float& v : scales) v = 0.001f + std::fabs(u(rng)) + 1e-9f;
        for (float& v : biases) v = u(rng);
        t = tensor_over("mlx", DType::MLX_AFFINE, rows, cols, codes);
        t.bits = bits;
        t.group_size = group;
        t.scale_dtype = DType::F32;
        t.scales = reinterpret_cast<const uint8_t*>(scales.data());
        t.biases = reinterpret_cast<const uint8_t*>(biases.data());
    }
};

// A chunked matrix and the tensor its values came from (for failure messages).
struct Chunked {
    std::string source;
    WeightMatrix w;
};

// The chunked types made only from a checkpoint's codes, [s.rows, s.cols] (s.cols a multiple of
// 256): Q4_1FX from GGUF Q4_K and MLX 4-bit, Q8_1FX from GGUF Q5_1 and MLX 8-bit and 6-bit (the
// int8 forms of Q5_1 and of MLX 6/8-bit models), Q6_KX from GGUF Q6_K.
std::vector<Chunked> checkpoint_chunked(Shape s, uint32_t seed) {
    std::vector<Chunked> out;
    auto add = [&](const char* source, const RawTensor& t, WType type) {
        WeightMatrix w;
        const bool made = type == WType::Q6_KX ? repack_q6_k_for_int8_dot(t, s.rows, s.cols, w)
                                               : repack_affine_for_int8_dot(t, s.rows, s.cols, w);
        EXPECT_TRUE(made) << source;
        EXPECT_EQ(type, w.type) << source;
        if (made) out.push_back({source, std::move(w)});
    };
    add("GGUF Q4_K", BlockTensor("q4_k", DType::Q4_K, s.rows, s.cols, 256, 144, {0, 2}, seed).t,
        WType::Q4_1FX);
    add("MLX 4-bit", MlxTensor(4, s.rows, s.cols, 64, seed + 1).t, WType::Q4_1FX);
    add("GGUF Q5_1", BlockTensor("q5_1", DType::Q5_1, s.rows, s.cols, 32, 24, {0, 2}, seed + 2).t,
        WType::Q8_1FX);
    add("MLX 8-bit", MlxTensor(8, s.rows, s.cols, 32, seed + 3).t, WType::Q8_1FX);
    add("MLX 6-bit", MlxTensor(6, s.rows, s.cols, 64, seed + 4).t, WType::Q8_1FX);
    add("GGUF Q6_K", BlockTensor("q6_k", DType::Q6_K, s.rows, s.cols, 256, 210, {208}, seed + 5).t,
        WType::Q6_KX);
    return out;
}

// Every chunked type: Q8_0X, Q4_0X and Q4_1X from random values, then checkpoint_chunked's.
std::vector<Chunked> every_chunked_type(Shape s, uint32_t seed) {
    std::vector<Chunked> out;
    for (WType type : kBlockTypes)
        out.push_back({wtype_name(type), repack_for_int8_dot(block_weight(type, s, seed))});
    for (Chunked& c : checkpoint_chunked(s, seed)) out.push_back(std::move(c));
    return out;
}

TEST(KernelsInt8, AffineRepackKeepsEveryValue) {
    BlockTensor q4k("q4_k", DType::Q4_K, 7, 768, 256, 144, {0, 2}, 11);
    BlockTensor q5k("q5_k", DType::Q5_K, 3, 512, 256, 176, {0, 2}, 12);
    BlockTensor q51("q5_1", DType::Q5_1, 5, 96, 32, 24, {0, 2}, 13);
    MlxTensor m4(4, 5, 576, 64, 14);  // 18 blocks: a ragged second chunk
    MlxTensor m3(3, 4, 256, 32, 15);
    MlxTensor m6(6, 3, 512, 64, 16);
    MlxTensor m8(8, 6, 160, 32, 17);
    const std::pair<const RawTensor*, WType> cases[] = {
        {&q4k.t, WType::Q4_1FX}, {&q5k.t, WType::Q8_1FX}, {&q51.t, WType::Q8_1FX},
        {&m4.t, WType::Q4_1FX},  {&m3.t, WType::Q4_1FX},  {&m6.t, WType::Q8_1FX},
        {&m8.t, WType::Q8_1FX}};
    for (const auto& [t, type] : cases) {
        const int64_t rows = t->shape[0], cols = t->shape[1];
        SCOPED_TRACE(std::string(dtype_name(t->dtype)) + " bits " + std::to_string(t->bits));
        WeightMatrix w;
        ASSERT_TRUE(repack_affine_for_int8_dot(*t, rows, cols, w));
        ASSERT_EQ(type, w.type);
        std::vector<float> want(size_t(rows * cols)), got(static_cast<size_t>(cols));
        dequantize_to_f32(*t, want.data());
        for (int64_t r = 0; r < rows; ++r) {
            weight_row_f32(w, r, got.data());
            ASSERT_EQ(0, std::memcmp(got.data(), want.data() + r * cols, got.size() * sizeof(float)))
                << "row " << r;
        }
        // Every table's product equals the reference's bits.
        const std::vector<float> x = random_normal(size_t(5 * cols), 18);
        std::vector<float> ref = matmul_on(reference_kernels(), w, x, 5, 1);
        for (const std::string& isa : available_isas())
            for (int64_t n : {1, 2, 5})
                ASSERT_EQ(0, std::memcmp(matmul_on(kernels_for(isa), w, x, n, 2).data(), ref.data(),
                                         size_t(n * rows) * sizeof(float))) << isa << " n=" << n;
    }
    // Not affine: refused.
    WeightMatrix w;
    BlockTensor q6k("q6_k", DType::Q6_K, 2, 256, 256, 210, {208}, 1);
    EXPECT_FALSE(repack_affine_for_int8_dot(q6k.t, 2, 256, w));
}

// GGUF Q5_0 is held as Q8_0 (the same values): readable by every kernel, int8 or f32.
TEST(KernelsInt8, Q5_0IsHeldAsQ8_0WithTheSameValues) {
    BlockTensor q50("q5_0", DType::Q5_0, 6, 160, 32, 22, {0}, 19);
    WeightMatrix w = make_weight(q50.t, 6, 160, WType::Native);
    ASSERT_EQ(WType::Q8_0, w.type);
    std::vector<float> want(6 * 160), got(160);
    dequantize_to_f32(q50.t, want.data());
    for (int64_t r = 0; r < 6; ++r) {
        weight_row_f32(w, r, got.data());
        ASSERT_EQ(0, std::memcmp(got.data(), want.data() + r * 160, got.size() * sizeof(float))) << r;
    }
}

// How far an int8-activation product of weight row w and activations x (cols values) may lie
// from the f32-activation one: each activation moves by at most half its block's step
// max|x_block| / 127, plus a float-rounding allowance of 1e-5 of sum |w x|.
double activation_rounding_bound(const float* w, const float* x, int64_t cols) {
    double bound = 0, mag = 0;
    for (int64_t b = 0; b < cols / 32; ++b) {
        float amax = 0;
        for (int e = 0; e < 32; ++e) amax = std::max(amax, std::fabs(x[b * 32 + e]));
        for (int e = 0; e < 32; ++e) {
            bound += std::fabs(w[b * 32 + e]) * amax / 254.0;
            mag += std::fabs(w[b * 32 + e] * x[b * 32 + e]);
        }
    }
    return bound + 1e-5 * mag;
}

TEST(KernelsInt8, AffineFourBitEveryTableEqualsReferenceAndStaysNearTheFloatProduct) {
    BlockTensor k("q4_k", DType::Q4_K, 21, 1280, 256, 144, {0, 2}, 13);
    WeightMatrix w;
    ASSERT_TRUE(repack_affine_for_int8_dot(k.t, 21, 1280, w));
    const std::vector<float> x = random_normal(size_t(16 * 1280), 14);
    std::vector<float> want = matmul_on(reference_kernels(), w, x, 16, 1);
    for (const std::string& isa : available_isas())
        for (int64_t n : {1, 3, 4, 9, 16})
            for (int threads : {1, 2}) {
                std::vector<float> got = matmul_on(kernels_for(isa), w, x, n, threads);
                ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
                    << isa << " n=" << n << " threads=" << threads;
            }
    // Against the f32 product of the dequantized values: within the activation-rounding bound.
    std::vector<float> wf(size_t(21 * 1280));
    dequantize_to_f32(k.t, wf.data());
    WeightMatrix f32 = make_weight_f32(wf.data(), 21, 1280, WType::F32);
    std::vector<float> exact = matmul_on(reference_kernels(), f32, x, 16, 1);
    for (int64_t j = 0; j < 16; ++j)
        for (int64_t r = 0; r < 21; ++r) {
            EXPECT_LE(std::fabs(double(want[size_t(j * 21 + r)]) - exact[size_t(j * 21 + r)]),
                      activation_rounding_bound(&wf[size_t(r * 1280)], &x[size_t(j * 1280)], 1280))
                << "row " << r << " col " << j;
        }
}

// The MLX 4-bit tensor (groups of 32) of a Q4_1 matrix's values: each block's f16 d and m as
// the group's f32 scale and bias (exact), its codes packed two to a byte, the first in the low
// nibble (8 to a little-endian uint32, as MLX packs them).
struct MlxOfQ4_1 {
    std::vector<uint8_t> codes;
    std::vector<float> scales, biases;
    RawTensor t;
    explicit MlxOfQ4_1(const WeightMatrix& q)
        : codes(size_t(q.rows * q.cols / 2)),
          scales(size_t(q.rows * q.cols / 32)),
          biases(scales.size()) {
        for (int64_t r = 0; r < q.rows; ++r)
            for (int64_t b = 0; b < q.cols / 32; ++b) {
                const BlockQ4_1& blk =
                    reinterpret_cast<const BlockQ4_1*>(q.data + size_t(r) * q.row_bytes)[b];
                const size_t group = size_t(r * (q.cols / 32) + b);
                scales[group] = f16_to_f32(blk.d);
                biases[group] = f16_to_f32(blk.m);
                for (int e = 0; e < 32;
                     ++e) {  // ggml: byte e holds value e (low) and e + 16 (high)
                    const int code = e < 16 ? blk.qs[e] & 15 : blk.qs[e - 16] >> 4;
                    const int64_t i = r * q.cols + b * 32 + e;
                    codes[size_t(i / 2)] |= uint8_t(code << (4 * (i % 2)));
                }
            }
        t = tensor_over("mlx of q4_1", DType::MLX_AFFINE, q.rows, q.cols, codes);
        t.bits = 4;
        t.group_size = 32;
        t.scale_dtype = DType::F32;
        t.scales = reinterpret_cast<const uint8_t*>(scales.data());
        t.biases = reinterpret_cast<const uint8_t*>(biases.data());
    }
};

// The affine references pinned as the row-group and K-quant ones are (kernels_row_groups_test,
// kernels_k_quant_rows_test): the reference's output against the exact sum, in double, of the
// weight values times the int8 activations (code x scale), the product the int8 path computes,
// within 8e-7 a block (each adds two rounded products, dw dx and dm dx, and two rounded fmas).
// Q4_1X: its values read from its Q4_1 blocks; the second layout Q4_1FX, the same values with
// f32 scale planes (from an MLX 4-bit tensor of them). Q8_1FX from GGUF Q5_1 and from MLX 8-bit
// and 6-bit (f32 scales and biases with no f16 form): its values from dequantize_to_f32; no
// other layout holds these codes, so the matrix stands as its own second layout and the exact
// sum is the check.
TEST(KernelsInt8, AffineReferencesAgreeWithTheExactSum) {
    constexpr double kPerBlock = 8e-7;
    for (Shape s : kShapes) {
        SCOPED_TRACE(std::to_string(s.rows) + "x" + std::to_string(s.cols));
        const WeightMatrix q = block_weight(WType::Q4_1, s, 61);
        const MlxOfQ4_1 mlx(q);
        WeightMatrix fx;
        ASSERT_TRUE(repack_affine_for_int8_dot(mlx.t, s.rows, s.cols, fx));
        ASSERT_EQ(WType::Q4_1FX, fx.type);
        std::vector<float> want(static_cast<size_t>(s.cols)), got(want.size());
        for (int64_t r = 0; r < s.rows; ++r) {
            weight_row_f32(q, r, want.data());
            weight_row_f32(fx, r, got.data());
            ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
                << "Q4_1FX row " << r;
        }
        test::expect_reference_near_exact_sum(repack_for_int8_dot(q), fx, q, 3, 62, kPerBlock);

        const BlockTensor q51("q5_1", DType::Q5_1, s.rows, s.cols, 32, 24, {0, 2}, 63);
        const MlxTensor m8(8, s.rows, s.cols, 32, 64), m6(6, s.rows, s.cols, 32, 65);
        for (const RawTensor* t : {&q51.t, &m8.t, &m6.t}) {
            SCOPED_TRACE(std::string(dtype_name(t->dtype)) + " bits " + std::to_string(t->bits));
            WeightMatrix w;
            ASSERT_TRUE(repack_affine_for_int8_dot(*t, s.rows, s.cols, w));
            ASSERT_EQ(WType::Q8_1FX, w.type);
            std::vector<float> v(size_t(s.rows * s.cols));
            dequantize_to_f32(*t, v.data());
            const WeightMatrix values = make_weight_f32(v.data(), s.rows, s.cols, WType::F32);
            test::expect_reference_near_exact_sum(w, w, values, 3, 62, kPerBlock);
        }
    }
}

// Inverts the documented layout: element i of a column.
int8_t code_of(const QuantizedColumns& q, int64_t j, int64_t i) {
    const int64_t b = i / 32, e = i % 32;
    const int64_t chunk = b / kI8ChunkBlocks, l = b % kI8ChunkBlocks;
    return q.codes_of(j)[chunk * kI8ChunkValues + (e / 4) * 64 + 4 * l + e % 4];
}

TEST(KernelsInt8, ActivationCodesWithinHalfAStep) {
    const int64_t cols = 544, n = 3;  // 17 blocks: the second chunk is mostly padding
    std::vector<float> x = random_normal(size_t(n * cols), 2, 3.0f);
    x[5] = 40.0f;  // an outlier sets its block's scale
    QuantizedColumns q;
    resize_columns(n, cols, q);
    ref::quantize_columns(x.data(), cols, q, 0, n);
    ASSERT_EQ(2, q.chunks);
    for (int64_t j = 0; j < n; ++j) {
        for (int64_t i = 0; i < cols; ++i) {
            const float d = q.scales_of(j)[i / 32];
            EXPECT_LE(std::fabs(float(code_of(q, j, i)) * d - x[size_t(j * cols + i)]), 0.5f * d * 1.0001f)
                << "column " << j << " element " << i;
        }
        for (int64_t b = 0; b < 2 * kI8ChunkBlocks; ++b) {
            int32_t sum = 0, half = 0;
            for (int e = 0; e < 32; ++e) {
                const int32_t code = b < 17 ? code_of(q, j, b * 32 + e) : 0;
                sum += code;
                half += e < 16 ? code : 0;
            }
            EXPECT_EQ(sum, q.sums_of(j)[b]) << "block " << b;
            EXPECT_EQ(half, q.half_sums_of(j)[b]) << "block " << b;
        }
        // Padding blocks (17..31) are zero codes, zero scale.
        for (int64_t b = 17; b < 32; ++b) {
            EXPECT_EQ(0.0f, q.scales_of(j)[b]);
            for (int s = 0; s < kI8Steps; ++s)
                for (int i = 0; i < 4; ++i)
                    EXPECT_EQ(0, q.codes_of(j)[kI8ChunkValues + s * 64 + 4 * (b - 16) + i]);
        }
    }
}

// x [n, cols] quantized by the reference and by `isa`'s quantizer (whose buffer starts filled
// with a byte no code takes, so no stale bytes pass): expects the same bytes, scales compared as
// bits (NaN scales must match too). Returns the ISA's result.
QuantizedColumns expect_quantizer_matches_reference(const std::string& isa, const std::vector<float>& x,
                                                    int64_t n, int64_t cols) {
    QuantizedColumns want, got;
    resize_columns(n, cols, want);
    resize_columns(n, cols, got);
    std::fill(got.codes.begin(), got.codes.end(), int8_t(99));
    ref::quantize_columns(x.data(), cols, want, 0, n);
    kernels_for(isa).quantize_columns(x.data(), cols, got, 0, n);
    // The n columns' part of each buffer (resize_columns keeps room for more columns).
    const size_t values = size_t(n * want.chunks * kI8ChunkValues);
    const size_t blocks = size_t(n * want.chunks * kI8ChunkBlocks);
    auto head = [](const auto& v, size_t count) { return std::vector(v.begin(), v.begin() + ptrdiff_t(count)); };
    EXPECT_EQ(head(want.codes, values), head(got.codes, values)) << isa << " cols " << cols;
    EXPECT_EQ(0, std::memcmp(want.scales.data(), got.scales.data(), blocks * sizeof(float)))
        << isa << " cols " << cols;
    EXPECT_EQ(head(want.sums, blocks), head(got.sums, blocks)) << isa << " cols " << cols;
    EXPECT_EQ(head(want.half_sums, blocks), head(got.half_sums, blocks)) << isa << " cols " << cols;
    EXPECT_EQ(head(want.half_pairs, blocks), head(got.half_pairs, blocks)) << isa << " cols " << cols;
    for (size_t b = 0; b < blocks; ++b) {  // the two halves as int16s
        const int16_t first = int16_t(uint32_t(want.half_pairs[b]) & 0xffff);
        const int16_t second = int16_t(uint32_t(want.half_pairs[b]) >> 16);
        EXPECT_EQ(want.half_sums[b], first) << "block " << b;
        EXPECT_EQ(want.sums[b] - want.half_sums[b], second) << "block " << b;
    }
    // The planes the row-group tiles read instead of computing from the sums.
    EXPECT_EQ(head(want.starts8, blocks), head(got.starts8, blocks)) << isa << " cols " << cols;
    EXPECT_EQ(head(want.starts128, blocks), head(got.starts128, blocks)) << isa << " cols " << cols;
    EXPECT_EQ(head(want.q6_starts_first, blocks), head(got.q6_starts_first, blocks))
        << isa << " cols " << cols;
    EXPECT_EQ(head(want.q6_starts_second, blocks), head(got.q6_starts_second, blocks))
        << isa << " cols " << cols;
    EXPECT_EQ(head(want.float_sums, blocks), head(got.float_sums, blocks))
        << isa << " cols " << cols;
    for (size_t b = 0; b < blocks; ++b) {
        EXPECT_EQ(-8 * want.sums[b], want.starts8[b]) << "block " << b;
        EXPECT_EQ(-128 * want.sums[b], want.starts128[b]) << "block " << b;
        EXPECT_EQ(-32 * want.half_sums[b], want.q6_starts_first[b]) << "block " << b;
        EXPECT_EQ(-32 * (want.sums[b] - want.half_sums[b]), want.q6_starts_second[b])
            << "block " << b;
        EXPECT_EQ(double(want.sums[b]), double(want.float_sums[b])) << "block " << b;
    }
    return got;
}

// On the scalar table the quantizer is the reference itself, so this compares only where a
// vector quantizer exists (AVX2 and AVX-VNNI share one; AVX-512).
TEST(KernelsInt8, EveryQuantizerEqualsReferenceBitwise) {
    for (const std::string& isa : available_isas()) {
        for (int64_t cols : {32, 96, 544, 1024, 70}) {  // 70: a ragged block (zeros past cols)
            const int64_t n = 5;
            std::vector<float> x = random_normal(size_t(n * cols), 7, 2.0f);
            x[3] = 0.5f;
            expect_quantizer_matches_reference(isa, x, n, cols);
        }
    }
}

// Round-half-even ties and tiny (subnormal-scale) blocks: the codes the reference defines, and
// every ISA's quantizer gives the same bytes. A block whose max is 127 has d = 1, so x * (1/d)
// is x and 2.5 -> 2, 3.5 -> 4, -2.5 -> -2; a block of values below 1e-38 has a scale whose
// inverse overflows, and all its codes are 0.
TEST(KernelsInt8, QuantizerTiesAndTinyBlocks) {
    const int64_t cols = 64;
    std::vector<float> x(size_t(cols), 0.0f);
    x[0] = 127.0f, x[1] = 2.5f, x[2] = 3.5f, x[3] = -2.5f, x[4] = 0.5f;
    for (int e = 32; e < 64; ++e) x[size_t(e)] = e % 3 ? 1e-40f * float(e) : 0.0f;  // max 6.3e-39
    for (const std::string& isa : available_isas()) {
        QuantizedColumns q;
        resize_columns(1, cols, q);
        kernels_for(isa).quantize_columns(x.data(), cols, q, 0, 1);
        EXPECT_EQ(127, code_of(q, 0, 0)) << isa;
        EXPECT_EQ(2, code_of(q, 0, 1)) << isa;
        EXPECT_EQ(4, code_of(q, 0, 2)) << isa;
        EXPECT_EQ(-2, code_of(q, 0, 3)) << isa;
        EXPECT_EQ(0, code_of(q, 0, 4)) << isa;
        for (int e = 32; e < 64; ++e) EXPECT_EQ(0, code_of(q, 0, e)) << isa << " element " << e;
        EXPECT_EQ(0, q.sums_of(0)[1]) << isa;
    }
}

// Whole chunks (16 blocks, 512 values) go through the AVX-512 quantizer's chunk-wide path; it
// must give the reference's bytes for every kind of block there too: ties, a tiny block whose
// inverse scale overflows, an all-zero block, signed zeros and large values (chunk 0), a chunk
// with a NaN and one with an infinity (the whole chunk then goes block by block; the NaN or
// infinite block stored as NaN) next to an ordinary chunk, over several columns.
TEST(KernelsInt8, WholeChunksEqualReferenceForEveryKindOfBlock) {
    const int64_t cols = 4 * 512 + 64, n = 3;
    std::vector<float> x = random_normal(size_t(n * cols), 13, 3.0f);
    float* c0 = x.data();  // column 0, chunk 0
    c0[0] = 127.0f, c0[1] = 2.5f, c0[2] = 3.5f, c0[3] = -2.5f, c0[4] = 0.5f;  // block 0: ties
    for (int e = 32; e < 64; ++e) c0[e] = e % 3 ? 1e-40f * float(e) : 0.0f;  // block 1: tiny
    for (int e = 64; e < 96; ++e) c0[e] = e % 2 ? 0.0f : -0.0f;              // block 2: zeros
    for (int e = 96; e < 128; ++e) c0[e] = 3e38f * (e % 2 ? 1.0f : -0.5f);   // block 3: large
    x[size_t(512 + 40)] = std::numeric_limits<float>::quiet_NaN();            // column 0, chunk 1
    x[size_t(cols + 3 * 512 + 7)] = -std::numeric_limits<float>::infinity();  // column 1, chunk 3
    for (const std::string& isa : available_isas()) {
        const QuantizedColumns got = expect_quantizer_matches_reference(isa, x, n, cols);
        EXPECT_EQ(2, code_of(got, 0, 1)) << isa;
        EXPECT_EQ(4, code_of(got, 0, 2)) << isa;
        EXPECT_TRUE(std::isnan(got.scales_of(0)[16 + 1])) << isa;      // the NaN's block
        EXPECT_FALSE(std::isnan(got.scales_of(0)[16 + 2])) << isa;     // its neighbour
        EXPECT_TRUE(std::isnan(got.scales_of(1)[3 * 16 + 0])) << isa;  // the infinity's block
    }
}

// A block holding NaN or an infinity is stored as scale NaN with zero codes and sums on every
// ISA (the same bytes as the reference; their min/max would otherwise give NaN codes of +127
// on one and -127 on another), so the products it enters are NaN, as in f32, and the other
// blocks and columns are untouched.
TEST(KernelsInt8, NonFiniteActivationsGiveNaNProductsOnEveryIsa) {
    const int64_t cols = 96, n = 3;  // 3 blocks per column
    std::vector<float> x = random_normal(size_t(n * cols), 11, 2.0f);
    x[5] = std::numeric_limits<float>::quiet_NaN();           // column 0, block 0
    x[cols + 32 + 31] = std::numeric_limits<float>::infinity();  // column 1, block 1, last value
    x[cols + 70] = -std::numeric_limits<float>::infinity();      // column 1, block 2
    const WeightMatrix w = repack_for_int8_dot(block_weight(WType::Q8_0, Shape{5, cols}, 2));
    for (const std::string& isa : available_isas()) {
        const QuantizedColumns got = expect_quantizer_matches_reference(isa, x, n, cols);
        for (int64_t b : {0, 1, 2}) {
            EXPECT_EQ(b == 0, std::isnan(got.scales_of(0)[b])) << isa << " block " << b;
            EXPECT_EQ(b != 0, std::isnan(got.scales_of(1)[b])) << isa << " block " << b;
            EXPECT_FALSE(std::isnan(got.scales_of(2)[b])) << isa << " block " << b;
        }
        for (int e = 0; e < 32; ++e) EXPECT_EQ(0, code_of(got, 0, e)) << isa << " element " << e;
        EXPECT_EQ(0, got.sums_of(0)[0]) << isa;
        const std::vector<float> y = matmul_on(kernels_for(isa), w, x, n, 2);  // [n, rows]
        for (int64_t r = 0; r < w.rows; ++r) {
            EXPECT_TRUE(std::isnan(y[size_t(r)])) << isa << " row " << r;
            EXPECT_TRUE(std::isnan(y[size_t(w.rows + r)])) << isa << " row " << r;
            EXPECT_TRUE(std::isfinite(y[size_t(2 * w.rows + r)])) << isa << " row " << r;
        }
    }
}

// The scalar table runs the reference kernel itself, so for it this checks the driver (row
// split, threads, column groups); for AVX2 (pmaddubsw), AVX-VNNI and AVX-512 it compares the
// dot-product kernels with the reference.
TEST(KernelsInt8, EveryTableEqualsReferenceBitwiseForEveryWidth) {
    for (const std::string& isa : available_isas()) {
        const KernelTable& k = kernels_for(isa);
        for (WType type : kBlockTypes) {
            for (Shape s : kShapes) {
                WeightMatrix p = repack_for_int8_dot(block_weight(type, s, 3));
                const std::vector<float> x = random_normal(size_t(16 * s.cols), 4);
                std::vector<float> want = matmul_on(reference_kernels(), p, x, 16, 1);
                for (int64_t n : {1, 2, 3, 4, 5, 6, 7, 8, 9, 16}) {
                    for (int threads : {1, 2}) {
                        std::vector<float> got = matmul_on(k, p, x, n, threads);
                        // Column j of a width-n product equals column j of the width-16 reference.
                        ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
                            << isa << " " << wtype_name(p.type) << " " << s.rows << "x" << s.cols
                            << " n=" << n << " threads=" << threads;
                    }
                }
            }
        }
    }
}

// Every chunked type, the ones made from a checkpoint's codes too (Q4_1FX, Q8_1FX, Q6_KX: the
// test above has only the block types, and AffineRepackKeepsEveryValue widths 1, 2 and 5 of
// one chunk), on rows of three chunks whose last is half padding (1280 values), at every width
// from 1 to 16 (AVX-512: single-column tiles; one pass of 4 to 8 columns off AMD; column groups
// of 3 or 4 above that) and at a prefill's (test::kPrefillWidth: ten groups). Every table, 1 and
// 2 threads (37 rows: three 16-row blocks, the last of 5 rows): column j of a width-n product is
// the reference's column j.
TEST(KernelsInt8, EveryChunkedTypeEqualsReferenceBitwiseAtEveryWidth) {
    const Shape s{37, 1280};
    std::vector<int64_t> widths;
    for (int64_t n = 1; n <= 16; ++n) widths.push_back(n);
    widths.push_back(test::kPrefillWidth);
    const std::vector<float> x = random_normal(size_t(test::kPrefillWidth * s.cols), 52);
    for (const Chunked& m : every_chunked_type(s, 51)) {
        const std::vector<float> want =
            matmul_on(reference_kernels(), m.w, x, test::kPrefillWidth, 1);
        for (const std::string& isa : available_isas())
            for (int64_t n : widths)
                for (int threads : {1, 2}) {
                    const std::vector<float> got = matmul_on(kernels_for(isa), m.w, x, n, threads);
                    ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
                        << isa << " " << wtype_name(m.w.type) << " from " << m.source << " n=" << n
                        << " threads=" << threads;
                }
    }
}

#if NEXTN_X86_KERNELS
bool have_avx512() {
    const std::vector<std::string> isas = available_isas();
    return std::find(isas.begin(), isas.end(), "avx512") != isas.end();
}

template <int TileRows>
void avx512_rows_in_tiles_of(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy,
                             int64_t r0, int64_t r1) {
    avx512::gemm_i8_rows_with(avx512::Int8TileChoice{TileRows}, w, x, y, ldy, r0, r1);
}

// The AVX-512 kernel picks its single-column tile height per CPU vendor and row length (2, 4 or
// 8 rows), so one machine reaches only some heights through gemm_i8_rows: each height, forced,
// gives the reference's bits on every shape (row counts leaving remainders for each height),
// including 2048-value rows (the 4-bit types' 2-row case on a Xeon), at widths 1 and 3. The
// block types on every shape; the checkpoint-code types (checkpoint_chunked: Q4_1FX, Q8_1FX and
// Q6_KX, whose single-column tiles take the same heights) on rows of 1280 and 2048 values.
TEST(KernelsInt8, EverySingleColumnTileHeightEqualsReference) {
    if (!have_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
    KernelTable tables[3] = {kernels_for("avx512"), kernels_for("avx512"), kernels_for("avx512")};
    tables[0].gemm_i8_rows = &avx512_rows_in_tiles_of<2>;
    tables[1].gemm_i8_rows = &avx512_rows_in_tiles_of<4>;
    tables[2].gemm_i8_rows = &avx512_rows_in_tiles_of<8>;
    std::vector<Shape> shapes(std::begin(kShapes), std::end(kShapes));
    shapes.push_back({7, 2048});
    std::vector<Chunked> weights;
    for (WType type : kBlockTypes)
        for (Shape s : shapes)
            weights.push_back({wtype_name(type), repack_for_int8_dot(block_weight(type, s, 5))});
    for (Shape s : {Shape{37, 1280}, Shape{7, 2048}})
        for (Chunked& c : checkpoint_chunked(s, 7)) weights.push_back(std::move(c));
    for (const Chunked& m : weights) {
        const WeightMatrix& p = m.w;
        const std::vector<float> x = random_normal(size_t(3 * p.cols), 6);
        const std::vector<float> want = matmul_on(reference_kernels(), p, x, 3, 1);
        for (int h = 0; h < 3; ++h)
            for (int64_t n : {1, 3})
                for (int threads : {1, 2}) {
                    const std::vector<float> got = matmul_on(tables[h], p, x, n, threads);
                    ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
                        << wtype_name(p.type) << " from " << m.source << " " << p.rows << "x"
                        << p.cols << " tiles of " << (2 << h) << " rows, n=" << n
                        << " threads=" << threads;
                }
    }
}

template <bool Gfni, bool OnePass>
void avx512_rows_choosing(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy, int64_t r0,
                          int64_t r1) {
    avx512::gemm_i8_rows_with(avx512::Int8TileChoice{0, Gfni, OnePass}, w, x, y, ldy, r0, r1);
}

// Choices the AVX-512 kernel makes per CPU, forced so that this machine reaches each: the 4-bit
// tiles take their high nibbles by GFNI where the CPU has it, else by a shift and a mask; and a
// verify of 4 to 8 columns runs as one pass of tiles that wide (off AMD; on AMD the 4-bit width 4
// only, on Zen 5 only for rows over 1 KB: the 2048-value rows here) or in column groups of 3 or 4
// (the rest, and every wider batch). Each way gives the reference's bits at every width from 1
// to 16 (single columns, every tile width, streaming and bursts) on 1 and 2 threads, for Q8_0,
// Q4_0, Q4_1 and Q4_K (as Q4_1FX), and for Q8_1FX (from GGUF Q5_1 and MLX 8-bit and 6-bit) and
// MLX 4-bit (Q4_1FX) on rows of three chunks and of four. Not Q6_KX: it takes neither choice (no
// nibbles to unpack by GFNI, and always its groups of up to 4 columns).
void expect_tiles_equal_reference(bool gfni, bool one_pass) {
    KernelTable table = kernels_for("avx512");
    table.gemm_i8_rows = gfni ? (one_pass ? &avx512_rows_choosing<true, true> : &avx512_rows_choosing<true, false>)
                              : (one_pass ? &avx512_rows_choosing<false, true> : &avx512_rows_choosing<false, false>);
    BlockTensor q4k("q4_k", DType::Q4_K, 13, 1280, 256, 144, {0, 2}, 43);
    WeightMatrix affine;
    ASSERT_TRUE(repack_affine_for_int8_dot(q4k.t, 13, 1280, affine));
    std::vector<Chunked> weights;
    weights.push_back({"GGUF Q4_K", std::move(affine)});
    for (WType type : kBlockTypes)
        for (Shape s : {Shape{37, 96}, Shape{19, 544}, Shape{7, 2048}})
            weights.push_back({wtype_name(type), repack_for_int8_dot(block_weight(type, s, 44))});
    for (Shape s : {Shape{37, 1280}, Shape{7, 2048}})
        for (Chunked& c : checkpoint_chunked(s, 46))
            if (c.w.type == WType::Q8_1FX || c.source == "MLX 4-bit")
                weights.push_back(std::move(c));
    for (const auto& [source, w] : weights) {
        const std::vector<float> x = random_normal(size_t(16 * w.cols), 45);
        const std::vector<float> want = matmul_on(reference_kernels(), w, x, 16, 1);
        for (int64_t n = 1; n <= 16; ++n)
            for (int threads : {1, 2}) {
                const std::vector<float> got = matmul_on(table, w, x, n, threads);
                ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
                    << wtype_name(w.type) << " from " << source << " " << w.rows << "x" << w.cols
                    << " n=" << n << " threads=" << threads << (gfni ? " GFNI" : " shift and mask")
                    << (one_pass ? ", one pass" : ", column groups");
            }
    }
}

TEST(KernelsInt8, TilesWithoutGfniEqualReference) {
    if (!have_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
    expect_tiles_equal_reference(false, true);
}

TEST(KernelsInt8, TilesWithGfniEqualReference) {
    if (!have_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
    if (!__builtin_cpu_supports("gfni")) GTEST_SKIP() << "no GFNI on this CPU: the tiles never take that path here";
    expect_tiles_equal_reference(true, true);
}

TEST(KernelsInt8, VerifyWidthsInColumnGroupsEqualReference) {
    if (!have_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
    expect_tiles_equal_reference(true, false);
}
#endif

// A batch wide enough that its activation codes pass 256 KB walks chunks of many rows instead
// of 16 (int8_dot_rows): 300 columns of 1024 values over 600 rows (Q8_0X: 240-row chunks, the
// last one partial) still give the reference's bits, on 1 and 2 threads.
TEST(KernelsInt8, WideBatchOfManyRowChunksEqualsReference) {
    const Shape s{600, 1024};
    const int64_t n = 300;
    for (WType type : {WType::Q8_0, WType::Q4_0}) {
        WeightMatrix p = repack_for_int8_dot(block_weight(type, s, 41));
        const std::vector<float> x = random_normal(size_t(n * s.cols), 42);
        const std::vector<float> want = matmul_on(reference_kernels(), p, x, n, 1);
        for (const std::string& isa : available_isas()) {
            const KernelTable& k = kernels_for(isa);
            if (!k.int8_dot_fast) continue;
            for (int threads : {1, 2}) {
                const std::vector<float> got = matmul_on(k, p, x, n, threads);
                ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
                    << isa << " " << wtype_name(p.type) << " threads=" << threads;
            }
        }
    }
}

// GGUF Q6_K: Q6_KX holds exactly the dequantized values (random codes, sub-scales of both
// signs, 768 columns: the second chunk is half padding); every table's product equals the
// reference bit for bit for every width and thread count; and it stays within the
// activation-rounding bound of the f32 product of the dequantized values.
TEST(KernelsInt8, Q6_KHeldAsCodesEveryTableEqualsReference) {
    const int64_t rows = 13, cols = 768;
    BlockTensor q6k("q6_k", DType::Q6_K, rows, cols, 256, 210, {208}, 31);
    WeightMatrix w;
    ASSERT_TRUE(repack_q6_k_for_int8_dot(q6k.t, rows, cols, w));
    ASSERT_EQ(WType::Q6_KX, w.type);
    ASSERT_EQ(0u, w.row_bytes % 64);
    std::vector<float> wf(size_t(rows * cols)), got(static_cast<size_t>(cols));
    dequantize_to_f32(q6k.t, wf.data());
    for (int64_t r = 0; r < rows; ++r) {
        weight_row_f32(w, r, got.data());
        ASSERT_EQ(0, std::memcmp(got.data(), wf.data() + r * cols, got.size() * sizeof(float))) << "row " << r;
    }
    const std::vector<float> x = random_normal(size_t(16 * cols), 32);
    std::vector<float> want = matmul_on(reference_kernels(), w, x, 16, 1);
    for (const std::string& isa : available_isas())
        for (int64_t n : {1, 2, 3, 4, 5, 9, 16})
            for (int threads : {1, 2})
                ASSERT_EQ(0, std::memcmp(matmul_on(kernels_for(isa), w, x, n, threads).data(),
                                         want.data(), size_t(n * rows) * sizeof(float)))
                    << isa << " n=" << n << " threads=" << threads;
    WeightMatrix f32 = make_weight_f32(wf.data(), rows, cols, WType::F32);
    std::vector<float> exact = matmul_on(reference_kernels(), f32, x, 16, 1);
    for (int64_t j = 0; j < 16; ++j)
        for (int64_t r = 0; r < rows; ++r)
            EXPECT_LE(std::fabs(double(want[size_t(j * rows + r)]) - exact[size_t(j * rows + r)]),
                      activation_rounding_bound(&wf[size_t(r * cols)], &x[size_t(j * cols)], cols))
                << "row " << r << " col " << j;
    // Anything else, or a byte count that does not match the shape: refused.
    BlockTensor q4k("q4_k", DType::Q4_K, 2, 256, 256, 144, {0, 2}, 33);
    EXPECT_FALSE(repack_q6_k_for_int8_dot(q4k.t, 2, 256, w));
    EXPECT_FALSE(repack_q6_k_for_int8_dot(q6k.t, rows, cols + 256, w));
}

// The extremes of the 8-bit codes: Q8_0 code -128 (stored 0) and 127 against activation codes
// +-127. AVX2's pmaddubsw path forms these products as |s| x sign-adjusted x; a pair of
// 128 x 127 products is where an int16 would saturate if the bound were wrong.
TEST(KernelsInt8, EightBitExtremesEveryTableEqualsReference) {
    const int64_t rows = 9, cols = 512;
    std::vector<uint8_t> bytes(size_t(rows * cols / 32 * sizeof(BlockQ8_0)));
    const int8_t extremes[4] = {-128, -128, 127, -128};
    for (size_t b = 0; b < bytes.size() / sizeof(BlockQ8_0); ++b) {
        auto* blk = reinterpret_cast<BlockQ8_0*>(bytes.data() + b * sizeof(BlockQ8_0));
        blk->d = f32_to_f16(0.01f);
        for (int e = 0; e < 32; ++e) blk->qs[e] = extremes[(e + b) % 4];
    }
    const RawTensor t = tensor_over("q8_0", DType::Q8_0, rows, cols, bytes);
    // Chunked and in 16-row groups: AVX2's pmaddubsw multiplies |-128| = 128 in both layouts.
    for (WType layout : {WType::Q8_0X, WType::Q8_0R}) {
        const WeightMatrix w = repack_for_int8_dot(make_weight(t, rows, cols, WType::Native), layout);
        ASSERT_EQ(layout, w.type);
        std::vector<float> x(size_t(4 * cols));  // every code +-127
        for (size_t i = 0; i < x.size(); ++i) x[i] = (i / 3) % 2 ? -1.0f : 1.0f;
        std::vector<float> want = matmul_on(reference_kernels(), w, x, 4, 1);
        // The reference itself against the exact sum: every product is +-0.01 * 128 or 127.
        std::vector<float> row(static_cast<size_t>(cols));
        weight_row_f32(w, 0, row.data());
        double exact = 0;
        for (int64_t i = 0; i < cols; ++i) exact += double(row[size_t(i)]) * x[size_t(i)];
        EXPECT_NEAR(exact, want[0], 1e-3 * std::fabs(exact) + 1e-3);
        for (const std::string& isa : available_isas())
            for (int64_t n : {1, 4})
                ASSERT_EQ(0, std::memcmp(matmul_on(kernels_for(isa), w, x, n, 1).data(), want.data(),
                                         size_t(n * rows) * sizeof(float)))
                    << isa << " " << wtype_name(layout) << " n=" << n;
    }
}

// One input, several matrices of mixed types (f32, int8-dot, a tiny one): every output equals
// its own matmul() bit for bit, for any width and thread count.
TEST(KernelsInt8, SharedInputProductsEqualSeparateOnes) {
    const int64_t cols = 544;
    const WeightMatrix a = repack_for_int8_dot(block_weight(WType::Q8_0, {37, cols}, 21));
    const WeightMatrix b = block_weight(WType::F32, {20, cols}, 22);
    const WeightMatrix c = repack_for_int8_dot(block_weight(WType::Q4_0, {3, cols}, 23));
    for (int64_t n : {1, 3, 16}) {
        const std::vector<float> x = random_normal(size_t(n * cols), 24);
        for (int threads : {1, 2}) {
            ThreadPool pool(threads);
            std::vector<float> ya(size_t(n * 37)), yb(size_t(n * 20)), yc(size_t(n * 3));
            matmul_shared_input(kernels(), {{&a, ya.data()}, {&b, yb.data()}, {&c, yc.data()}},
                                x.data(), n, pool);
            EXPECT_EQ(matmul_on(kernels(), a, x, n, threads), ya) << "n=" << n;
            EXPECT_EQ(matmul_on(kernels(), b, x, n, threads), yb) << "n=" << n;
            EXPECT_EQ(matmul_on(kernels(), c, x, n, threads), yc) << "n=" << n;
        }
    }
}

// A batch of products with their own inputs (a MoE layer's routed experts): inputs of several
// widths (0 skips the job), one input read by two matrices, one pointer read with two different
// row lengths, f32, int8-dot (chunked and in 16-row groups: Q8_0R, Q4_KR) and BF16D weights,
// sizes on both sides of the threading bound. BF16D's activations are rounded to bf16 once per
// distinct input, apart from the int8 ones: here one pointer is read as int8, bf16 and f32
// activations; two BF16D matrices share one rounded input; and one pointer is rounded for two
// widths (the narrower first, so that sharing one rounding between them would leave the wider
// job's later columns unwritten) and another for two row lengths. Every output equals its own
// matmul() bit for bit, on every ISA and thread count, and a skipped job's output is left
// untouched.
TEST(KernelsInt8, BatchedProductsEqualSeparateOnes) {
    const WeightMatrix a = repack_for_int8_dot(block_weight(WType::Q8_0, {37, 544}, 31));
    const WeightMatrix b = block_weight(WType::F32, {20, 544}, 32);
    const WeightMatrix c = repack_for_int8_dot(block_weight(WType::Q4_0, {3, 1024}, 33));
    const WeightMatrix d = repack_for_int8_dot(block_weight(WType::Q4_1, {300, 1024}, 34));
    const WeightMatrix e = repack_for_int8_dot(block_weight(WType::Q8_0, {48, 544}, 35));
    const WeightMatrix f = block_weight(WType::BF16D, {40, 1024}, 39);
    const WeightMatrix g = block_weight(WType::BF16D, {20, 544}, 40);
    const WeightMatrix h = block_weight(WType::BF16D, {33, 1024}, 41);
    const WeightMatrix r8 =
        repack_for_int8_dot(block_weight(WType::Q8_0, {37, 544}, 42), WType::Q8_0R);
    const BlockTensor q4k("q4_k", DType::Q4_K, 33, 1024, 256, 144, {0, 2}, 43);
    WeightMatrix rk;
    ASSERT_TRUE(repack_k_quant_tensor(q4k.t, 33, 1024, WType::Q4_KR, rk));
    for (const WeightMatrix* w : {&f, &g, &h}) ASSERT_EQ(WType::BF16D, w->type);
    ASSERT_EQ(WType::Q8_0R, r8.type);
    ASSERT_EQ(WType::Q4_KR, rk.type);
    const std::vector<float> x1 = random_normal(size_t(3 * 1024), 36);  // [3, 1024] or [3, 544]
    const std::vector<float> x2 = random_normal(size_t(17 * 1024), 37);
    const std::vector<float> x3 = random_normal(size_t(1 * 544), 38);
    struct Case {
        const WeightMatrix* w;
        const std::vector<float>* x;
        int64_t n;
    };
    const Case cases[] = {
        {&a, &x1, 3},  {&b, &x1, 3}, {&c, &x1, 3},  {&d, &x2, 17}, {&e, &x3, 1},   {&a, &x3, 0},
        {&d, &x1, 1},  {&e, &x2, 5}, {&f, &x1, 3},  {&g, &x1, 3},  {&h, &x1, 3},   {&f, &x2, 2},
        {&h, &x2, 17}, {&f, &x1, 0}, {&r8, &x3, 1}, {&r8, &x1, 3}, {&rk, &x2, 17}, {&rk, &x1, 2}};
    for (const std::string& isa : available_isas()) {
        const KernelTable& k = kernels_for(isa);
        for (int threads : {1, 2}) {
            ThreadPool pool(threads);
            std::vector<std::vector<float>> ys;
            std::vector<MatmulJob> jobs;
            for (const Case& cs : cases) ys.emplace_back(size_t(std::max<int64_t>(cs.n, 1) * cs.w->rows), -7.0f);
            for (size_t i = 0; i < std::size(cases); ++i)
                jobs.push_back({cases[i].w, cases[i].x->data(), cases[i].n, ys[i].data()});
            matmul_batch(k, jobs, pool);
            for (size_t i = 0; i < std::size(cases); ++i) {
                const Case& cs = cases[i];
                if (cs.n == 0) {
                    EXPECT_EQ(ys[i], std::vector<float>(ys[i].size(), -7.0f)) << isa << " job " << i;
                    continue;
                }
                const std::vector<float> x(cs.x->begin(), cs.x->begin() + cs.n * cs.w->cols);
                EXPECT_EQ(matmul_on(k, *cs.w, x, cs.n, threads), ys[i])
                    << isa << " threads=" << threads << " job " << i;
            }
        }
    }
}

TEST(KernelsInt8, WithinActivationRoundingOfTheFloatProduct) {
    const Shape s{64, 544};
    for (WType type : kBlockTypes) {
        WeightMatrix q = block_weight(type, s, 5);
        WeightMatrix p = repack_for_int8_dot(q);
        const int64_t n = 4;
        const std::vector<float> x = random_normal(size_t(n * s.cols), 6);
        std::vector<float> exact = matmul_on(reference_kernels(), q, x, n, 1);  // f32 activations
        std::vector<float> got = matmul_on(kernels(), p, x, n, 2);
        std::vector<float> row(static_cast<size_t>(s.cols));
        int64_t differ = 0;
        for (int64_t r = 0; r < s.rows; ++r) {
            weight_row_f32(q, r, row.data());
            for (int64_t j = 0; j < n; ++j) {
                const double diff =
                    std::fabs(double(got[size_t(j * s.rows + r)]) - exact[size_t(j * s.rows + r)]);
                EXPECT_LE(diff, activation_rounding_bound(row.data(), &x[size_t(j * s.cols)], s.cols))
                    << wtype_name(type) << " row " << r << " col " << j;
                differ += diff > 0.0;
            }
        }
        EXPECT_GT(differ, s.rows * n / 2) << "int8 activations round: most outputs must move";
    }
}

}  // namespace
}  // namespace nextn
