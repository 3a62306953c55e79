#pragma once
// Reads and parses a JSON file; a parse error names the file.
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/mapped_file.h"

namespace nextn {

template <class Json = nlohmann::json>
Json read_json_file(const std::string& path) {
    try {
        return Json::parse(read_text_file(path));
    } catch (const nlohmann::json::exception& e) {
        fail(path, ": not valid JSON: ", e.what());
    }
}

}  // namespace nextn
