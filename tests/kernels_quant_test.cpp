// Weight formats: f16 rounding, Q8_0/Q4_0 byte layout (hand-built ggml blocks), quantization
// round-trip error bounds, and make_weight's conversion rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "error_of.h"
#include "kernels/quant.h"
#include "kernels/weight.h"

namespace nextn {
namespace {

std::vector<float> random_values(size_t n, uint32_t seed, float lo, float hi) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) {
        do x = dist(rng);
        while (x == 0.0f);
    }
    return v;
}

TEST(KernelsQuant, F16RoundTripsEveryHalf) {
    for (uint32_t h = 0; h < 0x10000u; ++h) {
        const float f = f16_to_f32(uint16_t(h));
        if (std::isnan(f)) {
            EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(f)))) << h;
            continue;
        }
        ASSERT_EQ(f32_to_f16(f), h) << "half 0x" << std::hex << h;
    }
}

TEST(KernelsQuant, F16RoundsToNearestEven) {
    // Between 1 and the next half (1 + 2^-10): the midpoint goes to the even one (1).
    EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
    EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // midpoint 1 and 2: even
    EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3c01);
    EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);      // largest half
    EXPECT_EQ(f32_to_f16(65519.0f), 0x7bff);      // below the midpoint to 2^16
    EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);      // the midpoint rounds to even: infinity
    EXPECT_EQ(f32_to_f16(-1e9f), 0xfc00);
    EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);        // smallest subnormal
    EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);        // half of it: even -> 0
    EXPECT_EQ(f32_to_f16(std::ldexp(1.5f, -25)), 0x0001);
    EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -25)), 0x0002);        // 1.5 subnormal ulps: even 2
    EXPECT_EQ(f32_to_f16(std::ldexp(1023.5f, -24)), 0x0400);     // rounds up into the normals
    // Every f32 rounds to the nearer neighbour.
    for (float f : random_values(20000, 1, -70000.0f, 70000.0f)) {
        const uint16_t h = f32_to_f16(f);
        const float back = f16_to_f32(h);
        if (std::isinf(back)) {
            ASSERT_GE(std::fabs(f), 65520.0f);
            continue;
        }
        const float up = f16_to_f32(uint16_t(h + 1)), down = f16_to_f32(uint16_t(h - 1));
        ASSERT_LE(std::fabs(back - f), std::fabs(up - f)) << f;
        ASSERT_LE(std::fabs(back - f), std::fabs(down - f)) << f;
    }
}

// A ggml Q4_0 block built by hand: low nibbles are values 0..15, high nibbles 16..31.
TEST(KernelsQuant, Q4_0LayoutMatchesGgml) {
    uint8_t bytes[18];
    const uint16_t d = 0x3800;  // 0.5
    std::memcpy(bytes, &d, 2);
    for (int i = 0; i < 16; ++i) bytes[2 + i] = uint8_t(i | ((15 - i) << 4));
    BlockQ4_0 block;
    std::memcpy(&block, bytes, sizeof block);
    float out[32];
    dequantize_row_q4_0(&block, 32, out);
    for (int i = 0; i < 16; ++i) {
        EXPECT_EQ(out[i], (i - 8) * 0.5f) << i;
        EXPECT_EQ(out[i + 16], (7 - i) * 0.5f) << i;
    }
}

TEST(KernelsQuant, Q8_0LayoutMatchesGgml) {
    uint8_t bytes[34];
    const uint16_t d = 0x3400;  // 0.25
    std::memcpy(bytes, &d, 2);
    for (int i = 0; i < 32; ++i) bytes[2 + i] = uint8_t(int8_t(i * 8 - 128));
    BlockQ8_0 block;
    std::memcpy(&block, bytes, sizeof block);
    float out[32];
    dequantize_row_q8_0(&block, 32, out);
    for (int i = 0; i < 32; ++i) EXPECT_EQ(out[i], (i * 8 - 128) * 0.25f) << i;
    // Quantizing: max |x| = 127 * 0.25 maps to code 127, scale 0.25 exactly.
    float x[32];
    for (int i = 0; i < 32; ++i) x[i] = (i - 16) * 0.25f * 127.0f / 16.0f;
    BlockQ8_0 q;
    quantize_row_q8_0(x, 32, &q);
    EXPECT_EQ(q.d, f32_to_f16(16 * 0.25f * 127.0f / 16.0f / 127.0f));
    EXPECT_EQ(q.qs[0], -127);
    EXPECT_EQ(q.qs[16], 0);
    EXPECT_EQ(q.qs[31], int8_t(std::round(15 * 127.0 / 16)));
}

