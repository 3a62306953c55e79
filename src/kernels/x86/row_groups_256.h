#pragma once
// The row-group types (kernels/row_groups.h) in 256-bit form, shared by the AVX2 and AVX-VNNI units
// through their Dot policy (x86/int8_dot_256.h describes it). A group's 64-byte code vector holds
// its 16 rows in 4-byte lanes, so its two 32-byte halves are rows 0..7 and 8..15: a tile is one
// or both halves of a group times up to 4 columns, over all of the group's blocks. Each code
// vector is loaded once per tile and meets every column's broadcast activation codes, and a
// block ends with one convert + multiply + fused multiply-add per (half, column) (Q4_KR, Q5_KR: a
// second multiply + fused multiply-add for their mins; Q6_KR: its two sub-block sums joined by
// their int8 scales first, as Q6_KX's, or on AVX2 its sums scaled as they widen), lane r holding
// row r's sum: no reduction across lanes, so the results are the scalar reference's bits, as
// the AVX-512 kernel's are.
//
// Include only from an ISA translation unit; everything here has internal linkage (the AVX2 and
// AVX-VNNI units instantiate it with different flags).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/int8_dot.h"
#include "kernels/row_groups.h"
#include "kernels/x86/avx2/isa_avx2.h"
#include "kernels/x86/int8_dot_tiles.h"
#include "kernels/x86/x86_kernels.h"

namespace nextn::x86 {
namespace {

// Columns a tile takes at most: with 16 vector registers, 4 columns' sums and accumulators of
// one half-group leave room for the codes and the broadcast activations (AVX-VNNI's two chains a
// sum fill them all, and the compiler spills a few).
constexpr int kRowGroupTileCols256 = 4;
// How far ahead of where a tile reads its call's bytes are fetched: a cursor over the call's
// groups (their bytes in order, group after group), moved through each group's bytes by the passes
// that read it (RowGroupFetchShare256), fetching each line into L1 kRowGroupFetchAhead256 ahead
// and into L2 kRowGroupFarAhead256 ahead. The far
// fetch is what keeps the memory busy: on the 2-core Xeon VM (tools/layout_ab, NEXTN_ISA=avxvnni,
// 0.8B q4_0 decode, row groups over the chunked layout) the L1 cursor alone 8 KB ahead took
// 1.050x the time, with the L2 one 0.939-0.949x for L1 / L2 distances of 2-16 KB / 16-64 KB.
constexpr int64_t kRowGroupFetchAhead256 = 4096;
constexpr int64_t kRowGroupFarAhead256 = 32768;

// The share of a group's prefetches one pass over it issues: a group is read in P passes (column
// passes of up to 4 columns, each of one or both halves), and pass p moves the cursor from base
// to base + step * blocks (base = p * group_bytes / P, step = group_bytes / (blocks * P)), so
// the memory stays busy through all of them. end: the end of the call's bytes (null: no fetch).
// When only the first half's pass fetched, the memory idled while the second half computed: on
// the 2-core Xeon VM (tools/kernel_ab, 0.8B forwards, shares over the first pass alone) avxvnni
// q4_0 widths 3, 4, 8 took 0.886, 0.875, 0.902x the time, q8_0 width 4 0.943x; avx2 q4_0 width
// 4 0.913x, q8_0 0.875x; widths 1 and 2 (one pass) 0.996x.
struct RowGroupFetchShare256 {
    const uint8_t* end = nullptr;
    int64_t base = 0, step = 0;
};

// A block's start, factor * (column j's code sum of block b), in every int32 lane: a broadcast
// load of the product made at quantization (a load, no vector instruction; a pmaddwd of the
// broadcast sum took one, the scalar product and its broadcast three to five). Session 40, Xeon,
// one thread, BM_RowGroupsPrefill width 16 / 128 against that pmaddwd: AVX-VNNI Q8_0R 0.99 /
// 0.97x the time, Q4_0R 0.96 / 0.94x (the K-quant types, unchanged, 0.97-1.035x); AVX2 Q8_0R 1.02
// / 0.96x, Q4_0R 0.97 / 0.96x.
template <int32_t Factor>
__m256i block_start_256(const QuantizedColumns& x, int64_t j, int64_t b) {
    static_assert(Factor == 0 || Factor == -8 || Factor == -128, "the starts made at quantization");
    if constexpr (Factor == 0)
        return _mm256_setzero_si256();
    else
        return _mm256_set1_epi32(x.offset_starts_of<-Factor>(j)[b]);
}

// Steps of the 4- and 5-bit types a policy that widens late (AVX2's pmaddubsw) adds in int16
// before one widen: each step's pair sums are at most 2 * m * 127 for codes up to m, so 8 steps
// of 4-bit codes (30480) and 4 of Q5_K's 5-bit ones (31496) stay under 32767. A Q4_0R block then
// takes 8 pmaddubsw and 2 pmaddwd (its sum and its start) a column where it took 8 pmaddubsw, 4
// pmaddwd (one a pair of steps) and a scalar start. On the 2-core Xeon VM (tools/kernel_ab ISA=avx2,
// 0.8B forwards, against the pair-by-pair widen) q4 width 1, 2, 3, 4, 8 took 0.99, 0.98-0.99,
// 0.97-0.98, 0.94, 0.925x the time, prefill 128 0.96x (its thirds 0.99 and 1.01); q4_k_m widths
// 3-8 0.96-0.98x, prefill 1.00x. The block start's pmaddwd alone (avxvnni): 0.99x at width 4,
// 0.975x at 8, prefill 0.96x. Session 34 had tried the int16 sums with the start held in a
// register through the steps: width 3 1.02x, prefill 1.06x. (A loop of one step at a time, which
// holds one code vector instead of a low and a high one, spilled as much and took 1.01-1.02x the
// time of this: not kept.)
constexpr int row_group_int16_steps(WType t) { return t == WType::Q5_KR ? 4 : 8; }

// Q6_KR, 8 rows' sub-block scales (int8, at p) as int16s, each twice: the two int16 halves of
// lane r both hold row r's, so pmaddwd of a pair of steps' int16 pair sums by them is the
// scaled int32 sum.
inline __m256i q6_pair_scales_256(const uint8_t* p) {
    const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    return _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(v, v));
}

// Q6_KR, 8 rows' start factors: -32 (the codes' offset) x the first sub-block's scale (at a) in
// lane r's low int16, x the second's (at b) in its high int16 (at most 32 * 128). pmaddwd of a
// block's half_pairs by them is both sub-blocks' scaled start.
inline __m256i q6_start_factors_256(const uint8_t* a, const uint8_t* b) {
    const __m128i va = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(a));
    const __m128i vb = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b));
    return _mm256_mullo_epi16(_mm256_cvtepi8_epi16(_mm_unpacklo_epi8(va, vb)), _mm256_set1_epi16(-32));
}

