#pragma once
// Encoders for GGUF's K-quant blocks (256 values; byte-compatible with ggml, decoded by
// formats/dequant.cpp): used to build synthetic Q4_K_M and Q2_K models (nextn bench --synthetic
// NAME --quant q4_k_m|q2_k), which the engine then holds as it holds a Q4_K_M file's tensors (Q4_KR,
// Q5_KR, Q6_KR, or chunked). Plain min/max rounding, not ggml's iterative search for the best scales: every value
// lies within half a step of its code's value, which is what a speed benchmark needs.
#include <cstdint>

namespace nextn {

inline constexpr int64_t kKQuantValues = 256;     // values per K-quant super-block
inline constexpr int64_t kQ4KBlockBytes = 144;    // f16 d, f16 dmin, scales[12], qs[128]
inline constexpr int64_t kQ5KBlockBytes = 176;    // f16 d, f16 dmin, scales[12], qh[32], qs[128]
inline constexpr int64_t kQ6KBlockBytes = 210;    // ql[128], qh[64], int8 scales[16], f16 d
inline constexpr int64_t kQ2KBlockBytes = 84;     // scales[16] (sc | mn << 4), qs[64], f16 d, f16 dmin
inline constexpr int64_t kQ3KBlockBytes = 110;    // hmask[32], qs[64], scales[12], f16 d (no quantizer here: from files)

// n a multiple of 256; out holds n / 256 blocks.
// Q4_K: per 32 values (sub-block j) the offset dmin * m_j covers the smallest value below zero
// (m_j rounded up) and the step d * sc_j spans the rest in 15 steps (sc_j rounded up; d and dmin
// f16, each the largest need / 63 rounded up), code = round((x + dmin * m_j) / (d * sc_j))
// clamped to 0..15: |x - value| <= d * sc_j / 2 (plus f32 rounding).
void quantize_row_q4_k(const float* x, int64_t n, uint8_t* out);
// Q5_K: as Q4_K with 31 steps, codes 0..31 (the fifth bit of sub-block j's value l at bit j of
// qh[l]).
void quantize_row_q5_k(const float* x, int64_t n, uint8_t* out);
// Q6_K: per 16 values (sub-block j) the step d * sc_j (sc_j in 1..127, rounded up, or 0 for a
// sub-block of zeros; d f16, the largest need / 127 rounded up) spans max|x| in 31 steps, code =
// round(x / (d * sc_j)) + 32 clamped to 0..63: |x - value| <= d * sc_j / 2 (plus f32 rounding).
void quantize_row_q6_k(const float* x, int64_t n, uint8_t* out);
// Q2_K: as Q4_K per 16 values (sub-block j: 4-bit m_j and sc_j, d and dmin the largest need / 15
// rounded up) with 3 steps, codes 0..3: |x - value| <= d * sc_j / 2 (plus f32 rounding). At 2 bits
// a value the error is large (relative RMS 0.36 on normal data): for speed benchmarks
// (nextn bench --synthetic NAME --quant q2_k), not for a model's quality.
void quantize_row_q2_k(const float* x, int64_t n, uint8_t* out);

}  // namespace nextn