// The quantizer against ggml's reference formula written with libm (fmax, round), on random
// blocks and on blocks made of exact ties (codes k + 0.5) and values just either side of them.
TEST(KernelsQuant, Q8_0QuantizerEqualsLibmFormula) {
    std::vector<float> x = random_values(32 * 400, 7, -3.0f, 3.0f);
    std::mt19937 rng(7);
    // Blocks 300..399: amax 127 (so id is 1), the rest k + 0.5 ties and their neighbours.
    for (int b = 300; b < 400; ++b) {
        float* xb = x.data() + 32 * b;
        xb[0] = b % 2 ? 127.0f : -127.0f;
        for (int i = 1; i < 32; ++i) {
            const float tie = float(int(rng() % 253) - 126) + 0.5f;
            const int pick = int(rng() % 3);
            xb[i] = pick == 0 ? tie : std::nextafter(tie, pick == 1 ? 200.0f : -200.0f);
        }
    }
    std::vector<BlockQ8_0> got(400);
    quantize_row_q8_0(x.data(), int64_t(x.size()), got.data());
    for (int b = 0; b < 400; ++b) {
        const float* xb = x.data() + 32 * b;
        float amax = 0.0f;
        for (int i = 0; i < 32; ++i) amax = std::fmax(amax, std::fabs(xb[i]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        ASSERT_EQ(got[size_t(b)].d, f32_to_f16(d)) << "block " << b;
        for (int i = 0; i < 32; ++i)
            ASSERT_EQ(got[size_t(b)].qs[i], int8_t(std::round(xb[i] * id)))
                << "block " << b << " value " << xb[i];
    }
}

// Q4_0's quantizer against ggml's reference loop (the first value of largest magnitude sets
// d = max / -8), on random blocks, blocks where +m and -m tie for the largest magnitude (the
// first decides d's sign), and all-zero blocks with negative zeros (d stays +0 / -8 = -0).
TEST(KernelsQuant, Q4_0QuantizerEqualsReferenceLoop) {
    std::vector<float> x = random_values(32 * 300, 11, -2.0f, 2.0f);
    std::mt19937 rng(11);
    for (int b = 200; b < 300; ++b) {
        float* xb = x.data() + 32 * b;
        if (b < 250) {  // a magnitude tie at two random places, signs random
            const int i = int(rng() % 32), j = int(rng() % 32);
            xb[i] = rng() % 2 ? 2.5f : -2.5f;
            xb[j] = rng() % 2 ? 2.5f : -2.5f;
        } else {
            for (int i = 0; i < 32; ++i) xb[i] = rng() % 2 ? -0.0f : 0.0f;
        }
    }
    std::vector<BlockQ4_0> got(300);
    quantize_row_q4_0(x.data(), int64_t(x.size()), got.data());
    for (int b = 0; b < 300; ++b) {
        const float* xb = x.data() + 32 * b;
        float amax = 0.0f, max = 0.0f;
        for (int i = 0; i < 32; ++i)
            if (std::fabs(xb[i]) > amax) {
                amax = std::fabs(xb[i]);
                max = xb[i];
            }
        const float d = max / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        ASSERT_EQ(got[size_t(b)].d, f32_to_f16(d)) << "block " << b;
        for (int i = 0; i < 16; ++i) {
            const int lo = std::min(15, int(xb[i] * id + 8.5f));
            const int hi = std::min(15, int(xb[i + 16] * id + 8.5f));
            ASSERT_EQ(got[size_t(b)].qs[i], uint8_t(lo | (hi << 4))) << "block " << b;
        }
    }
}

// Round trip: Q8_0 |x - x'| <= d/2 (rounding to a code) + 127 |d - f16(d)| <= amax/254 +
// amax * 2^-11 (f16 keeps 11 significant bits), with d = amax/127.
TEST(KernelsQuant, Q8_0RoundTripWithinBound) {
    const int64_t n = 32 * 64;
    const std::vector<float> x = random_values(size_t(n), 2, -3.0f, 3.0f);
    std::vector<BlockQ8_0> q(size_t(n / 32));
    quantize_row_q8_0(x.data(), n, q.data());
    std::vector<float> y(static_cast<size_t>(n));
    dequantize_row_q8_0(q.data(), n, y.data());
    for (int64_t b = 0; b < n / 32; ++b) {
        float amax = 0.0f;
        for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[b * 32 + i]));
        const float bound = amax / 254.0f + amax * std::ldexp(1.0f, -11) + 1e-7f * amax;
        for (int i = 0; i < 32; ++i) ASSERT_LE(std::fabs(x[b * 32 + i] - y[b * 32 + i]), bound);
    }
}

