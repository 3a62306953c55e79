// Dequantization of ggml blocks and MLX affine tensors. Blocks are packed here from the layouts
// documented by ggml (ggml-common.h block structs) and MLX (mlx.core.quantize: a little-endian
// bit stream per row); the expected values are the stated formulas evaluated on the codes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "formats/dequant.h"

namespace nextn {
namespace {

// f16 bit patterns of exactly representable values.
constexpr uint16_t kF16Half = 0x3800;     // 0.5
constexpr uint16_t kF16Quarter = 0x3400;  // 0.25
constexpr uint16_t kF16One = 0x3C00;      // 1.0
constexpr uint16_t kF16MinusOne = 0xBC00; // -1.0

void put16(std::vector<uint8_t>& b, size_t at, uint16_t v) { std::memcpy(b.data() + at, &v, 2); }

RawTensor tensor(DType t, std::vector<int64_t> shape, const std::vector<uint8_t>& bytes) {
    RawTensor r;
    r.name = "test";
    r.file = "memory";
    r.dtype = t;
    r.shape = std::move(shape);
    r.data = bytes.data();
    r.nbytes = bytes.size();
    return r;
}

std::vector<float> run(const RawTensor& t) {
    std::vector<float> out(size_t(t.numel()));
    dequantize_to_f32(t, out.data());
    return out;
}

TEST(FormatsDequant, Q8_0) {
    std::vector<uint8_t> b(34 * 2);
    for (int blk = 0; blk < 2; ++blk) {
        put16(b, 34 * blk, blk ? kF16Half : kF16Quarter);
        for (int j = 0; j < 32; ++j) b[34 * blk + 2 + j] = uint8_t(int8_t(j * 8 - 128));
    }
    auto y = run(tensor(DType::Q8_0, {64}, b));
    for (int blk = 0; blk < 2; ++blk)
        for (int j = 0; j < 32; ++j)
            EXPECT_EQ(y[32 * blk + j], float(j * 8 - 128) * (blk ? 0.5f : 0.25f));
}

TEST(FormatsDequant, Q4_0AndQ4_1) {
    std::vector<uint8_t> b0(18), b1(20);
    put16(b0, 0, kF16Half);
    put16(b1, 0, kF16Half);
    put16(b1, 2, kF16MinusOne);
    for (int j = 0; j < 16; ++j) {
        b0[2 + j] = uint8_t(j | ((15 - j) << 4));  // element j: low nibble; j+16: high nibble
        b1[4 + j] = uint8_t(j | ((15 - j) << 4));
    }
    auto y0 = run(tensor(DType::Q4_0, {32}, b0));
    auto y1 = run(tensor(DType::Q4_1, {32}, b1));
    for (int j = 0; j < 16; ++j) {
        EXPECT_EQ(y0[j], float(j - 8) * 0.5f);
        EXPECT_EQ(y0[j + 16], float(15 - j - 8) * 0.5f);
        EXPECT_EQ(y1[j], float(j) * 0.5f - 1.0f);
        EXPECT_EQ(y1[j + 16], float(15 - j) * 0.5f - 1.0f);
    }
}

TEST(FormatsDequant, Q5_0AndQ5_1) {
    std::vector<int> q(32);
    for (int j = 0; j < 32; ++j) q[j] = (j * 7 + 3) % 32;
    std::vector<uint8_t> b0(22, 0), b1(24, 0);
    put16(b0, 0, kF16One);
    put16(b1, 0, kF16Half);
    put16(b1, 2, kF16Quarter);
    uint32_t qh = 0;
    for (int j = 0; j < 32; ++j) qh |= uint32_t(q[j] >> 4) << j;  // fifth bit of element j
    std::memcpy(b0.data() + 2, &qh, 4);
    std::memcpy(b1.data() + 4, &qh, 4);
    for (int j = 0; j < 16; ++j) {
        b0[6 + j] = uint8_t((q[j] & 15) | (q[j + 16] & 15) << 4);
        b1[8 + j] = b0[6 + j];
    }
    auto y0 = run(tensor(DType::Q5_0, {32}, b0));
    auto y1 = run(tensor(DType::Q5_1, {32}, b1));
    for (int j = 0; j < 32; ++j) {
        EXPECT_EQ(y0[j], float(q[j] - 16)) << j;
        EXPECT_EQ(y1[j], float(q[j]) * 0.5f + 0.25f) << j;
    }
}

// 6-bit scales and mins of the 8 sub-blocks of a K-quant super-block, packed as ggml's
// get_scale_min_k4 reads them.
void pack_k_scales(const int sc[8], const int m[8], uint8_t* out) {
    for (int s = 0; s < 4; ++s) {
        out[s] = uint8_t(sc[s] | (sc[s + 4] >> 4) << 6);
        out[s + 4] = uint8_t(m[s] | (m[s + 4] >> 4) << 6);
        out[s + 8] = uint8_t((sc[s + 4] & 15) | (m[s + 4] & 15) << 4);
    }
}

const int kSc[8] = {1, 2, 3, 4, 17, 33, 50, 63};
const int kMin[8] = {0, 5, 10, 63, 20, 40, 16, 1};

TEST(FormatsDequant, Q4_K) {
    std::vector<uint8_t> b(144);
    put16(b, 0, kF16One);      // d
    put16(b, 2, kF16Half);     // dmin
    pack_k_scales(kSc, kMin, b.data() + 4);
    std::vector<int> q(256);   // element i belongs to sub-block i / 32
    for (int i = 0; i < 256; ++i) q[i] = (i * 5 + 1) % 16;
    // 64-element chunk c: byte l holds element 64c+l (low nibble) and 64c+32+l (high nibble).
    for (int c = 0; c < 4; ++c)
        for (int l = 0; l < 32; ++l) b[16 + 32 * c + l] = uint8_t(q[64 * c + l] | q[64 * c + 32 + l] << 4);
    auto y = run(tensor(DType::Q4_K, {256}, b));
    for (int i = 0; i < 256; ++i) {
        const int s = i / 32;
        EXPECT_EQ(y[i], 1.0f * float(kSc[s]) * float(q[i]) - 0.5f * float(kMin[s])) << i;
    }
}

TEST(FormatsDequant, Q5_K) {
    std::vector<uint8_t> b(176, 0);
    put16(b, 0, kF16Half);
    put16(b, 2, kF16Quarter);
    pack_k_scales(kSc, kMin, b.data() + 4);
    std::vector<int> q(256);
    for (int i = 0; i < 256; ++i) q[i] = (i * 11 + 7) % 32;
    // Fifth bit of element 32s+l is bit s of qh[l]; low nibbles as Q4_K.
    for (int i = 0; i < 256; ++i) b[16 + i % 32] |= uint8_t((q[i] >> 4) << (i / 32));
    for (int c = 0; c < 4; ++c)
        for (int l = 0; l < 32; ++l)
            b[48 + 32 * c + l] = uint8_t((q[64 * c + l] & 15) | (q[64 * c + 32 + l] & 15) << 4);
    auto y = run(tensor(DType::Q5_K, {256}, b));
    for (int i = 0; i < 256; ++i) {
        const int s = i / 32;
        EXPECT_EQ(y[i], (0.5f * float(kSc[s])) * float(q[i]) - 0.25f * float(kMin[s])) << i;
    }
}

TEST(FormatsDequant, Q6_K) {
    std::vector<uint8_t> b(210, 0);
    std::vector<int> q(256);
    for (int i = 0; i < 256; ++i) q[i] = (i * 13 + 5) % 64;
    int8_t sc[16];
    for (int g = 0; g < 16; ++g) sc[g] = int8_t(g * 9 - 70);
    // Half h, l < 32: elements 128h + {l, l+32, l+64, l+96} take their low 4 bits from
    // ql[64h+l] (low), ql[64h+32+l] (low), ql[64h+l] (high), ql[64h+32+l] (high) and their top
    // 2 bits from qh[32h+l] bits 0-1, 2-3, 4-5, 6-7.
    for (int h = 0; h < 2; ++h)
        for (int l = 0; l < 32; ++l) {
            const int e0 = q[128 * h + l], e1 = q[128 * h + 32 + l], e2 = q[128 * h + 64 + l],
                      e3 = q[128 * h + 96 + l];
            b[64 * h + l] = uint8_t((e0 & 15) | (e2 & 15) << 4);
            b[64 * h + 32 + l] = uint8_t((e1 & 15) | (e3 & 15) << 4);
            b[128 + 32 * h + l] = uint8_t((e0 >> 4) | (e1 >> 4) << 2 | (e2 >> 4) << 4 | (e3 >> 4) << 6);
        }
    std::memcpy(b.data() + 192, sc, 16);
    put16(b, 208, kF16Half);
    auto y = run(tensor(DType::Q6_K, {256}, b));
    for (int i = 0; i < 256; ++i)
        EXPECT_EQ(y[i], 0.5f * float(sc[i / 16]) * float(q[i] - 32)) << i;
}

TEST(FormatsDequant, PlainTypes) {
    std::vector<uint8_t> bf(4), hf(4);
    put16(bf, 0, f32_to_bf16(1.5f));
    put16(bf, 2, f32_to_bf16(-3.0f));
    put16(hf, 0, kF16Quarter);
    put16(hf, 2, kF16MinusOne);
    EXPECT_EQ(run(tensor(DType::BF16, {2}, bf)), (std::vector<float>{1.5f, -3.0f}));
    EXPECT_EQ(run(tensor(DType::F16, {2}, hf)), (std::vector<float>{0.25f, -1.0f}));
}

TEST(FormatsDequant, WrongByteCountIsAnError) {
    std::vector<uint8_t> b(33);
    EXPECT_THROW(run(tensor(DType::Q8_0, {32}, b)), Error);
    EXPECT_THROW(run(tensor(DType::Q4_K, {32}, b)), Error);  // 32 is not a multiple of 256
}

// MLX: codes of a row form one little-endian bit stream, code j at bits [j*bits, (j+1)*bits).
std::vector<uint8_t> pack_stream(const std::vector<uint32_t>& codes, int bits) {
    std::vector<uint8_t> out(codes.size() * size_t(bits) / 8, 0);
    for (size_t j = 0; j < codes.size(); ++j)
        for (int k = 0; k < bits; ++k)
            if ((codes[j] >> k) & 1u) {
                const size_t bit = j * size_t(bits) + size_t(k);
                out[bit / 8] |= uint8_t(1u << (bit % 8));
            }
    return out;
}

TEST(FormatsDequant, MlxAffineAllWidths) {
    std::mt19937 rng(7);
    for (int bits : {2, 3, 4, 5, 6, 8}) {
        for (int group : {32, 64, 128}) {
            const int rows = 3, in = 128;
            std::vector<uint32_t> codes(size_t(rows * in));
            for (auto& c : codes) c = rng() % (1u << bits);
            std::vector<uint8_t> packed;
            for (int r = 0; r < rows; ++r) {
                auto row = pack_stream({codes.begin() + r * in, codes.begin() + (r + 1) * in}, bits);
                packed.insert(packed.end(), row.begin(), row.end());
            }
            const int groups = in / group;
            std::vector<uint8_t> scales(size_t(rows * groups) * 2), biases(scales.size());
            std::vector<float> sv(size_t(rows * groups)), bv(sv.size());
            for (size_t g = 0; g < sv.size(); ++g) {
                sv[g] = bf16_to_f32(f32_to_bf16(float(int(rng() % 200) - 100) / 997.0f));
                bv[g] = bf16_to_f32(f32_to_bf16(float(int(rng() % 200) - 100) / 61.0f));
                put16(scales, 2 * g, f32_to_bf16(sv[g]));
                put16(biases, 2 * g, f32_to_bf16(bv[g]));
            }
            RawTensor t = tensor(DType::MLX_AFFINE, {rows, in}, packed);
            t.bits = bits;
            t.group_size = group;
            t.scale_dtype = DType::BF16;
            t.scales = scales.data();
            t.biases = biases.data();
            auto y = run(t);
            for (int r = 0; r < rows; ++r)
                for (int j = 0; j < in; ++j) {
                    const size_t g = size_t(r * groups + j / group);
                    ASSERT_EQ(y[size_t(r * in + j)], sv[g] * float(codes[size_t(r * in + j)]) + bv[g])
                        << bits << "-bit g" << group << " row " << r << " col " << j;
                }
        }
    }
}

// MLX writes 6-bit codes as 3-byte packs of 4 values: b0 = q0 | q1<<6, b1 = q1>>2 | q2<<4,
// b2 = q2>>4 | q3<<2 — the same stream, written the other way.
TEST(FormatsDequant, MlxSixBitThreeBytePacks) {
    const std::vector<uint32_t> q = {63, 1, 42, 7, 0, 33, 18, 62};
    std::vector<uint8_t> packed;
    for (size_t i = 0; i < q.size(); i += 4) {
        packed.push_back(uint8_t(q[i] | q[i + 1] << 6));
        packed.push_back(uint8_t(q[i + 1] >> 2 | q[i + 2] << 4));
        packed.push_back(uint8_t(q[i + 2] >> 4 | q[i + 3] << 2));
    }
    // Pad the row to a group of 32 codes (all zero).
    packed.resize(32 * 6 / 8, 0);
    std::vector<uint8_t> scales(2), biases(2);
    put16(scales, 0, f32_to_bf16(2.0f));
    put16(biases, 0, f32_to_bf16(-1.0f));
    RawTensor t = tensor(DType::MLX_AFFINE, {1, 32}, packed);
    t.bits = 6;
    t.group_size = 32;
    t.scales = scales.data();
    t.biases = biases.data();
    auto y = run(t);
    for (size_t i = 0; i < q.size(); ++i) EXPECT_EQ(y[i], 2.0f * float(q[i]) - 1.0f) << i;
    for (size_t i = q.size(); i < 32; ++i) EXPECT_EQ(y[i], -1.0f);
}

TEST(FormatsDequant, RowRangesMatchTheWholeTensor) {
    // Q8_0 [3 rows, 64 cols] and MLX 4-bit [3, 64]: rows 1..2 alone equal the same rows of the
    // whole-tensor result.
    std::vector<uint8_t> q8(34 * 6);
    for (int blk = 0; blk < 6; ++blk) {
        put16(q8, 34 * size_t(blk), blk % 2 ? kF16Half : kF16One);
        for (int j = 0; j < 32; ++j) q8[34 * size_t(blk) + 2 + size_t(j)] = uint8_t(blk * 7 + j);
    }
    RawTensor a = tensor(DType::Q8_0, {3, 64}, q8);
    std::vector<uint8_t> packed(3 * 32), scales(3 * 2 * 2), biases(scales.size());
    for (size_t i = 0; i < packed.size(); ++i) packed[i] = uint8_t(i * 37);
    for (size_t g = 0; g < 6; ++g) {
        put16(scales, 2 * g, f32_to_bf16(0.5f + float(g)));
        put16(biases, 2 * g, f32_to_bf16(-float(g)));
    }
    RawTensor b = tensor(DType::MLX_AFFINE, {3, 64}, packed);
    b.bits = 4;
    b.group_size = 32;
    b.scales = scales.data();
    b.biases = biases.data();
    for (const RawTensor* t : {&a, &b}) {
        auto all = run(*t);
        std::vector<float> part(2 * 64);
        dequantize_rows_to_f32(*t, 1, 2, part.data());
        EXPECT_TRUE(std::equal(part.begin(), part.end(), all.begin() + 64)) << dtype_name(t->dtype);
        EXPECT_THROW(dequantize_rows_to_f32(*t, 2, 2, part.data()), Error);
    }
}

// The row reader widens bf16 in steps of 16 values and then the rest one at a time: a row of
// 37 (two steps and a tail of 5) must come out whole. Expected: a bf16 value is the top half of
// its f32 bits, so each is bf16_to_f32 of its code. The output starts as NaN so that a value left
// unwritten cannot pass.
TEST(FormatsDequant, RowReaderWidensBf16RowsOfAnyLength) {
    const int rows = 2, cols = 37;
    std::vector<uint8_t> b(size_t(rows * cols) * 2);
    for (int i = 0; i < rows * cols; ++i)
        put16(b, 2 * size_t(i), f32_to_bf16(float(i) * 0.75f - 20.0f));
    RawTensor t = tensor(DType::BF16, {rows, cols}, b);
    std::vector<float> y(size_t(rows * cols), std::nanf(""));
    dequantize_rows_to_f32(t, 0, rows, y.data());
    for (int i = 0; i < rows * cols; ++i) EXPECT_EQ(y[size_t(i)], float(i) * 0.75f - 20.0f) << i;
}

// A row of 48 Q8_0 values is one and a half blocks: the row reader must refuse it even when the
// byte count matches its whole blocks (one 34-byte block a row), or half of each row would be
// left unwritten.
TEST(FormatsDequant, RowReaderRefusesRowsOfPartBlocks) {
    std::vector<uint8_t> b(2 * 34);
    std::vector<float> y(2 * 48);
    EXPECT_THROW(dequantize_rows_to_f32(tensor(DType::Q8_0, {2, 48}, b), 0, 2, y.data()), Error);
}

// An MLX tensor as the loader would build it: [rows, in] codes of `bits`, bf16 scales and biases.
RawTensor mlx_tensor(std::vector<int64_t> shape, int bits, int group,
                     const std::vector<uint8_t>& packed, const std::vector<uint8_t>& scales,
                     const std::vector<uint8_t>& biases) {
    RawTensor t = tensor(DType::MLX_AFFINE, std::move(shape), packed);
    t.bits = bits;
    t.group_size = group;
    t.scale_dtype = DType::BF16;
    t.scales = scales.data();
    t.biases = biases.data();
    return t;
}

// MLX packs each row into 32-bit words, so a row's bits must fill whole words, and the bytes
// must be exactly rows x row bytes. 4 codes of 4 bits are half a word (and 4 codes of 3 bits
// end inside a byte, which a reader of whole bytes would read past); a tensor one byte longer
// than its rows is not what MLX wrote either.
TEST(FormatsDequant, MlxPackingMustFillWholeWordsExactly) {
    std::vector<uint8_t> scales(8, 0), biases(8, 0);
    std::vector<float> y(64);
    std::vector<uint8_t> half_word(2 * 2);  // [2, 4] at 4 bits: 2 bytes a row
    EXPECT_THROW(run(mlx_tensor({2, 4}, 4, 4, half_word, scales, biases)), Error);
    EXPECT_THROW(
        dequantize_rows_to_f32(mlx_tensor({2, 4}, 4, 4, half_word, scales, biases), 0, 2, y.data()),
        Error);
    std::vector<uint8_t> one_word(2 * 4), one_word_and_a_byte(2 * 4 + 1);      // [2, 8] at 4 bits
    EXPECT_NO_THROW(run(mlx_tensor({2, 8}, 4, 8, one_word, scales, biases)));  // the control
    EXPECT_THROW(run(mlx_tensor({2, 8}, 4, 8, one_word_and_a_byte, scales, biases)), Error);
}

// The code form (affine_code_bits / affine_row) gives one scale and bias per 32 values, which is
// only right when every 32-value block lies in one MLX group: group 16 has two scales a block
// and must be refused (0), while groups 32 and 64 are taken.
TEST(FormatsDequant, AffineCodeFormNeedsGroupsOfWhole32Blocks) {
    std::vector<uint8_t> packed(2 * 32), scales(2 * 4 * 2, 0),
        biases(scales.size(), 0);  // [2, 64] 4-bit
    EXPECT_EQ(affine_code_bits(mlx_tensor({2, 64}, 4, 16, packed, scales, biases), 2, 64), 0);
    EXPECT_EQ(affine_code_bits(mlx_tensor({2, 64}, 4, 32, packed, scales, biases), 2, 64), 4);
    EXPECT_EQ(affine_code_bits(mlx_tensor({2, 64}, 4, 64, packed, scales, biases), 2, 64), 4);
}

}  // namespace
}  // namespace nextn
