#include "kernels/key_tiles.h"

#include <cstring>

#include "core/error.h"
#include "core/half.h"
#include "kernels/quant.h"

namespace nextn {

size_t key_tile_bytes(WType type, int64_t head_dim) {
    const size_t row = wtype_row_bytes(type, head_dim);
    if ((type != WType::F32 && type != WType::F16 && type != WType::Q8_0) ||
        (head_dim > 0 && row == 0))
        fail("attention keys of ", head_dim, " values cannot be held as ", wtype_name(type));
    return size_t(kKeyTile) * row;  // the Q8_0 layout's blocks hold 16 rows' 34 bytes too
}

void store_key_in_tile(WType type, uint8_t* tile, int64_t lane, const float* key,
                       int64_t head_dim) {
    switch (type) {
        case WType::F32: {
            float* t = reinterpret_cast<float*>(tile);  // [head_dim][kKeyTile]
            for (int64_t d = 0; d < head_dim; ++d) t[d * kKeyTile + lane] = key[d];
            return;
        }
        case WType::F16: {
            uint16_t* t = reinterpret_cast<uint16_t*>(tile);  // [head_dim][kKeyTile]
            for (int64_t d = 0; d < head_dim; ++d) t[d * kKeyTile + lane] = f32_to_f16(key[d]);
            return;
        }
        case WType::Q8_0: {
            // Each block quantized as a KV value row's is, then spread over the tile's block:
            // the same d and codes.
            for (int64_t b = 0; b < head_dim / kQuantBlock; ++b) {
                BlockQ8_0 q;
                quantize_row_q8_0(key + b * kQuantBlock, kQuantBlock, &q);
                uint8_t* block = tile + size_t(b) * kKeyTileQ8_0BlockBytes;
                std::memcpy(block + lane * 2, &q.d, 2);
                uint8_t* codes = block + 2 * kKeyTile;  // [8][kKeyTile][4]
                for (int64_t j = 0; j < kQuantBlock; ++j)
                    codes[((j / 4) * kKeyTile + lane) * 4 + j % 4] =
                        uint8_t(q.qs[j] + kKeyTileCodeOffset);
            }
            return;
        }
        default:
            fail("attention keys cannot be held as ", wtype_name(type));
    }
}

float key_in_tile(WType type, const uint8_t* tile, int64_t lane, int64_t d) {
    switch (type) {
        case WType::F32:
            return reinterpret_cast<const float*>(tile)[d * kKeyTile + lane];
        case WType::F16:
            return f16_to_f32(reinterpret_cast<const uint16_t*>(tile)[d * kKeyTile + lane]);
        case WType::Q8_0:
            return float(q8_0_key_code(tile, lane, d)) * f16_to_f32(q8_0_key_scale(tile, lane, d));
        default:
            fail("attention keys cannot be held as ", wtype_name(type));
    }
}

int q8_0_key_code(const uint8_t* tile, int64_t lane, int64_t d) {
    const uint8_t* codes = tile + size_t(d / kQuantBlock) * kKeyTileQ8_0BlockBytes + 2 * kKeyTile;
    const int64_t j = d % kQuantBlock;
    return int(codes[((j / 4) * kKeyTile + lane) * 4 + j % 4]) - kKeyTileCodeOffset;
}

uint16_t q8_0_key_scale(const uint8_t* tile, int64_t lane, int64_t d) {
    uint16_t scale;
    std::memcpy(&scale, tile + size_t(d / kQuantBlock) * kKeyTileQ8_0BlockBytes + lane * 2, 2);
    return scale;
}

QueriesQ8_0 quantize_queries_q8_0(const float* q, int64_t R, int64_t d, int32_t* fours,
                                  float* scales, int32_t* offsets) {
    const int64_t blocks = d / kQuantBlock;
    for (int64_t r = 0; r < R; ++r)
        for (int64_t b = 0; b < blocks; ++b) {
            BlockQ8_0 block;
            quantize_row_q8_0(q + r * d + b * kQuantBlock, kQuantBlock, &block);
            int32_t sum = 0;
            for (int64_t j = 0; j < kQuantBlock; ++j) sum += block.qs[j];
            for (int64_t s = 0; s < kQuantBlock / 4; ++s)
                std::memcpy(&fours[(b * kQuantBlock / 4 + s) * R + r], block.qs + 4 * s, 4);
            scales[r * blocks + b] = f16_to_f32(block.d);
            offsets[r * blocks + b] = -kKeyTileCodeOffset * sum;
        }
    return {fours, R, scales, offsets};
}

int64_t query_rows_a_chunk(int64_t head_dim) {
    key_tile_bytes(WType::Q8_0, head_dim);  // fails, naming the size, for part blocks
    if (head_dim > kQueryCodeBytes)
        fail("attention heads of ", head_dim, " values are more than the q8_0 key scores take (",
             kQueryCodeBytes, ")");
    return head_dim > 0 ? kQueryCodeBytes / head_dim : 1;
}

}  // namespace nextn
