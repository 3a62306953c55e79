#pragma once
// The 256-bit int8 compute-peak probe, over simd/peak_chains.h's loop. Include only from an ISA
// translation unit; internal linkage, as x86/int8_dot_tiles.h says why.
#include <immintrin.h>

#include <cstdint>

#include "kernels/simd/peak_chains.h"

namespace nextn::x86 {
namespace {

// The int8 probe with 256-bit registers, holding half a chain's 16 lanes: each half runs all
// its repetitions in turn (16 registers do not hold 2 x 10 accumulators; integer sums do not
// depend on that order). dot(acc, a, b): the ISA's u8 x s8 dot product into int32 lanes.
template <class Dot>
[[gnu::always_inline]] inline void int8_peak_probe_256(const uint8_t* a, const int8_t* b, int64_t reps,
                                                       int32_t* acc, Dot dot) {
    auto at = [](const void* p) { return reinterpret_cast<const __m256i*>(p); };
    for (int h = 0; h < 2; ++h)  // lanes 8h..8h+7: bytes 32h..32h+31
        simd::run_peak_chains(
            _mm256_loadu_si256(at(b + 32 * h)), reps,
            [&](int i) { return _mm256_loadu_si256(at(a + 64 * i + 32 * h)); },
            [&](int i) { return _mm256_loadu_si256(at(acc + 16 * i + 8 * h)); },
            [&](int i, __m256i v) {
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + 16 * i + 8 * h), v);
            },
            dot);
}

}  // namespace
}  // namespace nextn::x86
