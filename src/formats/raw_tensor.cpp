#include "formats/raw_tensor.h"

#include <sstream>

namespace nextn {

const char* dtype_name(DType t) {
    switch (t) {
        case DType::F32: return "F32";
        case DType::F16: return "F16";
        case DType::BF16: return "BF16";
        case DType::U32: return "U32";
        case DType::I32: return "I32";
        case DType::Q8_0: return "Q8_0";
        case DType::Q4_0: return "Q4_0";
        case DType::Q4_1: return "Q4_1";
        case DType::Q5_0: return "Q5_0";
        case DType::Q5_1: return "Q5_1";
        case DType::Q4_K: return "Q4_K";
        case DType::Q5_K: return "Q5_K";
        case DType::Q6_K: return "Q6_K";
        case DType::Q2_K: return "Q2_K";
        case DType::Q3_K: return "Q3_K";
        case DType::IQ4_NL: return "IQ4_NL";
        case DType::IQ4_XS: return "IQ4_XS";
        case DType::MXFP4: return "MXFP4";
        case DType::MLX_AFFINE: return "MLX_AFFINE";
    }
    return "?";
}

int64_t RawTensor::numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

std::string RawTensor::shape_str() const {
    std::ostringstream s;
    s << "[";
    for (size_t i = 0; i < shape.size(); ++i) s << (i ? ", " : "") << shape[i];
    s << "]";
    return s.str();
}

}  // namespace nextn
