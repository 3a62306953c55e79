// Load-time weight building: the row-streamed, pooled path (make_weight with a WeightBuild,
// build_weight) gives the same bytes as converting the whole tensor at once and repacking
// afterwards, for every source type and target.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "core/memory_info.h"
#include "core/thread_pool.h"
#include "formats/dequant.h"
#include "kernels/int8_dot.h"
#include "kernels/quant.h"
#include "kernels/weight.h"

namespace nextn {
namespace {

struct Tensor {
    std::vector<uint8_t> bytes, scales, biases;
    RawTensor t;
};

// Random bytes of a block type whose blocks start with `f16_fields` f16 scales, set to finite
// values (so no block decodes to NaN or inf).
std::vector<uint8_t> random_blocks(int64_t blocks, size_t block_bytes, int f16_fields, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<uint8_t> b(size_t(blocks) * block_bytes);
    for (uint8_t& x : b) x = uint8_t(rng());
    for (int64_t i = 0; i < blocks; ++i)
        for (int f = 0; f < f16_fields; ++f) {
            const uint16_t h = f32_to_f16(0.001f + 0.01f * float(rng() % 100) / 100.0f);
            std::memcpy(b.data() + size_t(i) * block_bytes + 2 * f, &h, 2);
        }
    return b;
}

Tensor make_tensor(DType type, int64_t rows, int64_t cols, uint32_t seed) {
    Tensor x;
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    const int64_t n = rows * cols;
    switch (type) {
        case DType::F32: {
            std::vector<float> v(static_cast<size_t>(n));
            for (float& f : v) f = u(rng);
            x.bytes.resize(v.size() * 4);
            std::memcpy(x.bytes.data(), v.data(), x.bytes.size());
            break;
        }
        case DType::BF16:
        case DType::F16:
            x.bytes.resize(size_t(n) * 2);
            for (int64_t i = 0; i < n; ++i) {
                const float f = u(rng);
                const uint16_t h = type == DType::BF16 ? f32_to_bf16(f) : f32_to_f16(f);
                std::memcpy(x.bytes.data() + 2 * i, &h, 2);
            }
            break;
        case DType::Q8_0: x.bytes = random_blocks(n / 32, 34, 1, seed); break;
        case DType::Q4_0: x.bytes = random_blocks(n / 32, 18, 1, seed); break;
        case DType::Q4_1: x.bytes = random_blocks(n / 32, 20, 2, seed); break;
        case DType::Q5_0: x.bytes = random_blocks(n / 32, 22, 1, seed); break;
        case DType::Q4_K: x.bytes = random_blocks(n / 256, 144, 2, seed); break;
        case DType::Q6_K: {  // its f16 scale is the block's last two bytes
            x.bytes = random_blocks(n / 256, 210, 0, seed);
            for (int64_t i = 0; i < n / 256; ++i) {
                const uint16_t h = f32_to_f16(0.002f * float(1 + i % 5));
                std::memcpy(x.bytes.data() + size_t(i) * 210 + 208, &h, 2);
            }
            break;
        }
        case DType::MLX_AFFINE: {  // 4-bit, group 64, bf16 scales that f16 holds exactly
            x.bytes.resize(size_t(n / 2));
            for (uint8_t& b : x.bytes) b = uint8_t(rng());
            const int64_t groups = n / 64;
            x.scales.resize(size_t(groups) * 2);
            x.biases.resize(size_t(groups) * 2);
            for (int64_t g = 0; g < groups; ++g) {
                const uint16_t s = f32_to_bf16(0.0625f * float(1 + rng() % 8));
                const uint16_t b = f32_to_bf16(-0.5f + 0.125f * float(rng() % 8));
                std::memcpy(x.scales.data() + 2 * g, &s, 2);
                std::memcpy(x.biases.data() + 2 * g, &b, 2);
            }
            break;
        }
        default: ADD_FAILURE() << "no generator for " << dtype_name(type);
    }
    x.t.name = "test.weight";
    x.t.file = "memory";
    x.t.dtype = type;
    x.t.shape = {rows, cols};
    x.t.data = x.bytes.data();
    x.t.nbytes = x.bytes.size();
    if (type == DType::MLX_AFFINE) {
        x.t.bits = 4;
        x.t.group_size = 64;
        x.t.scale_dtype = DType::BF16;
        x.t.scales = x.scales.data();
        x.t.biases = x.biases.data();
    }
    return x;
}

bool same_bytes(const WeightMatrix& a, const WeightMatrix& b) {
    return a.type == b.type && a.rows == b.rows && a.row_bytes == b.row_bytes &&
           std::memcmp(a.data, b.data, a.nbytes()) == 0;
}

TEST(WeightBuild, StreamedPooledInt8EqualsWholeTensorThenRepack) {
    ThreadPool pool(2);
    const int64_t rows = 37, cols = 512 + 256;  // a whole chunk and a padded one
    const DType sources[] = {DType::F32,  DType::BF16, DType::F16,  DType::Q8_0,
                             DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q4_K,
                             DType::MLX_AFFINE};
    const WType targets[] = {WType::Native, WType::F32, WType::BF16, WType::Q8_0,
                             WType::Q4_0,   WType::Q4_1};
    uint32_t seed = 1;
    for (DType source : sources) {
        const Tensor x = make_tensor(source, rows, cols, seed++);
        for (WType target : targets) {
            const std::string what = std::string(dtype_name(source)) + " -> " + wtype_name(target);
            // The simple path: one thread, the chunked layout made afterwards.
            const WeightMatrix plain = make_weight(x.t, rows, cols, target);
            const WeightMatrix want = repack_for_int8_dot(plain);
            // Q4_0 and Q8_0 results in 16-row groups (kernels/row_groups.h) instead.
            const RowGroupLayouts groups{true, true};
            const WType grouped = int8_dot_type_for(plain.type, groups);
            const WeightMatrix want_grouped = grouped == plain.type ? plain : repack_for_int8_dot(plain, grouped);
            for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
                const WeightMatrix got = make_weight(x.t, rows, cols, target, {p, true, {}});
                EXPECT_TRUE(same_bytes(got, want)) << what << (p ? " on the pool" : "");
                const WeightMatrix got_grouped = make_weight(x.t, rows, cols, target, {p, true, groups});
                EXPECT_TRUE(same_bytes(got_grouped, want_grouped)) << what << " in row groups" << (p ? " on the pool" : "");
            }
            // Without the int8 layout, the pool changes nothing either.
            const WeightMatrix pooled_plain = make_weight(x.t, rows, cols, target, {&pool, false, {}});
            EXPECT_TRUE(same_bytes(pooled_plain, plain)) << what << " (no int8 layout)";
        }
    }
}

// Converted tensors are streamed through TensorRows; this checks that against converting the
// whole tensor with dequantize_to_f32 first, as loading did before.
TEST(WeightBuild, StreamedConversionEqualsWholeTensorConversion) {
    ThreadPool pool(2);
    const int64_t rows = 19, cols = 512;
    uint32_t seed = 50;
    for (DType source : {DType::F32, DType::BF16, DType::F16, DType::Q4_K, DType::Q4_1}) {
        const Tensor x = make_tensor(source, rows, cols, seed++);
        std::vector<float> values(static_cast<size_t>(rows * cols));
        dequantize_to_f32(x.t, values.data());
        for (WType target : {WType::F32, WType::BF16, WType::Q8_0, WType::Q4_0}) {
            if (source == DType::F32 && target == WType::F32) continue;  // a plain copy
            const WeightMatrix want = make_weight_f32(values.data(), rows, cols, target);
            const WeightMatrix got = make_weight(x.t, rows, cols, target, {&pool, false, {}});
            EXPECT_TRUE(same_bytes(got, want)) << dtype_name(source) << " -> " << wtype_name(target);
        }
    }
}

// The code-keeping repacks (affine types, Q6_K) give the same bytes on a pool as on one thread.
TEST(WeightBuild, CodeRepacksArePoolInvariant) {
    ThreadPool pool(2);
    const int64_t rows = 41, cols = 768;
    uint32_t seed = 70;
    for (DType source : {DType::Q4_K, DType::Q6_K, DType::MLX_AFFINE}) {
        const Tensor x = make_tensor(source, rows, cols, seed++);
        WeightMatrix one, many;
        const bool q6 = source == DType::Q6_K;
        ASSERT_TRUE(q6 ? repack_q6_k_for_int8_dot(x.t, rows, cols, one)
                       : repack_affine_for_int8_dot(x.t, rows, cols, one))
            << dtype_name(source);
        ASSERT_TRUE(q6 ? repack_q6_k_for_int8_dot(x.t, rows, cols, many, &pool)
                       : repack_affine_for_int8_dot(x.t, rows, cols, many, &pool));
        EXPECT_TRUE(same_bytes(one, many)) << dtype_name(source);
        // And the values are the tensor's.
        std::vector<float> all(static_cast<size_t>(rows * cols)), row(static_cast<size_t>(cols));
        dequantize_to_f32(x.t, all.data());
        for (int64_t r = 0; r < rows; ++r) {
            weight_row_f32(many, r, row.data());
            ASSERT_EQ(0, std::memcmp(row.data(), all.data() + r * cols, size_t(cols) * 4))
                << dtype_name(source) << " row " << r;
        }
    }
}

TEST(WeightBuild, TensorRowsReadsWhatDequantizeGives) {
    const int64_t rows = 5, cols = 256;
    uint32_t seed = 90;
    for (DType source : {DType::F32, DType::BF16, DType::F16, DType::Q8_0, DType::Q4_0,
                         DType::Q4_1, DType::Q5_0, DType::Q4_K, DType::Q6_K, DType::MLX_AFFINE}) {
        const Tensor x = make_tensor(source, rows, cols, seed++);
        std::vector<float> all(static_cast<size_t>(rows * cols)), row(static_cast<size_t>(cols));
        dequantize_to_f32(x.t, all.data());
        const TensorRows reader(x.t);
        ASSERT_EQ(reader.rows(), rows);
        ASSERT_EQ(reader.cols(), cols);
        for (int64_t r = 0; r < rows; ++r) {
            reader.read(r, row.data());
            EXPECT_EQ(0, std::memcmp(row.data(), all.data() + r * cols, size_t(cols) * 4))
                << dtype_name(source) << " row " << r;
        }
    }
}

// IEEE binary16 -> binary32 by its definition: normals (1024 + m) 2^(e - 25), subnormals
// m 2^-24, and infinities / NaNs with the payload moved up 13 bits; bf16 is the top half.
uint32_t widened_bits(uint16_t h, DType type) {
    if (type == DType::BF16) return uint32_t(h) << 16;
    const uint32_t sign = uint32_t(h & 0x8000u) << 16, e = (h >> 10) & 31u, m = h & 0x3ffu;
    if (e == 31) return sign | 0x7f800000u | (m << 13);
    const float magnitude = e == 0 ? std::ldexp(float(m), -24) : std::ldexp(float(1024 + m), int(e) - 25);
    uint32_t bits;
    std::memcpy(&bits, &magnitude, 4);
    return sign | bits;
}

// Every one of the 65536 halves (zeros, subnormals, normals, infinities, NaNs with their
// payloads) and every bf16 bit pattern reads as the IEEE widening defines it, bit for bit.
TEST(WeightBuild, TensorRowsWidensEveryHalfExactly) {
    for (DType type : {DType::F16, DType::BF16}) {
        Tensor x = make_tensor(type, 256, 256, 1);
        for (uint32_t h = 0; h < 65536; ++h) {
            const uint16_t v = uint16_t(h);
            std::memcpy(x.bytes.data() + 2 * h, &v, 2);
        }
        const TensorRows reader(x.t);
        std::vector<float> row(256);
        for (int64_t r = 0; r < 256; ++r) {
            reader.read(r, row.data());
            for (int j = 0; j < 256; ++j) {
                const uint16_t h = uint16_t(r * 256 + j);
                uint32_t got;
                std::memcpy(&got, &row[size_t(j)], 4);
                ASSERT_EQ(got, widened_bits(h, type)) << dtype_name(type) << " bits 0x" << std::hex << h;
            }
        }
    }
}

TEST(WeightBuild, TensorRowsRejectsBadTensorsUpFront) {
    Tensor x = make_tensor(DType::BF16, 4, 64, 3);
    x.t.nbytes -= 2;  // one value short
    EXPECT_THROW(TensorRows{x.t}, Error);
    Tensor k = make_tensor(DType::Q4_K, 1, 256, 4);
    k.t.shape = {2, 128};  // rows of half a 256-value block
    EXPECT_THROW(TensorRows{k.t}, Error);
}

// A weight bigger than the machine can hold fails with an error naming it and the sizes,
// not with the kernel killing the process when the pages are written.
TEST(WeightBuild, AllocationBeyondMemoryNamesTheWeight) {
    const MemoryInfo m = read_memory_info();
    if (m.available == 0) GTEST_SKIP() << "SKIPPED: /proc/meminfo has no MemAvailable";
    const size_t too_big = (m.available + m.swap_free) * 2 + (size_t(1) << 30);
    try {
        require_weight_memory(too_big, "test 9999x9999 weight");
        FAIL() << "a weight of " << too_big << " bytes passed the check";
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("test 9999x9999 weight"), std::string::npos) << msg;
        EXPECT_NE(msg.find("is available"), std::string::npos) << msg;
    }
}