// Q4_0: |d| = amax/8; codes round to nearest (error <= |d|/2) except the extreme opposite to
// the max-magnitude value, which clamps from code 16 to 15 (error <= |d|); f16 scale adds
// 8 |d| 2^-11.
TEST(KernelsQuant, Q4_0RoundTripWithinBound) {
    const int64_t n = 32 * 64;
    const std::vector<float> x = random_values(size_t(n), 3, -3.0f, 3.0f);
    std::vector<BlockQ4_0> q(size_t(n / 32));
    quantize_row_q4_0(x.data(), n, q.data());
    std::vector<float> y(static_cast<size_t>(n));
    dequantize_row_q4_0(q.data(), n, y.data());
    double sum_err = 0.0, sum_d = 0.0;
    for (int64_t b = 0; b < n / 32; ++b) {
        float amax = 0.0f;
        for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[b * 32 + i]));
        const float d = amax / 8.0f;
        for (int i = 0; i < 32; ++i) {
            const float err = std::fabs(x[b * 32 + i] - y[b * 32 + i]);
            ASSERT_LE(err, d + 8 * d * std::ldexp(1.0f, -11) + 1e-7f * amax);
            sum_err += err;
            sum_d += d;
        }
    }
    // Uniform data: the mean rounding error is about d/4.
    EXPECT_LT(sum_err / sum_d, 0.3);
}

TEST(KernelsQuant, Q4_1LayoutMatchesGgml) {
    uint8_t bytes[20];
    const uint16_t d = 0x3800, m = 0xbc00;  // 0.5, -1.0
    std::memcpy(bytes, &d, 2);
    std::memcpy(bytes + 2, &m, 2);
    for (int i = 0; i < 16; ++i) bytes[4 + i] = uint8_t(i | ((15 - i) << 4));
    BlockQ4_1 block;
    std::memcpy(&block, bytes, sizeof block);
    float out[32];
    dequantize_row_q4_1(&block, 32, out);
    for (int i = 0; i < 16; ++i) {
        EXPECT_EQ(out[i], i * 0.5f - 1.0f) << i;
        EXPECT_EQ(out[i + 16], (15 - i) * 0.5f - 1.0f) << i;
    }
}

// Q4_1: d = (max - min)/15; rounding to a code costs <= d/2; the f16 scale and offset add
// <= 15 d 2^-11 + |min| 2^-11.
TEST(KernelsQuant, Q4_1RoundTripWithinBound) {
    const int64_t n = 32 * 64;
    const std::vector<float> x = random_values(size_t(n), 5, -2.0f, 3.0f);
    std::vector<BlockQ4_1> q(size_t(n / 32));
    quantize_row_q4_1(x.data(), n, q.data());
    std::vector<float> y(static_cast<size_t>(n));
    dequantize_row_q4_1(q.data(), n, y.data());
    for (int64_t b = 0; b < n / 32; ++b) {
        float lo = x[b * 32], hi = x[b * 32];
        for (int i = 0; i < 32; ++i) {
            lo = std::min(lo, x[b * 32 + i]);
            hi = std::max(hi, x[b * 32 + i]);
        }
        const float d = (hi - lo) / 15.0f;
        const float bound = d / 2 + (15 * d + std::fabs(lo)) * std::ldexp(1.0f, -11) + 1e-6f;
        for (int i = 0; i < 32; ++i) ASSERT_LE(std::fabs(x[b * 32 + i] - y[b * 32 + i]), bound);
    }
}

