#include "cli/args.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace nextn::cli {

Args::Args(std::vector<FlagSpec> specs, const std::vector<std::string>& argv)
    : specs_(std::move(specs)) {
    auto find = [&](const std::string& key) -> const FlagSpec* {
        for (const auto& s : specs_)
            if (s.name == key || (!s.alias.empty() && s.alias == key)) return &s;
        return nullptr;
    };
    for (size_t i = 0; i < argv.size(); ++i) {
        const std::string& a = argv[i];
        if (a.size() < 2 || a[0] != '-' || a == "--" ) {
            if (a == "--") {
                for (size_t j = i + 1; j < argv.size(); ++j) positional_.push_back(argv[j]);
                break;
            }
            positional_.push_back(a);
            continue;
        }
        std::string key = a.substr(a[1] == '-' ? 2 : 1);
        std::optional<std::string> inline_value;
        if (auto eq = key.find('='); eq != std::string::npos) {
            inline_value = key.substr(eq + 1);
            key.resize(eq);
        }
        const FlagSpec* spec = find(key);
        if (!spec) throw UsageError("unknown flag '" + a + "' (see --help)");
        if (!spec->takes_value) {
            if (inline_value) throw UsageError("flag --" + spec->name + " takes no value");
            values_[spec->name] = "1";
            continue;
        }
        if (inline_value) {
            values_[spec->name] = *inline_value;
        } else {
            if (i + 1 >= argv.size()) throw UsageError("flag --" + spec->name + " needs a value");
            values_[spec->name] = argv[++i];
        }
        repeated_[spec->name].push_back(values_[spec->name]);
    }
}

std::string Args::str(const std::string& name, const std::string& fallback) const {
    auto it = values_.find(name);
    return it == values_.end() ? fallback : it->second;
}

int64_t Args::integer(const std::string& name, int64_t fallback) const {
    auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(it->second.c_str(), &end, 10);
    if (it->second.empty() || *end != '\0' || errno != 0)
        throw UsageError("flag --" + name + " expects an integer, got '" + it->second + "'");
    return v;
}

double Args::number(const std::string& name, double fallback) const {
    auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    errno = 0;
    char* end = nullptr;
    double v = std::strtod(it->second.c_str(), &end);
    // ERANGE with a finite result is an underflow (1e-320: a subnormal, or 0), still the number
    // written; only an overflow (+-HUGE_VAL, infinite) has no double to stand for it.
    if (it->second.empty() || *end != '\0' || (errno == ERANGE && std::isinf(v)))
        throw UsageError("flag --" + name + " expects a number, got '" + it->second + "'");
    return v;
}

std::string Args::help_text(const std::vector<FlagSpec>& specs) {
    std::ostringstream out;
    for (const auto& s : specs) {
        std::string left = "  --" + s.name;
        if (!s.alias.empty()) left = "  -" + s.alias + ", --" + s.name;
        if (s.takes_value) left += " " + s.value_name;
        if (left.size() < 30) left.resize(30, ' ');
        else left += "  ";
        out << left << s.help << "\n";
    }
    return out.str();
}

std::vector<std::string> Args::all(const std::string& name) const {
    auto it = repeated_.find(name);
    return it == repeated_.end() ? std::vector<std::string>{} : it->second;
}

std::string process_escapes(const std::string& s) {
    auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    // The byte an escape letter stands for; -1 when it is not one of the simple escapes.
    auto simple = [](char e) -> int {
        switch (e) {
            case 'n':
                return '\n';
            case 'r':
                return '\r';
            case 't':
                return '\t';
            case '0':
                return '\0';
            case '\\':
                return '\\';
            case '"':
                return '"';
            case '\'':
                return '\'';
            default:
                return -1;
        }
    };
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        const bool escape = s[i] == '\\' && i + 1 < s.size();
        if (escape && simple(s[i + 1]) >= 0) {
            out += char(simple(s[i + 1]));
            i += 1;
        } else if (escape && s[i + 1] == 'x' && i + 3 < s.size() && hex(s[i + 2]) >= 0 &&
                   hex(s[i + 3]) >= 0) {
            out += char(hex(s[i + 2]) * 16 + hex(s[i + 3]));
            i += 3;
        } else {
            out += s[i];  // a plain byte, or a backslash that starts no escape: kept
        }
    }
    return out;
}

std::vector<int32_t> parse_id_list(const std::string& s, const std::string& flag) {
    std::vector<int32_t> ids;
    std::string cur;
    auto push = [&] {
        if (cur.empty()) return;
        char* end = nullptr;
        errno = 0;
        long v = std::strtol(cur.c_str(), &end, 10);
        if (*end != '\0' || errno != 0 || v < 0 || v > INT32_MAX)
            throw UsageError("flag --" + flag + ": '" + cur + "' is not a token id");
        ids.push_back(int32_t(v));
        cur.clear();
    };
    for (char ch : s) {
        if (ch == ',' || ch == ' ' || ch == '\t' || ch == '\n') {
            push();
        } else {
            cur += ch;
        }
    }
    push();
    if (ids.empty()) throw UsageError("flag --" + flag + " needs at least one token id");
    return ids;
}

}  // namespace nextn::cli