// Q2_KR, 8 rows' sub-block scales (the low nibbles of their scale bytes at p: row r's first
// sub-block's at 2r, its second's at 2r + 1) of sub-block `second` (0 or 1) as int16s, each twice,
// as q6_pair_scales_256's.
inline __m256i q2_pair_scales_256(const uint8_t* p, int second) {
    const __m256i pairs =
        _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    const __m256i sc =
        _mm256_and_si256(second ? _mm256_srli_epi32(pairs, 16) : pairs, _mm256_set1_epi32(15));
    return _mm256_or_si256(sc, _mm256_slli_epi32(sc, 16));
}

// Q2_KR block b of the group at `group`, the 8 rows of half `half`: their mins' term added to each
// column's acc, -dmin * dx times mn_a * xhalf + mn_b * (xsum - xhalf) (one pmaddwd of the rows' two
// mins, int16s, by the block's half_pairs).
template <int C>
[[gnu::always_inline]] inline void q2_k_mins_256(const uint8_t* group, int64_t b, int half,
                                                 const QuantizedColumns& x, int64_t j0,
                                                 __m256 (&acc)[C]) {
    constexpr WType T = WType::Q2_KR;
    const __m256i pairs = _mm256_cvtepu8_epi16(_mm_loadu_si128(
        reinterpret_cast<const __m128i*>(group + row_group_block_scales_at(T, b) + 16 * half)));
    const __m256i mins = _mm256_srli_epi16(pairs, 4);  // lane r: mn_a | mn_b << 16
    const __m256 dmin =
        _mm256_xor_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(
                          group + row_group_super_scales_at(T, b) + 32 + 16 * half))),
                      _mm256_set1_ps(-0.0f));
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) {
        const __m256i mi = _mm256_madd_epi16(mins, _mm256_set1_epi32(x.half_pairs_of(j0 + c)[b]));
        acc[c] =
            _mm256_fmadd_ps(_mm256_cvtepi32_ps(mi),
                            _mm256_mul_ps(dmin, _mm256_set1_ps(x.scales_of(j0 + c)[b])), acc[c]);
    }
}

// Q4_KR / Q5_KR block b of the group at `group`, the 8 rows of half `half`: their weight scales
// dw = d * sc and their mins' factors dm = -(dmin * mn) (exact products, negated by the sign bit).
struct AffineScales256 {
    __m256 dw, dm;
};
template <WType T>
[[gnu::always_inline]] inline AffineScales256 affine_k_scales_256(const uint8_t* group, int64_t b,
                                                                  int half) {
    const uint8_t* super = group + row_group_super_scales_at(T, b);
    const uint8_t* sc_mn = group + row_group_block_scales_at(T, b) + 8 * half;
    auto f16_lanes = [](const uint8_t* p) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    };
    auto u8_lanes = [](const uint8_t* p) {
        return _mm256_cvtepi32_ps(
            _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
    };
    return {_mm256_mul_ps(f16_lanes(super + 16 * half), u8_lanes(sc_mn)),
            _mm256_xor_ps(_mm256_mul_ps(f16_lanes(super + 32 + 16 * half), u8_lanes(sc_mn + 16)),
                          _mm256_set1_ps(-0.0f))};
}

