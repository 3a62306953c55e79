// The bf16-dot kernels' activation rounding (kernels/bf16_dot.h).
#include "kernels/bf16_dot.h"

#include <algorithm>

namespace nextn {

void round_columns_bf16(const float* x, int64_t n, int64_t cols, Bf16Columns& out) {
    out.n = n;
    out.stride = (cols + 31) / 32 * 32;
    // At least 16 columns' room (the widest verify or MTP flush), as QuantizedColumns keeps: a
    // MoE expert's input grows from the few tokens routed to it in one forward to more in a
    // later one, and growing then would allocate inside the decode loop.
    constexpr int64_t kMinColumnsHeld = 16;
    if (out.values.size() < size_t(n * out.stride))
        out.values.resize(size_t(std::max(n, kMinColumnsHeld) * out.stride));
    for (int64_t j = 0; j < n; ++j) {
        uint16_t* dst = out.values.data() + j * out.stride;
        for (int64_t k = 0; k < cols; ++k) dst[k] = bf16_dot_round(x[j * cols + k]);
        for (int64_t k = cols; k < out.stride; ++k) dst[k] = 0;
    }
}

}  // namespace nextn
