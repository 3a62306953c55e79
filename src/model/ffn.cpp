// Feed-forward blocks (architecture spec §7): dense SwiGLU, and MoE with softmax routing over
// all experts, top-k, renormalised weights and a sigmoid-gated shared expert.
#include <algorithm>
#include <numeric>

#include "kernels/kernels.h"
#include "model/ops.h"
#include "model/qwen35.h"

namespace nextn {

namespace {

// y[T, H] = down(silu(gate(x)) * up(x)) for x [T, in].
void swiglu(const WeightMatrix& gate, const WeightMatrix& up, const WeightMatrix& down,
            const float* x, int64_t T, float* y, ThreadPool& pool) {
    const int64_t I = gate.rows;
    std::vector<float> g(size_t(T * I)), u(size_t(T * I));  // [T, I]
    matmul(gate, x, T, g.data(), pool);
    matmul(up, x, T, u.data(), pool);
    for (int64_t i = 0; i < T * I; ++i) g[size_t(i)] = ops::silu(g[size_t(i)]) * u[size_t(i)];
    matmul(down, g.data(), T, y, pool);
}

}  // namespace

void Qwen35Model::ffn(const FfnWeights& f, const float* xn, int64_t T, float* out) const {
    const int64_t H = config_.hidden_size;
    if (!f.moe) {
        swiglu(f.gate, f.up, f.down, xn, T, out, pool_);
        return;
    }
    const int E = config_.n_experts, K = config_.n_experts_used;
    std::vector<float> router(size_t(T * E));  // [T, E]
    matmul(f.router, xn, T, router.data(), pool_);

    // Per token: top-k experts by softmax probability (ties: lower index), renormalised.
    std::vector<int> chosen(size_t(T * K));       // [T, K]
    std::vector<float> chosen_w(size_t(T * K));   // [T, K]
    for (int64_t t = 0; t < T; ++t) {
        float* p = router.data() + t * E;
        ops::softmax(p, E);
        std::vector<int> idx(static_cast<size_t>(E));
        std::iota(idx.begin(), idx.end(), 0);
        std::partial_sort(idx.begin(), idx.begin() + K, idx.end(),
                          [&](int a, int b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
        float sum = 0.0f;
        for (int j = 0; j < K; ++j) sum += p[idx[size_t(j)]];
        for (int j = 0; j < K; ++j) {
            chosen[size_t(t * K + j)] = idx[size_t(j)];
            chosen_w[size_t(t * K + j)] = p[idx[size_t(j)]] / sum;
        }
    }

    // Run each expert once over the tokens routed to it; the kernels are batch-invariant, so a
    // token's expert output does not depend on which other tokens share the batch.
    std::vector<float> expert_out(size_t(T * K * H));  // [T, K, H]
    std::vector<float> xin, yout;
    std::vector<int64_t> slots;
    for (int e = 0; e < E; ++e) {
        slots.clear();
        for (int64_t s = 0; s < T * K; ++s)
            if (chosen[size_t(s)] == e) slots.push_back(s);
        if (slots.empty()) continue;
        const int64_t n = int64_t(slots.size());
        xin.resize(size_t(n * H));
        yout.resize(size_t(n * H));
        for (int64_t i = 0; i < n; ++i)
            std::copy_n(xn + (slots[size_t(i)] / K) * H, H, xin.data() + i * H);
        const ExpertWeights& ew = f.experts[size_t(e)];
        swiglu(ew.gate, ew.up, ew.down, xin.data(), n, yout.data(), pool_);
        for (int64_t i = 0; i < n; ++i)
            std::copy_n(yout.data() + i * H, H, expert_out.data() + slots[size_t(i)] * H);
    }
    // Shared expert, gated by sigmoid(x · shared_expert_gate).
    std::vector<float> shared(size_t(T * H), 0.0f), shared_gate(static_cast<size_t>(T));
    const bool has_shared = !f.shared_gate.empty();
    if (has_shared) {
        swiglu(f.shared_gate, f.shared_up, f.shared_down, xn, T, shared.data(), pool_);
        matmul(f.shared_expert_gate, xn, T, shared_gate.data(), pool_);
    }
    for (int64_t t = 0; t < T; ++t) {
        float* y = out + t * H;
        for (int64_t h = 0; h < H; ++h) y[h] = 0.0f;
        for (int j = 0; j < K; ++j) {
            const float w = chosen_w[size_t(t * K + j)];
            const float* eo = expert_out.data() + (t * K + j) * H;
            for (int64_t h = 0; h < H; ++h) y[h] += w * eo[h];
        }
        if (has_shared) {
            const float sg = ops::sigmoid(shared_gate[size_t(t)]);
            for (int64_t h = 0; h < H; ++h) y[h] += sg * shared[size_t(t * H + h)];
        }
    }
}

}  // namespace nextn
