#pragma once
// safetensors reader: 8-byte little-endian header length, JSON header, raw little-endian data.
// The header is hostile until checked: every size, offset and overlap is validated before any
// tensor is handed out.
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "formats/raw_tensor.h"

namespace nextn {

struct SafetensorsFile {
    std::shared_ptr<MappedFile> file;
    std::map<std::string, RawTensor> tensors;  // by name in the file
    std::map<std::string, std::string> metadata;
};

SafetensorsFile read_safetensors(const std::string& path);

// Parses safetensors bytes already in memory; `name` stands for the file in messages and in
// each RawTensor::file. Tensor data points into `bytes`, which must outlive the result (`file`
// stays empty; read_safetensors keeps its map there).
SafetensorsFile parse_safetensors(std::span<const uint8_t> bytes, const std::string& name);

// A directory's weights: model.safetensors.index.json (sharded) if present, else every
// model*.safetensors file in it. Tensor names must be unique across shards.
std::vector<SafetensorsFile> read_safetensors_dir(const std::string& dir);

}  // namespace nextn
