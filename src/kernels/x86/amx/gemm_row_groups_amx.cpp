// AMX-INT8: Q4_0R and Q8_0R weights (16-row groups, kernels/row_groups.h) times int8 activations,
// for prefill and wide verify batches. One tile dot product (TDPBSUD: signed activation bytes
// times unsigned weight codes) gives a 32-value block's int32 sums for up to 16 tokens x the 16
// rows of a group; the block then ends exactly as in the AVX-512 row-group kernel (the sums less
// offset * the activation code sum, converted, times weight scale * activation scale, fused into
// the row's accumulator), so every output has the same bits as there and in the reference.
//
// A row-group block is already the B operand's layout: 8 rows of 4-byte steps x 16 weight rows
// ([8 steps][16 rows][4]). Q8_0R codes load as they are; Q4_0R nibbles are unpacked into a
// 512-byte buffer (low nibbles steps 0-3, high nibbles steps 4-7). The A operand wants each
// token's 32 codes of a block in order, which the activations interleave across a chunk's 16
// blocks, so every token's codes are gathered a pass of kPassBlocks blocks at a time; the
// accumulators carry across passes in y (stored and reloaded f32: the same bits).
//
// Not yet faster than the AVX-512 kernel, so off unless NEXTN_AMX=on (kernels/dispatch.cpp has
// the numbers). On the 2-core Sapphire-Rapids-class VM, a stand-alone loop of this kernel's
// block (16 tokens x 16 rows x 32 values; the loop is not kept) took 18-20 ns for the vector unit's
// scaling of the sums alone, 20-40 ns for the tile loads, dot products and stores alone, and
// 40-72 ns for both: they did not overlap, where AVX-512 VNNI spends about 64 ns on the same
// block. The scaling is per 32-value block (each has its own weight and activation scale), so
// it cannot be amortised over a longer dot product.
#pragma GCC optimize("fp-contract=off")
// GCC 12's AVX-512 headers start some intrinsics from _mm512_undefined_*(), which its
// -Wmaybe-uninitialized then reports (as in x86/avx512/isa_avx512.h).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "kernels/int8_dot.h"
#include "kernels/row_groups.h"
#include "kernels/x86/x86_kernels.h"