// build_weight's rows against encoding each row by hand (block types) and repacking that
// (int8-dot types), with and without a pool; odd widths fall back to F32.
TEST(WeightBuild, RowBuilderEqualsRowByRowEncoding) {
    ThreadPool pool(2);
    for (int64_t cols : {64, 96, 544, 50}) {
        const int64_t rows = 37;
        std::vector<float> values(static_cast<size_t>(rows * cols));
        for (size_t i = 0; i < values.size(); ++i) values[i] = std::sin(float(i) * 0.37f) * 0.3f;
        const RowFill fill = [&](int64_t r, float* out) {
            std::memcpy(out, values.data() + r * cols, size_t(cols) * sizeof(float));
        };
        for (WType t : {WType::F32, WType::BF16, WType::F16, WType::Q8_0, WType::Q4_0, WType::Q4_1}) {
            const WType stored = wtype_row_bytes(t, cols) ? t : WType::F32;
            const size_t row_bytes = wtype_row_bytes(stored, cols);
            std::vector<uint8_t> want(size_t(rows) * row_bytes);
            for (int64_t r = 0; r < rows; ++r)
                encode_row_f32(values.data() + r * cols, cols, stored, want.data() + size_t(r) * row_bytes);
            for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
                const WeightMatrix got = build_weight(rows, cols, t, p, fill);
                ASSERT_EQ(got.type, stored) << wtype_name(t) << " cols " << cols;
                ASSERT_EQ(got.row_bytes, row_bytes);
                EXPECT_EQ(0, std::memcmp(got.data, want.data(), want.size())) << wtype_name(t) << " cols " << cols;
                const WType x = int8_dot_type_for(t);
                if (x == t) continue;
                const WeightMatrix chunked = build_weight(rows, cols, x, p, fill);
                EXPECT_TRUE(same_bytes(chunked, repack_for_int8_dot(got))) << wtype_name(x) << " cols " << cols;
            }
        }
    }
}

