// Numbers from template values as Python reads them (jinja_numbers.h).
#include "tokenizer/jinja_numbers.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>

#include "tokenizer/jinja_builtins.h"
#include "tokenizer/jinja_eval.h"
#include "tokenizer/jinja_limits.h"

namespace nextn::jinja {

// (Casting NaN, an infinity or a value past int64 is undefined behaviour, hence the check.)
int64_t truncate_to_int(double d, int line) {
    // [-2**63, 2**63): -2**63 itself is an int64.
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
        error_at(line, "cannot convert " + python_float_repr(d) + " to a 64-bit integer");
    return static_cast<int64_t>(d);
}

namespace {

// Moves i past digits that single underscores may group ("1_000"), appending the digits to out;
// an underscore not between two digits is left where it is, so the caller's syntax check fails.
std::size_t skip_digit_groups(const std::string& s, std::size_t i, std::string& out) {
    const auto digit = [&](std::size_t k) { return k < s.size() && s[k] >= '0' && s[k] <= '9'; };
    while (digit(i)) {
        out += s[i++];
        if (i < s.size() && s[i] == '_' && digit(i + 1)) ++i;
    }
    return i;
}

// Python's int(s, base) (s stripped): a sign; for base 16, 8 or 2 an optional 0x, 0o or 0b
// prefix, and for base 0 the prefix decides (without one, base 10 and no leading zero but in 0
// itself); digits below the base in single-underscore groups, one underscore also allowed after a
// prefix. nullopt where Python raises ValueError (a base outside 0 and 2..36 included); past
// int64 is an error.
std::optional<int64_t> python_int(const std::string& s, int64_t base, int line) {
    if (base != 0 && (base < 2 || base > 36)) return std::nullopt;
    std::size_t i = 0;
    const bool negative = i < s.size() && s[i] == '-';
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    const auto digit_value = [&](std::size_t k) -> int {
        if (k >= s.size()) return 99;
        const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(s[k])));
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'z') return c - 'a' + 10;
        return 99;
    };
    bool after_prefix = false;
    if (i + 1 < s.size() && s[i] == '0') {
        const char p = static_cast<char>(std::tolower(static_cast<unsigned char>(s[i + 1])));
        const int prefix_base = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
        if (prefix_base != 0 && (base == 0 || base == prefix_base)) {
            base = prefix_base;
            i += 2;
            after_prefix = true;
        }
    }
    const bool decimal_by_default = base == 0;
    if (decimal_by_default) base = 10;
    const auto is_digit = [&](std::size_t k) { return digit_value(k) < base; };
    if (after_prefix && i < s.size() && s[i] == '_' && is_digit(i + 1)) ++i;
    if (!is_digit(i)) return std::nullopt;
    const bool leading_zero = s[i] == '0';
    uint64_t magnitude = 0;  // up to 2**63, for -2**63
    const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
    bool nonzero = false;
    while (is_digit(i)) {
        const uint64_t d = uint64_t(digit_value(i++));
        nonzero |= d != 0;
        if (magnitude > (limit - d) / uint64_t(base)) integer_overflow(line);
        magnitude = magnitude * uint64_t(base) + d;
        if (i < s.size() && s[i] == '_' && is_digit(i + 1)) ++i;
    }
    if (i != s.size()) return std::nullopt;
    if (decimal_by_default && leading_zero && nonzero) return std::nullopt;  // "010" with base 0
    return negative ? int64_t(0 - magnitude) : int64_t(magnitude);
}

// Python's float(s) syntax (s stripped): inf, infinity or nan in any case after a sign, or a
// decimal with digits in underscore groups and an optional exponent; not strtod's hex or
// nan(...) forms.
std::optional<std::string> python_float_text(const std::string& s) {
    std::string out;
    std::size_t i = 0;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) out += s[i++];
    std::string word = s.substr(i);
    std::transform(word.begin(), word.end(), word.begin(),
                   [](char c) { return char(std::tolower(static_cast<unsigned char>(c))); });
    if (word == "inf" || word == "infinity" || word == "nan") return out + word;
    const std::size_t before = out.size();
    i = skip_digit_groups(s, i, out);
    if (i < s.size() && s[i] == '.') {
        out += s[i++];
        i = skip_digit_groups(s, i, out);
    }
    if (out.size() == before || out.substr(before) == ".") return std::nullopt;
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
        out += s[i++];
        if (i < s.size() && (s[i] == '+' || s[i] == '-')) out += s[i++];
        const std::size_t exponent = out.size();
        i = skip_digit_groups(s, i, out);
        if (out.size() == exponent) return std::nullopt;
    }
    if (i != s.size()) return std::nullopt;
    return out;
}

}  // namespace

Value number_filter(const Value& v, bool as_int, const Value& fallback, int64_t base, int line) {
    if (v.is_int()) return as_int ? v : Value(static_cast<double>(v.as_int()));
    if (v.is_float()) return as_int ? Value(truncate_to_int(v.as_double(), line)) : v;
    if (v.is_bool()) return as_int ? Value(static_cast<int64_t>(v.as_bool())) : Value(v.as_bool() ? 1.0 : 0.0);
    if (v.is_string()) {
        const std::string s = python_strip(v.as_string());
        if (as_int) {
            if (const std::optional<int64_t> x = python_int(s, base, line)) return Value(*x);
        }
        // Jinja's int filter also takes what float() does ("3.5", "1e3"), truncated; an infinity
        // or NaN gives the default there.
        if (const std::optional<std::string> text = python_float_text(s)) {
            const double d = std::strtod(text->c_str(), nullptr);
            if (!as_int) return Value(d);
            if (std::isfinite(d)) return Value(truncate_to_int(d, line));
        }
    }
    return fallback;
}

}  // namespace nextn::jinja
