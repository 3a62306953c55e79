// Attention keys in tiles of 16 positions (kernels/key_tiles.h) and the scores kernel over them
// (KernelTable::key_scores): the layout by hand, each stored key against the row rounding the
// value cache uses, the reference against double-precision dot products, and every ISA against
// the reference bitwise, whatever the rows, positions and head size, with the invariances a
// decode step and a verify rely on.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "kernel_test_helpers.h"
#include "kernels/kernels.h"
#include "kernels/key_tiles.h"
#include "kernels/quant.h"

namespace nextn {
namespace {

using test::random_normal;

// n positions' keys [n, d] stored in tiles; the bytes the keys do not reach (the last tile's
// spare lanes) are all ones: NaN in every type, so a score that read them would show.
std::vector<uint8_t> tiles_of(WType type, const std::vector<float>& keys, int64_t n, int64_t d) {
    const size_t tile_bytes = key_tile_bytes(type, d);
    std::vector<uint8_t> tiles(size_t((n + kKeyTile - 1) / kKeyTile) * tile_bytes, 0xFF);
    for (int64_t pos = 0; pos < n; ++pos)
        store_key_in_tile(type, tiles.data() + size_t(pos / kKeyTile) * tile_bytes, pos % kKeyTile,
                          keys.data() + pos * d, d);
    return tiles;
}

// Random keys, with some 32-value blocks scaled to tiny or zero values (a q8_0 block of scale 0
// or of subnormal-range codes).
std::vector<float> random_keys(int64_t n, int64_t d, uint32_t seed) {
    std::vector<float> keys = random_normal(size_t(n * d), seed);
    for (int64_t b = 0; b * kQuantBlock < n * d; b += 7)
        for (int64_t i = b * kQuantBlock; i < std::min((b + 1) * kQuantBlock, n * d); ++i)
            keys[size_t(i)] *= b % 2 ? 1e-6f : 0.0f;
    return keys;
}

TEST(KeyTiles, LayoutByHand) {
    EXPECT_EQ(key_tile_bytes(WType::F32, 256), size_t(16 * 256 * 4));
    EXPECT_EQ(key_tile_bytes(WType::F16, 256), size_t(16 * 256 * 2));
    EXPECT_EQ(key_tile_bytes(WType::Q8_0, 256), size_t(16 * 8 * 34));  // 16 positions' rows
    // Position 3's value e sits at [e][3] of an f32 tile.
    std::vector<float> key(48);
    for (int e = 0; e < 48; ++e) key[size_t(e)] = float(e + 1);
    std::vector<float> tile(16 * 48, 0.0f);
    store_key_in_tile(WType::F32, reinterpret_cast<uint8_t*>(tile.data()), 3, key.data(), 48);
    for (int e = 0; e < 48; ++e) {
        EXPECT_EQ(tile[size_t(e * 16 + 3)], float(e + 1));
        EXPECT_EQ(tile[size_t(e * 16 + 2)], 0.0f);
    }
    // Q8_0: a block of values k * 0.5 (k = -16..15 then back) has d = max|x| / 127 = 8 / 127;
    // position 5's scale at bytes [2 * 5, 2 * 5 + 2) of block 1, its code of value 7 (step 1 of
    // four values, third of them) at 32 + (1 * 16 + 5) * 4 + 3, plus 128.
    std::vector<float> q8key(64);
    for (int e = 0; e < 64; ++e) q8key[size_t(e)] = float((e % 32) - 16) * 0.5f;
    std::vector<uint8_t> qt(key_tile_bytes(WType::Q8_0, 64), 0);
    store_key_in_tile(WType::Q8_0, qt.data(), 5, q8key.data(), 64);
    uint16_t scale;
    std::memcpy(&scale, qt.data() + kKeyTileQ8_0BlockBytes + 10, 2);
    EXPECT_EQ(scale, f32_to_f16(8.0f / 127.0f));
    const int code = int(qt[kKeyTileQ8_0BlockBytes + 32 + (1 * 16 + 5) * 4 + 3]) - 128;
    // -4.5 / (8 / 127) = -71.4375, rounded to -71
    EXPECT_EQ(code, int(std::nearbyint((7 - 16) * 0.5f * 127.0f / 8.0f)));
    EXPECT_EQ(q8_0_key_code(qt.data(), 5, 32 + 7), code);
    EXPECT_EQ(q8_0_key_scale(qt.data(), 5, 32 + 7), scale);
}

// A stored key reads back as the value cache's row rounding gives it: f32 as is, f16 rounded to
// nearest even, q8_0 as quantize_row_q8_0 then dequantize_row_q8_0 of the position's row.
TEST(KeyTiles, StoredKeysReadBackAsTheRowRoundingGives) {
    for (int64_t d : {32, 96, 256}) {
        const int64_t n = 40;  // three tiles, the last part full
        const std::vector<float> keys = random_keys(n, d, 3);
        for (WType type : {WType::F32, WType::F16, WType::Q8_0}) {
            const std::vector<uint8_t> tiles = tiles_of(type, keys, n, d);
            const size_t tile_bytes = key_tile_bytes(type, d);
            for (int64_t pos = 0; pos < n; ++pos) {
                std::vector<float> want(keys.begin() + pos * d, keys.begin() + (pos + 1) * d);
                if (type == WType::F16)
                    for (float& x : want) x = f16_to_f32(f32_to_f16(x));
                if (type == WType::Q8_0) {
                    std::vector<BlockQ8_0> row(size_t(d / kQuantBlock));
                    quantize_row_q8_0(keys.data() + pos * d, d, row.data());
                    dequantize_row_q8_0(row.data(), d, want.data());
                }
                for (int64_t e = 0; e < d; ++e)
                    ASSERT_EQ(key_in_tile(type, tiles.data() + size_t(pos / kKeyTile) * tile_bytes,
                                          pos % kKeyTile, e),
                              want[size_t(e)])
                        << wtype_name(type) << " d=" << d << " pos=" << pos << " e=" << e;
            }
        }
    }
}

// For f32 and f16 keys the reference is a chain of d fused multiply-adds per score, so it lies
// within d * 2^-24 of the sum of |q * key| from the exact dot product of the stored keys (taken
// in double).
TEST(KernelsKeyScores, ReferenceNearExactDotProducts) {
    const int64_t n = 50, R = 5;
    for (int64_t d : {32, 100, 256})
        for (WType type : {WType::F32, WType::F16}) {
            const std::vector<float> keys = random_keys(n, d, 5);
            const std::vector<float> q = random_normal(size_t(R * d), 6);
            const std::vector<uint8_t> tiles = tiles_of(type, keys, n, d);
            std::vector<float> got(size_t(R * n), std::nanf(""));
            reference_kernels().key_scores(type, tiles.data(), n, q.data(), R, d, got.data(), n);
            const size_t tile_bytes = key_tile_bytes(type, d);
            for (int64_t r = 0; r < R; ++r)
                for (int64_t pos = 0; pos < n; ++pos) {
                    double exact = 0.0, magnitude = 0.0;
                    for (int64_t e = 0; e < d; ++e) {
                        const double k =
                            key_in_tile(type, tiles.data() + size_t(pos / kKeyTile) * tile_bytes,
                                        pos % kKeyTile, e);
                        exact += double(q[size_t(r * d + e)]) * k;
                        magnitude += std::fabs(double(q[size_t(r * d + e)]) * k);
                    }
                    EXPECT_NEAR(got[size_t(r * n + pos)], exact, double(d) * 0x1p-24 * magnitude)
                        << wtype_name(type) << " d=" << d << " r=" << r << " pos=" << pos;
                }
        }
}

// For q8_0 keys the reference is ggml's Q8_0 x Q8_0 dot product: each query's 32-value block
// rounded by quantize_row_q8_0 as the key's was, the codes' integer dot product, then one fused
// multiply-add a block by the product of the two f16 scales. Worked here from the keys' and
// queries' own row blocks (not the tiles).
TEST(KernelsKeyScores, Q8_0ReferenceIsTheBlocksIntegerDotProducts) {
    const int64_t n = 50, R = 5;
    for (int64_t d : {32, 96, 256}) {
        const int64_t blocks = d / kQuantBlock;
        const std::vector<float> keys = random_keys(n, d, 5);
        const std::vector<float> q = random_normal(size_t(R * d), 6);
        const std::vector<uint8_t> tiles = tiles_of(WType::Q8_0, keys, n, d);
        std::vector<float> got(size_t(R * n), std::nanf(""));
        reference_kernels().key_scores(WType::Q8_0, tiles.data(), n, q.data(), R, d, got.data(), n);
        std::vector<BlockQ8_0> key_rows(size_t(n * blocks)), query_rows(size_t(R * blocks));
        for (int64_t pos = 0; pos < n; ++pos)
            quantize_row_q8_0(keys.data() + pos * d, d, key_rows.data() + pos * blocks);
        for (int64_t r = 0; r < R; ++r)
            quantize_row_q8_0(q.data() + r * d, d, query_rows.data() + r * blocks);
        for (int64_t r = 0; r < R; ++r)
            for (int64_t pos = 0; pos < n; ++pos) {
                float want = 0.0f;
                for (int64_t b = 0; b < blocks; ++b) {
                    const BlockQ8_0& kb = key_rows[size_t(pos * blocks + b)];
                    const BlockQ8_0& qb = query_rows[size_t(r * blocks + b)];
                    int dot = 0;
                    for (int j = 0; j < kQuantBlock; ++j) dot += int(kb.qs[j]) * int(qb.qs[j]);
                    want = std::fma(float(dot), f16_to_f32(kb.d) * f16_to_f32(qb.d), want);
                }
                ASSERT_EQ(got[size_t(r * n + pos)], want)
                    << "d=" << d << " r=" << r << " pos=" << pos;
            }
    }
}

// ... and so within half a query step a value of the exact dot product of the stored keys with
// the unrounded queries: |error| <= sum over e of |key_e| * query_scale_b(e) / 2, plus the f16
// rounding of the query's scale (2^-11 relative, applied to every code) and the float sums.
TEST(KernelsKeyScores, Q8_0ScoresNearExactDotProducts) {
    const int64_t n = 50, R = 5, d = 256;
    const std::vector<float> keys = random_keys(n, d, 15);
    const std::vector<float> q = random_normal(size_t(R * d), 16);
    const std::vector<uint8_t> tiles = tiles_of(WType::Q8_0, keys, n, d);
    std::vector<float> got(size_t(R * n));
    reference_kernels().key_scores(WType::Q8_0, tiles.data(), n, q.data(), R, d, got.data(), n);
    const size_t tile_bytes = key_tile_bytes(WType::Q8_0, d);
    for (int64_t r = 0; r < R; ++r)
        for (int64_t pos = 0; pos < n; ++pos) {
            double exact = 0.0, bound = 0.0;
            for (int64_t b = 0; b < d / kQuantBlock; ++b) {
                float amax = 0.0f;
                for (int64_t j = 0; j < kQuantBlock; ++j)
                    amax = std::max(amax, std::fabs(q[size_t(r * d + b * kQuantBlock + j)]));
                const double step = amax / 127.0;
                for (int64_t j = 0; j < kQuantBlock; ++j) {
                    const int64_t e = b * kQuantBlock + j;
                    const double k =
                        key_in_tile(WType::Q8_0, tiles.data() + size_t(pos / kKeyTile) * tile_bytes,
                                    pos % kKeyTile, e);
                    const double x = q[size_t(r * d + e)];
                    exact += x * k;
                    bound += std::fabs(k) * (step / 2 + (std::fabs(x) + step) * 0x1p-11 +
                                             std::fabs(x) * double(d) * 0x1p-23);
                }
            }
            EXPECT_NEAR(got[size_t(r * n + pos)], exact, bound) << "r=" << r << " pos=" << pos;
        }
}

// Heads whose query codes outgrow the kernels' stack buffers are refused by name.
TEST(KernelsKeyScores, Q8_0RefusesHeadsPastTheQueryBuffer) {
    const int64_t d = kQueryCodeBytes + kQuantBlock;
    const std::vector<uint8_t> tiles(key_tile_bytes(WType::Q8_0, d), 0x80);
    const std::vector<float> q(size_t(d), 1.0f);
    float out[1];
    for (const std::string& isa : available_isas()) {
        // The reference rounds a block at a time, no buffer; so does any table that uses it.
        if (kernels_for(isa).key_scores == reference_kernels().key_scores) continue;
        try {
            kernels_for(isa).key_scores(WType::Q8_0, tiles.data(), 1, q.data(), 1, d, out, 1);
            ADD_FAILURE() << isa << " took a head of " << d << " values";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(std::to_string(d)), std::string::npos) << e.what();
        }
    }
}

// A head of part blocks cannot hold q8_0 keys: every table refuses it by its size (before the
// kernels round any query, whose blocks must be whole too).
TEST(KernelsKeyScores, Q8_0RefusesHeadsOfPartBlocks) {
    const int64_t d = 48;
    const std::vector<uint8_t> tiles(4096, 0x80);
    const std::vector<float> q(size_t(d), 1.0f);
    float out[1];
    for (const std::string& isa : available_isas()) {
        try {
            kernels_for(isa).key_scores(WType::Q8_0, tiles.data(), 1, q.data(), 1, d, out, 1);
            ADD_FAILURE() << isa << " took a head of " << d << " values";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("48 values"), std::string::npos) << e.what();
        }
    }
}