// A tensor already in the type asked for (or Native's type for it) keeps the file's bytes, copied
// into memory of its own, as make_weight promises ("rounding already done"): random GGUF blocks
// whose codes and offsets no quantizer of ours would choose (Q4_1: an offset that is not the
// block's minimum) come back byte for byte, and F16 stays F16 under Native (no widening or
// narrowing to another type).
TEST(WeightBuild, TensorsOfTheTargetTypeKeepTheirBytes) {
    const int64_t rows = 3, cols = 64;
    const std::pair<DType, WType> kept[] = {{DType::F16, WType::F16},
                                            {DType::BF16, WType::BF16},
                                            {DType::Q4_1, WType::Q4_1},
                                            {DType::Q4_0, WType::Q4_0},
                                            {DType::Q8_0, WType::Q8_0}};
    uint32_t seed = 110;
    for (auto [source, type] : kept)
        for (WType target : {WType::Native, type}) {
            const Tensor x = make_tensor(source, rows, cols, seed++);
            const WeightMatrix w = make_weight(x.t, rows, cols, target);
            ASSERT_EQ(type, w.type) << dtype_name(source) << " -> " << wtype_name(target);
            ASSERT_EQ(x.bytes.size(), w.nbytes());
            // Copied into 64-byte aligned memory of its own (weight.h), not a view of the file.
            EXPECT_TRUE(w.owner);
            EXPECT_NE(x.t.data, w.data);
            EXPECT_EQ(0u, reinterpret_cast<uintptr_t>(w.data) % 64);
            EXPECT_EQ(0, std::memcmp(w.data, x.bytes.data(), x.bytes.size()))
                << dtype_name(source) << " -> " << wtype_name(target);
        }
    // Every f16 bit pattern, NaN payloads included (through f32 they would come back as one NaN).
    Tensor every_half = make_tensor(DType::F16, 256, 256, seed);
    for (uint32_t h = 0; h < 65536; ++h) {
        const uint16_t v = uint16_t(h);
        std::memcpy(every_half.bytes.data() + 2 * h, &v, 2);
    }
    for (WType target : {WType::Native, WType::F16}) {
        const WeightMatrix w = make_weight(every_half.t, 256, 256, target);
        ASSERT_EQ(WType::F16, w.type);
        EXPECT_EQ(0, std::memcmp(w.data, every_half.bytes.data(), every_half.bytes.size()))
            << wtype_name(target);
    }
}