// Steps s (the low nibbles, 0..3) and 4 + s (the high ones) of the 8 rows of a Q4_0R, Q4_KR, Q5_KR,
// IQ4_NLR or MXFP4R block whose half's codes start at `codes` (Q5_KR: its fifth bits, 256 bytes
// on, or-ed in; the table types: each nibble replaced by its 8-bit table code).
template <WType T>
[[gnu::always_inline]] inline void nibble_steps_256(const uint8_t* codes, int s, __m256i& low,
                                                    __m256i& high) {
    const __m256i low_nibbles = _mm256_set1_epi8(15);
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + s * 64));
    low = _mm256_and_si256(v, low_nibbles);
    high = _mm256_and_si256(_mm256_srli_epi16(v, 4), low_nibbles);
    if constexpr (row_group_table_codes(T)) {  // IQ4_NLR, MXFP4R: each nibble indexes the table
        const __m256i table = _mm256_broadcastsi128_si256(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(row_group_code_table(T))));
        low = _mm256_shuffle_epi8(table, low);
        high = _mm256_shuffle_epi8(table, high);
    }
    if constexpr (T == WType::Q5_KR) {
        const __m256i fifth = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + 256));
        low = _mm256_or_si256(low, q5_fifth_bits<avx2::Isa>(fifth, s));
        high = _mm256_or_si256(high, q5_fifth_bits<avx2::Isa>(fifth, 4 + s));
    }
}

// Step s (0..7) of a Q6_KR block's 8 rows (their half's codes at `codes`) as 6-bit codes, of a
// Q3_KR block's as its 3-bit codes + 28 (Q6_KR's offset then serves both), or of a Q2_KR block's as
// its 2-bit codes.
template <WType T>
[[gnu::always_inline]] inline __m256i six_bit_step_256(const uint8_t* codes, int s) {
    auto load = [&](int64_t at) {
        return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + at));
    };
    if constexpr (T == WType::Q2_KR) return q2_step_codes<avx2::Isa>(load((s / 4) * 64), s);
    if constexpr (T == WType::Q3_KR)
        return q3_step_codes<avx2::Isa>(load((s / 4) * 64), load(128), s);
    return q6_step_codes<avx2::Isa>(load((s / 2) * 64), load(256 + (s / 4) * 64), s);
}

// Above this many columns (a prefill) a group's codes (Q4_0R, Q4_KR, Q5_KR: each step's nibbles,
// Q5_KR's fifth bits or-ed in; Q6_KR: q6_step_codes) and its Q4_KR / Q5_KR scales are made once
// into the thread's scratch for all the column passes over it (unpack_row_group_256), where
// every pass had made them again on the ports its dot products need (nibbles 3 operations a code
// vector, Q5_KR's 7, Q6_KR's 5 a step; the scales about 11 a half and block). The same values, so
// the same sums and bits. Session 41, 2-core Xeon VM, unpacked over made by every pass,
// tools/kernel_ab (0.8B forwards, prefill 128):
// - the scales and Q6_KR's codes: q4_k_m avx2 0.944, avxvnni 0.961; kernels_bench
//   BM_KQuantRowGroupsPrefill width 128 (one thread) avx2 Q4_KR 0.915, Q5_KR 0.954, Q6_KR 0.852,
//   avxvnni 0.90, 0.91, 0.817;
// - then the 4- and 5-bit codes too: q4_k_m avxvnni 0.942, avx2 0.993; q4 avxvnni 0.958;
//   kernels_bench avx2 Q4_KR 0.97, Q5_KR 0.78, avxvnni Q4_0R 0.885, Q4_KR 0.96, Q5_KR 0.83. Not
//   Q4_0R on AVX2 (row_group_unpackable_256), where pmaddubsw is what bounds the tiles: kernel_ab
//   q4 1.009, kernels_bench 0.99.
// A verify's second column pass (widths 5 to 8) gained nothing measurable from the scales or
// Q6_KR's codes (avx2 width 8 0.968, 0.997, 0.998, width 5 0.994-1.007; avxvnni widths 5, 8 with
// the scales alone 1.004, 1.003), and on AVX-VNNI unpacking Q6_KR's codes there took longer
// (1.045, 1.019: the unpacking reads the group before the passes' prefetches run ahead of it).
constexpr int64_t kRowGroupUnpackOnceAbove256 = 16;

template <class Dot, WType T>
constexpr bool row_group_unpackable_256 =
    T != WType::Q8_0R && !(T == WType::Q4_0R && Dot::kWidensLate);

// Where a block's Q4_KR / Q5_KR scales start among its unpacked bytes: after its codes.
constexpr int64_t kRowGroupUnpackedScales256 = kI8Steps * 64;

// Bytes a block of a group takes unpacked: [kI8Steps, 64] code bytes, then (Q4_KR and Q5_KR) [2
// halves, dw | dm, 8] floats.
template <WType T>
constexpr int64_t row_group_unpacked_block_bytes_256 = kRowGroupUnpackedScales256 +
                                                       (row_group_affine_k(T) ? 2 * 2 * 8 * 4 : 0);

