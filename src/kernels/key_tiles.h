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
//                                   int8_t   codes[32][kKeyTile]
//         (544 bytes a block: 16 positions' 34-byte Q8_0 blocks, transposed)
// so a tile takes kKeyTile times a position's row of the type. Each key is rounded to the type
// once, when stored (f16: to nearest even; q8_0: ggml's quantize_row_q8_0), as the value rows
// are.
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

// Stores key [head_dim] (f32) as position `lane` of the tile, rounded to the type.
void store_key_in_tile(WType type, uint8_t* tile, int64_t lane, const float* key, int64_t head_dim);
// Value d of position `lane`'s key in the tile: what was stored, as an exact f32 (a half
// widened, or a Q8_0 block's d * code).
float key_in_tile(WType type, const uint8_t* tile, int64_t lane, int64_t d);

}  // namespace nextn