// Every ISA gives the reference's bits for every row count (the passes' shapes: 1-6 rows over 4
// tiles, 7-8 over 3, more split into passes over 2 or 1), position counts on and off the tile
// edges, and head sizes with and without a tail of 32 (and 0: all scores 0); scores past n are left
// as they were.
TEST(KernelsKeyScores, EveryIsaEqualsReferenceBitwise) {
    for (WType type : {WType::F32, WType::F16, WType::Q8_0}) {
        const std::vector<int64_t> dims = type == WType::Q8_0
                                              ? std::vector<int64_t>{0, 32, 64, 256, 288}
                                              : std::vector<int64_t>{0, 1, 7, 48, 100, 256};
        for (int64_t d : dims)
            for (int64_t n : {1, 16, 17, 50, 64, 65, 300}) {
                const std::vector<float> keys = random_keys(n, d, uint32_t(7 + n + d));
                const std::vector<uint8_t> tiles = tiles_of(type, keys, n, d);
                for (int64_t R : {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 20, 32, 40}) {
                    const std::vector<float> q = random_normal(size_t(R * d), uint32_t(R));
                    const int64_t ldo = n + 3;
                    std::vector<float> want(size_t(R * ldo), std::nanf(""));
                    reference_kernels().key_scores(type, tiles.data(), n, q.data(), R, d,
                                                   want.data(), ldo);
                    for (const std::string& isa : available_isas()) {
                        std::vector<float> got(want.size(), std::nanf(""));
                        kernels_for(isa).key_scores(type, tiles.data(), n, q.data(), R, d,
                                                    got.data(), ldo);
                        ASSERT_EQ(0,
                                  std::memcmp(want.data(), got.data(), want.size() * sizeof(float)))
                            << isa << " " << wtype_name(type) << " d=" << d << " n=" << n
                            << " R=" << R;
                    }
                }
            }
    }
}