// The group at `group` unpacked into `out` (64-byte aligned), as the tiles read it with
// kUnpacked: per block, [kI8Steps, 64] bytes, step s's codes of rows 0..7 then 8..15
// (nibble_steps_256, q6_step_codes), then (Q4_KR, Q5_KR) [2 halves, dw | dm, 8] floats
// (affine_k_scales_256).
template <WType T>
void unpack_row_group_256(const RowGroupGeometry& L, const uint8_t* group, uint8_t* out) {
    static_assert(T != WType::Q8_0R);
    for (int64_t b = 0; b < L.blocks; ++b) {
        uint8_t* to = out + b * row_group_unpacked_block_bytes_256<T>;
        const uint8_t* codes = group + row_group_codes_at(T, b);
        if constexpr (row_group_sub_block_sums(T)) {
#pragma GCC unroll 8
            for (int s = 0; s < kI8Steps; ++s)
#pragma GCC unroll 2
                for (int half = 0; half < 2; ++half)
                    _mm256_store_si256(reinterpret_cast<__m256i*>(to + s * 64 + 32 * half),
                                       six_bit_step_256<T>(codes + 32 * half, s));
        } else {
#pragma GCC unroll 4
            for (int s = 0; s < 4; ++s)
#pragma GCC unroll 2
                for (int half = 0; half < 2; ++half) {
                    __m256i low, high;
                    nibble_steps_256<T>(codes + 32 * half, s, low, high);
                    _mm256_store_si256(reinterpret_cast<__m256i*>(to + s * 64 + 32 * half), low);
                    _mm256_store_si256(reinterpret_cast<__m256i*>(to + (4 + s) * 64 + 32 * half),
                                       high);
                }
        }
        if constexpr (row_group_affine_k(T)) {
#pragma GCC unroll 2
            for (int half = 0; half < 2; ++half) {
                const AffineScales256 a = affine_k_scales_256<T>(group, b, half);
                float* made = reinterpret_cast<float*>(to + kRowGroupUnpackedScales256) + half * 16;
                _mm256_store_ps(made, a.dw);
                _mm256_store_ps(made + 8, a.dm);
            }
        }
    }
}

