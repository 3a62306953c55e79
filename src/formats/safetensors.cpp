#include "formats/safetensors.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_file.h"

namespace nextn {

namespace {

bool parse_dtype(const std::string& s, DType* out, size_t* elem_size) {
    if (s == "F32") { *out = DType::F32; *elem_size = 4; return true; }
    if (s == "F16") { *out = DType::F16; *elem_size = 2; return true; }
    if (s == "BF16") { *out = DType::BF16; *elem_size = 2; return true; }
    if (s == "U32") { *out = DType::U32; *elem_size = 4; return true; }
    if (s == "I32") { *out = DType::I32; *elem_size = 4; return true; }
    return false;
}

}  // namespace

SafetensorsFile read_safetensors(const std::string& path) {
    std::shared_ptr<MappedFile> file = MappedFile::open(path);
    SafetensorsFile st = parse_safetensors(std::span<const uint8_t>(file->data(), file->size()), path);
    st.file = std::move(file);
    return st;
}

SafetensorsFile parse_safetensors(std::span<const uint8_t> bytes, const std::string& path) {
    SafetensorsFile st;
    const uint8_t* base = bytes.data();
    const size_t size = bytes.size();
    if (size < 8) fail(path, ": truncated safetensors file (", size, " bytes, no header length)");
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | base[i];
    if (header_len > size - 8)
        fail(path, ": safetensors header length ", header_len, " runs past the end of the file (",
             size, " bytes)");
    if (header_len > 100u * 1024 * 1024) fail(path, ": safetensors header is implausibly large");
    nlohmann::json header;
    try {
        header = nlohmann::json::parse(base + 8, base + 8 + header_len);
    } catch (const std::exception& e) {
        fail(path, ": safetensors header is not valid JSON: ", e.what());
    }
    if (!header.is_object()) fail(path, ": safetensors header is not a JSON object");
    const size_t data_start = 8 + header_len;
    const size_t data_size = size - data_start;

    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    for (auto& [name, entry] : header.items()) {
        if (name == "__metadata__") {
            if (entry.is_object())
                for (auto& [k, v] : entry.items())
                    if (v.is_string()) st.metadata[k] = v.get<std::string>();
            continue;
        }
        if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") ||
            !entry.contains("data_offsets"))
            fail(path, ": tensor '", name, "' lacks dtype, shape or data_offsets");
        const auto& dt = entry["dtype"];
        const auto& shape = entry["shape"];
        const auto& offsets = entry["data_offsets"];
        RawTensor t;
        t.name = name;
        t.file = path;
        size_t elem_size = 0;
        // Not dt.dump(): it recurses once per nesting level, and a hostile header can nest a
        // million arrays deep (the parser itself and the destructor do not recurse).
        if (!dt.is_string())
            fail(path, ": tensor '", name, "' has a dtype that is ", dt.type_name(),
                 ", not a string");
        if (!parse_dtype(dt.get<std::string>(), &t.dtype, &elem_size))
            fail(path, ": tensor '", name, "' has unsupported dtype '", dt.get<std::string>(),
                 "' (supported: F32, F16, BF16, U32, I32)");
        if (!shape.is_array() || shape.size() > 8) fail(path, ": tensor '", name, "' has a bad shape");
        uint64_t numel = 1;
        for (const auto& d : shape) {
            if (!d.is_number_unsigned()) fail(path, ": tensor '", name, "' has a bad shape");
            uint64_t v = d.get<uint64_t>();
            if (v != 0 && numel > std::numeric_limits<uint64_t>::max() / v / 8)
                fail(path, ": tensor '", name, "' shape overflows");
            numel *= v;
            t.shape.push_back(int64_t(v));
        }
        if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
            !offsets[1].is_number_unsigned())
            fail(path, ": tensor '", name, "' has bad data_offsets");
        uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
        if (begin > end || end > data_size)
            fail(path, ": tensor '", name, "' data_offsets [", begin, ", ", end,
                 "] run past the end of the data (", data_size, " bytes)");
        if (end - begin != numel * elem_size)
            fail(path, ": tensor '", name, "' holds ", end - begin, " bytes but its shape ",
                 t.shape_str(), " of ", dt.get<std::string>(), " needs ", numel * elem_size);
        t.data = base + data_start + begin;
        t.nbytes = size_t(end - begin);
        if (end > begin) ranges.emplace_back(begin, end);
        st.tensors.emplace(name, std::move(t));
    }
    std::sort(ranges.begin(), ranges.end());
    for (size_t i = 1; i < ranges.size(); ++i)
        if (ranges[i].first < ranges[i - 1].second)
            fail(path, ": safetensors tensors overlap at data offset ", ranges[i].first);
    return st;
}

std::vector<SafetensorsFile> read_safetensors_dir(const std::string& dir) {
    namespace fs = std::filesystem;
    std::vector<std::string> files;
    const std::string index_path = dir + "/model.safetensors.index.json";
    if (file_exists(index_path)) {
        nlohmann::json index = read_json_file(index_path);
        if (!index.contains("weight_map") || !index["weight_map"].is_object())
            fail(index_path, ": missing 'weight_map'");
        std::set<std::string> shard_names;
        for (auto& [k, v] : index["weight_map"].items()) {
            if (!v.is_string()) fail(index_path, ": weight_map entry '", k, "' is not a file name");
            std::string shard = v.get<std::string>();
            if (shard.find('/') != std::string::npos || shard.find("..") != std::string::npos)
                fail(index_path, ": weight_map names a file outside the directory: '", shard, "'");
            shard_names.insert(shard);
        }
        if (shard_names.empty()) fail(index_path, ": weight_map is empty (it names no shard file)");
        for (const auto& s : shard_names) files.push_back(dir + "/" + s);
    } else {
        for (const auto& entry : fs::directory_iterator(dir)) {
            std::string name = entry.path().filename().string();
            if (name.rfind("model", 0) == 0 && name.size() > 12 &&
                name.substr(name.size() - 12) == ".safetensors")
                files.push_back(entry.path().string());
        }
        std::sort(files.begin(), files.end());
    }
    if (files.empty()) fail(dir, ": no model*.safetensors files found");
    std::vector<SafetensorsFile> out;
    std::set<std::string> seen;
    for (const auto& f : files) {
        out.push_back(read_safetensors(f));
        for (const auto& [name, t] : out.back().tensors)
            if (!seen.insert(name).second) fail(f, ": tensor '", name, "' appears in two shards");
    }
    return out;
}

}  // namespace nextn
