#pragma once
// Attention's scores over key tiles (kernels/key_tiles.h: positions in the lanes), written once
// over an ISA description `I` (x86/<isa>/isa_*.h); include only from an ISA translation unit.
//
// A pass keeps Rt query rows x T tiles of accumulators in registers: for each key value e it
// decodes the T tiles' vectors of e once and gives each row one fused multiply-add per vector with
// its query value e broadcast. Every score is one accumulator lane that starts at 0 and takes e in
// order, so Rt, T, the ISA's lane count and the position's tile change nothing: the reference's
// bits (KernelTable::key_scores).
#include <cstdint>

#include "kernels/key_tiles.h"
#include "kernels/quant.h"
#include "kernels/x86/rank1_update.h"

namespace nextn::x86 {

// Key decoders: vector v (lanes [v * I::L, (v + 1) * I::L) of a tile's positions) of value e;
// Q8_0 values take their block's scales, scales(tile, e / 32, v), made once a block.
template <class I>
struct KeyTileF32 {
    using V = typename I::V;
    static constexpr WType kType = WType::F32;
    static V scales(const uint8_t*, int64_t, int) { return I::zero(); }
    static V key(const uint8_t* tile, int64_t e, int v, V) {
        return I::load(reinterpret_cast<const float*>(tile) + e * kKeyTile + v * I::L);
    }
};

template <class I>
struct KeyTileF16 {
    using V = typename I::V;
    static constexpr WType kType = WType::F16;
    static V scales(const uint8_t*, int64_t, int) { return I::zero(); }
    static V key(const uint8_t* tile, int64_t e, int v, V) {
        return I::widen_halves(tile + (e * kKeyTile + v * I::L) * 2);
    }
};

template <class I>
struct KeyTileQ8_0 {
    using V = typename I::V;
    static constexpr WType kType = WType::Q8_0;
    static V scales(const uint8_t* tile, int64_t b, int v) {
        return I::widen_halves(tile + b * kKeyTileQ8_0BlockBytes + v * I::L * 2);
    }
    // d * code, exact in f32 (an f16 scale's 11 significant bits times 8).
    static V key(const uint8_t* tile, int64_t e, int v, V scale) {
        const uint8_t* codes = tile + (e / kQuantBlock) * kKeyTileQ8_0BlockBytes + 2 * kKeyTile;
        return I::mul(I::widen_int8(codes + (e % kQuantBlock) * kKeyTile + v * I::L), scale);
    }
};

// (No std::min / std::clamp in these templates: an inline library template compiled with ISA
// flags could be the copy the linker keeps for every caller.)
template <class I>
constexpr int lanes_left(int lanes) {
    return lanes < 0 ? 0 : lanes > I::L ? I::L : lanes;
}

// Rt rows of q [.., d] (rows d apart) against the T tiles at `tiles` (tile_bytes apart); out's row
// r at out + r * ldo, position i of the pass at out[i]; the last tile stores its first last_lanes.
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
    // Bytes of a tile a value e takes (exact: 64, 32 or 17), the pace of the next tiles' fetch.
    const size_t fetch_stride = tile_bytes / size_t(d);
    for (int64_t e0 = 0; e0 < d; e0 += kQuantBlock) {
        const int len = d - e0 < kQuantBlock ? int(d - e0) : kQuantBlock;
        V scale[N];
#pragma GCC unroll 8
        for (int i = 0; i < N; ++i)
            scale[i] = K::scales(tiles + (i / VT) * tile_bytes, e0 / kQuantBlock, i % VT);
#pragma GCC unroll 4
        for (int j = 0; j < len; ++j) {
            const int64_t e = e0 + j;
            // The next pass's tiles into L2 at the pace this pass reads its own (value e's share
            // of each tile's bytes), so that decode steps stream the keys from memory; only in
            // the first of passes over the same tiles.
            if (fetch_next)
#pragma GCC unroll 8
                for (int t = 0; t < T; ++t)
                    __builtin_prefetch(tiles + (T + t) * tile_bytes + size_t(e) * fetch_stride, 0,
                                       1);
            V k[N];
#pragma GCC unroll 8
            for (int i = 0; i < N; ++i)
                k[i] = K::key(tiles + (i / VT) * tile_bytes, e, i % VT, scale[i]);
            rank1_update<I, Rt, N>(acc, k, [&](int r) { return q[r * d + e]; });
        }
    }
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

// key_scores_pass for rows in [1, Rt] (its row count in a template argument).
template <class I, class K, int T, int Rt>
void key_scores_rows(int rows, const uint8_t* tiles, size_t tile_bytes, const float* q, int64_t d,
                     float* out, int64_t ldo, int last_lanes, bool fetch_next) {
    if (rows == Rt)
        return key_scores_pass<I, K, Rt, T>(tiles, tile_bytes, q, d, out, ldo, last_lanes,
                                            fetch_next);
    if constexpr (Rt > 1)
        key_scores_rows<I, K, T, Rt - 1>(rows, tiles, tile_bytes, q, d, out, ldo, last_lanes,
                                         fetch_next);
}

// KernelTable::key_scores for keys of K's type. A pass takes as many tiles (4 down to 2 with
// 512-bit vectors, 1 with 256-bit) as keep all R rows' accumulators in I::kKeyAccumulators
// registers; more rows than fit the fewest tiles run in passes of as even a size as can be, each
// over the same tiles while they are in L1. kernels_bench BM_AttentionScores, Xeon, one thread
// (docs/speed-log.md, session 57): 4 rows x 4 tiles, and 20 rows as 2 x 10 rows x 2 tiles, beat
// 4 x 2, 20 x 1, 7 x 3 and 4 x 4.
template <class I, class K>
void key_scores(const uint8_t* tiles, int64_t n, const float* q, int64_t R, int64_t d, float* out,
                int64_t ldo) {
    constexpr int VT = int(kKeyTile) / I::L, A = I::kKeyAccumulators;
    constexpr int kFewestTiles = VT == 1 ? 2 : 1;
    constexpr int kMostRows = A / (kFewestTiles * VT);  // rows of a pass over the fewest tiles
    const size_t tile_bytes = key_tile_bytes(K::kType, d);
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
        const float* qr = q + r0 * d;
        float* o = out + r0 * ldo + t0 * kKeyTile;
        const int last_lanes = int(n - (t0 + tiles_here - 1) * kKeyTile < kKeyTile
                                       ? n - (t0 + tiles_here - 1) * kKeyTile
                                       : kKeyTile);
        switch (tiles_here) {
            case 4:
                if constexpr (A / (4 * VT) >= 1)
                    return key_scores_rows<I, K, 4, A / (4 * VT)>(rows, t, tile_bytes, qr, d, o,
                                                                  ldo, last_lanes, r0 == 0);
                break;
            case 3:
                if constexpr (A / (3 * VT) >= 1)
                    return key_scores_rows<I, K, 3, A / (3 * VT)>(rows, t, tile_bytes, qr, d, o,
                                                                  ldo, last_lanes, r0 == 0);
                break;
            case 2:
                return key_scores_rows<I, K, 2, A / (2 * VT)>(rows, t, tile_bytes, qr, d, o, ldo,
                                                              last_lanes, r0 == 0);
            default:
                return key_scores_rows<I, K, 1, kMostRows>(rows, t, tile_bytes, qr, d, o, ldo,
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

// KernelTable::key_scores: the above for the keys' type (F32, F16 or Q8_0).
template <class I>
void key_scores_of_type(WType type, const uint8_t* tiles, int64_t n, const float* q, int64_t R,
                        int64_t d, float* out, int64_t ldo) {
    switch (type) {
        case WType::F32:
            return key_scores<I, KeyTileF32<I>>(tiles, n, q, R, d, out, ldo);
        case WType::F16:
            return key_scores<I, KeyTileF16<I>>(tiles, n, q, R, d, out, ldo);
        case WType::Q8_0:
            return key_scores<I, KeyTileQ8_0<I>>(tiles, n, q, R, d, out, ldo);
        default:
            key_tile_bytes(type, d);  // fails, naming the type
    }
}

}  // namespace nextn::x86