// H halves (1: half `h` alone; 2: both) of the group at `group` times columns j0 .. j0+C-1.
// lanes: the rows of this call in the group (bit r: row r). K independent sums per (half,
// column): 2 splits a block's dot products over two chains (the low and the high nibbles, or
// even and odd steps), which a policy bound by the dot product's latency needs when a tile has
// few sums; the sums are exact, so the split never changes the bits (Q6_KR: K is 2, the two
// sub-blocks, steps 0..3 and 4..7, which its scales join). fetch: the call's prefetch cursor,
// share: how far this pass moves it. kUnpacked: the group's codes (and Q4_KR / Q5_KR scales) come
// made from `unpacked` (unpack_row_group_256).
template <class Dot, WType T, int H, int K, int C, bool kUnpacked>
void row_group_tile_256(const RowGroupGeometry& L, const uint8_t* group, int h,
                        const QuantizedColumns& x, int64_t j0, unsigned lanes, float* y,
                        int64_t ldy, const uint8_t*& fetch, const RowGroupFetchShare256& share,
                        const uint8_t* unpacked) {
    constexpr bool kEight = T == WType::Q8_0R;
    constexpr bool kSixBit = row_group_sub_block_sums(T);  // Q6_KR, Q3_KR, Q2_KR
    // Q2_KR: its sums start at 0, its scales are 4-bit (the low nibbles of the block's pairs of
    // scale bytes), and its mins add a term after Q6_KR's scaling (q2_k_mins_256).
    constexpr bool kTwoBit = T == WType::Q2_KR;
    // IQ4_NLR, MXFP4R: nibbles unpacked as the 4-bit types', then 8-bit table codes multiplied as
    // Q8_0R's are (up to 241: neither int16 sums nor dot_pair's two steps hold them).
    constexpr bool kTable = row_group_table_codes(T);
    // Q6_KR on a policy that widens late: each pair of steps' int16 sums widened by pmaddwd with
    // the rows' sub-block scales, into one sum a (half, column), its start one pmaddwd of the
    // block's half_pairs; else two sums, a sub-block each, scaled by pmulld at the block's end. A
    // column's block then takes 5 pmaddwd where it took 4, two pmulld (two uops each) and two
    // starts of three instructions. On the 2-core Xeon VM (tools/kernel_ab ISA=avx2 q4_k_m, whose
    // Q6_K LM head this is, 0.8B forwards) widths 1, 2, 4, 8 took 1.00, 1.00, 0.96-0.97,
    // 0.93-0.95x the time. AVX-VNNI's sums widen as they are made; its starts from half_pairs
    // alone (one pmaddwd after the pmulld) took 1.015-1.02x at width 1, 0.99x at 4: not kept.
    constexpr bool kScaledSixBit = kSixBit && Dot::kWidensLate;
    static_assert(!kSixBit || K == (kScaledSixBit ? 1 : 2),
                  "Q6_KR's sums: one scaled, or a sub-block each");
    // The 4- and 5-bit types' products add in int16 lanes first on a policy that widens late.
    constexpr bool kInt16Sums = Dot::kWidensLate && !kEight && !kSixBit && !kTable;
    // The sums start at -offset * xsum (the codes are stored offset), plus what the policy's
    // product leaves out: 8-bit codes it multiplies as w - 128 need 128 * xsum more.
    constexpr int32_t kStartFactor =
        (kEight || kTable) && Dot::kSignedEightBit ? 0 : -row_group_code_offset(T);
    __m256 acc[H][C];
#pragma GCC unroll 2
    for (int i = 0; i < H; ++i)
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) acc[i][c] = _mm256_setzero_ps();
    const int8_t* xc[C];  // [chunks, 8 steps, 16 lanes, 4] per column
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) xc[c] = x.codes_of(j0 + c);
    auto step = [&](int c, int64_t xoff, int s) {  // activation step s of column c, broadcast
        int32_t v;
        std::memcpy(&v, xc[c] + xoff + s * 64, 4);
        return _mm256_set1_epi32(v);
    };
    // The far fetch's last line comes kRowGroupFarAhead256 before the call's end (where the call
    // is shorter than that, it makes none).
    const uint8_t* const far_end =
        share.end ? share.end - std::min<int64_t>(kRowGroupFarAhead256, share.end - fetch) : nullptr;
    for (int64_t b = 0; b < L.blocks; ++b) {
        if (share.end) {
            // Offsets, not pointers past the matrix: the cursor stops at the call's end.
            const uint8_t* until =
                group + std::min<int64_t>(kRowGroupFetchAhead256 + share.base + (b + 1) * share.step, share.end - group);
            for (; fetch < until; fetch += 64) {
                _mm_prefetch(reinterpret_cast<const char*>(fetch), _MM_HINT_T0);
                if (fetch < far_end)
                    _mm_prefetch(reinterpret_cast<const char*>(fetch + kRowGroupFarAhead256), _MM_HINT_T1);
            }
        }
        const int64_t xoff = (b / kI8ChunkBlocks) * kI8ChunkValues + 4 * (b % kI8ChunkBlocks);
        __m256i isum[H][K][C];
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) {
            if constexpr (kScaledSixBit) {  // (its start joins at the first widen)
            } else if constexpr (kTwoBit) {
#pragma GCC unroll 2
                for (int i = 0; i < H; ++i) isum[i][0][c] = isum[i][1][c] = _mm256_setzero_si256();
            } else if constexpr (kSixBit) {  // -32 x each sub-block's activation code sum
                const __m256i first = _mm256_set1_epi32(x.q6_starts_of(j0 + c, false)[b]);
                const __m256i second = _mm256_set1_epi32(x.q6_starts_of(j0 + c, true)[b]);
#pragma GCC unroll 2
                for (int i = 0; i < H; ++i) isum[i][0][c] = first, isum[i][1][c] = second;
            } else if constexpr (!kInt16Sums) {  // (those begin at their first widen)
                const __m256i start = block_start_256<kStartFactor>(x, j0 + c, b);
#pragma GCC unroll 2
                for (int i = 0; i < H; ++i) {
                    isum[i][0][c] = start;
                    if constexpr (K == 2) isum[i][1][c] = _mm256_setzero_si256();
                }
            }
        }
        const uint8_t* codes = group + row_group_codes_at(T, b) + (H == 1 ? 32 * h : 0);
        // kUnpacked: the block's made codes and scales (unpack_row_group_256).
        [[maybe_unused]] const uint8_t* made_block =
            kUnpacked ? unpacked + b * row_group_unpacked_block_bytes_256<T> : nullptr;
        // Q6_KR: the block's sub-block scales of half `half` (first at +0, second at +16).
        auto q6_scales_of = [&](int half) {
            return group + row_group_block_scales_at(T, b) + 8 * half;
        };
        if constexpr (kSixBit) {
#pragma GCC unroll 4
            for (int s = 0; s < 8; s += 2) {  // steps s and s + 1: one sub-block
                typename Dot::W w0[H], w1[H];
                [[maybe_unused]] __m256i scales[H];  // [half] sub-block s / 4's, twice in each lane (scaled sums)
                [[maybe_unused]] __m256i start_factors[H];  // [half] (s == 0) -32 x both sub-blocks' scales
#pragma GCC unroll 2
                for (int i = 0; i < H; ++i) {
                    if constexpr (kUnpacked) {
                        const uint8_t* made = made_block + s * 64 + 32 * (H == 1 ? h : i);
                        w0[i] = Dot::template prepare<false>(
                            _mm256_load_si256(reinterpret_cast<const __m256i*>(made)));
                        w1[i] = Dot::template prepare<false>(
                            _mm256_load_si256(reinterpret_cast<const __m256i*>(made + 64)));
                    } else {
                        w0[i] =
                            Dot::template prepare<false>(six_bit_step_256<T>(codes + 32 * i, s));
                        w1[i] = Dot::template prepare<false>(
                            six_bit_step_256<T>(codes + 32 * i, s + 1));
                    }
                    if constexpr (kScaledSixBit && kTwoBit) {
                        scales[i] = q2_pair_scales_256(
                            group + row_group_block_scales_at(T, b) + 16 * (H == 1 ? h : i), s / 4);
                    } else if constexpr (kScaledSixBit) {
                        const uint8_t* sc = q6_scales_of(H == 1 ? h : i);
                        scales[i] = q6_pair_scales_256(sc + 16 * (s / 4));
                        if (s == 0) start_factors[i] = q6_start_factors_256(sc, sc + 16);  // once a block, not a column
                    }
                }
#pragma GCC unroll 4
                for (int c = 0; c < C; ++c) {
                    const __m256i x0 = step(c, xoff, s), x1 = step(c, xoff, s + 1);
#pragma GCC unroll 2
                    for (int i = 0; i < H; ++i) {
                        if constexpr (kScaledSixBit) {
                            // Two steps of codes up to 63: 2 * 2 * 63 * 127 = 32004 fits the int16 lanes.
                            const __m256i scaled = _mm256_madd_epi16(
                                _mm256_add_epi16(Dot::pairs(w0[i], x0), Dot::pairs(w1[i], x1)), scales[i]);
                            if (kTwoBit && s == 0) {  // no start
                                isum[i][0][c] = scaled;
                            } else if (s == 0) {
                                // The start: -32 x (first scale x first half sum + second x second).
                                const __m256i start = _mm256_madd_epi16(_mm256_set1_epi32(x.half_pairs_of(j0 + c)[b]),
                                                                        start_factors[i]);
                                isum[i][0][c] = _mm256_add_epi32(start, scaled);
                            } else {
                                isum[i][0][c] = _mm256_add_epi32(isum[i][0][c], scaled);
                            }
                        } else {
                            isum[i][s / 4][c] = Dot::dot_pair(isum[i][s / 4][c], w0[i], x0, w1[i], x1);
                        }
                    }
                }
            }
        } else if constexpr (kEight) {
#pragma GCC unroll 8
            for (int s = 0; s < 8; ++s) {
                typename Dot::W w[H];
#pragma GCC unroll 2
                for (int i = 0; i < H; ++i)
                    w[i] = Dot::template prepare<true>(
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + s * 64 + 32 * i)));
#pragma GCC unroll 4
                for (int c = 0; c < C; ++c) {
                    const __m256i xs = step(c, xoff, s);
#pragma GCC unroll 2
                    for (int i = 0; i < H; ++i) {
                        __m256i& sum = isum[i][s % K][c];
                        sum = Dot::template dot<true>(sum, w[i], xs);
                    }
                }
            }
        } else {
            [[maybe_unused]] __m256i narrow[H][C];  // [half, column] int16 pair sums since the last widen
#pragma GCC unroll 4
            for (int s = 0; s < 4; ++s) {  // low nibbles: step s; high nibbles: step 4 + s
                typename Dot::W lo[H], hi[H];
#pragma GCC unroll 2
                for (int i = 0; i < H; ++i) {
                    __m256i low, high;
                    if constexpr (kUnpacked) {
                        const uint8_t* made = made_block + s * 64 + 32 * (H == 1 ? h : i);
                        low = _mm256_load_si256(reinterpret_cast<const __m256i*>(made));
                        high = _mm256_load_si256(reinterpret_cast<const __m256i*>(made + 4 * 64));
                    } else {
                        nibble_steps_256<T>(codes + 32 * i, s, low, high);
                    }
                    lo[i] = Dot::template prepare<kTable>(low);
                    hi[i] = Dot::template prepare<kTable>(high);
                }
#pragma GCC unroll 4
                for (int c = 0; c < C; ++c) {
                    const __m256i xlo = step(c, xoff, s), xhi = step(c, xoff, 4 + s);
#pragma GCC unroll 2
                    for (int i = 0; i < H; ++i) {
                        if constexpr (kInt16Sums) {  // widened every kWiden iterations (2 steps each)
                            constexpr int kWiden = row_group_int16_steps(T) / 2;
                            const __m256i p = _mm256_add_epi16(Dot::pairs(lo[i], xlo), Dot::pairs(hi[i], xhi));
                            narrow[i][c] = s % kWiden == 0 ? p : _mm256_add_epi16(narrow[i][c], p);
                            if (s == kWiden - 1)  // the start joins at the first widen: no register held for it
                                isum[i][0][c] =
                                    _mm256_add_epi32(block_start_256<kStartFactor>(x, j0 + c, b),
                                                     Dot::widen(narrow[i][c]));
                            else if (s % kWiden == kWiden - 1)
                                isum[i][0][c] = _mm256_add_epi32(isum[i][0][c], Dot::widen(narrow[i][c]));
                        } else if constexpr (K == 2) {
                            isum[i][0][c] = Dot::template dot<kTable>(isum[i][0][c], lo[i], xlo);
                            isum[i][1][c] = Dot::template dot<kTable>(isum[i][1][c], hi[i], xhi);
                        } else if constexpr (kTable) {
                            isum[i][0][c] = Dot::template dot<true>(isum[i][0][c], lo[i], xlo);
                            isum[i][0][c] = Dot::template dot<true>(isum[i][0][c], hi[i], xhi);
                        } else {
                            isum[i][0][c] = Dot::dot_pair(isum[i][0][c], lo[i], xlo, hi[i], xhi);
                        }
                    }
                }
            }
        }