// A RawTensor over bytes in memory.
RawTensor raw(DType type, std::vector<int64_t> shape, const std::vector<uint8_t>& bytes) {
    RawTensor t;
    t.name = "test.weight";
    t.file = "memory";
    t.dtype = type;
    t.shape = std::move(shape);
    t.data = bytes.data();
    t.nbytes = bytes.size();
    return t;
}

template <class T>
std::vector<uint8_t> as_bytes(const std::vector<T>& v) {
    std::vector<uint8_t> b(v.size() * sizeof(T));
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}

TEST(KernelsQuant, MakeWeightConversions) {
    const int64_t rows = 3, cols = 64;
    const std::vector<float> x = random_values(size_t(rows * cols), 4, -1.0f, 1.0f);
    const std::vector<uint8_t> f32_bytes = as_bytes(x);
    const RawTensor f32 = raw(DType::F32, {rows, cols}, f32_bytes);

    // f32 -> Q8_0 equals quantize_row_q8_0 per row.
    const WeightMatrix q8 = make_weight(f32, rows, cols, WType::Q8_0);
    ASSERT_EQ(q8.type, WType::Q8_0);
    std::vector<BlockQ8_0> expect(size_t(rows * cols / 32));
    for (int64_t r = 0; r < rows; ++r)
        quantize_row_q8_0(&x[r * cols], cols, &expect[r * cols / 32]);
    ASSERT_EQ(q8.nbytes(), expect.size() * sizeof(BlockQ8_0));
    EXPECT_EQ(0, std::memcmp(q8.data, expect.data(), q8.nbytes()));

    // A GGUF Q8_0 tensor keeps its bytes for target Q8_0 and Native, dequantizes for F32.
    const std::vector<uint8_t> q8_bytes = as_bytes(expect);
    const RawTensor gguf_q8 = raw(DType::Q8_0, {rows, cols}, q8_bytes);
    for (WType target : {WType::Q8_0, WType::Native}) {
        const WeightMatrix w = make_weight(gguf_q8, rows, cols, target);
        ASSERT_EQ(w.type, WType::Q8_0);
        EXPECT_EQ(0, std::memcmp(w.data, q8_bytes.data(), q8_bytes.size()));
    }
    const WeightMatrix widened = make_weight(gguf_q8, rows, cols, WType::F32);
    ASSERT_EQ(widened.type, WType::F32);
    std::vector<float> row(static_cast<size_t>(cols)), row_q(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
        weight_row_f32(widened, r, row.data());
        weight_row_f32(q8, r, row_q.data());
        EXPECT_EQ(0, std::memcmp(row.data(), row_q.data(), size_t(cols) * 4));
    }
    // GGUF Q4_1 keeps its bytes too.
    std::vector<BlockQ4_1> q41(size_t(rows * cols / 32));
    for (int64_t r = 0; r < rows; ++r) quantize_row_q4_1(&x[r * cols], cols, &q41[r * cols / 32]);
    const std::vector<uint8_t> q41_bytes = as_bytes(q41);
    const WeightMatrix w41 = make_weight(raw(DType::Q4_1, {rows, cols}, q41_bytes), rows, cols, WType::Native);
    ASSERT_EQ(w41.type, WType::Q4_1);
    EXPECT_EQ(0, std::memcmp(w41.data, q41_bytes.data(), q41_bytes.size()));
    // GGUF Q8_0 requantized to Q4_0 goes through f32.
    EXPECT_EQ(make_weight(gguf_q8, rows, cols, WType::Q4_0).type, WType::Q4_0);

    // bf16 source: Native keeps the bits, F32 widens exactly.
    std::vector<uint16_t> bf(x.size());
    for (size_t i = 0; i < x.size(); ++i) bf[i] = f32_to_bf16(x[i]);
    const std::vector<uint8_t> bf_bytes = as_bytes(bf);
    const RawTensor bf16 = raw(DType::BF16, {rows, cols}, bf_bytes);
    const WeightMatrix wb = make_weight(bf16, rows, cols, WType::Native);
    ASSERT_EQ(wb.type, WType::BF16);
    EXPECT_EQ(0, std::memcmp(wb.data, bf_bytes.data(), bf_bytes.size()));
    const WeightMatrix wf = make_weight(bf16, rows, cols, WType::F32);
    weight_row_f32(wf, 1, row.data());
    for (int64_t c = 0; c < cols; ++c) EXPECT_EQ(row[c], bf16_to_f32(bf[cols + c]));

    // f32 -> f16 rounds each value once.
    const WeightMatrix wh = make_weight(f32, rows, cols, WType::F16);
    ASSERT_EQ(wh.type, WType::F16);
    weight_row_f32(wh, 2, row.data());
    for (int64_t c = 0; c < cols; ++c) EXPECT_EQ(row[c], f16_to_f32(f32_to_f16(x[2 * cols + c])));

    // Block targets need cols % 32 == 0; others fall back to f32.
    const RawTensor odd = raw(DType::F32, {4, 48}, f32_bytes);
    EXPECT_EQ(make_weight(odd, 4, 48, WType::Q4_0).type, WType::F32);
    // A vector [rows] is one column.
    const RawTensor vec = raw(DType::F32, {rows}, f32_bytes);
    EXPECT_EQ(make_weight(vec, rows, 1, WType::Q8_0).type, WType::F32);
}

