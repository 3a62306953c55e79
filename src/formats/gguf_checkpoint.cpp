#include "formats/gguf_checkpoint.h"

#include <cstring>
#include <fstream>

#include "core/error.h"

namespace nextn {

bool is_gguf_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    char magic[4] = {};
    in.read(magic, 4);
    return in && std::memcmp(magic, "GGUF", 4) == 0;
}

Checkpoint load_gguf_checkpoint(const std::string& path, const LoadOptions& options) {
    fail(path, ": GGUF files are not supported yet");
}

}  // namespace nextn
