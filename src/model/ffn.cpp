// Feed-forward blocks (architecture spec §7): dense SwiGLU, and MoE with softmax routing over
// all experts, top-k, renormalised weights and a sigmoid-gated shared expert.
#include <algorithm>
#include <numeric>

#include "model/qwen35.h"

namespace nextn {

// y[T, H] = down(silu(gate(x)) * up(x)) for x [T, in].
void Qwen35Model::swiglu(const WeightMatrix& gate, const WeightMatrix& up,
                         const WeightMatrix& down, ForwardScratch& s, const float* x, int64_t T,
                         float* y) const {
    const int64_t I = gate.rows;
    float* g = ForwardScratch::take(s.gate, size_t(T * I));  // [T, I]
    float* u = ForwardScratch::take(s.up, size_t(T * I));    // [T, I]
    matmul_shared_input(kernels_, {{&gate, g}, {&up, u}}, x, T, pool_);
    kernels_.swiglu(g, u, g, T * I);
    matmul(kernels_, down, g, T, y, pool_);
}

void Qwen35Model::ffn(const FfnWeights& f, ForwardScratch& s, const float* xn, int64_t T,
                      float* out) const {
    const int64_t H = config_.hidden_size;
    if (!f.moe) {
        swiglu(f.gate, f.up, f.down, s, xn, T, out);
        return;
    }
    const int E = config_.n_experts, K = config_.n_experts_used;
    float* router = ForwardScratch::take(s.router, size_t(T * E));  // [T, E]
    matmul(kernels_, f.router, xn, T, router, pool_);
    kernels_.softmax(router, T, E);

    // Per token: top-k experts by probability (ties: lower index), renormalised.
    int* chosen = ForwardScratch::take(s.route_e, size_t(T * K));        // [T, K]
    float* chosen_w = ForwardScratch::take(s.route_w, size_t(T * K));    // [T, K]
    int* order = ForwardScratch::take(s.route_order, size_t(E));
    for (int64_t t = 0; t < T; ++t) {
        const float* p = router + t * E;
        std::iota(order, order + E, 0);
        std::partial_sort(order, order + K, order + E,
                          [&](int a, int b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
        float sum = 0.0f;
        for (int j = 0; j < K; ++j) sum += p[order[j]];
        for (int j = 0; j < K; ++j) {
            chosen[t * K + j] = order[j];
            chosen_w[t * K + j] = p[order[j]] / sum;
        }
    }

    // Run each expert once over the tokens routed to it; the kernels are batch-invariant, so a
    // token's expert output does not depend on which other tokens share the batch.
    float* expert_out = ForwardScratch::take(s.expert_out, size_t(T * K * H));  // [T, K, H]
    for (int e = 0; e < E; ++e) {
        int64_t n = 0;
        int64_t* slots = ForwardScratch::take(s.route_slots, size_t(T * K));
        for (int64_t slot = 0; slot < T * K; ++slot)
            if (chosen[slot] == e) slots[n++] = slot;
        if (n == 0) continue;
        float* xin = ForwardScratch::take(s.expert_in, size_t(n * H));  // [n, H]
        float* yout = ForwardScratch::take(s.expert_y, size_t(n * H));  // [n, H]
        for (int64_t i = 0; i < n; ++i) std::copy_n(xn + (slots[i] / K) * H, H, xin + i * H);
        const ExpertWeights& ew = f.experts[size_t(e)];
        swiglu(ew.gate, ew.up, ew.down, s, xin, n, yout);
        for (int64_t i = 0; i < n; ++i) std::copy_n(yout + i * H, H, expert_out + slots[i] * H);
    }
    // Shared expert, gated by sigmoid(x · shared_expert_gate).
    const bool has_shared = !f.shared_gate.empty();
    float* shared = ForwardScratch::take(s.shared, size_t(T * H));        // [T, H]
    float* shared_gate = ForwardScratch::take(s.shared_gate, size_t(T));  // [T]
    if (has_shared) {
        swiglu(f.shared_gate, f.shared_up, f.shared_down, s, xn, T, shared);
        matmul(kernels_, f.shared_expert_gate, xn, T, shared_gate, pool_);
        kernels_.sigmoid(shared_gate, shared_gate, T);
    }
    for (int64_t t = 0; t < T; ++t) {
        float* y = out + t * H;
        std::fill(y, y + H, 0.0f);
        for (int j = 0; j < K; ++j) {
            const float w = chosen_w[t * K + j];
            const float* eo = expert_out + (t * K + j) * H;
            for (int64_t h = 0; h < H; ++h) y[h] += w * eo[h];
        }
        if (has_shared)
            for (int64_t h = 0; h < H; ++h) y[h] += shared_gate[t] * shared[t * H + h];
    }
}

}  // namespace nextn