namespace nextn::amx {

namespace {

constexpr int kTileTokens = 16;   // A and C rows: tokens
constexpr int64_t kPassBlocks = 32;  // blocks gathered at once (a token tile's: 16 KB on the stack)
constexpr int64_t kChunkBytes = 256 * 1024;  // weight codes of a pass that every token tile reads

// The LDTILECFG operand (Intel SDM: palette 1, bytes per row and rows of each tile register).
struct alignas(64) TileConfig {
    uint8_t palette = 1;
    uint8_t start_row = 0;
    uint8_t reserved[14] = {};
    uint16_t colsb[16] = {};
    uint8_t rows[16] = {};
};

// Tile registers: C sums 0-3 (four blocks in flight, so that a block's zero, dot product and
// store do not wait on the previous block's store: with one C tile that chain took 48% of a
// 2048-token prefill's time, with two 30%), A codes 4-5 and B codes 6-7 alternating.
void configure_tiles(int tokens) {
    TileConfig cfg;
    for (int c = 0; c < 4; ++c) {
        cfg.colsb[c] = 64;  // 16 int32 sums, one per weight row
        cfg.rows[c] = uint8_t(tokens);
    }
    for (int a = 4; a < 6; ++a) {
        cfg.colsb[a] = 32;  // one block's codes per token
        cfg.rows[a] = uint8_t(tokens);
    }
    for (int b = 6; b < 8; ++b) {
        cfg.colsb[b] = 64;  // one step (4 codes) of 16 weight rows
        cfg.rows[b] = 8;
    }
    // GCC 12's _tile_loadconfig tells the compiler it reads only the operand's first 8 bytes, so
    // the stores of the rows and widths may be dropped as dead; this operand is the whole struct.
    __asm__ volatile("ldtilecfg %0" : : "m"(cfg));
}

// The tile instructions. GCC 12's intrinsics for them are asm statements that do not tell the
// compiler which memory they read or write (so it could drop the stores of an unpacked B tile,
// or read the C sums before they are stored) and take the register only as a literal.
template <int Tile>
[[gnu::always_inline]] inline void tile_load(const void* base, int64_t stride) {
    __asm__ volatile("tileloadd (%0,%1,1), %%tmm%c2" : : "r"(base), "r"(stride), "i"(Tile) : "memory");
}
template <int Tile>
[[gnu::always_inline]] inline void tile_store(void* base, int64_t stride) {
    __asm__ volatile("tilestored %%tmm%c2, (%0,%1,1)" : : "r"(base), "r"(stride), "i"(Tile) : "memory");
}
// C = A (signed bytes) . B (unsigned bytes), C starting from zero.
template <int C, int A, int B>
[[gnu::always_inline]] inline void tile_dot_from_zero(const void* a, int64_t a_stride, const void* b) {
    tile_load<A>(a, a_stride);
    tile_load<B>(b, 64);
    __asm__ volatile("tilezero %%tmm%c0" : : "i"(C));
    __asm__ volatile("tdpbsud %%tmm%c2, %%tmm%c1, %%tmm%c0" : : "i"(C), "i"(A), "i"(B));
}

// Blocks [b0, b0 + nb) of every token of x in block order, one token per row:
// a[t][32 * (b - b0) + e] = code e of block b. x holds a chunk's 16 blocks interleaved by 4-byte
// step ([chunks, 8 steps, 16 blocks, 4]); gathering step s of block b for every s is one dword
// gather a block pair.
void gather_tokens(const QuantizedColumns& x, int64_t b0, int64_t nb, int8_t (*a)[kPassBlocks * 32]) {
    // Output dword d of a block pair: block d / 8, step d % 8, at dword 16 * step + block.
    const __m512i index = _mm512_set_epi32(113, 97, 81, 65, 49, 33, 17, 1, 112, 96, 80, 64, 48, 32, 16, 0);
    for (int64_t t = 0; t < x.n; ++t) {
        const int8_t* codes = x.codes_of(t);
        for (int64_t b = b0; b < b0 + nb; b += 2) {
            const int8_t* chunk = codes + (b / kI8ChunkBlocks) * kI8ChunkValues;
            const __m512i pair = _mm512_i32gather_epi32(
                _mm512_add_epi32(index, _mm512_set1_epi32(int32_t(b % kI8ChunkBlocks))), chunk, 4);
            if (b + 1 < b0 + nb)
                _mm512_storeu_si512(&a[t][32 * (b - b0)], pair);
            else
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(&a[t][32 * (b - b0)]), _mm512_castsi512_si256(pair));
        }
    }
}

// Q4_0R block codes [4 vectors of 64 bytes: low nibbles steps 0-3, high nibbles steps 4-7] as the
// 8 x 64 bytes of a B tile.
[[gnu::always_inline]] inline void unpack_q4_block(const uint8_t* codes, uint8_t* out) {
    const __m512i low = _mm512_set1_epi8(15);
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
        const __m512i v = _mm512_load_si512(codes + 64 * i);
        _mm512_store_si512(out + 64 * i, _mm512_and_si512(v, low));
        _mm512_store_si512(out + 64 * (4 + i), _mm512_and_si512(_mm512_srli_epi16(v, 4), low));
    }
}

// The per-token values a block's sums need, for a pass: the codes' offset correction
// offset * (activation code sum) and the activation scale. [pass blocks, tokens]
struct PassTokens {
    alignas(64) int32_t correction[kPassBlocks][kTileTokens];
    alignas(64) float scale[kPassBlocks][kTileTokens];
};

// Block sums [tokens, 16 rows] of one group into the accumulators (lanes = rows): the same
// operations, in the same order, as the AVX-512 row-group kernel's block end.
template <int Tokens>
[[gnu::always_inline]] inline void finish_block(const int32_t (*sums)[16], __m512 dw, const int32_t* correction,
                                                const float* scale, __m512 (&acc)[Tokens]) {
#pragma GCC unroll 16
    for (int t = 0; t < Tokens; ++t) {
        const __m512i isum = _mm512_sub_epi32(_mm512_load_si512(sums[t]), _mm512_set1_epi32(correction[t]));
        acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dw, _mm512_set1_ps(scale[t])), acc[t]);
    }
}

// A group's 16 weight scales of block b as f32.
template <WType T>
[[gnu::always_inline]] inline __m512 block_scales(const uint8_t* group, int64_t b) {
    return _mm512_cvtph_ps(
        _mm256_load_si256(reinterpret_cast<const __m256i*>(group + row_group_d_at(T, b))));
}

