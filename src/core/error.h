#pragma once
// One error type for everything the user can cause: bad files, bad flags, bad requests.
// The message names the file / tensor / field at fault; callers print it and exit non-zero.
#include <sstream>
#include <stdexcept>
#include <string>

namespace nextn {

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Builds the message from any streamable parts: fail("tensor ", name, " has ", n, " dims").
template <class... Parts>
[[noreturn]] void fail(const Parts&... parts) {
    std::ostringstream out;
    (out << ... << parts);
    throw Error(out.str());
}

}  // namespace nextn
