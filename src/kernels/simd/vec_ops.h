#pragma once
// Norms, activations, the Gated-DeltaNet recurrence and a streaming sum, written once over an
// ISA description `I` (x86/<isa>/isa_<isa>.h, arm/isa_neon.h). Include only from an ISA
// translation unit; use builtins rather than <cmath> so no inline library code is emitted with
// ISA flags.
//
// Tails use the same vector code with masked loads/stores, so an element's arithmetic never
// depends on where it falls in a buffer (and hence never on the batch width).
#include <cstdint>

#include "kernels/ref/ref.h"
#include "kernels/simd/rank1_update.h"
#include "kernels/simd/staged_rows.h"

namespace nextn::simd {

// The first len (1..I::L) floats at p as a vector (zeros past them), and the same store.
template <class I>
typename I::V load_len(const float* p, int len) {
    return len == I::L ? I::load(p) : I::load_part(p, len);
}
template <class I>
void store_len(float* p, typename I::V v, int len) {
    if (len == I::L)
        I::store(p, v);
    else
        I::store_part(p, v, len);
}

// sum of x[i]^2 over one row: one accumulator, fma per vector, then I::hsum.
template <class I>
float sum_squares(const float* x, int64_t d) {
    typename I::V acc = I::zero();
    int64_t c = 0;
    for (; c + I::L <= d; c += I::L) {
        const auto v = I::load(x + c);
        acc = I::fma(v, v, acc);
    }
    if (c < d) {
        const auto v = I::load_part(x + c, int(d - c));
        acc = I::fma(v, v, acc);
    }
    return I::hsum(acc);
}

// y = x * scale (* w when w is given), per vector, tails masked.
template <class I>
void scale_row(const float* x, const float* w, float scale, int64_t d, float* y) {
    const auto s = I::set1(scale);
    for (int64_t c = 0; c < d; c += I::L) {
        const int len = d - c < I::L ? int(d - c) : I::L;
        auto v = I::mul(load_len<I>(x + c, len), s);
        if (w) v = I::mul(v, load_len<I>(w + c, len));
        store_len<I>(y + c, v, len);
    }
}

template <class I>
void rmsnorm(const float* x, const float* w, int64_t n_rows, int64_t d, float eps, float* y) {
    for (int64_t i = 0; i < n_rows; ++i) {
        const float ss = sum_squares<I>(x + i * d, d);
        scale_row<I>(x + i * d, w, 1.0f / __builtin_sqrtf(ss / float(d) + eps), d, y + i * d);
    }
}

template <class I>
void l2norm(const float* x, int64_t n_rows, int64_t d, float eps, float* y) {
    for (int64_t i = 0; i < n_rows; ++i) {
        const float ss = sum_squares<I>(x + i * d, d);
        scale_row<I>(x + i * d, nullptr, 1.0f / __builtin_sqrtf(ss + eps), d, y + i * d);
    }
}

// Applies f to every vector of x (and u when given), tails masked.
template <class I, class F>
void map(const float* x, const float* u, float* y, int64_t n, F f) {
    for (int64_t i = 0; i < n; i += I::L) {
        const int len = n - i < I::L ? int(n - i) : I::L;
        store_len<I>(y + i, f(load_len<I>(x + i, len), u ? load_len<I>(u + i, len) : I::zero()), len);
    }
}

template <class I>
typename I::V sigmoid_v(typename I::V x) {
    return I::div(I::set1(1.0f), I::add(I::set1(1.0f), I::exp(I::sub(I::zero(), x))));
}

template <class I>
typename I::V silu_v(typename I::V x) {
    return I::div(x, I::add(I::set1(1.0f), I::exp(I::sub(I::zero(), x))));
}

template <class I>
void sigmoid(const float* x, float* y, int64_t n) {
    map<I>(x, nullptr, y, n, [](auto v, auto) { return sigmoid_v<I>(v); });
}

template <class I>
void silu(const float* x, float* y, int64_t n) {
    map<I>(x, nullptr, y, n, [](auto v, auto) { return silu_v<I>(v); });
}

template <class I>
void swiglu(const float* gate, const float* up, float* y, int64_t n) {
    map<I>(gate, up, y, n, [](auto g, auto u) { return I::mul(silu_v<I>(g), u); });
}

// Causal depthwise conv (KernelTable::causal_conv): per output row, channels a vector at a time
// (tails masked), taps in order, multiply then add.
template <class I>
void causal_conv(const float* x, const float* w, int64_t ld, int64_t T, int64_t C, int K,
                 float* out, int64_t ld_out) {
    for (int64_t t = 0; t < T; ++t) {
        for (int64_t c = 0; c < C; c += I::L) {
            const int len = C - c < I::L ? int(C - c) : I::L;
            auto acc = I::zero();
            for (int j = 0; j < K; ++j)
                acc = I::add(acc, I::mul(load_len<I>(w + j * ld + c, len),
                                         load_len<I>(x + (t + j) * ld + c, len)));
            store_len<I>(out + t * ld_out + c, acc, len);
        }
    }
}

// NeoX rotary embedding (KernelTable::rope_neox): I::L pairs at a time, tails masked.
template <class I>
void rope_neox(float* x, int64_t n, int64_t stride, int64_t half, const float* cos, const float* sin) {
    for (int64_t h = 0; h < n; ++h) {
        float* lo = x + h * stride;
        float* hi = lo + half;
        for (int64_t i = 0; i < half; i += I::L) {
            const int len = half - i < I::L ? int(half - i) : I::L;
            const auto a = load_len<I>(lo + i, len), b = load_len<I>(hi + i, len);
            const auto c = load_len<I>(cos + i, len), s = load_len<I>(sin + i, len);
            store_len<I>(lo + i, I::sub(I::mul(a, c), I::mul(b, s)), len);
            store_len<I>(hi + i, I::add(I::mul(b, c), I::mul(a, s)), len);
        }
    }
}

template <class I>
void softmax(float* x, int64_t n_rows, int64_t d) {
    for (int64_t i = 0; i < n_rows; ++i) {
        float* xi = x + i * d;
        // The maximum is exact in any order.
        float mx = xi[0];
        int64_t c = 0;
        if (d >= I::L) {
            auto m = I::load(xi);
            for (c = I::L; c + I::L <= d; c += I::L) m = I::max(m, I::load(xi + c));
            mx = I::hmax(m);
        }
        for (; c < d; ++c) mx = xi[c] > mx ? xi[c] : mx;
        const auto vmx = I::set1(mx);
        typename I::V sum = I::zero();
        for (c = 0; c < d; c += I::L) {
            const int len = d - c < I::L ? int(d - c) : I::L;
            if (len == I::L) {
                const auto e = I::exp(I::sub(I::load(xi + c), vmx));
                I::store(xi + c, e);
                sum = I::add(sum, e);
            } else {
                const auto e = I::keep(I::exp(I::sub(I::load_part(xi + c, len), vmx)), len);
                I::store_part(xi + c, e, len);
                sum = I::add(sum, e);
            }
        }
        scale_row<I>(xi, nullptr, 1.0f / I::hsum(sum), d, xi);
    }
}

// Rows weighted_rows_group prefetches ahead of the one it reads. Value rows ldv apart with other
// values between them (the position-major cache this kernel was first measured on) are a
// strided stream the hardware prefetcher left alone, each row a memory latency. On the head-major
// cache's contiguous rows it still pays (BM_WeightedRows, 3 alternating runs, with -> without:
// 4096 positions f32 325-534 -> 583-632 us, f16 97-213 -> 107-259; 32768 f32 5.0-6.9 -> 6.2-6.5
// ms, f16 2.5-2.9 -> 2.8-4.1). Clamped to the last row.
constexpr int64_t kWeightedRowsAhead = 16;

// Rows g0 .. g0+NG-1 of weighted_rows: each pass over the positions loads a slice of U vectors
// of every value row once and meets all NG probability rows with it, so the values are read
// once per call, not once per row. kernels_bench BM_WeightedRows, a 0.8B kv head (4 rows of 256
// values, then 512 apart in a position-major cache), one row per pass without prefetch -> this,
// medians of 3 alternating runs: 4096 positions f32 890 -> 478 us, f16 327 -> 157; 32768
// positions f32 19.3 -> 5.4 ms, f16 10.0 -> 3.4.
// next_rows: weighted_rows' position blocks (below) pass the number of rows of the next block,
// whose slice each slice's pass fetches into L2 as it goes, so that every pass over the
// following block hits L2 and the fetches spread over all the passes at the pace they compute;
// 0 for the last block, whose passes fetch their own slice kWeightedRowsAhead positions ahead;
// -1 for rows staged in L1, which fetch nothing. (The first pass fetching the next block's rows
// whole, as until session 57, left the other passes nothing to overlap: BM_WeightedRows 4 rows,
// one thread, two alternating runs, whole -> spread: 32768 positions f32 3051-3291 -> 2717-2815
// us, f16 1689-1701 -> 1446-1527, q8_0 1344-1382 -> 1234-1270; 4096 f32 202-209 -> 170-175, f16
// 123-128 -> 109-114, q8_0 126-132 -> 119-129. Earlier, blocks of 64 positions whose first pass
// fetched its own block's rows whole measured slower than the per-slice fetch alone.)
template <class I, class D, int NG>
void weighted_rows_group(const float* p, int64_t ldp, const uint8_t* v, int64_t ldv, int64_t n,
                         int64_t d, float* out, bool accumulate, int64_t next_rows) {
    using V = typename I::V;
    // Accumulators NG x U within the register file (32 vectors with AVX-512, 16 with AVX2).
    constexpr int U = I::L >= 16 ? 4 : 2;
    constexpr int64_t kSliceBytes = value_bytes<D>(U * I::L);
    int64_t e0 = 0;
    for (; e0 + U * I::L <= d; e0 += U * I::L) {
        V acc[NG][U];
#pragma GCC unroll 4
        for (int g = 0; g < NG; ++g)
#pragma GCC unroll 4
            for (int u = 0; u < U; ++u)
                acc[g][u] = accumulate ? I::load(out + g * d + e0 + u * I::L) : I::zero();
        const int64_t slice = value_bytes<D>(e0);
        for (int64_t pos = 0; pos < n; ++pos) {
            if (next_rows < 0) {          // rows already in L1 (staged): nothing to fetch
            } else if (next_rows == 0) {  // the last block: this slice's rows a few positions ahead
                const int64_t next = pos + kWeightedRowsAhead < n ? pos + kWeightedRowsAhead : n - 1;
                const uint8_t* ahead = v + next * ldv + slice;
                for (int64_t b = 0; b < kSliceBytes; b += 64) __builtin_prefetch(ahead + b, 0, 3);
            } else if (pos < next_rows) {  // this slice of the next block's row pos into L2
                const uint8_t* ahead = v + (n + pos) * ldv + slice;
                for (int64_t b = 0; b < kSliceBytes; b += 64) __builtin_prefetch(ahead + b, 0, 1);
            }
            const uint8_t* vp = v + pos * ldv;
            V x[U];
#pragma GCC unroll 4
            for (int u = 0; u < U; ++u) {
                // Where a slice starts a block (AVX-512: 64 values, two blocks), the block index
                // written as e0 / 32 plus a constant lets the compiler see that a block's two
                // vectors share its scale, and widen it once: BM_WeightedRows q8_0, 4 rows, one
                // thread, 3 alternating runs, 4096 positions 107-122 -> 103-107 us, 32768
                // 860-1004 -> 800-894.
                if constexpr (U * I::L % 32 == 0)
                    x[u] = D::sub(vp, e0 / 32 + u * I::L / 32, u * I::L % 32 / I::L);
                else
                    x[u] = row_vector<I, D>(vp, e0 + u * I::L);
            }
            rank1_update<I, NG, U>(acc, x, [&](int g) { return p[g * ldp + pos]; });
        }
#pragma GCC unroll 4
        for (int g = 0; g < NG; ++g)
#pragma GCC unroll 4
            for (int u = 0; u < U; ++u) I::store(out + g * d + e0 + u * I::L, acc[g][u]);
    }
    for (; e0 < d; e0 += I::L) {  // leftover vectors, the last one possibly partial
        const int len = d - e0 < I::L ? int(d - e0) : I::L;
        V acc[NG];
#pragma GCC unroll 4
        for (int g = 0; g < NG; ++g) acc[g] = accumulate ? I::load_part(out + g * d + e0, len) : I::zero();
        for (int64_t pos = 0; pos < n; ++pos) {
            // (A partial vector only for the float types: the block types' rows are whole blocks.)
            const V x =
                len == I::L ? row_vector<I, D>(v + pos * ldv, e0) : D::part(v + pos * ldv, e0, len);
#pragma GCC unroll 4
            for (int g = 0; g < NG; ++g) acc[g] = I::fma(I::set1(p[g * ldp + pos]), x, acc[g]);
        }
#pragma GCC unroll 4
        for (int g = 0; g < NG; ++g) I::store_part(out + g * d + e0, acc[g], len);
    }
}

// out[g, :] = (accumulate ? out[g, :] : 0) + sum_pos p[g, pos] * v[pos, :], one fma per
// position in order (see KernelTable), probability rows 4 at a time. D reads the value rows (the
// gemm decoders: DecodeF32, DecodeF16, DecodeQ8_0, whose values d * q are exact); v is n rows of
// D's values, ldv bytes apart.
//
// The positions go in blocks of about kWeightedRowsBlockBytes of value rows, each block
// continuing the chains the one before stored (exact: the same fma per position in order), and
// with up to 4 rows each block's passes fetch the next block into L2:
// - More than 4 rows (a verify's or prefill's block of tokens over one kv head) take a pass per
//   4 rows, and the block stays in L2 for all of them (f32 rows; narrower ones are widened into
//   L1 first: weighted_rows_staged). Unblocked, a 0.8B width-5 verify at 8192
//   positions read each head's 8 MB of values 5 times from memory: weighted_rows was 31% of
//   its time.
// - Decode's 4 rows still take one pass per slice of U vectors, which now all hit L2 instead of
//   walking memory with a stride: BM_WeightedRows (one thread, one 0.8B kv head, 4 rows, two
//   alternating runs) 32768 positions f32 6.7-9.2 -> 3.4-4.3 ms, f16 3.3-4.2 -> 1.9-2.0 ms;
//   4096 positions f32 603-690 -> 311-449 us, f16 175-235 -> 106-223. In the 0.8B q4_0 decode
//   at 8192 positions (perf) weighted_rows went from 6.8 to 4.7 ms of a token.
constexpr int64_t kWeightedRowsBlockBytes = int64_t(128) << 10;

// weighted_rows_group for `rows` in [1, NG] (its row count in a template argument).
template <class I, class D, int NG>
void weighted_rows_group_of(int rows, const float* p, int64_t ldp, const uint8_t* v, int64_t ldv,
                            int64_t n, int64_t d, float* out, bool accumulate, int64_t next_rows) {
    if (rows == NG)
        return weighted_rows_group<I, D, NG>(p, ldp, v, ldv, n, d, out, accumulate, next_rows);
    if constexpr (NG > 1)
        weighted_rows_group_of<I, D, NG - 1>(rows, p, ldp, v, ldv, n, d, out, accumulate,
                                             next_rows);
}

// All G rows of weighted_rows over positions [0, n): passes of up to kMostRows rows (4 or 6), as
// even as can be (decode's 4 rows in one pass). Rows read from L2 (f32 values) take passes of up
// to 6, a width-5 verify's 20 rows 4 passes of 5, each reading the position block once:
// BM_WeightedRows f32, one thread, 20 rows, passes of 4 -> these, four alternating runs: 512
// positions 53.8-56.6 -> 49.6-51.4 us, 4096 464-508 -> 435-446; AVX2 4096 770 -> 678 (32 rows
// within noise). Rows staged in L1 measured slower so (f16 and q8_0, 20 rows, 4096 positions
// 374-384 -> 390-413 us) and keep passes of 4.
template <class I, class D, int kMostRows>
void weighted_rows_groups(const float* p, int64_t ldp, int64_t G, const uint8_t* v, int64_t ldv,
                          int64_t n, int64_t d, float* out, bool accumulate, int64_t next_rows) {
    const int64_t passes = (G + kMostRows - 1) / kMostRows, per_pass = (G + passes - 1) / passes;
    for (int64_t g = 0; g < G; g += per_pass)
        weighted_rows_group_of<I, D, kMostRows>(int(G - g < per_pass ? G - g : per_pass),
                                                p + g * ldp, ldp, v, ldv, n, d, out + g * d,
                                                accumulate, next_rows);
}

// More than 4 rows of half or block values (a verify's or prefill's block of tokens over an
// f16 or q8_0 cache): the passes of 4 rows would each decode every value again, which for Q8_0
// (widen the codes twice, then scale) costs more than the fma it feeds, and would each read the
// position block from L2. So each run of positions is widened to f32 once, into a stack buffer
// that stays in L1, and every pass reads that; the bits are the same, the widening being exact.
// kernels_bench BM_WeightedRows, 20 rows, one thread, Xeon (session 56), decoding in every pass
// -> staged: 4096 positions q8_0 557-595 -> 370-378 us, f16 386-401 -> 371-398; 32768 q8_0
// 4988-5082 -> 3151-3331, f16 4162-4245 -> 3651-3830.
template <class I, class D>
void weighted_rows_staged(const float* p, int64_t ldp, int64_t G, const uint8_t* v, int64_t ldv,
                          int64_t n, int64_t d, float* out, bool accumulate) {
    alignas(64) float stage[kStageFloats];  // [chunk, d] f32
    const int64_t chunk = kStageFloats / d;
    const uint8_t* rows = reinterpret_cast<const uint8_t*>(stage);
    for (int64_t b0 = 0; b0 == 0 || b0 < n; b0 += chunk) {
        const int64_t nb = n - b0 < chunk ? n - b0 : chunk;
        const bool continuing = accumulate || b0 > 0;
        const float* pb = p + b0;
        widen_rows<I, D>(v + b0 * ldv, ldv, nb, d, stage);
        weighted_rows_groups<I, F32Rows<I>, 4>(pb, ldp, G, rows, d * 4, nb, d, out, continuing, -1);
    }
}

template <class I, class D>
void weighted_rows(const float* p, int64_t ldp, int64_t G, const uint8_t* v, int64_t ldv, int64_t n,
                   int64_t d, float* out, bool accumulate) {
    if (G > 4 && D::kBlockBytes < 128 && d <= kStageFloats)
        return weighted_rows_staged<I, D>(p, ldp, G, v, ldv, n, d, out, accumulate);
    // (No std::max / std::min here: an inline library template compiled with ISA flags could be
    // the copy the linker keeps for every caller.)
    const int64_t fit = kWeightedRowsBlockBytes / ldv;
    const int64_t block = fit > 16 ? fit : 16;
    for (int64_t b0 = 0; b0 == 0 || b0 < n; b0 += block) {
        const int64_t nb = n - b0 < block ? n - b0 : block;
        const bool continuing = accumulate || b0 > 0;
        const float* pb = p + b0;
        const uint8_t* vb = v + b0 * ldv;
        // The next block's rows, fetched by the passes: only for up to 4 rows. With more, each
        // block stays in L2 for all the groups' passes anyway, and fetching the next block
        // (whole, in the first pass) measured slower there (a 0.8B width-5 verify at 8192
        // positions 54.5-55.4 against 50.9-51.9 ms with each pass fetching its own slice ahead).
        const int64_t next_rows = G > 4 ? 0 : n - b0 - nb < block ? n - b0 - nb : block;
        weighted_rows_groups<I, D, 6>(pb, ldp, G, vb, ldv, nb, d, out, continuing, next_rows);
    }
}

// Vector u of a block row's U vectors at p; the last has `last` lanes when Partial.
template <class I, int U, bool Partial>
[[gnu::always_inline]] inline typename I::V load_block_vector(const float* p, int u, int last) {
    if constexpr (Partial) {
        if (u == U - 1) return I::load_part(p, last);
    }
    return I::load(p);
}

// A token's first pass over a block of state S0 (rows s0_stride floats apart): acc[u] =
// sum over d of (decay * S0[d]) * k[d], d in increasing order. While it waits on its FMA chain it
// fetches the rows of the next block (rows prefetch_stride floats apart; nullptr: none).
// (Always inlined, so that the accumulators stay in registers.)
template <class I, int U, bool Partial>
[[gnu::always_inline]] inline void decayed_key_sum(const float* S0, int64_t s0_stride, int Dk, int last, float decay,
                     const float* kj, const float* prefetch, int64_t prefetch_stride,
                     typename I::V* acc) {
    const typename I::V vdecay = I::set1(decay);
#pragma GCC unroll 8
    for (int u = 0; u < U; ++u) acc[u] = I::zero();
    for (int d = 0; d < Dk; ++d) {
        const typename I::V kd = I::set1(kj[d]);
        if (prefetch)
#pragma GCC unroll 8
            for (int u = 0; u < U; ++u)
                __builtin_prefetch(prefetch + d * prefetch_stride + u * I::L, 0, 3);
#pragma GCC unroll 8
        for (int u = 0; u < U; ++u)
            acc[u] = I::fma(I::mul(load_block_vector<I, U, Partial>(S0 + d * s0_stride + u * I::L, u, last),
                                   vdecay),
                            kd, acc[u]);
    }
}

// Calls fn.template operator()<U', Partial>(last) for a block of `width` value columns: U full
// vectors, one full vector, or one partial vector of `width` lanes.
template <class I, int U, class Fn>
void visit_block_width(int width, Fn&& fn) {
    if (width == U * I::L)
        fn.template operator()<U, false>(I::L);
    else if (width == I::L)
        fn.template operator()<1, false>(I::L);
    else
        fn.template operator()<1, true>(width);
}

// One value head, value columns [e0, e0 + U*L) (the last vector has `last` lanes, Partial when
// last < L). S0 / S1 point at column e0 of the head's row 0 and step s0_stride / s1_stride
// floats per key row (S1 may equal S0; StreamS1: S1 is written with streaming stores); vj / oj
// at column e0 of the value / output. Per lane this is exactly the scalar reference's sequence
// (ref/gdn_ref.cpp).
template <class I, int U, bool Partial, bool StreamS1 = false>
void gdn_columns(const float* S0, int64_t s0_stride, float* S1, int64_t s1_stride, int Dk,
                 int last, float decay, float beta, const float* kj, const float* qj,
                 const float* vj, float* oj, const float* prefetch = nullptr) {
    using V = typename I::V;
    auto load = [&](const float* p, int u) { return load_block_vector<I, U, Partial>(p, u, last); };
    auto store = [&](float* p, V v, int u) {
        if constexpr (Partial) {
            if (u == U - 1) return I::store_part(p, v, last);
        }
        I::store(p, v);
    };
    const V vdecay = I::set1(decay);
    V acc[U];  // mem = sum_d decay * S[d,e] k[d]
    decayed_key_sum<I, U, Partial>(S0, s0_stride, Dk, last, decay, kj, prefetch, s0_stride, acc);
    const V vbeta = I::set1(beta);
#pragma GCC unroll 8
    for (int u = 0; u < U; ++u) acc[u] = I::mul(I::sub(load(vj + u * I::L, u), acc[u]), vbeta);
    V out[U];
#pragma GCC unroll 8
    for (int u = 0; u < U; ++u) out[u] = I::zero();
    // S[d,e] = decay * S[d,e] + k[d] delta[e]; out = sum_d S[d,e] q[d]. The decayed state is
    // formed again rather than stored by the first pass and read back (the same rounded
    // product): half the stores, which bound this loop. S0 may equal S1: each element is read
    // before it is written.
    for (int d = 0; d < Dk; ++d) {
        const V kd = I::set1(kj[d]);
        const V qd = I::set1(qj[d]);
#pragma GCC unroll 8
        for (int u = 0; u < U; ++u) {
            const V decayed = I::mul(load(S0 + d * s0_stride + u * I::L, u), vdecay);
            const V s = I::fma(kd, acc[u], decayed);
            if constexpr (StreamS1)
                I::stream(S1 + d * s1_stride + u * I::L, s, Partial && u == U - 1 ? last : I::L);
            else
                store(S1 + d * s1_stride + u * I::L, s, u);
            out[u] = I::fma(s, qd, out[u]);
        }
    }
#pragma GCC unroll 8
    for (int u = 0; u < U; ++u) store(oj + u * I::L, out[u], u);
}

using ref::GdnToken;
using ref::gdn_token;

// One pass of gdn_columns_tokens over a block (its docs) for token tk: First, the decayed state
// is formed from the state read from S0 (else from `work`); Next, the next token's (nx) decayed
// state goes into `work` and its sum with the next key into acc (else acc takes zeros); Snap,
// this token's state goes to `to` (I::stream: streamed where a vector is a whole aligned one).
// acc: [U] the token's sum_d decayed[d] k[d] on entry. Rows of `to` and of the next block are
// row_stride floats apart.
// While it computes, pass `pass` of `passes` fetches into L2 its share of the next block's rows
// (`fetch`; nullptr: none): rows pass, pass + passes, ... The passes together fetch every row,
// spread over the block's whole time; fetching the whole next block into L1 during the first
// pass (as before session 52) evicted `work`, which fills most of L1. A function rather than a
// lambda over the block's arrays, so that the compiler keeps the accumulators in registers
// whatever it inlines around it (a copy of the lambda compiled in another unit kept them on the
// stack and took 2x the time).
template <class I, int U, bool Partial, bool First, bool Next, bool Snap>
[[gnu::always_inline]] inline void gdn_token_pass(const float* S0, int64_t s0_stride, float* work,
                                                  int Dk, int last, const GdnToken& tk,
                                                  const GdnToken& nx, float* to, int64_t row_stride,
                                                  typename I::V (&acc)[U], const float* fetch,
                                                  int pass, int passes) {
    using V = typename I::V;
    constexpr int64_t W = U * I::L;  // floats per row of work
    auto load = [&](const float* p, int u) { return load_block_vector<I, U, Partial>(p, u, last); };
    const V vbeta = I::set1(tk.beta), vdecay = I::set1(tk.decay), vdecay_next = I::set1(nx.decay);
    V delta[U], out[U], acc_next[U];
#pragma GCC unroll 8
    for (int u = 0; u < U; ++u) {
        delta[u] = I::mul(I::sub(load(tk.v + u * I::L, u), acc[u]), vbeta);
        out[u] = I::zero();
        acc_next[u] = I::zero();
    }
    int fetch_row = fetch ? pass : Dk;  // the next row of the next block to fetch
    for (int d = 0; d < Dk; ++d) {
        if (d == fetch_row) {
#pragma GCC unroll 8
            for (int u = 0; u < U; ++u) __builtin_prefetch(fetch + d * row_stride + u * I::L, 0, 2);
            fetch_row += passes;
        }
        const V kd = I::set1(tk.k[d]), qd = I::set1(tk.q[d]);
        const V kd_next = Next ? I::set1(nx.k[d]) : I::zero();
#pragma GCC unroll 8
        for (int u = 0; u < U; ++u) {
            const V decayed = First ? I::mul(load(S0 + d * s0_stride + u * I::L, u), vdecay)
                                    : I::load(work + d * W + u * I::L);
            const V s = I::fma(kd, delta[u], decayed);
            if constexpr (Snap)
                I::stream(to + d * row_stride + u * I::L, s, Partial && u == U - 1 ? last : I::L);
            out[u] = I::fma(s, qd, out[u]);
            if constexpr (Next) {
                const V decayed_next = I::mul(s, vdecay_next);
                I::store(work + d * W + u * I::L, decayed_next);
                acc_next[u] = I::fma(decayed_next, kd_next, acc_next[u]);
            }
        }
    }
#pragma GCC unroll 8
    for (int u = 0; u < U; ++u) {
        if (Partial && u == U - 1)
            I::store_part(tk.out + u * I::L, out[u], last);
        else
            I::store(tk.out + u * I::L, out[u]);
        acc[u] = acc_next[u];
    }
}

// One value head's columns [e0, e0 + U*L) over T >= 2 tokens, the block's state kept in `work`
// ([Dk, U*L]) between them. token(t) gives token t's inputs (GdnToken, pointers at column e0),
// snap(t) where its state goes (row stride Dv; nullptr: nowhere; never nullptr for the last).
// Each token's pass also forms the next token's decayed state and its dot product with the next
// key, so a token costs one pass over the block instead of two, and `work` holds the decayed
// state (decay * S, the rounded product the next token starts from). Per lane the operations and
// their order are exactly gdn_columns' token after token (the scalar reference's sequence).
// fetch: the next block's state (rows Dv floats apart; nullptr: none), fetched into L2 a share
// a pass (gdn_token_pass). Session 52, the 2-core Zen 5 VM: a layer's recurrence (0.8B shapes,
// both threads) against the fetch of the whole next block into L1 in the first pass, 0.93x the
// time at T = 4 and 5 with the states in cache, 0.84-0.88x with 24 MB read between layers;
// 0.8B Q4_0 forwards alternating in one process, width 4 0.988, width 5 0.991, width 2 0.994,
// prefill of 128 0.991, Q8_0 width 4 0.994.
template <class I, int U, bool Partial, class TokenAt, class SnapAt>
[[gnu::always_inline]] inline void gdn_columns_tokens(const float* S0, int64_t s0_stride,
                                                      float* work, int Dk, int Dv, int last,
                                                      int64_t T, TokenAt&& token, SnapAt&& snap,
                                                      const float* fetch) {
    using V = typename I::V;
    GdnToken tk = token(0);
    V acc[U];  // the current token's sum_d decayed[d] k[d]
    decayed_key_sum<I, U, Partial>(S0, s0_stride, Dk, last, tk.decay, tk.k, nullptr, Dv, acc);
    for (int64_t t = 0; t < T; ++t) {
        const bool has_next = t + 1 < T;
        const GdnToken nx = has_next ? token(t + 1) : tk;
        float* const to = snap(t);
        // (Explicit calls: through one forwarding lambda the forwards took 1.01x the time.)
        const int pass = int(t), passes = int(T);
        if (t == 0 && to)  // T >= 2: token 0 has a next
            gdn_token_pass<I, U, Partial, true, true, true>(S0, s0_stride, work, Dk, last, tk, nx,
                                                            to, Dv, acc, fetch, pass, passes);
        else if (t == 0)
            gdn_token_pass<I, U, Partial, true, true, false>(S0, s0_stride, work, Dk, last, tk, nx,
                                                             to, Dv, acc, fetch, pass, passes);
        else if (has_next && to)
            gdn_token_pass<I, U, Partial, false, true, true>(S0, s0_stride, work, Dk, last, tk, nx,
                                                             to, Dv, acc, fetch, pass, passes);
        else if (has_next)
            gdn_token_pass<I, U, Partial, false, true, false>(S0, s0_stride, work, Dk, last, tk, nx,
                                                              to, Dv, acc, fetch, pass, passes);
        else  // the last token's state always goes out
            gdn_token_pass<I, U, Partial, false, false, true>(S0, s0_stride, work, Dk, last, tk, nx,
                                                              to, Dv, acc, fetch, pass, passes);
        tk = nx;
    }
}

// Runs columns [e0, e0 + width) of a head (width = U*L full vectors, or one possibly partial
// vector) with the strides given.
template <class I, int U, bool StreamS1 = false>
void gdn_block(const float* S0, int64_t s0_stride, float* S1, int64_t s1_stride, int Dk, int e0,
               int width, const GdnToken& tk, const float* prefetch = nullptr) {
    visit_block_width<I, U>(width, [&]<int Uw, bool Partial>(int last) {
        gdn_columns<I, Uw, Partial, StreamS1>(S0, s0_stride, S1, s1_stride, Dk, last, tk.decay,
                                              tk.beta, tk.k, tk.q, tk.v + e0, tk.out + e0, prefetch);
    });
}

template <class I>
void gdn_recurrence_heads(const float* state_in, float* state_out, int64_t out_stride,
                          const float* q, const float* k, const float* v, const float* g,
                          const float* beta, int64_t T, int Hk, int Hv, int Dk, int Dv,
                          bool tiled_heads, float* out, int j0, int j1) {
    constexpr int U = 4;  // vectors of value columns per pass over the head's state
    constexpr int kBlock = U * I::L;
    const int64_t head_size = int64_t(Dk) * Dv;
    auto width_at = [&](int e0) {
        return Dv - e0 >= kBlock ? kBlock : Dv - e0 >= I::L ? I::L : Dv - e0;
    };
    // The state of the block after (j, e0) in this share of heads, for its rows to be fetched
    // while (j, e0) runs (nullptr after the last): the state comes from memory, a strided
    // stream of short row pieces.
    auto next_block = [&](const float* state, int j, int e0) -> const float* {
        const int e1 = e0 + width_at(e0);
        if (e1 < Dv) return state + j * head_size + e1;
        return j + 1 < j1 ? state + (j + 1) * head_size : nullptr;
    };
    constexpr int kMaxDk = 256;
    if (T == 1) {
        // One token (decode). Into another buffer (a verify forward left open) the new state
        // goes out with stores that bypass the cache: it is read again only by the next token,
        // after the rest of the forward has streamed the weights through the caches, so
        // fetching each line before writing it (a third of this loop's memory traffic) buys
        // nothing. In place (a committed forward: plain decoding) the lines were just read, and
        // plain stores only dirty them: over the 0.8B's decode the recurrence took 0.78x the
        // time of the streamed stores into the other buffer, and streamed stores in place 1.25x.
        const bool in_place = state_out == state_in;
        for (int j = j0; j < j1; ++j) {
            const GdnToken tk = gdn_token(q, k, v, g, beta, out, 0, j, Hk, Hv, Dk, Dv, tiled_heads);
            for (int e0 = 0; e0 < Dv; e0 += width_at(e0)) {
                const float* from = state_in + j * head_size + e0;
                float* to = state_out + j * head_size + e0;
                const float* prefetch = next_block(state_in, j, e0);
                if (in_place)
                    gdn_block<I, U, false>(from, Dv, to, Dv, Dk, e0, width_at(e0), tk, prefetch);
                else
                    gdn_block<I, U, true>(from, Dv, to, Dv, Dk, e0, width_at(e0), tk, prefetch);
            }
        }
        I::fence();  // publish the streamed stores before the pool's barrier
        return;
    }
    if (Dk > kMaxDk) {
        // An unusually deep key head: token by token over the heads' states (each token's
        // state is read back by the next, so it stays in the cache).
        for (int64_t t = 0; t < T; ++t) {
            const float* src = t == 0 ? state_in : state_out + (t - 1) * out_stride;
            float* dst = state_out + t * out_stride;
            for (int j = j0; j < j1; ++j) {
                const GdnToken tk = gdn_token(q, k, v, g, beta, out, t, j, Hk, Hv, Dk, Dv, tiled_heads);
                for (int e0 = 0; e0 < Dv; e0 += width_at(e0))
                    gdn_block<I, U>(src + j * head_size + e0, Dv, dst + j * head_size + e0, Dv, Dk,
                                    e0, width_at(e0), tk, next_block(src, j, e0));
            }
        }
        return;
    }
    // Several tokens: a block of value columns stays in a small working copy (L1/L2) across
    // all T tokens, so the state is read once; each token's state (snapshots: out_stride != 0),
    // or only the last one (out_stride == 0: a verify forward, or commit's re-run of the kept
    // positions), is streamed out with stores that bypass the cache instead of fetching every
    // line before writing it. Columns are independent, so a block written back in place is
    // never read again. The arithmetic is unchanged.
    alignas(64) static thread_local float work_copy[kMaxDk * kBlock];  // [Dk, kBlock], per thread
    float* const work = work_copy;
    for (int j = j0; j < j1; ++j) {
        for (int e0 = 0; e0 < Dv; e0 += width_at(e0)) {
            const int width = width_at(e0);
            auto token = [&](int64_t t) {
                GdnToken tk = gdn_token(q, k, v, g, beta, out, t, j, Hk, Hv, Dk, Dv, tiled_heads);
                tk.v += e0;
                tk.out += e0;
                return tk;
            };
            auto snap = [&](int64_t t) -> float* {
                return out_stride != 0 || t == T - 1 ? state_out + t * out_stride + j * head_size + e0
                                                     : nullptr;
            };
            const float* from = state_in + j * head_size + e0;
            const float* prefetch = next_block(state_in, j, e0);
            visit_block_width<I, U>(width, [&]<int Uw, bool Partial>(int last) {
                gdn_columns_tokens<I, Uw, Partial>(from, Dv, work, Dk, Dv, last, T, token, snap, prefetch);
            });
        }
    }
    I::fence();  // streamed stores are weakly ordered: publish them before the pool's barrier
}

// Reads n floats the way a GEMM tile reads weight rows: groups of S streams of kRun floats,
// each stream prefetching the same offset of the next group (a tile's worth ahead) into L2, as
// the GEMM tiles do. Plain sequential reads leave much of the bandwidth unused, so the probe
// would understate it (and so would the non-temporal hint: 50 against 54 GB/s here).
template <class I>
float stream_sum(const float* x, int64_t n) {
    constexpr int S = 4;
    constexpr int64_t kRun = 4096;  // floats per stream per group (a 16 KB row)
    constexpr int64_t kGroup = S * kRun;
    typename I::V a[S];
#pragma GCC unroll 4
    for (int s = 0; s < S; ++s) a[s] = I::zero();
    int64_t g = 0;
    for (; g + kGroup <= n; g += kGroup) {
        for (int64_t i = 0; i < kRun; i += I::L) {
#pragma GCC unroll 4
            for (int s = 0; s < S; ++s) {
                const float* p = x + g + s * kRun + i;
                if (i % 16 == 0) __builtin_prefetch(p + kGroup, 0, 1);
                a[s] = I::add(a[s], I::load(p));
            }
        }
    }
    float sum = I::hsum(I::add(I::add(a[0], a[1]), I::add(a[2], a[3])));
    for (; g < n; ++g) sum += x[g];
    return sum;
}

}  // namespace nextn::simd
