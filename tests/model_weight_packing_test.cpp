// pack_small_matrices (model/weights.h): the converted matrices under 2 MiB move into one
// buffer with their bytes unchanged; mapped, large and shared matrices are handled as promised.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kernels/int8_dot.h"
#include "model/weights.h"

namespace nextn {
namespace {

WeightMatrix f32_matrix(int64_t rows, int64_t cols, float seed) {
    std::vector<float> v(size_t(rows * cols));
    for (size_t i = 0; i < v.size(); ++i) v[i] = seed + float(i % 97) * 0.25f;
    return make_weight_f32(v.data(), rows, cols, WType::F32);
}

std::vector<uint8_t> bytes_of(const WeightMatrix& m) { return {m.data, m.data + m.nbytes()}; }

bool same_owner(const WeightMatrix& a, const WeightMatrix& b) {
    return !a.owner.owner_before(b.owner) && !b.owner.owner_before(a.owner);
}

// pack_small_matrices(w), checking that every matrix keeps its bytes and starts on a cache line.
void pack_expecting_bytes_kept_and_aligned(ModelWeights& w) {
    std::vector<std::vector<uint8_t>> before;
    for_each_matrix(w, [&](WeightMatrix& m) { before.push_back(bytes_of(m)); });
    pack_small_matrices(w);
    size_t i = 0;
    for_each_matrix(w, [&](WeightMatrix& m) {
        EXPECT_EQ(before[i], bytes_of(m)) << "matrix " << i;
        EXPECT_EQ(0u, reinterpret_cast<uintptr_t>(m.data) % 64) << "matrix " << i;
        ++i;
    });
}

TEST(WeightPacking, SmallMatricesShareOneBufferWithTheirBytes) {
    ModelWeights w;
    w.embed = f32_matrix(40, 32, 1.0f);  // tied: the LM head is the same bytes
    w.lm_head = w.embed;
    w.layers.resize(2);
    w.layers[0].in_qkv = f32_matrix(24, 32, 2.0f);
    w.layers[0].ffn.moe = true;
    for (int e = 0; e < 3; ++e) {
        ExpertWeights ew;
        ew.gate = repack_for_int8_dot(make_weight_f32(std::vector<float>(16 * 64, 0.5f + e).data(), 16, 64, WType::Q8_0));
        ew.up = f32_matrix(16, 32, 3.0f + e);
        ew.down = f32_matrix(32, 16, 4.0f + e);
        w.layers[0].ffn.experts.push_back(ew);
    }
    w.layers[1].out_proj = f32_matrix(1024, 1024, 5.0f);  // 4 MiB: stays where it is
    alignas(64) static const float mapped_values[8 * 32] = {};  // no owner: a checkpoint mapping
    w.layers[1].in_z.type = WType::F32;
    w.layers[1].in_z.rows = 8;
    w.layers[1].in_z.cols = 32;
    w.layers[1].in_z.row_bytes = 32 * sizeof(float);
    w.layers[1].in_z.data = reinterpret_cast<const uint8_t*>(mapped_values);

    const uint8_t* large = w.layers[1].out_proj.data;
    pack_expecting_bytes_kept_and_aligned(w);
    EXPECT_EQ(w.embed.data, w.lm_head.data) << "the tied pair stays one buffer";
    EXPECT_EQ(large, w.layers[1].out_proj.data);
    EXPECT_EQ(reinterpret_cast<const uint8_t*>(mapped_values), w.layers[1].in_z.data);
    EXPECT_FALSE(w.layers[1].in_z.owner);
    const WeightMatrix& first = w.embed;
    for (const ExpertWeights& e : w.layers[0].ffn.experts)
        for (const WeightMatrix* m : {&e.gate, &e.up, &e.down})
            EXPECT_TRUE(same_owner(first, *m)) << "every small matrix in the one buffer";
    EXPECT_TRUE(same_owner(first, w.layers[0].in_qkv));
    EXPECT_FALSE(same_owner(first, w.layers[1].out_proj));
    // In visiting order, back to back (64-byte aligned).
    EXPECT_EQ(w.layers[0].in_qkv.data, w.lm_head.data + (w.lm_head.nbytes() + 63) / 64 * 64);
}

// Matrices of sizes that are no multiple of 64 bytes (3 x 5 f32: 60 bytes) still start on cache
// lines in the one buffer, each at the previous one's end rounded up to 64 bytes, with their
// bytes; a matrix of exactly 2 MiB (512 x 1024 f32) is not under 2 MiB and stays where it is.
TEST(WeightPacking, OddSizesStayAlignedAndTwoMiBStaysAlone) {
    ModelWeights w;
    w.embed = f32_matrix(3, 5, 1.0f);    // 60 bytes
    w.lm_head = f32_matrix(7, 3, 2.0f);  // 84 bytes
    w.layers.resize(1);
    w.layers[0].in_qkv = f32_matrix(1, 1, 3.0f);  // 4 bytes
    w.layers[0].out_proj = f32_matrix(512, 1024, 4.0f);
    ASSERT_EQ(size_t(2) << 20, w.layers[0].out_proj.nbytes());
    const uint8_t* two_mib = w.layers[0].out_proj.data;
    pack_expecting_bytes_kept_and_aligned(w);
    EXPECT_EQ(w.lm_head.data, w.embed.data + 64);
    EXPECT_EQ(w.layers[0].in_qkv.data, w.lm_head.data + 128);
    EXPECT_TRUE(same_owner(w.embed, w.layers[0].in_qkv));
    EXPECT_EQ(two_mib, w.layers[0].out_proj.data);
    EXPECT_FALSE(same_owner(w.embed, w.layers[0].out_proj));
}

// A small view that starts where a large matrix does (its first rows, the same owner) is moved as
// a small matrix is; the large matrix is not (it is never packable), so it keeps all its bytes
// where they were, not the view's copy of its first rows.
TEST(WeightPacking, ALargeMatrixKeepsItsBytesWhenASmallViewOfItMoves) {
    ModelWeights w;
    w.embed = f32_matrix(1024, 1024, 1.0f);  // 4 MiB
    w.lm_head = w.embed;
    w.lm_head.rows = 4;  // a view of its first 4 rows
    w.layers.resize(1);
    w.layers[0].in_qkv = f32_matrix(24, 32, 2.0f);
    const std::vector<uint8_t> large = bytes_of(w.embed), view = bytes_of(w.lm_head);
    const uint8_t* large_at = w.embed.data;

    pack_small_matrices(w);

    EXPECT_EQ(large_at, w.embed.data);
    EXPECT_EQ(large, bytes_of(w.embed));
    EXPECT_EQ(view, bytes_of(w.lm_head));
    EXPECT_TRUE(same_owner(w.lm_head, w.layers[0].in_qkv));
}

}  // namespace
}  // namespace nextn
