#include "model/ops.h"

namespace nextn::ops {

std::vector<double> rope_inv_freq(int64_t rot, double theta) {
    std::vector<double> f(size_t(rot / 2));
    for (int64_t i = 0; i < rot / 2; ++i) f[size_t(i)] = std::pow(theta, -2.0 * double(i) / double(rot));
    return f;
}

void rope_angles(const std::vector<double>& inv_freq, int64_t pos, float* cos_out, float* sin_out) {
    for (size_t i = 0; i < inv_freq.size(); ++i) {
        const double angle = double(pos) * inv_freq[i];
        cos_out[i] = float(std::cos(angle));
        sin_out[i] = float(std::sin(angle));
    }
}

}  // namespace nextn::ops