#pragma GCC unroll 2
        for (int i = 0; i < H; ++i) {
            const int half = H == 1 ? h : i;
            if constexpr (kScaledSixBit) {  // the sums are scaled: the super-block scale d alone
                const uint8_t* super = group + row_group_super_scales_at(T, b);
                const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(super + 16 * half)));
#pragma GCC unroll 4
                for (int c = 0; c < C; ++c)
                    acc[i][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[i][0][c]),
                                                _mm256_mul_ps(d, _mm256_set1_ps(x.scales_of(j0 + c)[b])), acc[i][c]);
                if constexpr (kTwoBit) q2_k_mins_256<C>(group, b, half, x, j0, acc[i]);
            } else if constexpr (kSixBit) {
                const uint8_t* super = group + row_group_super_scales_at(T, b);
                const uint8_t* sc =
                    group + row_group_block_scales_at(T, b) + (kTwoBit ? 16 : 8) * half;
                const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(super + 16 * half)));
                __m256 sca, scb;
                if constexpr (kTwoBit) {  // lane r: bytes 2r, 2r + 1 (sc | mn << 4), low nibbles
                    const __m256i pairs =
                        _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc)));
                    sca = _mm256_cvtepi32_ps(_mm256_and_si256(pairs, _mm256_set1_epi32(15)));
                    scb = _mm256_cvtepi32_ps(
                        _mm256_and_si256(_mm256_srli_epi32(pairs, 16), _mm256_set1_epi32(15)));
                } else {
                    auto i8_lanes = [](const uint8_t* p) {
                        return _mm256_cvtepi8_epi32(
                            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
                    };
                    sca = _mm256_cvtepi32_ps(i8_lanes(sc));
                    scb = _mm256_cvtepi32_ps(i8_lanes(sc + 16));
                }
#pragma GCC unroll 4
                for (int c = 0; c < C; ++c)
                    acc[i][c] = scale_chunk_q6<avx2::Isa>(isum[i][0][c], isum[i][1][c], sca, scb, d,
                                                          _mm256_set1_ps(x.scales_of(j0 + c)[b]), acc[i][c]);
                if constexpr (kTwoBit) q2_k_mins_256<C>(group, b, half, x, j0, acc[i]);
            } else {
                // The half's 8 rows' scales (Q4_KR, Q5_KR: d * sc) and offsets (-(dmin * mn)).
                __m256 dw, dm = _mm256_setzero_ps();
                if constexpr (row_group_affine_k(T) && kUnpacked) {
                    const float* made =
                        reinterpret_cast<const float*>(made_block + kRowGroupUnpackedScales256) +
                        half * 16;
                    dw = _mm256_load_ps(made);
                    dm = _mm256_load_ps(made + 8);
                } else if constexpr (row_group_affine_k(T)) {
                    const AffineScales256 a = affine_k_scales_256<T>(group, b, half);
                    dw = a.dw, dm = a.dm;
                } else if constexpr (row_group_f32_scales(T)) {  // IQ4_XSR
                    dw = _mm256_loadu_ps(
                        reinterpret_cast<const float*>(group + row_group_d_at(T, b)) + 8 * half);
                } else {
                    dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(
                        group + row_group_d_at(T, b) + 16 * half)));
                }
