#pragma once
// A tensor as a checkpoint file stores it: element type, shape (outermost first, as PyTorch
// prints it) and a pointer into a mapped file. Nothing is converted here; the model's weight
// binder turns RawTensors into kernel weights once, at load.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/mapped_file.h"

namespace nextn {

enum class DType {
    F32,
    F16,
    BF16,
    U32,  // MLX packed quantized codes
    I32,
    // GGUF block-quantized types (ggml block layouts).
    Q8_0,
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q4_K,
    Q5_K,
    Q6_K,
    Q2_K,
    Q3_K,
    IQ4_NL,      // 4-bit indices into a fixed table of 16 int8 values, f16 scale per 32
    IQ4_XS,      // IQ4_NL's table, 6-bit scale per 32 values and f16 scale per 256
    MXFP4,       // OCP microscaling FP4: e2m1 values, a power-of-two (E8M0) scale per 32
    MLX_AFFINE,  // MLX affine quantization: packed codes + per-group scales and biases
};

const char* dtype_name(DType t);

struct RawTensor {
    std::string name;  // name in its file
    std::string file;  // file it came from, for messages
    DType dtype = DType::F32;
    std::vector<int64_t> shape;  // outermost first; for MLX_AFFINE: the logical [.., out, in]
    const uint8_t* data = nullptr;
    size_t nbytes = 0;
    // MLX_AFFINE only: per-group scales and biases ([.., out, in / group_size]) and the codes'
    // width. scales/biases dtype is F32, F16 or BF16.
    int bits = 0;
    int group_size = 0;
    DType scale_dtype = DType::BF16;
    const uint8_t* scales = nullptr;
    const uint8_t* biases = nullptr;

    int64_t numel() const;
    std::string shape_str() const;
};

}  // namespace nextn
