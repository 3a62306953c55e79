// SequenceState (cache/sequence_state.h) on the committed dense tiny fixture: reset() gives a
// state that computes what a fresh one does, bit for bit, even after verify forwards moved the
// Gated-DeltaNet state to the other slot and left positions open; the byte counts the stats
// report follow the layout the header states; attention caches hold whole key tiles and
// buffers that cover their bytes; KV type names parse both ways.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/error.h"
#include "golden.h"
#include "kernels/key_tiles.h"
#include "model/qwen35.h"

namespace nextn {
namespace {

LoadedModel open_dense() {
    ModelOptions o;
    o.threads = 1;
    return load_model(test::golden_model("qwen35-dense-tiny").model_dir, o);
}

std::vector<float> all_logits(const Qwen35Model& m, SequenceState& s,
                              const std::vector<int32_t>& tokens) {
    const int64_t T = int64_t(tokens.size());
    std::vector<float> logits(size_t(T * m.config().vocab_size));
    m.forward(s, tokens.data(), T, {nullptr, logits.data(), T});
    return logits;
}

// Before the reset: a prefill, then verifies of 4 committed whole, 3 kept to 1 (a recurrence
// re-run) and 3 committed whole (each commit moves the GDN state to the other slot, so it ends in
// the second), then one left open. After the reset the next prompt's logits must be the fresh
// state's bits: positions from 0, no open forward, the state slots and conv state zero and the
// first slot current again.
TEST(SequenceState, ResetComputesWhatAFreshStateDoes) {
    LoadedModel lm = open_dense();
    const Qwen35Model& m = *lm.model;
    const std::vector<int32_t> first = {11, 22, 33, 44, 55, 66, 77}, next = {5, 900, 17, 301, 8};
    SequenceState fresh = m.new_state(64, 4);
    const std::vector<float> want = all_logits(m, fresh, next);

    SequenceState s = m.new_state(64, 4);
    all_logits(m, s, first);
    const int32_t verify[4] = {1, 2, 3, 4};
    m.forward(s, verify, 4, {}, true);
    m.commit(s, 4);
    m.forward(s, verify, 3, {}, true);
    m.commit(s, 1);
    m.forward(s, verify, 3, {}, true);
    m.commit(s, 3);
    m.forward(s, verify, 2, {}, true);
    bool moved = false;  // the premise: some GDN layer's committed state is in its second slot
    for (const RecurrentState& r : s.recurrent) moved |= r.state_size && r.current == 1;
    ASSERT_TRUE(moved);

    s.reset();
    EXPECT_EQ(s.n_past, 0);
    EXPECT_EQ(s.uncommitted, 0);
    const std::vector<float> got = all_logits(m, s, next);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
        << "a reset state differs from a fresh one";
    EXPECT_EQ(s.n_past, int64_t(next.size()));
}

// rollback_bytes: per GDN layer, the spare state slot (Hv x Dk x Dv) and what a verify of
// max_width positions leaves for commit(): its raw qkv rows (conv_dim each) and its recurrence
// inputs (q and k: key_dim, v: value_dim, g and beta: Hv, each a position), in f32.
// kv_cache_bytes: every attention cache, the trunk's and the MTP head's, each kv head holding
// keys in whole 16-position tiles and values by position, f32 here.
TEST(SequenceState, ByteCountsFollowTheLayout) {
    LoadedModel lm = open_dense();
    const Qwen35Model& m = *lm.model;
    const ModelConfig& c = m.config();
    ASSERT_TRUE(m.has_mtp());
    const int64_t W = 4, P = 100;
    SequenceState s = m.new_state(P, int(W));
    int64_t gdn = 0;
    for (int i = 0; i < c.n_layers; ++i) gdn += c.is_linear[size_t(i)];
    const int64_t attn = c.n_layers - gdn + 1;  // + the MTP head's
    ASSERT_GT(gdn, 0);
    const int64_t per_gdn = int64_t(c.gdn_v_heads) * c.gdn_k_dim * c.gdn_v_dim +
                            W * (c.gdn_conv_dim() + 2 * c.gdn_key_dim() + c.gdn_value_dim() +
                                 2 * int64_t(c.gdn_v_heads));
    EXPECT_EQ(s.rollback_bytes(), 4 * gdn * per_gdn);
    const int64_t tiled = (P + 15) / 16 * 16;
    EXPECT_EQ(s.kv_cache_bytes(), attn * c.n_kv_heads * (tiled + P) * c.head_dim * 4);
}

// Key tiles are the capacity rounded up to whole tiles (96 positions: 6, not 7; 97: 7), and the
// buffers, which count floats, cover bytes that are not a multiple of 4 (a Q8_0 row of 34).
TEST(SequenceState, AttentionCacheTilesAndBuffers) {
    EXPECT_EQ(AttentionCache(96, 2, 64, KvCacheType::F32).key_tiles, 6);
    EXPECT_EQ(AttentionCache(97, 2, 64, KvCacheType::F32).key_tiles, 7);
    for (int64_t capacity : {1, 3, 17}) {
        AttentionCache a(capacity, 1, 32, KvCacheType::Q8_0);
        EXPECT_GE(a.v.size() * sizeof(float), size_t(capacity) * a.row_bytes()) << capacity;
        EXPECT_GE(a.k.size() * sizeof(float), size_t(a.key_tiles) * a.key_tile_bytes()) << capacity;
    }
}

TEST(SequenceState, KvTypeNamesParseBothWays) {
    for (KvCacheType t : {KvCacheType::F32, KvCacheType::F16, KvCacheType::Q8_0})
        EXPECT_EQ(parse_kv_cache_type(kv_cache_type_name(t)), t) << kv_cache_type_name(t);
    EXPECT_STREQ(kv_cache_type_name(KvCacheType::Q8_0), "q8_0");  // the --kv-type spelling
    EXPECT_EQ(kv_wtype(KvCacheType::F16), WType::F16);
    EXPECT_EQ(kv_wtype(KvCacheType::Q8_0), WType::Q8_0);
}

}  // namespace
}  // namespace nextn