#pragma GCC unroll 4
                for (int c = 0; c < C; ++c) {
                    __m256i sum = isum[i][0][c];
                    if constexpr (K == 2) sum = _mm256_add_epi32(sum, isum[i][1][c]);
                    const __m256 dx = _mm256_set1_ps(x.scales_of(j0 + c)[b]);
                    acc[i][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(dw, dx), acc[i][c]);
                    // As the chunked affine types. The sum converted at quantization (a broadcast
                    // load), where one convert in the vector took one operation and a scalar
                    // convert and broadcast three (session 40, Xeon, BM_KQuantRowGroupsPrefill
                    // on AVX2 and AVX-VNNI: the same time, within the runs' 3-5%).
                    if constexpr (row_group_affine_k(T))
                        acc[i][c] = _mm256_fmadd_ps(_mm256_set1_ps(x.float_sums_of(j0 + c)[b]), _mm256_mul_ps(dm, dx),
                                                    acc[i][c]);
                }
            }
        }
    }
#pragma GCC unroll 2
    for (int i = 0; i < H; ++i) {
        const int half = H == 1 ? h : i;
        const unsigned mask = (lanes >> (8 * half)) & 0xffu;
        // Lane r's mask element: all ones where bit r is set.
        const __m256i store = _mm256_cmpeq_epi32(
            _mm256_and_si256(_mm256_set1_epi32(int(mask)), _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128)),
            _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128));
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) {
            float* out = y + c * ldy + 8 * half;
            if (mask == 0xffu)
                _mm256_storeu_ps(out, acc[i][c]);
            else
                _mm256_maskstore_ps(out, store, acc[i][c]);
        }
    }
}

// Q6_KR takes both halves at once up to 4 columns, though its sums then spill: a tile of one
// half reads the group twice (session 38, tools/kernel_ab q4_k_m, where Q6_K holds ffn_down, a
// share of attn_qkv and the LM head; 0.8B forwards: avx2 width 4 0.987, width 5 1.012 and 0.961,
// width 8 0.993 (an A/A run 0.992); avxvnni width 4 0.966, width 5 0.954).
template <WType T>
constexpr int64_t row_group_both_halves_up_to_256 = row_group_sub_block_sums(T) ? 4 : 2;

