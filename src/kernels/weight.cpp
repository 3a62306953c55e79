#include "kernels/weight.h"

#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "formats/dequant.h"

namespace nextn {

const char* wtype_name(WType t) {
    switch (t) {
        case WType::F32: return "f32";
        case WType::BF16: return "bf16";
        case WType::F16: return "f16";
        case WType::Q8_0: return "q8_0";
        case WType::Q4_0: return "q4_0";
    }
    return "?";
}

std::vector<float> tensor_to_f32(const RawTensor& t) {
    std::vector<float> out(size_t(t.numel()));
    const int64_t n = t.numel();
    switch (t.dtype) {
        case DType::F32:
            std::memcpy(out.data(), t.data, size_t(n) * 4);
            break;
        case DType::BF16:
            for (int64_t i = 0; i < n; ++i) {
                uint16_t h;
                std::memcpy(&h, t.data + 2 * i, 2);
                out[i] = bf16_to_f32(h);
            }
            break;
        case DType::F16:
            for (int64_t i = 0; i < n; ++i) {
                uint16_t h;
                std::memcpy(&h, t.data + 2 * i, 2);
                out[i] = f16_to_f32(h);
            }
            break;
        case DType::U32:
        case DType::I32:
            fail(t.file, ": tensor '", t.name, "' has integer type ", dtype_name(t.dtype),
                 " where floating-point weights are expected");
        default:
            dequantize_to_f32(t, out.data());
    }
    return out;
}

WeightMatrix make_weight(const RawTensor& t, int64_t rows, int64_t cols, WType target) {
    if (t.numel() != rows * cols)
        fail(t.file, ": tensor '", t.name, "' has shape ", t.shape_str(), ", expected [", rows,
             ", ", cols, "]");
    WeightMatrix w;
    w.rows = rows;
    w.cols = cols;
    // Only f32 is implemented in this layer for now; everything is widened once at load.
    (void)target;
    auto data = std::make_shared<std::vector<float>>(tensor_to_f32(t));
    w.type = WType::F32;
    w.data = reinterpret_cast<const uint8_t*>(data->data());
    w.row_bytes = size_t(cols) * 4;
    w.owner = data;
    return w;
}

void weight_row_f32(const WeightMatrix& w, int64_t row, float* out) {
    if (row < 0 || row >= w.rows) fail("row ", row, " out of range [0, ", w.rows, ")");
    const uint8_t* src = w.data + size_t(row) * w.row_bytes;
    switch (w.type) {
        case WType::F32:
            std::memcpy(out, src, size_t(w.cols) * 4);
            return;
        default:
            fail("weight_row_f32: unsupported weight type ", wtype_name(w.type));
    }
}

}  // namespace nextn
