#include "formats/ggml_types.h"

namespace nextn {

namespace {

// ids, block sizes and block byte counts from ggml's type_traits (ggml.c) and block structs
// (ggml-common.h). Ids 4, 5 and 31..33, 36..38 are retired and stay unknown.
constexpr GgmlTypeInfo kTypes[] = {
    {0, "F32", 1, 4},          {1, "F16", 1, 2},         {2, "Q4_0", 32, 18},
    {3, "Q4_1", 32, 20},       {6, "Q5_0", 32, 22},      {7, "Q5_1", 32, 24},
    {8, "Q8_0", 32, 34},       {9, "Q8_1", 32, 36},      {10, "Q2_K", 256, 84},
    {11, "Q3_K", 256, 110},    {12, "Q4_K", 256, 144},   {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210},    {15, "Q8_K", 256, 292},   {16, "IQ2_XXS", 256, 66},
    {17, "IQ2_XS", 256, 74},   {18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50},
    {20, "IQ4_NL", 32, 18},    {21, "IQ3_S", 256, 110},  {22, "IQ2_S", 256, 82},
    {23, "IQ4_XS", 256, 136},  {24, "I8", 1, 1},         {25, "I16", 1, 2},
    {26, "I32", 1, 4},         {27, "I64", 1, 8},        {28, "F64", 1, 8},
    {29, "IQ1_M", 256, 56},    {30, "BF16", 1, 2},       {34, "TQ1_0", 256, 54},
    {35, "TQ2_0", 256, 66},    {39, "MXFP4", 32, 17},
};

}  // namespace

std::optional<GgmlTypeInfo> ggml_type_info(uint32_t id) {
    for (const auto& t : kTypes)
        if (t.id == id) return t;
    return std::nullopt;
}

std::string ggml_type_name(uint32_t id) {
    if (auto t = ggml_type_info(id)) return t->name;
    return "type id " + std::to_string(id);
}

std::optional<DType> ggml_type_to_dtype(uint32_t id) {
    switch (id) {
        case 0: return DType::F32;
        case 1: return DType::F16;
        case 30: return DType::BF16;
        case 8: return DType::Q8_0;
        case 2: return DType::Q4_0;
        case 3: return DType::Q4_1;
        case 6: return DType::Q5_0;
        case 7: return DType::Q5_1;
        case 12: return DType::Q4_K;
        case 13: return DType::Q5_K;
        case 14: return DType::Q6_K;
        case 10: return DType::Q2_K;
        case 11: return DType::Q3_K;
        case 20: return DType::IQ4_NL;
        case 23: return DType::IQ4_XS;
        case 39: return DType::MXFP4;
        default: return std::nullopt;
    }
}

bool dtype_block_layout(DType t, int64_t* block_size, size_t* block_bytes) {
    switch (t) {
        case DType::F32: *block_size = 1; *block_bytes = 4; return true;
        case DType::F16: *block_size = 1; *block_bytes = 2; return true;
        case DType::BF16: *block_size = 1; *block_bytes = 2; return true;
        case DType::U32: *block_size = 1; *block_bytes = 4; return true;
        case DType::I32: *block_size = 1; *block_bytes = 4; return true;
        case DType::Q8_0: *block_size = 32; *block_bytes = 34; return true;
        case DType::Q4_0: *block_size = 32; *block_bytes = 18; return true;
        case DType::Q4_1: *block_size = 32; *block_bytes = 20; return true;
        case DType::Q5_0: *block_size = 32; *block_bytes = 22; return true;
        case DType::Q5_1: *block_size = 32; *block_bytes = 24; return true;
        case DType::Q4_K: *block_size = 256; *block_bytes = 144; return true;
        case DType::Q5_K: *block_size = 256; *block_bytes = 176; return true;
        case DType::Q6_K: *block_size = 256; *block_bytes = 210; return true;
        case DType::Q2_K: *block_size = 256; *block_bytes = 84; return true;
        case DType::Q3_K: *block_size = 256; *block_bytes = 110; return true;
        case DType::IQ4_NL: *block_size = 32; *block_bytes = 18; return true;
        case DType::IQ4_XS: *block_size = 256; *block_bytes = 136; return true;
        case DType::MXFP4: *block_size = 32; *block_bytes = 17; return true;
        case DType::MLX_AFFINE: return false;
    }
    return false;
}

}  // namespace nextn