// Both halves at once where the tile's sums fit the registers (up to 2 columns; Q6_KR up to 4,
// above), else one half at a time (the second half then reads the group again, from L1 or L2).
// Chains: a policy bound by the dot product's latency (AVX-VNNI) takes two a (half, column) where
// a tile has a single column, or one half: on the 2-core Xeon VM (tools/kernel_ab ISA=avxvnni,
// 0.8B forwards) two chains in the one-half tiles took 0.985-0.991x the time at widths 3 and 4
// (q4_0 and q8_0), and at width 2 (both halves, two columns) 1.001-1.002x: left at one. Q6_KR
// always takes two, one a sub-block; its both-halves tiles of 2 columns then spill a few sums and
// still gain (kernels_bench BM_GemmQ6K 2048 x 6144, width 2, against one half at a time: avxvnni
// 0.85x the time, avx2 0.84x).
template <class Dot, WType T, int C, bool kUnpacked>
void row_group_columns_256(const RowGroupGeometry& L, const uint8_t* group,
                           const QuantizedColumns& x, int64_t j0, unsigned lanes, float* y,
                           int64_t ldy, const uint8_t*& fetch,
                           const RowGroupFetchShare256 (&shares)[2], const uint8_t* unpacked) {
    // Q6_KR: two sums a (half, column), one a sub-block, unless its sums are scaled as they widen.
    constexpr bool kSubBlockSums = row_group_sub_block_sums(T) && !Dot::kWidensLate;
    if constexpr (C <= row_group_both_halves_up_to_256<T>) {
        constexpr int K = kSubBlockSums || (Dot::kLatencyBound && C == 1) ? 2 : 1;
        row_group_tile_256<Dot, T, 2, K, C, kUnpacked>(L, group, 0, x, j0, lanes, y, ldy, fetch,
                                                       shares[0], unpacked);
    } else {
        for (int h = 0; h < 2; ++h)
            if ((lanes >> (8 * h)) & 0xffu)
                row_group_tile_256<Dot, T, 1, kSubBlockSums || Dot::kLatencyBound ? 2 : 1, C,
                                   kUnpacked>(L, group, h, x, j0, lanes, y, ldy, fetch, shares[h],
                                              unpacked);
    }
}

// The column passes over a group that fetch: those of its first 8 columns. Past those a prefill's
// further passes find the group in cache, and a cursor spread over all of them fell behind the
// first passes' reads.
constexpr int64_t kRowGroupFetchingCols256 = 8;

// Passes over a group a tile of c columns makes: one while it takes both halves at once.
template <WType T>
constexpr int row_group_passes_256(int64_t c) {
    return c <= row_group_both_halves_up_to_256<T> ? 1 : 2;
}

// Rows [r0, r1) of a row-group matrix of type T times x's columns: y[j * ldy + r].
template <class Dot, WType T>
void gemm_row_groups_256(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy, int64_t r0,
                         int64_t r1) {
    const RowGroupGeometry L = row_group_geometry(T, w.cols);
    const int64_t g0 = r0 / kRowGroupRows, g1 = row_groups(r1);
    auto at = [&](int64_t g) { return w.data + size_t(g) * L.group_bytes; };
    const uint8_t* fetch = at(g0);
    int64_t passes = 0;  // per group, that fetch
    for (int64_t j0 = 0; j0 < std::min(x.n, kRowGroupFetchingCols256); j0 += kRowGroupTileCols256)
        passes += row_group_passes_256<T>(std::min<int64_t>(kRowGroupTileCols256, x.n - j0));
    const int64_t step = int64_t(L.group_bytes) / (L.blocks * passes);
    bool unpack_once = false;
    uint8_t* unpacked = nullptr;  // [blocks, row_group_unpacked_block_bytes_256<T>]
    if constexpr (row_group_unpackable_256<Dot, T>) {
        unpack_once = x.n > kRowGroupUnpackOnceAbove256;
        if (unpack_once) unpacked = tile_scratch(L.blocks * row_group_unpacked_block_bytes_256<T>);
    }
    for (int64_t g = g0; g < g1; ++g) {
        const unsigned lanes = row_group_lanes(g, r0, r1);
        if constexpr (row_group_unpackable_256<Dot, T>)
            if (unpack_once) unpack_row_group_256<T>(L, at(g), unpacked);
        int64_t pass = 0;
        for (int64_t j0 = 0; j0 < x.n; j0 += kRowGroupTileCols256) {
            const int64_t c = std::min<int64_t>(kRowGroupTileCols256, x.n - j0);
            RowGroupFetchShare256 shares[2];
            if (j0 < kRowGroupFetchingCols256)
                for (int i = 0; i < row_group_passes_256<T>(c); ++i, ++pass)
                    shares[i] = {at(g1), pass * int64_t(L.group_bytes) / passes, step};
            float* yt = y + j0 * ldy + g * kRowGroupRows;
            auto columns = [&]<bool kUnpacked>() {
                switch (c) {
                    case 4:
                        return row_group_columns_256<Dot, T, 4, kUnpacked>(
                            L, at(g), x, j0, lanes, yt, ldy, fetch, shares, unpacked);
                    case 3:
                        return row_group_columns_256<Dot, T, 3, kUnpacked>(
                            L, at(g), x, j0, lanes, yt, ldy, fetch, shares, unpacked);
                    case 2:
                        return row_group_columns_256<Dot, T, 2, kUnpacked>(
                            L, at(g), x, j0, lanes, yt, ldy, fetch, shares, unpacked);
                    default:
                        return row_group_columns_256<Dot, T, 1, kUnpacked>(
                            L, at(g), x, j0, lanes, yt, ldy, fetch, shares, unpacked);
                }
            };
            if constexpr (row_group_unpackable_256<Dot, T>) {
                if (unpack_once) {
                    columns.template operator()<true>();
                    continue;
                }
            }
            columns.template operator()<false>();
        }
    }
}

// The row-group product for w's type (any row-group type).
template <class Dot>
void gemm_row_groups_256(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy, int64_t r0,
                         int64_t r1) {
    if (r0 >= r1 || x.n <= 0) return;
    visit_row_group_type(w.type, [&]<WType T>() { gemm_row_groups_256<Dot, T>(w, x, y, ldy, r0, r1); });
}

}  // namespace
}  // namespace nextn::x86
