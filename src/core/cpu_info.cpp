#include "core/cpu_info.h"

#include <fstream>

namespace nextn {

std::string cpuinfo_field(const std::string& key) {
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line)) {
        if (line.rfind(key, 0) != 0) continue;
        const size_t colon = line.find(':');
        // "model name\t: ...": only whitespace may stand between the key and its colon.
        if (colon == std::string::npos || line.find_first_not_of(" \t", key.size()) != colon)
            continue;
        const size_t start = line.find_first_not_of(" \t", colon + 1);
        return start == std::string::npos ? "" : line.substr(start);
    }
    return "";
}

std::string cpu_model_name() {
    const std::string name = cpuinfo_field("model name");
    return name.empty() ? "unknown" : name;
}

}  // namespace nextn
