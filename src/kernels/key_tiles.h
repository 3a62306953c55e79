#pragma once
// Attention keys held in tiles of kKeyTile positions with the positions in the vector lanes, so
// that the scores kernel (KernelTable::key_scores) multiplies one key value of 16 positions by one
// broadcast query value per fused multiply-add and never sums across lanes. Keys held as rows
// (a position's head_dim values contiguous) end each position's dot product in a horizontal sum
// per query row: in kernels_bench BM_AttentionScores that kept the scores near half of a core's
// FMA peak (docs/speed-log.md, session 57).
//
// A tile is kKeyTile positions' keys of head_dim values, laid out by type:
//   F32:  float    [head_dim][kKeyTile]
//   F16:  uint16_t [head_dim][kKeyTile]                      (IEEE half bits)
//   Q8_0: per block b of 32 values: uint16_t scales[kKeyTile]  (ggml's f16 block scale d)
//                                   uint8_t  codes[8][kKeyTile][4]
//         value 4g + j of position p at codes[g][p][j], as code + 128 (1..255): each 4-byte lane
//         holds four consecutive values of one position, the unsigned operand of one int8 dot
//         product step (vpdpbusd) against four query codes (544 bytes a block: 16 positions'
//         34-byte Q8_0 blocks, rearranged)
// so a tile takes kKeyTile times a position's row of the type. Each key is rounded to the type
// once, when stored (f16: to nearest even; q8_0: ggml's quantize_row_q8_0), as the value rows
// are.
//
// Q8_0 keys are scored against queries rounded to Q8_0 as well, in integers (ggml's
// vec_dot_q8_0_q8_0, what llama.cpp's CPU attention does over a q8_0 cache):
// quantize_queries_q8_0 below, KernelTable::key_scores for the exact sum.
#include <cstddef>
#include <cstdint>

#include "kernels/weight.h"

namespace nextn {

inline constexpr int64_t kKeyTile = 16;  // positions a tile

// Bytes of one tile of keys of head_dim values of type F32, F16 or Q8_0 (for Q8_0, head_dim a
// multiple of 32; 0 for no values); another type is an Error naming it.
size_t key_tile_bytes(WType type, int64_t head_dim);
// Bytes of one 32-value block of a Q8_0 tile: block b starts b times this in, with its 16 scales
// and then its codes.
inline constexpr size_t kKeyTileQ8_0BlockBytes = 2 * kKeyTile + 32 * kKeyTile;
// The offset a Q8_0 tile adds to each code, so that its codes are unsigned bytes.
inline constexpr int kKeyTileCodeOffset = 128;

// Queries rounded for Q8_0 keys, R rows of d values (d a multiple of 32): per 32-value block
// ggml's Q8_0 codes and f16 scale (quantize_row_q8_0), the scale widened to f32, and the block's
// correction for the keys' offset codes, -128 times the sum of its codes; so a block's integer
// dot product with a tile position's stored bytes, plus the correction, is the codes' own. The
// codes are held four to an int32, the rows of each four side by side: what one int8 dot product
// step of every row of a pass broadcasts, read from one pointer.
struct QueriesQ8_0 {
    const int32_t* fours;    // [d / 4, rows]: row r's codes 4s..4s+3 at fours[s * rows + r]
    int64_t rows;            // the stride of fours
    const float* scales;     // [R, d / 32]
    const int32_t* offsets;  // [R, d / 32]
};
// Rounds q [R, d] into fours [d / 4 * R], scales and offsets [R * d / 32], and says where they
// are; d a multiple of 32.
QueriesQ8_0 quantize_queries_q8_0(const float* q, int64_t R, int64_t d, int32_t* fours,
                                  float* scales, int32_t* offsets);
// Query rows whose codes fit kQueryCodeBytes (the kernels round a call's queries in chunks of
// this many rows into buffers on their stack): at least 1; heads of more values, or of part
// blocks, are an Error.
inline constexpr int64_t kQueryCodeBytes = 8192;
int64_t query_rows_a_chunk(int64_t head_dim);

// Stores key [head_dim] (f32) as position `lane` of the tile, rounded to the type.
void store_key_in_tile(WType type, uint8_t* tile, int64_t lane, const float* key, int64_t head_dim);
// Value d of position `lane`'s key in the tile: what was stored, as an exact f32 (a half
// widened, or a Q8_0 block's d * code).
float key_in_tile(WType type, const uint8_t* tile, int64_t lane, int64_t d);
// A Q8_0 tile's code of value d of position `lane` (-127..127, the offset taken off) and the f16
// bits of its block's scale.
int q8_0_key_code(const uint8_t* tile, int64_t lane, int64_t d);
uint16_t q8_0_key_scale(const uint8_t* tile, int64_t lane, int64_t d);

}  // namespace nextn
