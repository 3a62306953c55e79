#pragma once
// Rows of half or block values (f16, Q8_0, ...: the ISAs' weight decoders D) widened to f32 once
// into a small buffer, for kernels whose passes would otherwise decode every value again: the
// value sum over an f16 or q8_0 KV cache, for a verify's or prefill's many query rows. Widening is
// exact (a half, or d * code with an f16 d), so a kernel reading the staged rows gives the bits it
// gives reading the values directly. Written over an ISA description `I`; include only from an ISA
// translation unit.
#include <cstdint>

namespace nextn::simd {

// Bytes of the first e values of a row of D's values (whole blocks for the block types; for
// the float types exact at any e).
template <class D>
constexpr int64_t value_bytes(int64_t e) {
    return (e / 32) * D::kBlockBytes + (e % 32) * D::kBlockBytes / 32;
}

// Vector of a row's values [e, e + I::L): D's sub of block e / 32 (e a multiple of I::L).
template <class I, class D>
[[gnu::always_inline]] inline typename I::V row_vector(const uint8_t* row, int64_t e) {
    return D::sub(row, e / 32, int((e % 32) / I::L));
}

// Rows of f32 values, as a decoder: the staged rows below, and every ISA's DecodeF32.
template <class I>
struct F32Rows {
    static constexpr int64_t kBlockBytes = 128;  // bytes of 32 values
    static constexpr int kPrefetchEvery = 1;
    static typename I::V sub(const uint8_t* row, int64_t b, int s) {
        return I::load(reinterpret_cast<const float*>(row) + b * 32 + s * I::L);
    }
    static typename I::V part(const uint8_t* row, int64_t off, int n) {
        return I::load_part(reinterpret_cast<const float*>(row) + off, n);
    }
};

// Floats of the stack buffer a call widens rows of half or block values into (32 KB: L1).
constexpr int64_t kStageFloats = 8192;

// Rows [0, n) of d values of D (ldv bytes apart) widened to f32 rows of d at out (exact: the
// decoders' values), fetching the n rows after them into L2 as it goes.
template <class I, class D>
void widen_rows(const uint8_t* v, int64_t ldv, int64_t n, int64_t d, float* out) {
    for (int64_t pos = 0; pos < n; ++pos) {
        const uint8_t* row = v + pos * ldv;
        for (int64_t b = 0; b < value_bytes<D>(d); b += 64)
            __builtin_prefetch(row + n * ldv + b, 0, 1);
        int64_t e = 0;
        // Whole blocks first, a block's vectors together: their block index is then one
        // expression, so the compiler widens a Q8_0 block's scale once, not once a vector.
        if constexpr (32 % I::L == 0)
            for (; e + 32 <= d; e += 32)
#pragma GCC unroll 4
                for (int s = 0; s < 32 / I::L; ++s)
                    I::store(out + pos * d + e + s * I::L, D::sub(row, e / 32, s));
        for (; e < d; e += I::L) {
            const int len = d - e < I::L ? int(d - e) : I::L;
            if (len == I::L)
                I::store(out + pos * d + e, row_vector<I, D>(row, e));
            else
                I::store_part(out + pos * d + e, D::part(row, e, len), len);
        }
    }
}

}  // namespace nextn::simd