// What a decode step and a verify rely on: a row's scores are the same bits alone (R = 1) as in a
// batch of 20 rows, and the scores of the first m positions the same as in a call over all n.
TEST(KernelsKeyScores, RowsAndPositionsInvariantBitwise) {
    const int64_t d = 256, n = 131, R = 20;
    const std::vector<float> keys = random_keys(n, d, 11);
    const std::vector<float> q = random_normal(size_t(R * d), 12);
    for (WType type : {WType::F32, WType::F16, WType::Q8_0}) {
        const std::vector<uint8_t> tiles = tiles_of(type, keys, n, d);
        for (const std::string& isa : available_isas()) {
            const KernelTable& k = kernels_for(isa);
            std::vector<float> batch(size_t(R * n));
            k.key_scores(type, tiles.data(), n, q.data(), R, d, batch.data(), n);
            for (int64_t r = 0; r < R; r += 3)
                for (int64_t m : {int64_t(1), int64_t(33), n}) {
                    std::vector<float> alone(static_cast<size_t>(m));
                    k.key_scores(type, tiles.data(), m, q.data() + r * d, 1, d, alone.data(), m);
                    ASSERT_EQ(0, std::memcmp(alone.data(), batch.data() + r * n,
                                             size_t(m) * sizeof(float)))
                        << isa << " " << wtype_name(type) << " row " << r << " of " << m
                        << " positions";
                }
        }
    }
}

// query_rows_a_chunk: as many query rows as fit kQueryCodeBytes (8192) one-byte codes, by
// plain division: 8192 / 128 = 64, 8192 / 256 = 32, and a head of exactly 8192 values still
// gets its one row. A head of 8224 values (one block more) does not fit, and one of 40 values
// (a part block, which the Q8_0 tiles cannot hold) is refused too; both name the size.
TEST(KeyTiles, QueryRowsAChunkDivideTheCodeBuffer) {
    EXPECT_EQ(query_rows_a_chunk(128), 64);
    EXPECT_EQ(query_rows_a_chunk(256), 32);
    EXPECT_EQ(query_rows_a_chunk(8192), 1);
    for (const int64_t bad : {int64_t(8224), int64_t(40)}) {
        std::string message = "(no error)";
        try {
            query_rows_a_chunk(bad);
        } catch (const Error& e) {
            message = e.what();
        }
        EXPECT_NE(message.find(std::to_string(bad) + " values"), std::string::npos) << message;
    }
}

}  // namespace
}  // namespace nextn