// An MLX affine 4-bit tensor (group 64, bf16 scales and biases, codes packed low nibble
// first) becomes Q4_1 with exactly the values w = scale * q + bias.
TEST(KernelsQuant, MlxAffine4BitRepacksExactly) {
    const int64_t rows = 2, cols = 128, group = 64;
    std::mt19937 rng(9);
    std::vector<uint8_t> codes(size_t(rows * cols / 2));
    for (uint8_t& c : codes) c = uint8_t(rng());
    std::vector<uint16_t> scales(size_t(rows * cols / group)), biases(scales.size());
    for (size_t i = 0; i < scales.size(); ++i) {
        scales[i] = f32_to_bf16(0.01f * float(i + 1));
        biases[i] = f32_to_bf16(-0.07f * float(i + 1));
    }
    RawTensor t = raw(DType::MLX_AFFINE, {rows, cols}, codes);
    t.bits = 4;
    t.group_size = int(group);
    t.scale_dtype = DType::BF16;
    t.scales = reinterpret_cast<const uint8_t*>(scales.data());
    t.biases = reinterpret_cast<const uint8_t*>(biases.data());
    const WeightMatrix w = make_weight(t, rows, cols, WType::Native);
    ASSERT_EQ(w.type, WType::Q4_1);
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
        weight_row_f32(w, r, row.data());
        for (int64_t j = 0; j < cols; ++j) {
            const int q = (codes[size_t((r * cols + j) / 2)] >> (4 * (j % 2))) & 15;
            const size_t g = size_t(r * cols / group + j / group);
            const float expect = bf16_to_f32(scales[g]) * float(q) + bf16_to_f32(biases[g]);
            ASSERT_EQ(row[j], expect) << "r=" << r << " j=" << j;
        }
    }
}