// GGUF Q5_0 ((code - 16) * d, f16 d) is held as Q8_0 with the same values for target Q8_0 as for
// Native (requantizing through f32 would rescale them to max|x| / 127); a Q5_0 or a kept Q8_0
// tensor one byte short of its shape is refused, never read past its end.
TEST(WeightBuild, Q5_0IsQ8_0WithItsValuesAndShortTensorsAreRefused) {
    const int64_t rows = 4, cols = 96;
    const Tensor x = make_tensor(DType::Q5_0, rows, cols, 120);
    std::vector<float> want(size_t(rows * cols)), got(static_cast<size_t>(cols));
    dequantize_to_f32(x.t, want.data());
    for (WType target : {WType::Native, WType::Q8_0}) {
        const WeightMatrix w = make_weight(x.t, rows, cols, target);
        ASSERT_EQ(WType::Q8_0, w.type) << wtype_name(target);
        for (int64_t r = 0; r < rows; ++r) {
            weight_row_f32(w, r, got.data());
            ASSERT_EQ(0,
                      std::memcmp(got.data(), want.data() + r * cols, got.size() * sizeof(float)))
                << wtype_name(target) << " row " << r;
        }
    }
    for (DType source : {DType::Q5_0, DType::Q8_0}) {
        Tensor s = make_tensor(source, rows, cols, 121);
        s.t.nbytes -= 1;
        for (WType target : {WType::Native, WType::Q8_0})
            EXPECT_THROW(make_weight(s.t, rows, cols, target), Error)
                << dtype_name(source) << " one byte short";
    }
}

