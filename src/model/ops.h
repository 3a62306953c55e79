#pragma once
// Small per-vector operations of the Qwen3.5 forward, in f32 with a fixed summation order (so a
// token's result never depends on what else is in the batch).
#include <cmath>
#include <cstdint>

namespace nextn::ops {

inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
inline float silu(float x) { return x / (1.0f + std::exp(-x)); }
// torch's softplus with threshold 20: x itself above it.
inline float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

// y = x * rsqrt(mean(x^2) + eps) * w, over n values. y may alias x.
void rmsnorm(const float* x, const float* w, int64_t n, float eps, float* y);
// Same without a weight.
void rmsnorm_plain(const float* x, int64_t n, float eps, float* y);
// x *= rsqrt(sum(x^2) + eps), in place.
void l2norm(float* x, int64_t n, float eps);
// NeoX-style rotary embedding on the first `rot` dims of one head: pairs (i, i + rot/2).
void rope_neox(float* x, int64_t rot, int64_t pos, double theta);
// In-place softmax over n values.
void softmax(float* x, int64_t n);

}  // namespace nextn::ops
