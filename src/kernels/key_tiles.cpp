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
                int8_t* codes = reinterpret_cast<int8_t*>(block + 2 * kKeyTile);  // [32][kKeyTile]
                for (int64_t j = 0; j < kQuantBlock; ++j) codes[j * kKeyTile + lane] = q.qs[j];
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
        case WType::Q8_0: {
            const uint8_t* block = tile + size_t(d / kQuantBlock) * kKeyTileQ8_0BlockBytes;
            uint16_t scale;
            std::memcpy(&scale, block + lane * 2, 2);
            const int8_t code = reinterpret_cast<const int8_t*>(
                block + 2 * kKeyTile)[(d % kQuantBlock) * kKeyTile + lane];
            return float(code) * f16_to_f32(scale);
        }
        default:
            fail("attention keys cannot be held as ", wtype_name(type));
    }
}

}  // namespace nextn