// An MLX affine 4-bit tensor [2, 64] of 4-bit codes 2..9 (so no requantizing could give back its
// scales) with bf16 scales and biases: group `group`, every bias -0.25 * (g % 4) but for the last
// group's, which is `last_bias`.
struct MlxTensor {
    std::vector<uint8_t> codes;
    std::vector<uint16_t> scales, biases;
    RawTensor t;
    MlxTensor(int group, float last_bias, uint32_t seed) : codes(2 * 64 / 2) {
        std::mt19937 rng(seed);
        for (uint8_t& b : codes) b = uint8_t((2 + rng() % 8) | (2 + rng() % 8) << 4);
        const int64_t groups = 2 * 64 / group;
        for (int64_t g = 0; g < groups; ++g) {
            scales.push_back(f32_to_bf16(0.0625f * float(1 + g % 8)));
            biases.push_back(f32_to_bf16(g == groups - 1 ? last_bias : -0.25f * float(g % 4)));
        }
        t.name = "mlx.weight";
        t.file = "memory";
        t.dtype = DType::MLX_AFFINE;
        t.shape = {2, 64};
        t.data = codes.data();
        t.nbytes = codes.size();
        t.bits = 4;
        t.group_size = group;
        t.scale_dtype = DType::BF16;
        t.scales = reinterpret_cast<const uint8_t*>(scales.data());
        t.biases = reinterpret_cast<const uint8_t*>(biases.data());
    }
    // MLX's value: scale * q + bias of the value's group.
    float value(int64_t r, int64_t j) const {
        const int q = (codes[size_t((r * 64 + j) / 2)] >> (4 * (j % 2))) & 15;
        const size_t g = size_t((r * 64 + j) / t.group_size);
        return bf16_to_f32(scales[g]) * float(q) + bf16_to_f32(biases[g]);
    }
};

