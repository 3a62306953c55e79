#pragma once
// The message of the nextn::Error a call throws, for tests that check what an error says.
#include <functional>
#include <string>

#include "core/error.h"

namespace nextn::test {

// "(no error)" when the call returns normally; any other exception escapes to the test.
inline std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace nextn::test
