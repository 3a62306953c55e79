#include "core/cpu_info.h"

#include <fstream>

namespace nextn {

std::string cpu_model_name() {
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line)) {
        if (line.rfind("model name", 0) != 0) continue;
        const size_t colon = line.find(':');
        if (colon == std::string::npos) break;
        const size_t start = line.find_first_not_of(" \t", colon + 1);
        if (start == std::string::npos) break;
        return line.substr(start);
    }
    return "unknown";
}

}  // namespace nextn
