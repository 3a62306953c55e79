#include "core/memory_info.h"

#include <fstream>
#include <sstream>

#include "core/error.h"

namespace nextn {

MemoryInfo read_memory_info() {
    MemoryInfo m;
    std::ifstream in("/proc/meminfo");
    std::string key, unit;
    size_t value = 0;
    while (in >> key >> value) {
        std::getline(in, unit);
        if (key == "MemAvailable:") m.available = value * 1024;  // reported in kB
        if (key == "SwapFree:") m.swap_free = value * 1024;
    }
    return m;
}

namespace {

std::string fixed(double value, int precision, const char* unit) {
    std::ostringstream s;
    s.setf(std::ios::fixed);
    s.precision(precision);
    s << value << unit;
    return s.str();
}

}  // namespace

std::string gigabytes(size_t bytes) { return fixed(double(bytes) / 1e9, 1, " GB"); }

std::string size_text(size_t bytes) {
    return bytes >= size_t(1000000000) ? fixed(double(bytes) / 1e9, 2, " GB")
                                       : fixed(double(bytes) / 1e6, 1, " MB");
}

void require_memory(size_t need_bytes, size_t available_bytes, const std::string& what,
                    const std::string& hint, const std::string& source) {
    if (available_bytes == 0 || need_bytes <= available_bytes) return;
    fail(what, " needs ", gigabytes(need_bytes), " of memory but only ", gigabytes(available_bytes),
         " is available (", source, ")", hint.empty() ? "" : "; ", hint);
}

}  // namespace nextn