TEST(KernelsQuant, MakeWeightRejectsBadInput) {
    const std::vector<uint8_t> bytes(64 * 4, 0);
    EXPECT_THROW(make_weight(raw(DType::F32, {8, 8}, bytes), 4, 8, WType::F32), Error);
    // Fewer bytes than the shape needs (a hostile file).
    const std::vector<uint8_t> short_bytes(10, 0);
    EXPECT_THROW(make_weight(raw(DType::Q8_0, {1, 32}, short_bytes), 1, 32, WType::Native), Error);
    EXPECT_THROW(make_weight(raw(DType::BF16, {2, 32}, short_bytes), 2, 32, WType::F32), Error);
    EXPECT_THROW(parse_wtype("q3"), Error);
    EXPECT_EQ(parse_wtype("q4"), WType::Q4_0);
    EXPECT_EQ(parse_wtype("q8_0"), WType::Q8_0);
}

// A NaN never becomes a Q8_0 block's scale (quant.cpp: the block maximum skips NaN, as std::fmax
// does, so the KV cache's key blocks keep their other values): with a NaN at the first, a middle
// and the last position (each of the maximum's lanes), d is still max|finite x| / 127 and every
// finite value gets ggml's code round(x / d).
TEST(KernelsQuant, Q8_0ScaleSkipsNaN) {
    for (int at : {0, 13, 31}) {
        float x[32];
        for (int i = 0; i < 32; ++i) x[i] = float(i - 20) * 0.125f;  // max |x| = 2.5 at i = 0
        x[at] = std::nanf("");
        const float amax = at == 0 ? 2.375f : 2.5f;
        BlockQ8_0 q;
        quantize_row_q8_0(x, 32, &q);
        const float d = amax / 127.0f;
        EXPECT_EQ(f32_to_f16(d), q.d) << "NaN at " << at;
        for (int i = 0; i < 32; ++i) {
            if (i == at) continue;
            EXPECT_EQ(int8_t(std::round(x[i] * (1.0f / d))), q.qs[i])
                << "NaN at " << at << ", value " << i;
        }
    }
}

// parse_wtype reads every name its error lists (f32, bf16, f16, q8_0, q4, q4_1, native) and the
// other spellings q8 and q4_0, each as its type; wtype_name's names of these types read back.
TEST(KernelsQuant, ParseWtypeReadsEveryListedName) {
    const std::pair<const char*, WType> names[] = {
        {"f32", WType::F32},   {"bf16", WType::BF16}, {"f16", WType::F16},
        {"q8_0", WType::Q8_0}, {"q8", WType::Q8_0},   {"q4_0", WType::Q4_0},
        {"q4", WType::Q4_0},   {"q4_1", WType::Q4_1}, {"native", WType::Native}};
    for (auto [name, type] : names) EXPECT_EQ(type, parse_wtype(name)) << name;
    for (WType t : {WType::F32, WType::BF16, WType::F16, WType::Q8_0, WType::Q4_0, WType::Q4_1,
                    WType::Native})
        EXPECT_EQ(t, parse_wtype(wtype_name(t))) << wtype_name(t);
}

// make_weight refuses shapes with no rows or columns, or negative ones whose product is still the
// tensor's value count (-1 x -32 = 32), naming the tensor's shape and the one expected.
TEST(KernelsQuant, MakeWeightRefusesEmptyAndNegativeShapes) {
    const std::vector<uint8_t> bytes(32 * 4, 0);
    const std::vector<uint8_t> none;
    const RawTensor empty = raw(DType::F32, {0, 32}, none);
    EXPECT_NE(std::string::npos, test::error_of([&] {
                                     make_weight(empty, 0, 32, WType::F32);
                                 }).find("expected [0, 32]"));
    const RawTensor row = raw(DType::F32, {1, 32}, bytes);
    EXPECT_NE(std::string::npos, test::error_of([&] {
                                     make_weight(row, -1, -32, WType::F32);
                                 }).find("expected [-1, -32]"));
    EXPECT_THROW(build_weight(0, 32, WType::F32, nullptr, [](int64_t, float*) {}), Error);
    EXPECT_THROW(build_weight(4, 0, WType::F32, nullptr, [](int64_t, float*) {}), Error);
}

