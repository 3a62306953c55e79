#pragma once
// Per-sequence caches of a Qwen3.5 model.
//
// Attention KV is indexed by position, so rolling back is moving n_past. Gated-DeltaNet state
// cannot be trimmed, so each GDN layer keeps 1 + max_width state slots: a verify forward over
// W <= max_width positions writes the state after position t into slot t + 1 (reading slot t,
// or the current slot for t = 0), and committing n positions makes slot n current. No state is
// copied and nothing is re-run on rejection. The conv state (the last K-1 raw qkv rows) is
// rebuilt from the forward's own qkv rows on commit.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/aligned_allocator.h"

namespace nextn {

struct AttentionCache {
    int64_t capacity = 0;   // positions
    std::vector<float> k;   // [capacity, n_kv_heads, head_dim]
    std::vector<float> v;   // [capacity, n_kv_heads, head_dim]
};

struct RecurrentState {
    int64_t state_size = 0;     // Hv * Dk * Dv floats
    // [1 + max_width, Hv, Dk, Dv]; cache-line aligned for the kernel's streaming stores
    std::vector<float, CacheAlignedAllocator<float>> slots;
    int current = 0;            // slot holding the committed state
    std::vector<float> conv;    // [K-1, conv_dim] raw qkv of the last K-1 committed tokens
    std::vector<float> pending_qkv;  // [max_width, conv_dim] raw qkv of the last verify forward

    float* state() { return slots.data() + int64_t(current) * state_size; }
    float* slot(int i) { return slots.data() + int64_t(i) * state_size; }
};

// Activation buffers of one forward, kept with the sequence so that decode steps reuse them
// instead of allocating. Buffers only grow; each is named after its one use.
struct ForwardScratch {
    std::vector<float> x, xn, out;                      // [T, H] residual, normed, block output
    std::vector<float> window, z, b, a, conv_out;       // Gated DeltaNet projections and conv
    std::vector<float> q, k, v, g, beta, o;             // Gated DeltaNet heads
    std::vector<float> qg, attn_k, attn_v, attn;        // attention
    std::vector<float> attn_scores;                     // per thread: queries + scores
    std::vector<float> rope_cos, rope_sin;              // [rotary_dims / 2] angles of one position
    std::vector<float> gate, up, router, shared, shared_gate, expert_in, expert_y, expert_out;
    std::vector<float> route_w;                         // [T, k] MoE routing weights
    std::vector<int> route_e, route_order;              // [T, k] chosen experts; [E] sort scratch
    std::vector<int64_t> route_slots;                   // rows routed to one expert
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
    int64_t uncommitted = 0;    // positions of the last snapshot forward not yet committed
    ForwardScratch scratch;

    // Bytes held by the GDN snapshot slots beyond the committed state.
    int64_t snapshot_bytes() const;
    void reset();  // back to an empty sequence, buffers kept
};

}  // namespace nextn
