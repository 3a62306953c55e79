// libFuzzer target: the GGUF reader on arbitrary bytes. A clean nextn::Error is the expected
// answer to a bad file; any other exception, a sanitizer report or a crash is a bug.
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/error.h"
#include "formats/gguf.h"

namespace {

// Reads every byte range the reader vouched for, so ASan flags a tensor that points outside
// the input, and calls the typed accessors the checkpoint loader uses.
int touch(const nextn::GgufFile& g) {
    int sum = 0;
    for (const auto& t : g.tensors) {
        if (t.nbytes == 0) continue;
        sum += t.data[0] + t.data[t.nbytes - 1];
    }
    for (const auto& [key, value] : g.metadata) {
        if (value.is_integer()) sum += int(g.get_int(key, 0) & 1);
        if (value.is_float()) sum += int(g.get_float(key, 0.0) > 0);
        if (value.type == nextn::GgufType::STRING) sum += int(g.get_string(key).size() & 1);
    }
    return sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        nextn::GgufFile g = nextn::parse_gguf(std::span<const uint8_t>(data, size), "fuzz.gguf");
        volatile int sink = touch(g);
        (void)sink;
    } catch (const nextn::Error&) {
        // A clear error is the right answer to a corrupt file.
    }
    return 0;
}
