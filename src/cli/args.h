#pragma once
// Command-line flags: `--name value`, `--name=value`, short aliases, boolean switches and
// positional arguments. Unknown flags and malformed values are usage errors (exit code 2).
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace nextn::cli {

class UsageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct FlagSpec {
    std::string name;     // long name without dashes
    std::string alias;    // short alias without dash, may be empty
    bool takes_value = true;
    std::string help;
    std::string value_name = "V";
};

class Args {
public:
    Args(std::vector<FlagSpec> specs, const std::vector<std::string>& argv);

    bool has(const std::string& name) const { return values_.count(name) > 0; }
    std::string str(const std::string& name, const std::string& fallback = "") const;
    int64_t integer(const std::string& name, int64_t fallback) const;
    double number(const std::string& name, double fallback) const;
    const std::vector<std::string>& positional() const { return positional_; }
    // Every value a repeatable flag was given, in order (str() returns the last).
    std::vector<std::string> all(const std::string& name) const;

    static std::string help_text(const std::vector<FlagSpec>& specs);

private:
    std::vector<FlagSpec> specs_;
    std::map<std::string, std::string> values_;
    std::map<std::string, std::vector<std::string>> repeated_;
    std::vector<std::string> positional_;
};

// A flag value with C escapes turned into their bytes, as llama.cpp does for its stop strings:
// \n \r \t \0 \\ \" \' and \xNN (two hex digits). Any other backslash stays as written, so
// a value without escapes is unchanged.
std::string process_escapes(const std::string& s);

// "1,2,3" or "1 2 3" -> ids; UsageError on anything else.
std::vector<int32_t> parse_id_list(const std::string& s, const std::string& flag);

}  // namespace nextn::cli
