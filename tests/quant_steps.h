#pragma once
// Checks a quantized checkpoint against the f32 one it was quantized from: same tensors and
// shapes, F32 tensors identical, every dequantized weight within its format's quantization step
// of the f32 weight. The step is the format's grid spacing over the (sub-)block the value
// belongs to: symmetric formats amax / 2^(bits-1) (Q8_0: amax/127), K-quants with a min (max -
// min) / (2^bits - 1) over the sub-block, Q6_K amax/32 and Q3_K amax/4 over its 16 values; the
// non-uniform grids by their widest gap: IQ4's table (steps of up to 23 in 127) and MXFP4's e2m1
// values (the scale puts amax at 4..8 of doubled units 0..12, so amax may clip to 12 and the
// gaps reach 4: amax/4 for both).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "core/error.h"
#include "formats/checkpoint.h"
#include "kernels/weight.h"

namespace nextn::test {

struct QuantRule {
    int group;       // elements sharing one scale
    bool with_min;   // affine (scale + min) vs symmetric
    double levels;   // step = amax / levels (symmetric) or (max - min) / levels (affine)
    double bound;    // allowed |error| in steps (rounding is 0.5; clipping and 6-bit scales add)
};

inline QuantRule quant_rule_for(DType t) {
    switch (t) {
        case DType::Q8_0: return {32, false, 127, 0.6};
        case DType::Q4_0: return {32, false, 8, 1.1};
        case DType::Q5_0: return {32, false, 16, 1.1};
        case DType::Q4_K: return {32, true, 15, 1.3};
        case DType::Q5_K: return {32, true, 31, 1.3};
        case DType::Q6_K: return {16, false, 32, 0.8};
        case DType::Q2_K: return {16, true, 3, 1.3};
        case DType::Q3_K: return {16, false, 4, 1.3};
        case DType::IQ4_NL: return {32, false, 127.0 / 23, 0.8};
        case DType::IQ4_XS: return {32, false, 127.0 / 23, 1.3};
        case DType::MXFP4: return {32, false, 4, 1.1};
        default: throw Error("no rule");
    }
}

inline void expect_within_quant_steps(const Checkpoint& q, const Checkpoint& ref) {
    EXPECT_EQ(q.config.n_layers, ref.config.n_layers);
    EXPECT_EQ(q.config.vocab_size, ref.config.vocab_size);
    EXPECT_EQ(q.tensors.size(), ref.tensors.size());
    std::map<DType, double> worst;
    for (const auto& [name, rt] : ref.tensors) {
        const RawTensor* qt = q.find(name);
        ASSERT_TRUE(qt) << name;
        ASSERT_EQ(qt->shape, rt.shape) << name;
        auto r = tensor_to_f32(rt);
        auto d = tensor_to_f32(*qt);
        if (qt->dtype == DType::F32) {
            EXPECT_EQ(d, r) << name;
            continue;
        }
        const QuantRule rule = quant_rule_for(qt->dtype);
        for (size_t g0 = 0; g0 < r.size(); g0 += size_t(rule.group)) {
            float lo = r[g0], hi = r[g0], amax = 0;
            for (size_t i = g0; i < g0 + size_t(rule.group); ++i) {
                lo = std::min(lo, r[i]);
                hi = std::max(hi, r[i]);
                amax = std::max(amax, std::fabs(r[i]));
            }
            const double step = (rule.with_min ? double(hi) - double(lo) : double(amax)) / rule.levels;
            for (size_t i = g0; i < g0 + size_t(rule.group); ++i) {
                const double err = std::fabs(double(d[i]) - double(r[i]));
                const double steps = step > 0 ? err / step : (err > 0 ? 1e9 : 0);
                worst[qt->dtype] = std::max(worst[qt->dtype], steps);
                ASSERT_LE(steps, rule.bound) << q.path << " " << name << " element " << i << ": " << d[i]
                                             << " vs " << r[i] << " (step " << step << ")";
            }
        }
    }
    for (const auto& [t, w] : worst) std::printf("%s %s: worst error %.3f steps\n", q.path.c_str(), dtype_name(t), w);
}

}  // namespace nextn::test
