#pragma once
// ggml tensor element types as GGUF files number them: block size, bytes per block, name, and
// the DType we load them as (if we can).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "formats/raw_tensor.h"

namespace nextn {

struct GgmlTypeInfo {
    uint32_t id = 0;
    const char* name = "";
    int64_t block_size = 1;  // elements per block (1 for plain scalar types)
    size_t block_bytes = 0;  // bytes per block
};

// Every type id ggml has assigned a fixed block layout to; nullopt for unknown or retired ids.
std::optional<GgmlTypeInfo> ggml_type_info(uint32_t id);

// Readable name, "type id N" for unknown ids.
std::string ggml_type_name(uint32_t id);

// The DType a tensor of this ggml type loads as; nullopt when we cannot dequantize it.
std::optional<DType> ggml_type_to_dtype(uint32_t id);

// Block geometry of a block-quantized DType (ggml layouts); {1, element size} for plain types.
// Returns false for DTypes without a fixed per-element layout (MLX_AFFINE).
bool dtype_block_layout(DType t, int64_t* block_size, size_t* block_bytes);

}  // namespace nextn
