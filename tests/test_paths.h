#pragma once
// Where tests find their data. Small fixtures are committed under tests/data/; the larger sets
// come from $NEXTN_FIXTURES, else ../shared/fixtures beside the checkout. Tests that need the
// larger sets call GTEST_SKIP() with the reason when neither exists.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
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

// A directory under the system temp dir for this process's files, created on first use and
// removed with everything in it when the process exits (ctest runs each test in its own
// process, so parallel tests never share one and nothing is left behind in /tmp).
inline std::string scratch_dir() {
    struct Scratch {
        std::filesystem::path path;
        Scratch() {
            path = std::filesystem::temp_directory_path() / ("nextn_test_" + std::to_string(getpid()));
            std::filesystem::create_directories(path);
        }
        ~Scratch() {
            std::error_code ignored;  // a destructor at exit has no one to report to
            std::filesystem::remove_all(path, ignored);
        }
    };
    static const Scratch scratch;
    return scratch.path.string();
}

}  // namespace nextn::test

// Skips the current test when the large fixture set is absent.
#define NEXTN_REQUIRE_FIXTURES(dir_var)                                                   \
    std::string dir_var = ::nextn::test::fixtures_dir();                                  \
    if (dir_var.empty()) {                                                                \
        GTEST_SKIP() << "SKIPPED: large fixtures not found (set NEXTN_FIXTURES or provide " \
                        "../shared/fixtures)";                                            \
    }
