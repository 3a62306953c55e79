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
    matmul_shared_input(*kernels_, {{&gate, g}, {&up, u}}, x, T, pool_);
    swiglu_rows(g, u, T, I);
    matmul(*kernels_, down, g, T, y, pool_);
}

void Qwen35Model::swiglu_rows(float* g, const float* u, int64_t rows, int64_t width) const {
    over_positions(rows, width, [&](int64_t r0, int64_t r1) {
        kernels_->swiglu(g + r0 * width, u + r0 * width, g + r0 * width, (r1 - r0) * width);
    });
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
    matmul(*kernels_, f.router, xn, T, router, pool_);
    kernels_->softmax(router, T, E);

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

    // Group the routed (token, choice) slots by expert: expert e's n_e tokens, in token order,
    // take rows [row0_e, row0_e + n_e) of the [T * K, ...] expert buffers.
    int64_t* first_row = ForwardScratch::take(s.route_first_row, size_t(E + 1));  // [E + 1]
    int64_t* slot_row = ForwardScratch::take(s.route_slots, size_t(T * K));       // [T * K]
    std::fill(first_row, first_row + E + 1, 0);
    for (int64_t slot = 0; slot < T * K; ++slot) ++first_row[chosen[slot] + 1];
    for (int e = 0; e < E; ++e) first_row[e + 1] += first_row[e];
    for (int64_t slot = 0; slot < T * K; ++slot) slot_row[slot] = first_row[chosen[slot]]++;
    for (int e = E; e > 0; --e) first_row[e] = first_row[e - 1];  // back to each expert's start
    first_row[0] = 0;

    const int64_t I = f.experts.empty() ? 0 : f.experts[0].gate.rows;  // moe_intermediate_size
    float* xin = ForwardScratch::take(s.expert_in, size_t(T * K * H));     // [T * K, H]
    float* g = ForwardScratch::take(s.gate, size_t(T * K * I));            // [T * K, I]
    float* u = ForwardScratch::take(s.up, size_t(T * K * I));              // [T * K, I]
    float* expert_out = ForwardScratch::take(s.expert_out, size_t(T * K * H));  // [T * K, H]
    int64_t* row_token = ForwardScratch::take(s.route_row_token, size_t(T * K));  // [T * K]
    for (int64_t slot = 0; slot < T * K; ++slot) row_token[slot_row[slot]] = slot / K;
    // An expert whose tokens are consecutive (always so in decode, T = 1) reads them from xn in
    // place: experts reading the same tokens then share one activation quantization in
    // matmul_batch (with the shared expert too). Others get their tokens gathered into xin.
    auto expert_input = [&](int64_t row0, int64_t n) -> const float* {
        const int64_t t0 = row_token[row0];
        bool consecutive = true;
        for (int64_t i = 1; i < n && consecutive; ++i) consecutive = row_token[row0 + i] == t0 + i;
        if (consecutive) return xn + t0 * H;
        for (int64_t i = 0; i < n; ++i)
            std::copy_n(xn + row_token[row0 + i] * H, H, xin + (row0 + i) * H);
        return xin + row0 * H;
    };

    // Every routed expert and the shared one in two pool dispatches (gate and up, then down),
    // not two per expert; the kernels are batch-invariant, so a token's expert output does not
    // depend on which other tokens or experts share a dispatch.
    const bool has_shared = !f.shared_gate.empty();
    const int64_t Is = has_shared ? f.shared_gate.rows : 0;
    float* shared = ForwardScratch::take(s.shared, size_t(T * H));            // [T, H]
    float* shared_gate = ForwardScratch::take(s.shared_gate, size_t(T));      // [T]
    float* sg = ForwardScratch::take(s.shared_g, size_t(T * Is));             // [T, I_s]
    float* su = ForwardScratch::take(s.shared_u, size_t(T * Is));             // [T, I_s]
    std::vector<MatmulJob>& jobs = s.matmul_jobs;
    jobs.clear();
    for (int e = 0; e < E; ++e) {
        const int64_t row0 = first_row[e], n = first_row[e + 1] - row0;
        if (n == 0) continue;
        const ExpertWeights& ew = f.experts[size_t(e)];
        const float* x = expert_input(row0, n);
        jobs.push_back({&ew.gate, x, n, g + row0 * I});
        jobs.push_back({&ew.up, x, n, u + row0 * I});
    }
    if (has_shared) {
        jobs.push_back({&f.shared_gate, xn, T, sg});
        jobs.push_back({&f.shared_up, xn, T, su});
        jobs.push_back({&f.shared_expert_gate, xn, T, shared_gate});
    }
    matmul_batch(*kernels_, jobs, pool_);
    swiglu_rows(g, u, T * K, I);
    if (has_shared) swiglu_rows(sg, su, T, Is);
    jobs.clear();
    for (int e = 0; e < E; ++e) {
        const int64_t row0 = first_row[e], n = first_row[e + 1] - row0;
        if (n > 0)
            jobs.push_back({&f.experts[size_t(e)].down, g + row0 * I, n, expert_out + row0 * H});
    }
    if (has_shared) {
        jobs.push_back({&f.shared_down, sg, T, shared});
        kernels_->sigmoid(shared_gate, shared_gate, T);
    }
    matmul_batch(*kernels_, jobs, pool_);
    for (int64_t t = 0; t < T; ++t) {
        float* y = out + t * H;
        std::fill(y, y + H, 0.0f);
        for (int j = 0; j < K; ++j) {
            const float w = chosen_w[t * K + j];
            const float* eo = expert_out + slot_row[t * K + j] * H;
            for (int64_t h = 0; h < H; ++h) y[h] += w * eo[h];
        }
        if (has_shared)
            for (int64_t h = 0; h < H; ++h) y[h] += shared_gate[t] * shared[t * H + h];
    }
}

}  // namespace nextn
