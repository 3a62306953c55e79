#pragma once
// What CPU this is, in words, for the reports that depend on it (`bench`, `inspect`): the kernel
// settings differ by vendor (x86/int8_dot_tiles.h), so a figure means little without the CPU.
#include <string>

namespace nextn {

// The value of the first /proc/cpuinfo line whose key is `key` ("flags", "model name"); "" when
// there is none (not Linux, or no such line).
std::string cpuinfo_field(const std::string& key);

// The first "model name" of /proc/cpuinfo, e.g. "Intel(R) Xeon(R) Processor"; "unknown" when
// it cannot be read (not Linux, or no such line).
std::string cpu_model_name();

}  // namespace nextn
