#pragma once
// Where tests find their data. Small fixtures are committed under tests/data/; the larger sets
// come from $NEXTN_FIXTURES, else ../shared/fixtures beside the checkout. Tests that need the
// larger sets call GTEST_SKIP() with the reason when neither exists.
#include <cstdlib>
#include <string>

#include "core/mapped_file.h"

namespace nextn::test {

inline std::string source_dir() { return NEXTN_SOURCE_DIR; }

inline std::string data_dir() { return source_dir() + "/tests/data"; }

// Returns "" when no fixture directory exists.
inline std::string fixtures_dir() {
    if (const char* env = std::getenv("NEXTN_FIXTURES"); env && *env && is_directory(env))
        return env;
    std::string shared = source_dir() + "/../shared/fixtures";
    if (is_directory(shared)) return shared;
    return "";
}

}  // namespace nextn::test

// Skips the current test when the large fixture set is absent.
#define NEXTN_REQUIRE_FIXTURES(dir_var)                                                   \
    std::string dir_var = ::nextn::test::fixtures_dir();                                  \
    if (dir_var.empty()) {                                                                \
        GTEST_SKIP() << "SKIPPED: large fixtures not found (set NEXTN_FIXTURES or provide " \
                        "../shared/fixtures)";                                            \
    }