// The B operand of block b: Q8_0R codes where they are, Q4_0R unpacked into `buffer`.
template <WType T>
[[gnu::always_inline]] inline const void* weight_tile(const uint8_t* group, int64_t b, uint8_t* buffer) {
    if constexpr (T == WType::Q8_0R) return group + row_group_codes_at(T, b);
    unpack_q4_block(group + row_group_codes_at(T, b), buffer);
    return buffer;
}

// Blocks b0 + i .. b0 + i + 3 of a group (A codes at a[.][32 i], the pass starting at block b0)
// into C tiles 0-3, alternating A tiles 4-5 and B tiles 6-7.
template <WType T>
[[gnu::always_inline]] inline void dot_four(const int8_t (*a)[kPassBlocks * 32], int64_t i, const uint8_t* group,
                                            int64_t b0, uint8_t (*unpacked)[8][64]) {
    constexpr int64_t kAStride = kPassBlocks * 32;
    tile_dot_from_zero<0, 4, 6>(&a[0][32 * i], kAStride, weight_tile<T>(group, b0 + i, unpacked[0][0]));
    tile_dot_from_zero<1, 5, 7>(&a[0][32 * (i + 1)], kAStride, weight_tile<T>(group, b0 + i + 1, unpacked[1][0]));
    tile_dot_from_zero<2, 4, 6>(&a[0][32 * (i + 2)], kAStride, weight_tile<T>(group, b0 + i + 2, unpacked[2][0]));
    tile_dot_from_zero<3, 5, 7>(&a[0][32 * (i + 3)], kAStride, weight_tile<T>(group, b0 + i + 3, unpacked[3][0]));
}

// Groups of rows [r0, r1) of w for the token tile [j0, j0 + Tokens), blocks [b0, b0 + nb) (codes
// gathered in `a`): accumulators start at 0 when b0 == 0, else at y's stored values.
template <WType T, int Tokens>
void pass_groups(const WeightMatrix& w, const QuantizedColumns& x, int64_t j0, int64_t b0, int64_t nb,
                 const int8_t (*a)[kPassBlocks * 32], float* y, int64_t ldy, int64_t r0, int64_t r1) {
    constexpr int kShift = std::countr_zero(unsigned(row_group_code_offset(T)));
    constexpr int64_t kAStride = kPassBlocks * 32;
    const size_t group_bytes = row_group_bytes(T, w.cols);
    PassTokens tok;
    for (int t = 0; t < Tokens; ++t)
        for (int64_t i = 0; i < nb; ++i) {
            tok.correction[i][t] = x.sums_of(j0 + t)[b0 + i] << kShift;
            tok.scale[i][t] = x.scales_of(j0 + t)[b0 + i];
        }
    alignas(64) int32_t sums[4][kTileTokens][16];  // [C tile, tokens, 16 rows] a block's sums
    alignas(64) uint8_t unpacked[4][8][64];        // Q4_0R: [block in flight] a block as a B tile
    for (int64_t g = r0 / kRowGroupRows; g < row_groups(r1); ++g) {
        const uint8_t* group = w.data + size_t(g) * group_bytes;
        // The tile unit waits on its loads in order, so the next group's pass is fetched now.
        if (g + 1 < row_groups(r1)) {
            // (the pass's pairs of blocks: their codes and scales)
            const char* next =
                reinterpret_cast<const char*>(group + group_bytes + row_group_codes_at(T, b0));
            const int64_t bytes =
                (b0 + nb + 1) / 2 * row_group_span_bytes(T) - row_group_codes_at(T, b0);
            for (int64_t off = 0; off < bytes; off += 64) _mm_prefetch(next + off, _MM_HINT_T0);
        }
        const __mmask16 store = row_group_lanes(g, r0, r1);
        __m512 acc[Tokens];
#pragma GCC unroll 16
        for (int t = 0; t < Tokens; ++t)
            acc[t] = b0 == 0 ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(store, y + (j0 + t) * ldy + g * 16);
        // Blocks in fours, software-pipelined: the dot products of the next four run while this
        // four's sums (stored first) are finished.
        const int64_t fours = nb / 4 * 4;
        if (fours > 0) dot_four<T>(a, 0, group, b0, unpacked);
        for (int64_t i = 0; i < fours; i += 4) {
            tile_store<0>(&sums[0][0][0], 64);
            tile_store<1>(&sums[1][0][0], 64);
            tile_store<2>(&sums[2][0][0], 64);
            tile_store<3>(&sums[3][0][0], 64);
            if (i + 4 < fours) dot_four<T>(a, i + 4, group, b0, unpacked);
            finish_block<Tokens>(sums[0], block_scales<T>(group, b0 + i), tok.correction[i],
                                 tok.scale[i], acc);
            finish_block<Tokens>(sums[1], block_scales<T>(group, b0 + i + 1), tok.correction[i + 1],
                                 tok.scale[i + 1], acc);
            finish_block<Tokens>(sums[2], block_scales<T>(group, b0 + i + 2), tok.correction[i + 2],
                                 tok.scale[i + 2], acc);
            finish_block<Tokens>(sums[3], block_scales<T>(group, b0 + i + 3), tok.correction[i + 3],
                                 tok.scale[i + 3], acc);
        }
        int64_t i = fours;
        for (; i < nb; ++i) {
            tile_dot_from_zero<0, 4, 6>(&a[0][32 * i], kAStride, weight_tile<T>(group, b0 + i, unpacked[0][0]));
            tile_store<0>(&sums[0][0][0], 64);
            finish_block<Tokens>(sums[0], block_scales<T>(group, b0 + i), tok.correction[i],
                                 tok.scale[i], acc);
        }
#pragma GCC unroll 16
        for (int t = 0; t < Tokens; ++t) _mm512_mask_storeu_ps(y + (j0 + t) * ldy + g * 16, store, acc[t]);
    }
}

