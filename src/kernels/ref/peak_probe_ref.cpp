// Scalar compute-peak probes (KernelTable::int8_peak_probe / fma_peak_probe): the oracle the
// vector ones are tested against, and the scalar table's own peak.
#include <cmath>

#include "kernels/ref/ref.h"

namespace nextn::ref {

namespace {

// Makes the compiler keep every repetition: an integer chain that adds the same sum `reps`
// times would otherwise be folded into one multiply, and the probe would time nothing.
inline void keep_repetition(const void* p) { asm volatile("" : : "r"(p) : "memory"); }

}  // namespace

void int8_peak_probe(const uint8_t* a, const int8_t* b, int64_t reps, int32_t* acc) {
    for (int64_t r = 0; r < reps; ++r) {
        for (int i = 0; i < kPeakProbeChains; ++i)
            for (int l = 0; l < 16; ++l) {
                int32_t sum = 0;
                for (int j = 0; j < 4; ++j) sum += int32_t(a[i * 64 + 4 * l + j]) * int32_t(b[4 * l + j]);
                acc[i * 16 + l] += sum;
            }
        keep_repetition(acc);
    }
}

void fma_peak_probe(const float* a, const float* b, int64_t reps, float* acc) {
    for (int64_t r = 0; r < reps; ++r) {
        for (int i = 0; i < kPeakProbeChains; ++i)
            for (int l = 0; l < 16; ++l) acc[i * 16 + l] = std::fma(a[i * 16 + l], b[l], acc[i * 16 + l]);
        keep_repetition(acc);
    }
}

}  // namespace nextn::ref
