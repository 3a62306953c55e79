#pragma once
// The loop every x86 compute-peak probe runs (KernelTable::int8_peak_probe / fma_peak_probe):
// kPeakProbeChains chains, chain i a register acc_i updated `reps` times as
// acc_i = step(acc_i, a_i, b), every operand in a register. V is the register type; load_a(i)
// and load_acc(i) fetch chain i's a and acc, store_acc(i, v) writes acc back. Include only from
// an ISA translation unit; internal linkage, as x86/int8_dot_tiles.h says why.
#include <cstdint>

#include "kernels/kernels.h"

namespace nextn::x86 {
namespace {

template <class V, class LoadA, class LoadAcc, class StoreAcc, class Step>
[[gnu::always_inline]] inline void run_peak_chains(V b, int64_t reps, LoadA load_a, LoadAcc load_acc,
                                                   StoreAcc store_acc, Step step) {
    constexpr int C = kPeakProbeChains;
    V va[C], vacc[C];
#pragma GCC unroll 16
    for (int i = 0; i < C; ++i) {
        va[i] = load_a(i);
        vacc[i] = load_acc(i);
    }
    for (int64_t r = 0; r < reps; ++r)
#pragma GCC unroll 16
        for (int i = 0; i < C; ++i) vacc[i] = step(vacc[i], va[i], b);
#pragma GCC unroll 16
    for (int i = 0; i < C; ++i) store_acc(i, vacc[i]);
}

// The int8 probe with 256-bit registers, holding half a chain's 16 lanes: each half runs all
// its repetitions in turn (16 registers do not hold 2 x 10 accumulators; integer sums do not
// depend on that order). dot(acc, a, b): the ISA's u8 x s8 dot product into int32 lanes.
template <class Dot>
[[gnu::always_inline]] inline void int8_peak_probe_256(const uint8_t* a, const int8_t* b, int64_t reps,
                                                       int32_t* acc, Dot dot) {
    auto at = [](const void* p) { return reinterpret_cast<const __m256i*>(p); };
    for (int h = 0; h < 2; ++h)  // lanes 8h..8h+7: bytes 32h..32h+31
        run_peak_chains(
            _mm256_loadu_si256(at(b + 32 * h)), reps,
            [&](int i) { return _mm256_loadu_si256(at(a + 64 * i + 32 * h)); },
            [&](int i) { return _mm256_loadu_si256(at(acc + 16 * i + 8 * h)); },
            [&](int i, __m256i v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + 16 * i + 8 * h), v); },
            dot);
}

}  // namespace
}  // namespace nextn::x86