// weight_row_f32 reads rows 0..rows - 1 only: one past the end and -1 are refused by name, not
// read from the bytes after the matrix (for a row-group matrix, another row's padding lane).
TEST(KernelsQuant, WeightRowOutsideTheMatrixIsRefused) {
    const std::vector<float> v = random_values(3 * 32, 12, -1.0f, 1.0f);
    std::vector<float> row(32);
    for (WType t : {WType::F32, WType::Q8_0, WType::Q4_0R}) {
        const WeightMatrix w = make_weight_f32(v.data(), 3, 32, t);
        EXPECT_NO_THROW(weight_row_f32(w, 2, row.data())) << wtype_name(t);
        for (int64_t r : {int64_t(3), int64_t(-1)})
            EXPECT_NE(std::string::npos, test::error_of([&] {
                                             weight_row_f32(w, r, row.data());
                                         }).find("out of range"))
                << wtype_name(t) << " row " << r;
    }
}

// BF16D is BF16's bytes (weight.h: only the kernel that multiplies them differs): a row encoded as
// BF16D is each value's bf16, the bytes of a BF16 row, and reads back as those bf16 values.
TEST(KernelsQuant, Bf16DotRowsAreBf16Bytes) {
    const int64_t cols = 64;
    const std::vector<float> v = random_values(size_t(cols), 13, -300.0f, 300.0f);
    std::vector<uint8_t> as_bf16(size_t(cols) * 2), as_bf16d(size_t(cols) * 2);
    encode_row_f32(v.data(), cols, WType::BF16, as_bf16.data());
    encode_row_f32(v.data(), cols, WType::BF16D, as_bf16d.data());
    EXPECT_EQ(as_bf16, as_bf16d);
    const WeightMatrix w = make_weight_f32(v.data(), 1, cols, WType::BF16D);
    ASSERT_EQ(WType::BF16D, w.type);
    std::vector<float> row(static_cast<size_t>(cols));
    weight_row_f32(w, 0, row.data());
    for (int64_t c = 0; c < cols; ++c)
        EXPECT_EQ(bf16_to_f32(f32_to_bf16(v[size_t(c)])), row[size_t(c)]) << c;
}

// Integer tensors (U32, I32: MLX's packed codes, GGUF's index tables) are refused as weights with
// the reason, not reinterpreted as floats.
TEST(KernelsQuant, IntegerTensorsAreNotWeights) {
    const std::vector<uint8_t> bytes(4 * 32, 1);
    for (DType type : {DType::U32, DType::I32}) {
        const std::string why = test::error_of([&] { tensor_to_f32(raw(type, {4, 32}, bytes)); });
        EXPECT_NE(std::string::npos, why.find("floating-point weights are expected")) << why;
    }
}

// A tensor whose last dimension is not the matrix's row (a vector [n] bound as n rows of one
// value, a [2, 3] tensor as 3 rows of 2) is converted whole: row r holds values r * cols ..
// r * cols + cols - 1 of the tensor in its stored order (bf16 values, exact in f32).
TEST(KernelsQuant, TensorsShapedOtherThanTheMatrixKeepTheirValueOrder) {
    const std::vector<float> v = {0.5f, -1.25f, 3.0f, 0.125f, -2.0f, 7.0f};
    std::vector<uint16_t> bf(v.size());
    for (size_t i = 0; i < v.size(); ++i) bf[i] = f32_to_bf16(v[i]);
    const std::vector<uint8_t> bytes = as_bytes(bf);
    float row[2];
    const WeightMatrix vec = make_weight(raw(DType::BF16, {6}, bytes), 6, 1, WType::F32);
    ASSERT_EQ(WType::F32, vec.type);
    for (int64_t r = 0; r < 6; ++r) {
        weight_row_f32(vec, r, row);
        EXPECT_EQ(v[size_t(r)], row[0]) << r;
    }
    const WeightMatrix turned = make_weight(raw(DType::BF16, {2, 3}, bytes), 3, 2, WType::F32);
    for (int64_t r = 0; r < 3; ++r) {
        weight_row_f32(turned, r, row);
        EXPECT_EQ(v[size_t(2 * r)], row[0]) << r;
        EXPECT_EQ(v[size_t(2 * r + 1)], row[1]) << r;
    }
}

}  // namespace
}  // namespace nextn
