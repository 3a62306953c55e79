#include "formats/checkpoint.h"

#include "core/error.h"
#include "formats/gguf_checkpoint.h"

namespace nextn {

const RawTensor* Checkpoint::find(const std::string& name) const {
    auto it = tensors.find(name);
    return it == tensors.end() ? nullptr : &it->second;
}

const RawTensor& Checkpoint::require(const std::string& name) const {
    const RawTensor* t = find(name);
    if (!t) {
        const std::string in_file = file_name_of ? file_name_of(name) : name;
        if (in_file != name) fail(path, ": missing tensor '", in_file, "' (", name, ")");
        fail(path, ": missing tensor '", name, "'");
    }
    return *t;
}

Checkpoint load_checkpoint(const std::string& path, const LoadOptions& options) {
    if (is_directory(path)) {
        if (!file_exists(path + "/config.json")) {
            if (is_directory(path + "/config.json"))  // there, so "no config.json" would mislead
                fail(path, ": config.json is a directory, not a file");
            fail(path, ": no config.json in model directory");
        }
        return load_hf_checkpoint(path, options);
    }
    require_file(path, "model path");
    if (is_gguf_file(path)) return load_gguf_checkpoint(path, options);
    fail(path, ": unrecognised model file (expected a model directory with config.json, or a .gguf file)");
}

}  // namespace nextn
