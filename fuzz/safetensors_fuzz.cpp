// libFuzzer target: the safetensors reader on arbitrary bytes (8-byte header length, JSON
// header, data). A clean nextn::Error is the expected answer; anything else is a bug.
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/error.h"
#include "formats/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        nextn::SafetensorsFile st =
            nextn::parse_safetensors(std::span<const uint8_t>(data, size), "fuzz.safetensors");
        // Read the first and last byte of every tensor the reader vouched for, so ASan flags
        // one that points outside the input.
        int sum = 0;
        for (const auto& [name, t] : st.tensors) {
            if (t.nbytes == 0) continue;
            sum += t.data[0] + t.data[t.nbytes - 1];
            sum += int(t.numel() & 1);
        }
        volatile int sink = sum;
        (void)sink;
    } catch (const nextn::Error&) {
        // A clear error is the right answer to a corrupt file.
    }
    return 0;
}
