#pragma once
// Attention's scores over key tiles (kernels/key_tiles.h: positions in the lanes), written once
// over an ISA description `I` (x86/<isa>/isa_*.h, arm/isa_neon.h); include only from an ISA
// translation unit.
//
// A pass keeps Rt query rows x T tiles of accumulators in registers. F32 and F16 keys: for each
// key value e it decodes the T tiles' vectors of e once and gives each row one fused
// multiply-add per vector with its query value e broadcast; every score is one accumulator lane
// that starts at 0 and takes e in order. Q8_0 keys, against queries rounded to Q8_0: for each
// 32-value block, an int32 lane per score sums the block's 32 code products four at a time (one
// int8 dot product step per four values, exact), then the score takes one fused multiply-add of
// that sum by the two scales' product. Either way Rt, T, the ISA's lane count and the position's
// tile change nothing: the reference's bits (KernelTable::key_scores).
#include <cstdint>

#include "kernels/key_tiles.h"
#include "kernels/quant.h"
#include "kernels/simd/rank1_update.h"

namespace nextn::simd {

// Key decoders: vector v (lanes [v * I::L, (v + 1) * I::L) of a tile's positions) of value e.
template <class I>
struct KeyTileF32 {
    using V = typename I::V;
    static constexpr WType kType = WType::F32;
    static V key(const uint8_t* tile, int64_t e, int v) {
        return I::load(reinterpret_cast<const float*>(tile) + e * kKeyTile + v * I::L);
    }
};

template <class I>
struct KeyTileF16 {
    using V = typename I::V;
    static constexpr WType kType = WType::F16;
    static V key(const uint8_t* tile, int64_t e, int v) {
        return I::widen_halves(tile + (e * kKeyTile + v * I::L) * 2);
    }
};

// (No std::min / std::clamp in these templates: an inline library template compiled with ISA
// flags could be the copy the linker keeps for every caller.)
template <class I>
constexpr int lanes_left(int lanes) {
    return lanes < 0 ? 0 : lanes > I::L ? I::L : lanes;
}

// The accumulators of a pass to out: row r at out + r * ldo, position i of the pass at out[i];
// the last tile stores its first last_lanes.
template <class I, int Rt, int N>
[[gnu::always_inline]] inline void store_scores(const typename I::V (&acc)[Rt][N], float* out,
                                                int64_t ldo, int last_lanes) {
    constexpr int VT = int(kKeyTile) / I::L, T = N / VT;
#pragma GCC unroll 32
    for (int r = 0; r < Rt; ++r)
#pragma GCC unroll 8
        for (int i = 0; i < N; ++i) {
            const int lanes = i / VT < T - 1 ? I::L : lanes_left<I>(last_lanes - (i % VT) * I::L);
            if (lanes == I::L)
                I::store(out + r * ldo + i * I::L, acc[r][i]);
            else if (lanes > 0)
                I::store_part(out + r * ldo + i * I::L, acc[r][i], lanes);
        }
}

// Rt rows of q [.., d] (rows d apart) against the T tiles of F32 or F16 keys at `tiles`
// (tile_bytes apart), to out as store_scores.
template <class I, class K, int Rt, int T>
void key_scores_pass(const uint8_t* tiles, size_t tile_bytes, const float* q, int64_t d, float* out,
                     int64_t ldo, int last_lanes, bool fetch_next) {
    using V = typename I::V;
    constexpr int VT = int(kKeyTile) / I::L;  // vectors a tile
    constexpr int N = T * VT;                 // key vectors a value e
    V acc[Rt][N];
#pragma GCC unroll 32
    for (int r = 0; r < Rt; ++r)
#pragma GCC unroll 8
        for (int i = 0; i < N; ++i) acc[r][i] = I::zero();
    // Bytes of a tile a value e takes (exact: 64 or 32), the pace of the next tiles' fetch.
    const size_t fetch_stride = d > 0 ? tile_bytes / size_t(d) : 0;
#pragma GCC unroll 4
    for (int64_t e = 0; e < d; ++e) {
        // The next pass's tiles into L2 at the pace this pass reads its own (value e's share of
        // each tile's bytes), so that decode steps stream the keys from memory; only in the
        // first of passes over the same tiles.
        if (fetch_next)
#pragma GCC unroll 8
            for (int t = 0; t < T; ++t)
                __builtin_prefetch(tiles + (T + t) * tile_bytes + size_t(e) * fetch_stride, 0, 1);
        V k[N];
#pragma GCC unroll 8
        for (int i = 0; i < N; ++i) k[i] = K::key(tiles + (i / VT) * tile_bytes, e, i % VT);
        rank1_update<I, Rt, N>(acc, k, [&](int r) { return q[r * d + e]; });
    }
    store_scores<I, Rt, N>(acc, out, ldo, last_lanes);
}

// The first Rt rows of queries rounded to Q8_0 (q, kernels/key_tiles.h) against the T tiles of
// Q8_0 keys at `tiles` (tile_bytes apart), to out as store_scores.
template <class I, int Rt, int T>
void q8_0_key_scores_pass(const uint8_t* tiles, size_t tile_bytes, const QueriesQ8_0& q, int64_t d,
                          float* out, int64_t ldo, int last_lanes, bool fetch_next) {
    using V = typename I::V;
    using Vi = typename I::Vi;
    constexpr int VT = int(kKeyTile) / I::L;  // vectors a tile
    constexpr int N = T * VT;                 // key vectors a step of four values
    constexpr int kSteps = int(kQuantBlock) / 4;
    const int64_t blocks = d / kQuantBlock;
    V acc[Rt][N];
#pragma GCC unroll 32
    for (int r = 0; r < Rt; ++r)
#pragma GCC unroll 8
        for (int i = 0; i < N; ++i) acc[r][i] = I::zero();
    // Bytes of a tile a step of four values takes (exact: 68), the next tiles' fetch pace.
    const size_t fetch_stride = d >= 4 ? tile_bytes / size_t(d / 4) : 0;
#pragma GCC unroll 1
    for (int64_t b = 0; b < blocks; ++b) {
        const uint8_t* block = tiles + size_t(b) * kKeyTileQ8_0BlockBytes;
        // Each sum starts at the query block's correction, so that it ends at the dot product
        // of the codes themselves.
        Vi sums[Rt][N];
#pragma GCC unroll 32
        for (int r = 0; r < Rt; ++r) {
            const Vi offset = I::splat_i32(q.offsets[r * blocks + b]);
#pragma GCC unroll 8
            for (int i = 0; i < N; ++i) sums[r][i] = offset;
        }
#pragma GCC unroll 8
        for (int step = 0; step < kSteps; ++step) {
            if (fetch_next)  // as key_scores_pass's
#pragma GCC unroll 8
                for (int t = 0; t < T; ++t)
                    __builtin_prefetch(
                        tiles + (T + t) * tile_bytes + size_t(b * kSteps + step) * fetch_stride, 0,
                        1);
            Vi k[N];  // the stored codes: [kKeyTile][4] a step
#pragma GCC unroll 8
            for (int i = 0; i < N; ++i)
                k[i] = I::load_i(block + (i / VT) * tile_bytes + 2 * kKeyTile +
                                 (step * kKeyTile + (i % VT) * I::L) * 4);
            const int32_t* fours = q.fours + (b * kSteps + step) * q.rows;  // [rows]
#pragma GCC unroll 32
            for (int r = 0; r < Rt; ++r) {
                const Vi codes = I::splat_i32(fours[r]);
#pragma GCC unroll 8
                for (int i = 0; i < N; ++i) sums[r][i] = I::dot_u8s8(sums[r][i], k[i], codes);
            }
        }
        V key_scale[N];
#pragma GCC unroll 8
        for (int i = 0; i < N; ++i)
            key_scale[i] = I::widen_halves(block + (i / VT) * tile_bytes + (i % VT) * I::L * 2);
#pragma GCC unroll 32
        for (int r = 0; r < Rt; ++r) {
            const V query_scale = I::set1(q.scales[r * blocks + b]);
#pragma GCC unroll 8
            for (int i = 0; i < N; ++i)
                acc[r][i] =
                    I::fma(I::to_float(sums[r][i]), I::mul(key_scale[i], query_scale), acc[r][i]);
        }
    }
    store_scores<I, Rt, N>(acc, out, ldo, last_lanes);
}

// The passes over F32 or F16 keys (K's type): queries are f32 rows.
template <class I, class K>
struct FloatKeyPasses {
    using Queries = const float*;
    static constexpr WType kType = K::kType;
    static constexpr int kAccumulators = I::kKeyAccumulators;
    static Queries rows_from(Queries q, int64_t r0, int64_t d) { return q + r0 * d; }
    template <int Rt, int T>
    static void pass(const uint8_t* tiles, size_t tile_bytes, Queries q, int64_t d, float* out,
                     int64_t ldo, int last_lanes, bool fetch_next) {
        key_scores_pass<I, K, Rt, T>(tiles, tile_bytes, q, d, out, ldo, last_lanes, fetch_next);
    }
};

// The passes over Q8_0 keys: queries rounded to Q8_0. An int32 sum and an f32 score a
// position, so a pair of registers counts as one of kAccumulators.
template <class I>
struct Q8_0KeyPasses {
    using Queries = QueriesQ8_0;
    static constexpr WType kType = WType::Q8_0;
    static constexpr int kAccumulators = I::kInt8KeyAccumulators;
    static Queries rows_from(Queries q, int64_t r0, int64_t d) {
        return {q.fours + r0, q.rows, q.scales + r0 * (d / kQuantBlock),
                q.offsets + r0 * (d / kQuantBlock)};
    }
    template <int Rt, int T>
    static void pass(const uint8_t* tiles, size_t tile_bytes, const Queries& q, int64_t d,
                     float* out, int64_t ldo, int last_lanes, bool fetch_next) {
        q8_0_key_scores_pass<I, Rt, T>(tiles, tile_bytes, q, d, out, ldo, last_lanes, fetch_next);
    }
};

// P's pass for rows in [1, Rt] (its row count in a template argument).
template <class P, int T, int Rt>
void key_scores_rows(int rows, const uint8_t* tiles, size_t tile_bytes,
                     const typename P::Queries& q, int64_t d, float* out, int64_t ldo,
                     int last_lanes, bool fetch_next) {
    if (rows == Rt)
        return P::template pass<Rt, T>(tiles, tile_bytes, q, d, out, ldo, last_lanes, fetch_next);
    if constexpr (Rt > 1)
        key_scores_rows<P, T, Rt - 1>(rows, tiles, tile_bytes, q, d, out, ldo, last_lanes,
                                      fetch_next);
}

// KernelTable::key_scores through P's passes. A pass takes as many tiles (4 down to 2 with
// 512-bit vectors, 1 with 256-bit) as keep all R rows' accumulators in P::kAccumulators
// registers; more rows than fit the fewest tiles run in passes of as even a size as can be, each
// over the same tiles while they are in L1. kernels_bench BM_AttentionScores, Xeon, one thread
// (docs/speed-log.md, session 57): for f32 and f16 keys 4 rows x 4 tiles, and 20 rows as 2 x 10
// rows x 2 tiles, beat 4 x 2, 20 x 1, 7 x 3 and 4 x 4; for q8_0 keys (session 58) 4 x 3 and
// 20 rows as 4 x 5 rows x 2 tiles.
template <class I, class P>
void key_scores(const uint8_t* tiles, int64_t n, const typename P::Queries& q, int64_t R, int64_t d,
                float* out, int64_t ldo) {
    constexpr int VT = int(kKeyTile) / I::L, A = P::kAccumulators;
    constexpr int kFewestTiles = VT == 1 ? 2 : 1;
    constexpr int kMostRows = A / (kFewestTiles * VT);  // rows of a pass over the fewest tiles
    const size_t tile_bytes = key_tile_bytes(P::kType, d);
    int T = kFewestTiles;
    for (int t = 4; t > kFewestTiles; --t)
        if (R * t * VT <= A) {
            T = t;
            break;
        }
    const int64_t row_passes = (R + A / (T * VT) - 1) / (A / (T * VT));
    const int64_t pass_rows = (R + row_passes - 1) / row_passes;
    const int64_t n_tiles = (n + kKeyTile - 1) / kKeyTile;
    // One pass of `rows` rows from row r0 over `tiles_here` (T or 1) tiles from tile t0.
    auto pass = [&](int64_t t0, int tiles_here, int64_t r0, int rows) {
        const uint8_t* t = tiles + size_t(t0) * tile_bytes;
        const typename P::Queries qr = P::rows_from(q, r0, d);
        float* o = out + r0 * ldo + t0 * kKeyTile;
        const int last_lanes = int(n - (t0 + tiles_here - 1) * kKeyTile < kKeyTile
                                       ? n - (t0 + tiles_here - 1) * kKeyTile
                                       : kKeyTile);
        switch (tiles_here) {
            case 4:
                if constexpr (A / (4 * VT) >= 1)
                    return key_scores_rows<P, 4, A / (4 * VT)>(rows, t, tile_bytes, qr, d, o, ldo,
                                                               last_lanes, r0 == 0);
                break;
            case 3:
                if constexpr (A / (3 * VT) >= 1)
                    return key_scores_rows<P, 3, A / (3 * VT)>(rows, t, tile_bytes, qr, d, o, ldo,
                                                               last_lanes, r0 == 0);
                break;
            case 2:
                if constexpr (A / (2 * VT) >= 1)
                    return key_scores_rows<P, 2, A / (2 * VT)>(rows, t, tile_bytes, qr, d, o, ldo,
                                                               last_lanes, r0 == 0);
                break;
            default:
                return key_scores_rows<P, 1, kMostRows>(rows, t, tile_bytes, qr, d, o, ldo,
                                                        last_lanes, r0 == 0);
        }
    };
    for (int64_t t0 = 0; t0 < n_tiles; t0 += T) {
        const int64_t tiles_left = n_tiles - t0;
        for (int64_t r0 = 0; r0 < R; r0 += pass_rows) {
            const int rows = int(R - r0 < pass_rows ? R - r0 : pass_rows);
            if (tiles_left >= T)
                pass(t0, T, r0, rows);
            else  // the last few tiles, one at a time
                for (int64_t t = t0; t < n_tiles; ++t) pass(t, 1, r0, rows);
        }
    }
}

// key_scores over Q8_0 keys: the query rows rounded to Q8_0 in chunks that fit buffers on the
// stack (no allocation in a decode step), each chunk's scores over all the tiles.
template <class I>
void q8_0_key_scores(const uint8_t* tiles, int64_t n, const float* q, int64_t R, int64_t d,
                     float* out, int64_t ldo) {
    alignas(64) int32_t fours[kQueryCodeBytes / 4];
    float scales[kQueryCodeBytes / kQuantBlock];
    int32_t offsets[kQueryCodeBytes / kQuantBlock];
    const int64_t chunk = query_rows_a_chunk(d);  // (fails for heads it cannot take)
    for (int64_t r0 = 0; r0 < R; r0 += chunk) {
        const int64_t rows = R - r0 < chunk ? R - r0 : chunk;
        const QueriesQ8_0 queries =
            quantize_queries_q8_0(q + r0 * d, rows, d, fours, scales, offsets);
        key_scores<I, Q8_0KeyPasses<I>>(tiles, n, queries, rows, d, out + r0 * ldo, ldo);
    }
}

// KernelTable::key_scores: the above for the keys' type (F32, F16 or Q8_0).
template <class I>
void key_scores_of_type(WType type, const uint8_t* tiles, int64_t n, const float* q, int64_t R,
                        int64_t d, float* out, int64_t ldo) {
    switch (type) {
        case WType::F32:
            return key_scores<I, FloatKeyPasses<I, KeyTileF32<I>>>(tiles, n, q, R, d, out, ldo);
        case WType::F16:
            return key_scores<I, FloatKeyPasses<I, KeyTileF16<I>>>(tiles, n, q, R, d, out, ldo);
        case WType::Q8_0:
            return q8_0_key_scores<I>(tiles, n, q, R, d, out, ldo);
        default:
            key_tile_bytes(type, d);  // fails, naming the type
    }
}

}  // namespace nextn::simd
