#pragma once
// How much memory this machine can still give, read from /proc/meminfo, and the checks that turn
// "the kernel will kill us half-way" into an error naming what did not fit.
#include <cstddef>
#include <string>

namespace nextn {

// The meminfo fields the checks use, in bytes (0 when absent).
struct MemoryInfo {
    size_t available = 0;  // MemAvailable: what can be had without swapping
    size_t swap_free = 0;  // SwapFree
};

// Reads /proc/meminfo (all zero when it cannot be read: the checks then pass).
MemoryInfo read_memory_info();

// Throws Error naming `what`, where the available figure comes from (`source`), then `hint`,
// when need_bytes exceeds available_bytes (0 = unknown: no check).
void require_memory(size_t need_bytes, size_t available_bytes, const std::string& what,
                    const std::string& hint = "",
                    const std::string& source = "MemAvailable in /proc/meminfo");

// "1.2 GB"
std::string gigabytes(size_t bytes);
// "2.05 GB" from 1 GB up, else "12.3 MB".
std::string size_text(size_t bytes);

}  // namespace nextn
