#pragma once
// Scalar pieces of the Qwen3.5 forward that the kernel table does not cover. Norms, activations,
// softmax and the GDN recurrence come from kernels() (src/kernels/kernels.h).
#include <cmath>
#include <cstdint>
#include <vector>

namespace nextn::ops {

// x[i] += y[i] for i < n (the residual adds); x and y do not overlap.
void add_in_place(float* x, const float* y, int64_t n);

// torch's softplus with threshold 20: x itself above it.
inline float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

// inv_freq[i] = theta^(-2i / rot) for i < rot / 2 (computed once, at load).
std::vector<double> rope_inv_freq(int64_t rot, double theta);
// cos / sin of pos * inv_freq[i]: [rot / 2] each, computed once per position.
void rope_angles(const std::vector<double>& inv_freq, int64_t pos, float* cos_out, float* sin_out);

}  // namespace nextn::ops
