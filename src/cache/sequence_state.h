#pragma once
// Per-sequence caches of a Qwen3.5 model.
//
// Attention KV is indexed by position, so rolling back is moving n_past. Gated-DeltaNet state
// cannot be trimmed, so each GDN layer keeps two state slots: a verify forward over
// W <= max_width positions leaves the committed state in its slot, ends in the spare slot, and
// keeps its recurrence inputs (q, k, v, g, beta: a few KB per position). Committing all W
// positions makes the spare slot current; committing n < W re-runs the recurrence alone (no
// weights are read) over the n kept positions from the committed state into the spare slot,
// which gives the same bits as the forward (the kernel is batch-invariant). Measured on a
// Qwen3.5-0.8B layer (kernels_bench BM_GdnRecurrence), W = 5: writing a snapshot per position
// took 278-299 us, writing only the last state 100 us, and a re-run of 1..4 kept positions
// costs 41-100 us more; so the re-run wins whatever is rejected (`nextn bench` reports the
// rollback as a share of a decode token). The conv state (the last K-1 raw qkv rows) is
// the front of a window the forward's own qkv rows follow; commit moves the kept ones up.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/zero_pages.h"
#include "kernels/kernels.h"
#include "kernels/key_tiles.h"

namespace nextn {

// How the attention KV cache holds its values (--kv-type). F16 halves the cache's memory and
// what a decode step reads from it at long contexts; Q8_0 (ggml's blocks of 32 int8 codes and
// an f16 scale, 8.5 bits a value) takes 53% of F16's. Each key and value is rounded once, when
// written, so plain and speculative decoding still see the same bits.
enum class KvCacheType { F32, F16, Q8_0 };
const char* kv_cache_type_name(KvCacheType t);
// The keys' and values' storage type (WType::F32, F16 or Q8_0).
WType kv_wtype(KvCacheType t);
// Bytes of one head's keys (or values) at one position: head_dim values of the type.
inline size_t kv_row_bytes(KvCacheType t, int64_t head_dim) {
    return wtype_row_bytes(kv_wtype(t), head_dim);
}
// Parses "f32" / "f16" / "q8_0"; throws Error naming the value otherwise.
KvCacheType parse_kv_cache_type(const std::string& name);

// Head-major: each kv head's positions are contiguous, so attention over one head streams them
// in order (position-major, the heads' rows interleaved, made each head's read a strided stream
// the hardware prefetcher did not follow: kernels_bench BM_AttentionScores, one 0.8B head at 4096
// positions, 644 -> 412 us f32, 273 -> 114 us f16). Keys are held in tiles of kKeyTile positions
// with the positions in the vector lanes (kernels/key_tiles.h), which the scores kernel reads
// without horizontal sums; values as rows, one a position, which the value sum reads that way.
struct AttentionCache {
    int64_t capacity = 0;  // positions
    int64_t n_heads = 0;   // kv heads
    int64_t head_dim = 0;
    int64_t key_tiles = 0;  // tiles a head: capacity rounded up to whole tiles
    KvCacheType type = KvCacheType::F32;
    // Zero pages backed as positions are written: a new sequence costs nothing up front.
    ZeroPagesBuffer k;  // [n_heads, key_tiles, key_tile_bytes()] of `type`
    ZeroPagesBuffer v;  // [n_heads, capacity, head_dim] of `type`

