// core/cpu_info.h: cpuinfo_field("key") is the value of the first /proc/cpuinfo line whose key
// is exactly `key`, checked against a second parse written here: split each line at its first
// colon, trim the key's trailing blanks and the value's leading ones.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "core/cpu_info.h"

namespace nextn {
namespace {

// The value of the first line whose whole key (before the colon, trailing blanks trimmed) is
// `key`; found = false when no line has it.
std::string first_value(const std::string& key, bool& found) {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    found = false;
    while (std::getline(in, line)) {
        const size_t colon = line.find(':');
        if (colon == std::string::npos) continue;
        std::string k = line.substr(0, colon);
        while (!k.empty() && (k.back() == ' ' || k.back() == '\t')) k.pop_back();
        if (k != key) continue;
        found = true;
        size_t start = colon + 1;
        while (start < line.size() && (line[start] == ' ' || line[start] == '\t')) ++start;
        return line.substr(start);
    }
    return "";
}

// Keys that are prefixes of other keys ("model" of "model name", "cpu" of "cpu family", "fpu"
// of "fpu_exception", "cache" of "cache size") must match only their own line; a key with an
// empty value ("power management:") gives "", and so does a key no line has.
TEST(CpuInfo, FieldIsTheFirstLineWithExactlyThatKey) {
    bool any = false;
    first_value("processor", any);
    if (!any) GTEST_SKIP() << "no /proc/cpuinfo processor lines to check against";
    for (const char* key :
         {"processor", "vendor_id", "model", "model name", "flags", "cpu", "cpu family", "fpu",
          "cache", "cache size", "power management", "no such key", "model name extra"}) {
        bool found = false;
        const std::string want = first_value(key, found);
        EXPECT_EQ(cpuinfo_field(key), want) << "key '" << key << "' (in cpuinfo: " << found << ")";
    }
}

// cpu_model_name is the first "model name", or "unknown" where there is none.
TEST(CpuInfo, ModelNameIsTheFirstModelNameLine) {
    bool found = false;
    const std::string want = first_value("model name", found);
    EXPECT_EQ(cpu_model_name(), found && !want.empty() ? want : "unknown");
}

}  // namespace
}  // namespace nextn
