#pragma once
// Weight matrices in the layouts the matmul kernels read. A WeightMatrix is W[rows, cols] with
// y = x · Wᵀ (PyTorch's Linear convention): rows = output features, cols = input features.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "formats/raw_tensor.h"

namespace nextn {

enum class WType {
    F32,
    BF16,
    F16,
    Q8_0,  // ggml block layout: 32 values, f16 scale + 32 x int8
    Q4_0,  // ggml block layout: 32 values, f16 scale + 16 bytes of 4-bit codes
};

const char* wtype_name(WType t);

struct WeightMatrix {
    WType type = WType::F32;
    int64_t rows = 0;
    int64_t cols = 0;
    const uint8_t* data = nullptr;  // row r starts at data + r * row_bytes
    size_t row_bytes = 0;
    std::shared_ptr<void> owner;    // keeps converted data alive (null when data is mapped)

    bool empty() const { return data == nullptr; }
};

// Builds a kernel weight from a checkpoint tensor of shape [rows, cols] (or [rows] for vectors
// treated as one column). `target` F32 converts anything to f32; other targets keep the data's
// own type where the kernels read it directly and convert otherwise.
WeightMatrix make_weight(const RawTensor& t, int64_t rows, int64_t cols, WType target);

// Reads row r of W as f32 (embedding lookups, tests).
void weight_row_f32(const WeightMatrix& w, int64_t row, float* out);

// Converts any checkpoint tensor to a dense f32 array (norm weights, small vectors).
std::vector<float> tensor_to_f32(const RawTensor& t);

}  // namespace nextn