    AttentionCache() = default;
    AttentionCache(int64_t capacity, int64_t n_heads, int64_t head_dim, KvCacheType type);
    size_t row_bytes() const { return kv_row_bytes(type, head_dim); }  // one head, one position
    WType wtype() const { return kv_wtype(type); }                     // keys' and values'
    size_t key_tile_bytes() const { return nextn::key_tile_bytes(wtype(), head_dim); }  // one head
    size_t bytes() const {                                             // K and V
        return size_t(n_heads) *
               (size_t(key_tiles) * key_tile_bytes() + size_t(capacity) * row_bytes());
    }
    uint8_t* key_tile(int64_t head, int64_t tile) {
        return reinterpret_cast<uint8_t*>(k.data()) +
               size_t(head * key_tiles + tile) * key_tile_bytes();
    }
    uint8_t* v_at(int64_t head, int64_t pos) {
        return reinterpret_cast<uint8_t*>(v.data()) + size_t(head * capacity + pos) * row_bytes();
    }
};

struct RecurrentState {
    int64_t state_size = 0;     // Hv * Dk * Dv floats
    // [2, Hv, Dk, Dv]: the committed state and the spare, starting at zero; page aligned (the
    // kernel wants cache-line alignment) and backed as the recurrence first writes it
    ZeroPagesBuffer slots;
    int current = 0;            // slot holding the committed state
    // [K-1 + max_width, conv_dim]: rows [0, K-1) hold the raw qkv of the last K-1 committed
    // tokens (the conv state, conv_state_size floats). A forward of up to max_width tokens has
    // its in_qkv product write its raw rows right after them, so the causal conv reads this
    // window where it is; a committed forward, or commit() of an open one, then moves the
    // newest K-1 rows to the front (an open forward's rows wait there for commit()).
    std::vector<float> conv_window;
    int64_t conv_state_size = 0;
    // The last verify forward's recurrence inputs, for commit():
    std::vector<float> pending_q, pending_k;     // [max_width, Hk, Dk] recurrence inputs
    std::vector<float> pending_v;                // [max_width, Hv, Dv]
    std::vector<float> pending_g, pending_beta;  // [max_width, Hv]

    float* state() { return slots.data() + int64_t(current) * state_size; }
    float* spare() { return slots.data() + int64_t(1 - current) * state_size; }
};

// Activation buffers of one forward, kept with the sequence so that decode steps reuse them
// instead of allocating. Buffers only grow; each is named after its one use.
struct ForwardScratch {
    std::vector<float> x, xn, out;                      // [T, H] residual, normed, block output
    std::vector<float> window, z, b, a;                 // Gated DeltaNet projections and conv
    std::vector<float> q, k, v, g, beta, o;             // Gated DeltaNet heads
    std::vector<float> qg, attn_k, attn_v, attn;        // attention
    // Per thread: queries + scores over the whole cache, on zero pages (backed only as far as
    // the context reaches, not zero-filled up front for every new sequence).
    ZeroPagesBuffer attn_scores;
    std::vector<float> rope_cos, rope_sin;              // [rotary_dims / 2] angles of one position
    std::vector<float> gate, up, router, shared, shared_gate, expert_in, expert_out;
    std::vector<float> route_w;                         // [T, k] MoE routing weights
    std::vector<int> route_e, route_order;              // [T, k] chosen experts; [E] sort scratch
    std::vector<int64_t> route_slots;                   // [T, k] each choice's expert-buffer row
    std::vector<int64_t> route_first_row;               // [E + 1] each expert's first row there
    std::vector<int64_t> route_row_token;               // [T * k] the token of each such row
    std::vector<float> shared_g, shared_u;              // [T, I_s] MoE shared expert
    std::vector<MatmulJob> matmul_jobs;                 // the MoE layer's batched products
    std::vector<float> mtp_cat;                         // [T, 2H] MTP [embedding | hidden]

    // Returns v's storage with at least n elements.
    template <class V>
    static auto* take(V& v, size_t n) {
        if (v.size() < n) v.resize(n);
        return v.data();
    }
};

struct SequenceState {
    int64_t n_past = 0;         // committed trunk positions
    int64_t max_positions = 0;
    int max_width = 0;          // widest verify forward whose positions can be rolled back
    std::vector<AttentionCache> attention;  // per trunk layer (empty for GDN layers)
    std::vector<RecurrentState> recurrent;  // per trunk layer (empty for attention layers)
    AttentionCache mtp_attention;           // the MTP head's own KV, by position
    int64_t uncommitted = 0;    // positions of the last keep_open forward not yet committed
    ForwardScratch scratch;

    // Bytes the GDN layers hold for rolling back beyond the committed state: the spare state
    // slot and the pending inputs of max_width positions.
    int64_t rollback_bytes() const;
    // Bytes the attention KV caches (trunk and MTP head) span for max_positions; pages are
    // backed only as positions are written.
    int64_t kv_cache_bytes() const;
    void reset();  // back to an empty sequence, buffers kept
};

}  // namespace nextn
