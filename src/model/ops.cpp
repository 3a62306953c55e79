#include "model/ops.h"

#include <algorithm>

namespace nextn::ops {

void rmsnorm(const float* x, const float* w, int64_t n, float eps, float* y) {
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) sum += x[i] * x[i];
    const float scale = 1.0f / std::sqrt(sum / float(n) + eps);
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale * w[i];
}

void rmsnorm_plain(const float* x, int64_t n, float eps, float* y) {
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) sum += x[i] * x[i];
    const float scale = 1.0f / std::sqrt(sum / float(n) + eps);
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale;
}

void l2norm(float* x, int64_t n, float eps) {
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) sum += x[i] * x[i];
    const float scale = 1.0f / std::sqrt(sum + eps);
    for (int64_t i = 0; i < n; ++i) x[i] *= scale;
}

void rope_neox(float* x, int64_t rot, int64_t pos, double theta) {
    const int64_t half = rot / 2;
    for (int64_t i = 0; i < half; ++i) {
        const double inv_freq = std::pow(theta, -2.0 * double(i) / double(rot));
        const double angle = double(pos) * inv_freq;
        const float c = float(std::cos(angle)), s = float(std::sin(angle));
        const float a = x[i], b = x[i + half];
        x[i] = a * c - b * s;
        x[i + half] = b * c + a * s;
    }
}

void softmax(float* x, int64_t n) {
    float mx = x[0];
    for (int64_t i = 1; i < n; ++i) mx = std::max(mx, x[i]);
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
        x[i] = std::exp(x[i] - mx);
        sum += x[i];
    }
    const float inv = 1.0f / sum;
    for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

}  // namespace nextn::ops