// MLX affine 4-bit is held as Q4_1 (its codes kept, an f16 d and m per 32 values) for target Q4_1
// as for Native, and only where Q4_1 holds it exactly (make_weight). Groups of 16 (two scales a
// block) and a bias with no f16 form (1e-6 is no multiple of the smallest f16 subnormal, 2^-24)
// are widened to F32 instead. Either way every value is exactly MLX's scale * q + bias.
TEST(WeightBuild, MlxAffineIsQ4_1OnlyWhereQ4_1HoldsItExactly) {
    struct Case {
        int group;
        float last_bias;
        WType target, want;
    };
    const Case cases[] = {{64, -0.5f, WType::Native, WType::Q4_1},
                          {64, -0.5f, WType::Q4_1, WType::Q4_1},
                          {32, -0.5f, WType::Q4_1, WType::Q4_1},
                          {16, -0.5f, WType::Native, WType::F32},
                          {64, 1e-6f, WType::Native, WType::F32}};
    uint32_t seed = 130;
    for (const Case& c : cases) {
        const std::string what = "group " + std::to_string(c.group) + ", last bias " +
                                 std::to_string(c.last_bias) + ", target " + wtype_name(c.target);
        const MlxTensor x(c.group, c.last_bias, seed++);
        if (c.last_bias == 1e-6f) {
            const float b = bf16_to_f32(x.biases.back());
            ASSERT_NE(b, f16_to_f32(f32_to_f16(b))) << "the bias must have no f16 form";
        }
        const WeightMatrix w = make_weight(x.t, 2, 64, c.target);
        EXPECT_EQ(c.want, w.type) << what;
        std::vector<float> row(64);
        for (int64_t r = 0; r < 2; ++r) {
            weight_row_f32(w, r, row.data());
            for (int64_t j = 0; j < 64; ++j)
                ASSERT_EQ(x.value(r, j), row[size_t(j)]) << what << " r=" << r << " j=" << j;
        }
    }
}

// Corrupt MLX tensors are refused, never read as 4-bit codes because their byte count happens to
// fit: 8 (or 2) bits claimed over 4-bit-sized bytes (8-bit rows need twice the bytes), no scales
// or no biases, and a group of 128 in rows of 64 values.
TEST(WeightBuild, CorruptMlxTensorsAreRefused) {
    for (int bits : {8, 2}) {
        MlxTensor x(64, -0.5f, 140);
        x.t.bits = bits;
        EXPECT_THROW(make_weight(x.t, 2, 64, WType::Native), Error) << bits << " bits";
    }
    MlxTensor no_scales(64, -0.5f, 141), no_biases(64, -0.5f, 142), wide_group(32, -0.5f, 143);
    no_scales.t.scales = nullptr;
    no_biases.t.biases = nullptr;
    wide_group.t.group_size = 128;
    EXPECT_THROW(make_weight(no_scales.t, 2, 64, WType::Native), Error) << "no scales";
    EXPECT_THROW(make_weight(no_biases.t, 2, 64, WType::Q4_1), Error) << "no biases";
    EXPECT_THROW(make_weight(wide_group.t, 2, 64, WType::Native), Error) << "group 128";
}

}  // namespace
}  // namespace nextn