template <WType T, int... N>
void pass_groups_for(int tokens, std::integer_sequence<int, N...>, const WeightMatrix& w, const QuantizedColumns& x,
                     int64_t j0, int64_t b0, int64_t nb, const int8_t (*a)[kPassBlocks * 32], float* y, int64_t ldy,
                     int64_t r0, int64_t r1) {
    ((tokens == N + 1 ? pass_groups<T, N + 1>(w, x, j0, b0, nb, a, y, ldy, r0, r1) : void()), ...);
}

template <WType T>
void gemm(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy, int64_t r0, int64_t r1) {
    const int64_t blocks = w.cols / 32;
    // A pass's codes of every token, in block order: [tokens, pass blocks * 32]. On the stack for
    // one token tile (a verify), else on the heap (a prefill: the allocation is noise there).
    alignas(64) int8_t one_tile[kTileTokens][kPassBlocks * 32];
    std::vector<int8_t> many;
    int8_t (*a)[kPassBlocks * 32] = one_tile;
    if (x.n > kTileTokens) {
        many.resize(size_t(x.n) * kPassBlocks * 32);
        a = reinterpret_cast<int8_t (*)[kPassBlocks * 32]>(many.data());
    }
    int configured = 0;
    for (int64_t b0 = 0; b0 < blocks; b0 += kPassBlocks) {
        const int64_t nb = std::min(kPassBlocks, blocks - b0);
        gather_tokens(x, b0, nb, a);
        // Groups in chunks whose pass codes stay in L2 while every token tile reads them (token
        // tiles outermost streamed a 512-token prefill's weights 32 times).
        const int64_t chunk_rows = kRowGroupRows * std::max<int64_t>(1, kChunkBytes / (nb * row_group_block_code_bytes(T)));
        for (int64_t c0 = r0; c0 < r1; c0 = (c0 / chunk_rows + 1) * chunk_rows) {
            const int64_t c1 = std::min(r1, (c0 / chunk_rows + 1) * chunk_rows);
            for (int64_t j0 = 0; j0 < x.n; j0 += kTileTokens) {
                const int tokens = int(std::min<int64_t>(kTileTokens, x.n - j0));
                if (tokens != configured) configure_tiles(configured = tokens);
                pass_groups_for<T>(tokens, std::make_integer_sequence<int, kTileTokens>{}, w, x, j0, b0, nb, a + j0,
                                   y, ldy, c0, c1);
            }
        }
    }
    _tile_release();  // so that a context switch need not save the tile registers
}

}  // namespace

void gemm_row_groups(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy, int64_t r0,
                     int64_t r1) {
    if (r0 >= r1 || x.n <= 0) return;
    if (w.type == WType::Q8_0R)
        gemm<WType::Q8_0R>(w, x, y, ldy, r0, r1);
    else if (w.type == WType::Q4_0R)
        gemm<WType::Q4_0R>(w, x, y, ldy, r0, r1);
    else  // the K-quant row groups have no tile form: the caller keeps them on the AVX-512 kernel
        fail("amx::gemm_row_groups: no AMX kernel for ", wtype_name(w.type));
}

}  // namespace nextn::amx
