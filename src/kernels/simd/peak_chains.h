#pragma once
// The loop every compute-peak probe runs (KernelTable::int8_peak_probe / fma_peak_probe), on any
// ISA: kPeakProbeChains chains, chain i a register acc_i updated `reps` times as
// acc_i = step(acc_i, a_i, b), every operand in a register. V is the register type; load_a(i)
// and load_acc(i) fetch chain i's a and acc, store_acc(i, v) writes acc back. Where a chain's 16
// lanes take several registers, the caller runs each part in turn (each lane's chain is the same
// either way), so that 2 x kPeakProbeChains registers hold every operand. Include only from an
// ISA translation unit; internal linkage, so each ISA's flags stay with its own copy.
#include <cstdint>

#include "kernels/kernels.h"

namespace nextn::simd {
namespace {

template <class V, class LoadA, class LoadAcc, class StoreAcc, class Step>
[[gnu::always_inline]] inline void run_peak_chains(V b, int64_t reps, LoadA load_a,
                                                   LoadAcc load_acc, StoreAcc store_acc,
                                                   Step step) {
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

}  // namespace
}  // namespace nextn::simd
