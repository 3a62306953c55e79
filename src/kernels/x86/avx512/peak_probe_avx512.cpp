// AVX-512 compute-peak probes: one vpdpbusd (64 multiply-adds) / vfmadd231ps (16) per chain and
// repetition, every chain in a register (KernelTable::int8_peak_probe / fma_peak_probe).
#include <immintrin.h>

#include "kernels/x86/peak_probe.h"
#include "kernels/x86/x86_kernels.h"

namespace nextn::avx512 {

namespace {

// Both probes' operands are 64 bytes a chain (64 u8 codes, or 16 floats, or 16 int32 sums), so
// one loader and one storer of a 512-bit register V serve every operand.
template <class V, class Load, class Store, class Step>
void run_probe(const void* a, const void* b, int64_t reps, void* acc, Load load, Store store, Step step) {
    auto chain_a = [a](int i) { return static_cast<const char*>(a) + 64 * i; };
    auto chain_acc = [acc](int i) { return static_cast<char*>(acc) + 64 * i; };
    simd::run_peak_chains(
        V(load(b)), reps, [&](int i) { return load(chain_a(i)); },
        [&](int i) { return load(chain_acc(i)); }, [&](int i, V v) { store(chain_acc(i), v); },
        step);
}

}  // namespace

void int8_peak_probe(const uint8_t* a, const int8_t* b, int64_t reps, int32_t* acc) {
    run_probe<__m512i>(
        a, b, reps, acc, [](const void* p) { return _mm512_loadu_si512(p); },
        [](void* p, __m512i v) { _mm512_storeu_si512(p, v); },
        [](__m512i s, __m512i x, __m512i y) { return _mm512_dpbusd_epi32(s, x, y); });
}

void fma_peak_probe(const float* a, const float* b, int64_t reps, float* acc) {
    run_probe<__m512>(
        a, b, reps, acc, [](const void* p) { return _mm512_loadu_ps(p); },
        [](void* p, __m512 v) { _mm512_storeu_ps(p, v); },
        [](__m512 s, __m512 x, __m512 y) { return _mm512_fmadd_ps(x, y, s); });
}

}  // namespace nextn::avx512
