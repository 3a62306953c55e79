// A thread's scratch for the int8 tiles' unpacked codes and scales (x86/x86_kernels.h). Built with
// the generic flags: no ISA-specific code, so every ISA's tiles share it.
#include <cstddef>
#include <vector>

#include "kernels/x86/x86_kernels.h"

namespace nextn::x86 {

uint8_t* tile_scratch(int64_t bytes) {
    struct alignas(64) Line {
        uint8_t bytes[64];
    };
    thread_local std::vector<Line> scratch;  // [bytes / 64]
    const size_t lines = size_t((bytes + 63) / 64);
    if (scratch.size() < lines) scratch.resize(lines);
    return reinterpret_cast<uint8_t*>(scratch.data());
}

}  // namespace nextn::x86
