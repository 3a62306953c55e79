#pragma once
// GGUF reader (versions 2 and 3): header, typed metadata, tensor infos and aligned tensor data,
// memory-mapped. Every count, length, offset and size is checked against the file before use;
// errors name the file and the key or tensor at fault.
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/mapped_file.h"

namespace nextn {

enum class GgufType : uint32_t {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    BOOL = 7,
    STRING = 8,
    ARRAY = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12,
};

const char* gguf_type_name(GgufType t);

struct GgufValue {
    GgufType type = GgufType::U32;
    // Scalars: integers and bools in `integer` (U64 above INT64_MAX in `u64` only), floats in
    // `number`, strings in `string`.
    int64_t integer = 0;
    uint64_t u64 = 0;
    double number = 0;
    std::string string;
    // ARRAY: element type and count; elements of integer/bool type in `integers`, of float
    // type in `numbers`, of string type in `strings`. Nested arrays are counted, not kept.
    GgufType elem_type = GgufType::U32;
    uint64_t count = 0;
    std::vector<int64_t> integers;
    std::vector<double> numbers;
    std::vector<std::string> strings;

    bool is_integer() const;  // integer or bool scalar
    bool is_float() const;
};

struct GgufTensorInfo {
    std::string name;
    uint32_t ggml_type = 0;
    std::vector<int64_t> ne;  // ggml order: ne[0] is the innermost (contiguous) dimension
    uint64_t offset = 0;      // relative to the data section
    const uint8_t* data = nullptr;
    size_t nbytes = 0;
};

struct GgufFile {
    std::string path;
    uint32_t version = 0;
    uint64_t alignment = 32;
    std::map<std::string, GgufValue> metadata;
    std::vector<GgufTensorInfo> tensors;  // in file order
    std::map<std::string, size_t> tensor_index;
    std::shared_ptr<MappedFile> file;

    const GgufValue* find(const std::string& key) const;
    const GgufTensorInfo* find_tensor(const std::string& name) const;

    // Typed metadata access; the required forms fail naming the key when absent or mistyped.
    int64_t get_int(const std::string& key) const;
    int64_t get_int(const std::string& key, int64_t fallback) const;
    double get_float(const std::string& key) const;
    double get_float(const std::string& key, double fallback) const;
    std::string get_string(const std::string& key, const std::string& fallback = "") const;
    bool get_bool(const std::string& key, bool fallback) const;
};

GgufFile read_gguf(const std::string& path);

// Parses GGUF bytes already in memory; `name` stands for the file in error messages. Tensor
// data points into `bytes`, which must outlive the result (read_gguf keeps its map in `file`;
// here `file` stays empty). The fuzzers and corruption tests come in through this door.
GgufFile parse_gguf(std::span<const uint8_t> bytes, const std::string& name);

}  // namespace nextn
