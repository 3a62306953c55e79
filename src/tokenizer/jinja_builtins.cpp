#include "tokenizer/jinja_builtins.h"

#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <optional>

#include "core/error.h"
#include "tokenizer/jinja_eval.h"
#include "tokenizer/jinja_limits.h"
#include "tokenizer/jinja_numbers.h"
#include "tokenizer/utf8.h"

namespace nextn::jinja {
namespace {

std::u32string to_u32(const std::string& s) {
    std::u32string out;
    std::size_t pos = 0;
    while (pos < s.size()) out.push_back(utf8::next(s, pos));
    return out;
}

std::string from_u32(const std::u32string& s) {
    std::string out;
    for (char32_t c : s) utf8::append(out, c);
    return out;
}

// Python str.isspace() for the characters that matter in templates.
bool py_space(char32_t c) {
    return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F) || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

// By value: callers pass temporaries as the fallback (Value(-1), Value("")), and a reference
// to one of those dangled once the statement ended (AddressSanitizer: stack-use-after-scope in
// split()'s maxsplit). A Value is a small variant (strings and containers shared), cheap to copy.
Value arg(const CallArgs& a, std::size_t i, const char* name, const Value& fallback) {
    if (i < a.positional.size()) return a.positional[i];
    if (const Value* v = a.kw(name)) return *v;
    return fallback;
}

std::string need_string(const Value& v, int line, const std::string& what) {
    if (!v.is_string()) error_at(line, what + " expects a string, got '" + v.type_name() + "'");
    return v.as_string();
}

// strip / lstrip / rstrip with Python semantics (chars=None strips whitespace).
std::string py_strip(const std::string& s, const Value& chars, bool left, bool right, int line) {
    std::u32string u = to_u32(s);
    std::u32string set;
    bool ws = chars.is_none() || chars.is_undefined();
    if (!ws) set = to_u32(need_string(chars, line, "strip()"));
    auto drop = [&](char32_t c) { return ws ? py_space(c) : set.find(c) != std::u32string::npos; };
    std::size_t b = 0, e = u.size();
    if (left)
        while (b < e && drop(u[b])) ++b;
    if (right)
        while (e > b && drop(u[e - 1])) --e;
    return from_u32(u.substr(b, e - b));
}

// The length in bytes of the line boundary starting at s[i], 0 if none: Python's str.splitlines
// boundaries, \r\n as one, and U+0085, U+2028, U+2029 in their UTF-8 forms.
std::size_t line_boundary_bytes(const std::string& s, std::size_t i) {
    const auto at = [&](std::size_t k) {
        return k < s.size() ? static_cast<unsigned char>(s[k]) : 0u;
    };
    const unsigned c = at(i);
    if (c == '\r') return at(i + 1) == '\n' ? 2 : 1;
    if (c == '\n' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1e)) return 1;
    if (c == 0xc2 && at(i + 1) == 0x85) return 2;
    if (c == 0xe2 && at(i + 1) == 0x80 && (at(i + 2) == 0xa8 || at(i + 2) == 0xa9)) return 3;
    return 0;
}

// str.splitlines(): the pieces between line boundaries, none after a final one.
Array py_splitlines(const std::string& s) {
    Array out;
    std::size_t start = 0;
    for (std::size_t i = 0; i < s.size();) {
        const std::size_t n = line_boundary_bytes(s, i);
        if (n == 0) {
            ++i;
            continue;
        }
        out.push_back(Value(s.substr(start, i - start)));
        i += n;
        start = i;
    }
    if (start < s.size()) out.push_back(Value(s.substr(start)));
    return out;
}

Array py_split(const std::string& s, const Value& sep, int64_t maxsplit, int line) {
    Array out;
    if (sep.is_none() || sep.is_undefined()) {  // runs of whitespace, no empty parts
        std::u32string u = to_u32(s);
        std::size_t i = 0;
        while (i < u.size()) {
            while (i < u.size() && py_space(u[i])) ++i;
            if (i >= u.size()) break;
            if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
                // The remainder keeps its trailing whitespace: ' a b  '.split(None, 1) == ['a', 'b
                // '].
                out.push_back(Value(from_u32(u.substr(i))));
                break;
            }
            std::size_t j = i;
            while (j < u.size() && !py_space(u[j])) ++j;
            out.push_back(Value(from_u32(u.substr(i, j - i))));
            i = j;
        }
        return out;
    }
    std::string d = need_string(sep, line, "split()");
    if (d.empty()) error_at(line, "split(): empty separator");
    std::size_t start = 0;
    while (true) {
        if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) break;
        std::size_t p = s.find(d, start);
        if (p == std::string::npos) break;
        out.push_back(Value(s.substr(start, p - start)));
        start = p + d.size();
    }
    out.push_back(Value(s.substr(start)));
    return out;
}

// str.rsplit(sep, maxsplit): split() from the right. The remainder on the left keeps its leading
// whitespace, and overlapping separators are matched from the right ('aaa'.rsplit('aa') is
// ['a', '']).
Array py_rsplit(const std::string& s, const Value& sep, int64_t maxsplit, int line) {
    Array out;
    const auto more = [&] { return maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit; };
    if (sep.is_none() || sep.is_undefined()) {
        const std::u32string u = to_u32(s);
        std::size_t i = u.size();
        while (true) {
            while (i > 0 && py_space(u[i - 1])) --i;
            if (i == 0) break;
            if (!more()) {
                out.push_back(Value(from_u32(u.substr(0, i))));
                break;
            }
            std::size_t j = i;
            while (j > 0 && !py_space(u[j - 1])) --j;
            out.push_back(Value(from_u32(u.substr(j, i - j))));
            i = j;
        }
    } else {
        const std::string d = need_string(sep, line, "rsplit()");
        if (d.empty()) error_at(line, "rsplit(): empty separator");
        std::size_t end = s.size();
        while (more() && end >= d.size()) {
            const std::size_t p = s.rfind(d, end - d.size());
            if (p == std::string::npos) break;
            out.push_back(Value(s.substr(p + d.size(), end - p - d.size())));
            end = p;
        }
        out.push_back(Value(s.substr(0, end)));
    }
    std::reverse(out.begin(), out.end());
    return out;
}

// str.center / ljust / rjust (how 'c', 'l', 'r'): s padded with the one character `fill` to
// `width` characters, as CPython places an odd centre margin.
std::string py_pad(const std::string& s, int64_t width, const Value& fill, char how, int line) {
    const std::u32string f = to_u32(need_string(fill, line, "the fill character"));
    if (f.size() != 1) error_at(line, "the fill character must be exactly one character long");
    const std::u32string u = to_u32(s);
    const int64_t margin = width - static_cast<int64_t>(u.size());
    if (margin <= 0) return s;
    const int64_t left = how == 'l' ? 0 : how == 'r' ? margin : margin / 2 + (margin & width & 1);
    return from_u32(std::u32string(size_t(left), f[0]) + u +
                    std::u32string(size_t(margin - left), f[0]));
}

// str.partition / rpartition: [head, sep, tail] around the first (last) sep; not found, the
// string is the head (partition) or the tail (rpartition).
Array py_partition(const std::string& s, const std::string& sep, bool from_right, int line) {
    if (sep.empty()) error_at(line, "empty separator");
    const std::size_t p = from_right ? s.rfind(sep) : s.find(sep);
    if (p == std::string::npos)
        return from_right ? Array{Value(""), Value(""), Value(s)}
                          : Array{Value(s), Value(""), Value("")};
    return {Value(s.substr(0, p)), Value(sep), Value(s.substr(p + sep.size()))};
}

std::string case_map(const std::string& s, bool upper) {
    icu::UnicodeString u = icu::UnicodeString::fromUTF8(s);
    if (upper) u.toUpper();
    else u.toLower();
    std::string out;
    u.toUTF8String(out);
    return out;
}

// str.isupper() (upper) / islower(): no character of the other case, and at least one cased one.
bool all_cased_as(const std::string& s, bool upper) {
    return case_map(s, upper) == s && case_map(s, !upper) != s;
}

std::string capitalize(const std::string& s) {
    std::u32string u = to_u32(case_map(s, false));
    if (u.empty()) return "";
    std::string first = case_map(from_u32(u.substr(0, 1)), true);
    return first + from_u32(u.substr(1));
}

std::string title(const std::string& s) {
    std::u32string u = to_u32(s);
    std::string out;
    bool start = true;
    for (char32_t c : u) {
        std::string ch = from_u32(std::u32string(1, c));
        out += case_map(ch, start);
        // Python's str.title(): a character follows a word when the one before it is cased
        // (Lu, Ll or Lt); digits are not, so '1st'.title() == '1St'.
        const auto cp = static_cast<UChar32>(c);
        start = !(u_isupper(cp) || u_islower(cp) || u_istitle(cp));
    }
    return out;
}

// Jinja's title filter: words start after whitespace, '-', '(', '{', '[' or '<'; the first
// letter of each is upper-cased and the rest lower-cased.
std::string title_words(const std::string& s) {
    std::u32string u = to_u32(s);
    std::string out;
    bool start = true;
    for (char32_t c : u) {
        std::string ch = from_u32(std::u32string(1, c));
        bool sep = py_space(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
        out += sep ? ch : case_map(ch, start);
        start = sep;
    }
    return out;
}

std::string py_replace(const std::string& s, const std::string& from, const std::string& to,
                       int64_t count, int line) {
    std::string out;
    std::size_t pos = 0;
    int64_t done = 0;
    if (from.empty()) {  // Python inserts `to` between characters
        std::u32string u = to_u32(s);
        for (std::size_t i = 0; i <= u.size(); ++i) {
            if (count < 0 || done < count) {
                append_bounded(out, to, line);
                ++done;
            }
            if (i < u.size()) append_bounded(out, from_u32(u.substr(i, 1)), line);
        }
        return out;
    }
    while (count < 0 || done < count) {
        std::size_t p = s.find(from, pos);
        if (p == std::string::npos) break;
        append_bounded(out, std::string_view(s).substr(pos, p - pos), line);
        append_bounded(out, to, line);
        pos = p + from.size();
        ++done;
    }
    append_bounded(out, std::string_view(s).substr(pos), line);
    return out;
}

bool starts_or_ends(const std::string& s, const Value& what, bool start, int line) {
    auto one = [&](const Value& v) {
        const std::string p = need_string(v, line, start ? "startswith()" : "endswith()");
        if (p.size() > s.size()) return false;
        return start ? s.compare(0, p.size(), p) == 0 : s.compare(s.size() - p.size(), p.size(), p) == 0;
    };
    if (what.is_array()) {
        for (const Value& v : what.as_array())
            if (one(v)) return true;
        return false;
    }
    return one(what);
}

std::string html_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&#34;"; break;
            case '\'': out += "&#39;"; break;
            default: out.push_back(c);
        }
    }
    return out;
}

int64_t length_of(const Value& v, int line) {
    if (v.is_string()) return static_cast<int64_t>(to_u32(v.as_string()).size());
    if (v.is_array()) return static_cast<int64_t>(v.as_array().size());
    if (v.is_object()) return static_cast<int64_t>(v.as_object().items.size());
    if (v.is_undefined()) return 0;
    error_at(line, "object of type '" + v.type_name() + "' has no len()");
}

// Looks up "a.b.c" attributes (as Jinja's attribute= arguments do).
Value attribute_path(const Value& v, const std::string& path, int line) {
    Value cur = v;
    std::size_t start = 0;
    while (true) {
        std::size_t dot = path.find('.', start);
        std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        // Up to 18 digits: std::stoll throws std::out_of_range (not a nextn::Error) past int64,
        // and no list is that long anyway.
        bool numeric =
            !part.empty() && part.size() <= 18 && std::all_of(part.begin(), part.end(), ::isdigit);
        cur = numeric && cur.is_array() ? get_item(cur, Value(static_cast<int64_t>(std::stoll(part))), line)
                                        : get_attribute(cur, part, line);
        if (dot == std::string::npos) return cur;
        start = dot + 1;
    }
}

int sort_compare(const Value& a, const Value& b, bool case_sensitive) {
    if (a.is_string() && b.is_string()) {
        std::string x = case_sensitive ? a.as_string() : case_map(a.as_string(), false);
        std::string y = case_sensitive ? b.as_string() : case_map(b.as_string(), false);
        return x < y ? -1 : x > y ? 1 : 0;
    }
    if ((a.is_number() || a.is_bool()) && (b.is_number() || b.is_bool()))
        return a.as_double() < b.as_double() ? -1 : a.as_double() > b.as_double() ? 1 : 0;
    fail("chat template: cannot sort values of types '", a.type_name(), "' and '", b.type_name(), "'");
}

CallArgs rest_args(const CallArgs& a, std::size_t from) {
    CallArgs r;
    r.line = a.line;
    for (std::size_t i = from; i < a.positional.size(); ++i) r.positional.push_back(a.positional[i]);
    r.keyword = a.keyword;
    return r;
}

Value select_like(const Value& input, const CallArgs& a, bool by_attr, bool keep) {
    Array out;
    std::size_t test_pos = by_attr ? 1 : 0;
    std::string attr = by_attr ? need_string(arg(a, 0, "attribute", Value()), a.line, "selectattr()") : "";
    bool has_test = test_pos < a.positional.size();
    std::string test = has_test ? need_string(a.positional[test_pos], a.line, "select()") : "";
    CallArgs targs = rest_args(a, test_pos + 1);
    targs.keyword.clear();
    for (const Value& item : iterate(input, a.line)) {
        Value v = by_attr ? attribute_path(item, attr, a.line) : item;
        bool ok = has_test ? apply_test(test, v, targs) : v.truthy();
        if (ok == keep) out.push_back(item);
    }
    return Value(std::move(out));
}

}  // namespace

std::string python_strip(const std::string& s) { return py_strip(s, Value(nullptr), true, true, 0); }

Value get_attribute(const Value& obj, const std::string& name, int line) {
    if (obj.is_undefined())
        error_at(line, "'" + obj.undefined_name() + "' is undefined (reading attribute '" + name + "')");
    if (obj.is_object()) {
        const Value* v = obj.as_object().find(name);
        return v ? *v : Value::undefined(name);
    }
    return Value::undefined(name);
}

Value get_item(const Value& obj, const Value& key, int line) {
    if (obj.is_undefined()) error_at(line, "'" + obj.undefined_name() + "' is undefined (subscripted)");
    if (obj.is_array() && (key.is_int() || key.is_bool())) {
        const Array& a = obj.as_array();
        int64_t i = key.is_bool() ? key.as_bool() : key.as_int();
        if (i < 0) i += static_cast<int64_t>(a.size());
        if (i < 0 || i >= static_cast<int64_t>(a.size())) return Value::undefined("[" + std::to_string(i) + "]");
        return a[i];
    }
    if (obj.is_object() && key.is_string()) {
        const Value* v = obj.as_object().find(key.as_string());
        return v ? *v : Value::undefined(key.as_string());
    }
    if (obj.is_string() && key.is_int()) {
        std::u32string u = to_u32(obj.as_string());
        int64_t i = key.as_int();
        if (i < 0) i += static_cast<int64_t>(u.size());
        if (i < 0 || i >= static_cast<int64_t>(u.size())) return Value::undefined();
        return Value(from_u32(u.substr(i, 1)));
    }
    return Value::undefined(key.is_string() ? key.as_string() : key.str());
}

Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step, int line) {
    auto idx = [&](const Value& v, const char* what) -> std::optional<int64_t> {
        if (v.is_none() || v.is_undefined()) return std::nullopt;
        if (!v.is_int()) error_at(line, std::string("slice ") + what + " must be an integer");
        return v.as_int();
    };
    int64_t st = idx(step, "step").value_or(1);
    if (st == 0) error_at(line, "slice step cannot be zero");
    std::u32string u;
    int64_t n;
    if (obj.is_string()) {
        u = to_u32(obj.as_string());
        n = static_cast<int64_t>(u.size());
    } else if (obj.is_array()) {
        n = static_cast<int64_t>(obj.as_array().size());
    } else {
        error_at(line, "cannot slice a value of type '" + obj.type_name() + "'");
    }
    // Python's slice.indices().
    auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
        if (!v) return dflt;
        int64_t x = *v;
        if (x < 0) x += n;
        if (st > 0) return std::clamp<int64_t>(x, 0, n);
        return std::clamp<int64_t>(x, -1, n - 1);
    };
    int64_t b = clamp(idx(start, "start"), st > 0 ? 0 : n - 1);
    int64_t e = clamp(idx(stop, "stop"), st > 0 ? n : -1);
    if (obj.is_string()) {
        std::u32string out;
        for (int64_t i = b; st > 0 ? i < e : i > e; i = step_toward(i, st, e)) out.push_back(u[i]);
        return Value(from_u32(out));
    }
    Array out;
    for (int64_t i = b; st > 0 ? i < e : i > e; i = step_toward(i, st, e))
        out.push_back(obj.as_array()[i]);
    return Value(std::move(out));
}

Array iterate(const Value& v, int line) {
    if (v.is_array()) return v.as_array();
    if (v.is_object()) {
        Array keys;
        for (const auto& [k, _] : v.as_object().items) keys.push_back(Value(k));
        return keys;
    }
    if (v.is_string()) {
        // One Value (tens of bytes) per character: bounded like any list.
        std::u32string u = to_u32(v.as_string());
        if (u.size() > kMaxListItems)
            error_at(line, "cannot iterate over a string of more than " +
                               std::to_string(kMaxListItems) + " characters");
        Array chars;
        for (char32_t c : u) chars.push_back(Value(from_u32(std::u32string(1, c))));
        return chars;
    }
    if (v.is_undefined()) return {};
    error_at(line, "'" + v.type_name() + "' object is not iterable");
}

Value apply_filter(const std::string& name, const Value& in, const CallArgs& a) {
    const int line = a.line;
    const Value none(nullptr);
    if (name == "length" || name == "count") return Value(length_of(in, line));
    if (name == "tojson") {
        const Value& indent = arg(a, 0, "indent", none);
        // Each level repeats the indent: a huge one is gigabytes of spaces.
        if (indent.is_int() && indent.as_int() > 1000) error_at(line, "tojson: indent over 1000");
        try {
            return Value(in.to_json(indent.is_int() ? static_cast<int>(indent.as_int()) : -1));
        } catch (const Error& e) {
            error_at(line, e.what());
        }
    }
    if (name == "safe") return in;
    if (name == "string") return Value(in.str());
    if (name == "trim") return Value(py_strip(in.str(), arg(a, 0, "chars", none), true, true, line));
    if (name == "upper") return Value(case_map(in.str(), true));
    if (name == "lower") return Value(case_map(in.str(), false));
    if (name == "capitalize") return Value(capitalize(in.str()));
    if (name == "title") return Value(title_words(in.str()));
    if (name == "e" || name == "escape" || name == "forceescape") return Value(html_escape(in.str()));
    if (name == "default" || name == "d") {
        const Value& dflt = arg(a, 0, "default_value", Value(""));
        bool boolean = arg(a, 1, "boolean", Value(false)).truthy();
        return (in.is_undefined() || (boolean && !in.truthy())) ? dflt : in;
    }
    if (name == "first" || name == "last") {
        Array items = iterate(in, line);
        if (items.empty()) return Value::undefined(name);
        return name == "first" ? items.front() : items.back();
    }
    if (name == "list") return Value(iterate(in, line));
    if (name == "items") {
        if (in.is_undefined()) return Value(Array{});
        if (!in.is_object()) error_at(line, "items filter expects a dict, got '" + in.type_name() + "'");
        Array out;
        for (const auto& [k, v] : in.as_object().items) out.push_back(Value(Array{Value(k), v}));
        return Value(std::move(out));
    }
    if (name == "dictsort") {
        if (!in.is_object()) error_at(line, "dictsort expects a dict");
        auto items = in.as_object().items;
        bool by_value = arg(a, 1, "by", Value("key")).str() == "value";
        bool cs = arg(a, 0, "case_sensitive", Value(false)).truthy();
        std::stable_sort(items.begin(), items.end(), [&](const auto& x, const auto& y) {
            return by_value ? sort_compare(x.second, y.second, cs) < 0 : sort_compare(Value(x.first), Value(y.first), cs) < 0;
        });
        if (arg(a, 2, "reverse", Value(false)).truthy()) std::reverse(items.begin(), items.end());
        Array out;
        for (const auto& [k, v] : items) out.push_back(Value(Array{Value(k), v}));
        return Value(std::move(out));
    }
    if (name == "join") {
        std::string sep = arg(a, 0, "d", Value("")).str();
        const Value& attr = arg(a, 1, "attribute", none);
        std::string out;
        Array items = iterate(in, line);
        for (std::size_t i = 0; i < items.size(); ++i) {
            if (i) append_bounded(out, sep, line);
            append_bounded(
                out,
                (attr.is_string() ? attribute_path(items[i], attr.as_string(), line) : items[i])
                    .str(),
                line);
        }
        return Value(std::move(out));
    }
    if (name == "int") {
        const Value base = arg(a, 1, "base", Value(10));
        if (!base.is_int()) error_at(line, "int(): base must be an integer");
        return number_filter(in, true, arg(a, 0, "default", Value(0)), base.as_int(), line);
    }
    if (name == "float")
        return number_filter(in, false, arg(a, 0, "default", Value(0.0)), 10, line);
    if (name == "abs") {
        if (in.is_bool()) return Value(int64_t{in.as_bool()});
        if (in.is_int())
            return Value(in.as_int() < 0 ? sub_int(0, in.as_int(), line) : in.as_int());
        if (in.is_float()) return Value(std::fabs(in.as_double()));
        error_at(line, "abs expects a number");
    }
    if (name == "round") {
        if (!in.is_number()) error_at(line, "round expects a number");
        int64_t precision = arg(a, 0, "precision", Value(0)).is_int() ? arg(a, 0, "precision", Value(0)).as_int() : 0;
        std::string method = arg(a, 1, "method", Value("common")).str();
        // Jinja2's "common" is Python's round(value, precision): an int stays an int.
        if (in.is_int() && method != "ceil" && method != "floor") {
            if (precision >= 0) return in;
            const double unit = std::pow(10.0, static_cast<double>(-precision));
            return Value(truncate_to_int(std::nearbyint(in.as_double() / unit) * unit, line));
        }
        double scale = std::pow(10.0, static_cast<double>(precision));
        double x = in.as_double() * scale;
        // Python's round() rounds half to even (the default floating-point rounding mode).
        x = method == "ceil" ? std::ceil(x) : method == "floor" ? std::floor(x) : std::nearbyint(x);
        return Value(x / scale);
    }
    if (name == "replace") {
        const Value& count = arg(a, 2, "count", none);
        return Value(py_replace(in.str(), arg(a, 0, "old", Value("")).str(),
                                arg(a, 1, "new", Value("")).str(),
                                count.is_int() ? count.as_int() : -1, line));
    }
    if (name == "reverse") {
        if (in.is_string()) {
            std::u32string u = to_u32(in.as_string());
            std::reverse(u.begin(), u.end());
            return Value(from_u32(u));
        }
        Array items = iterate(in, line);
        std::reverse(items.begin(), items.end());
        return Value(std::move(items));
    }
    if (name == "sort") {
        Array items = iterate(in, line);
        bool reverse = arg(a, 0, "reverse", Value(false)).truthy();
        bool cs = arg(a, 1, "case_sensitive", Value(false)).truthy();
        const Value& attr = arg(a, 2, "attribute", none);
        std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
            const Value kx = attr.is_string() ? attribute_path(x, attr.as_string(), line) : x;
            const Value ky = attr.is_string() ? attribute_path(y, attr.as_string(), line) : y;
            return reverse ? sort_compare(ky, kx, cs) < 0 : sort_compare(kx, ky, cs) < 0;
        });
        return Value(std::move(items));
    }
    if (name == "unique") {
        // Jinja2's unique(case_sensitive=False, attribute=None): strings compare lower-cased
        // unless case_sensitive; the first of equal items is kept.
        const bool cs = arg(a, 0, "case_sensitive", Value(false)).truthy();
        const Value& attr = arg(a, 1, "attribute", none);
        auto key_of = [&](const Value& v) {
            Value k = attr.is_string() ? attribute_path(v, attr.as_string(), line) : v;
            return !cs && k.is_string() ? Value(case_map(k.as_string(), false)) : k;
        };
        // Each item is compared with every kept one: quadratic, so the comparisons are bounded
        // as a render's steps are (a million distinct items would otherwise run for hours).
        Array out, keys;
        int64_t comparisons = 0;
        for (const Value& v : iterate(in, line)) {
            comparisons += static_cast<int64_t>(out.size());
            if (comparisons > kMaxSteps)
                error_at(line, "unique over too many items (over " + std::to_string(kMaxSteps) +
                                   " comparisons)");
            Value k = key_of(v);
            bool seen = false;
            for (const Value& w : keys) seen |= equals(k, w);
            if (!seen) {
                out.push_back(v);
                keys.push_back(std::move(k));
            }
        }
        return Value(std::move(out));
    }
    if (name == "map") {
        Array out;
        if (const Value* attr = a.kw("attribute")) {
            const Value* dflt = a.kw("default");
            for (const Value& v : iterate(in, line)) {
                Value r = attribute_path(v, attr->str(), line);
                out.push_back(r.is_undefined() && dflt ? *dflt : r);
            }
        } else {
            if (a.positional.empty()) error_at(line, "map needs a filter name or attribute=");
            std::string filter = need_string(a.positional[0], line, "map()");
            CallArgs fargs = rest_args(a, 1);
            for (const Value& v : iterate(in, line)) out.push_back(apply_filter(filter, v, fargs));
        }
        return Value(std::move(out));
    }
    if (name == "select") return select_like(in, a, false, true);
    if (name == "reject") return select_like(in, a, false, false);
    if (name == "selectattr") return select_like(in, a, true, true);
    if (name == "rejectattr") return select_like(in, a, true, false);
    if (name == "sum") {
        const Value& attr = arg(a, 0, "attribute", none);
        Value total = arg(a, 1, "start", Value(0));
        for (const Value& v : iterate(in, line)) {
            Value x = attr.is_string() ? attribute_path(v, attr.as_string(), line) : v;
            if (!x.is_number() || !total.is_number()) error_at(line, "sum expects numbers");
            total = total.is_int() && x.is_int() ? Value(add_int(total.as_int(), x.as_int(), line))
                                                 : Value(total.as_double() + x.as_double());
        }
        return total;
    }
    if (name == "min" || name == "max") {
        Array items = iterate(in, line);
        if (items.empty()) return Value::undefined(name);
        Value best = items[0];
        for (const Value& v : items)
            if ((name == "min") == (sort_compare(v, best, false) < 0) && sort_compare(v, best, false) != 0) best = v;
        return best;
    }
    if (name == "indent") {
        int64_t width = arg(a, 0, "width", Value(4)).is_int() ? arg(a, 0, "width", Value(4)).as_int() : 4;
        bool first = arg(a, 1, "first", Value(false)).truthy();
        bool blank = arg(a, 2, "blank", Value(false)).truthy();
        if (width > 1000) error_at(line, "indent: width over 1000");  // a huge pad is gigabytes
        std::string pad(static_cast<std::size_t>(std::max<int64_t>(width, 0)), ' ');
        std::string s = in.str(), out;
        std::size_t start = 0;
        bool first_line = true;
        while (true) {
            std::size_t nl = s.find('\n', start);
            std::string ln = s.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
            bool add = first_line ? first : (blank || !ln.empty());
            if (add) append_bounded(out, pad, line);
            append_bounded(out, ln, line);
            if (nl == std::string::npos) break;
            out += "\n";
            start = nl + 1;
            first_line = false;
        }
        return Value(std::move(out));
    }
    if (name == "center") {
        const Value width = arg(a, 0, "width", Value(80));
        if (!width.is_int()) error_at(line, "center expects an integer width");
        return Value(py_pad(in.str(), width.as_int(), Value(" "), 'c', line));
    }
    if (name == "wordcount") return Value(static_cast<int64_t>(py_split(in.str(), none, -1, line).size()));
    if (name == "attr") {
        // An attribute only, never an item: a dict's keys are items in Python, so attr('a') of
        // {'a': 1} is undefined (d.a looks up both); a namespace()'s are attributes.
        const std::string attribute = need_string(arg(a, 0, "name", none), line, "attr()");
        if (in.is_object() && !in.as_object().is_namespace) return Value::undefined(attribute);
        return get_attribute(in, attribute, line);
    }
    error_at(line, "unsupported filter '" + name + "'");
}

bool apply_test(const std::string& name, const Value& v, const CallArgs& a) {
    const int line = a.line;
    auto other = [&]() -> const Value& {
        if (a.positional.empty()) error_at(line, "test '" + name + "' needs an argument");
        return a.positional[0];
    };
    if (name == "defined") return !v.is_undefined();
    if (name == "undefined") return v.is_undefined();
    if (name == "none") return v.is_none();
    if (name == "boolean") return v.is_bool();
    if (name == "true") return v.is_bool() && v.as_bool();
    if (name == "false") return v.is_bool() && !v.as_bool();
    if (name == "integer") return v.is_int();
    if (name == "float") return v.is_float();
    if (name == "number") return v.is_number() || v.is_bool();  // isinstance(v, Number): bool too
    if (name == "string") return v.is_string();
    if (name == "mapping") return v.is_object();
    if (name == "iterable") return v.is_array() || v.is_object() || v.is_string();
    if (name == "sequence") return v.is_array() || v.is_object() || v.is_string();
    if (name == "callable") return v.is_callable();
    if (name == "lower" || name == "upper")
        return v.is_string() && all_cased_as(v.as_string(), name == "upper");
    // Jinja2's `value % 2 == 1`, `value % 2 == 0` and `value % num == 0`: the template's own %
    // (bools and floats too: 3.0 is odd, 2.5 neither).
    if (name == "odd") return equals(floor_division(line, "%", v, Value(2)), Value(1));
    if (name == "even") return equals(floor_division(line, "%", v, Value(2)), Value(0));
    if (name == "divisibleby") return equals(floor_division(line, "%", v, other()), Value(0));
    if (name == "eq" || name == "equalto" || name == "==") return equals(v, other());
    if (name == "ne" || name == "!=") return !equals(v, other());
    if (name == "sameas") {
        const Value& o = other();
        if (v.is_object() && o.is_object()) return &v.as_object() == &o.as_object();
        if (v.is_array() && o.is_array()) return &v.as_array() == &o.as_array();
        return (v.is_none() && o.is_none()) || (v.is_bool() && o.is_bool() && v.as_bool() == o.as_bool());
    }
    if (name == "in") return contains(line, other(), v);
    auto num_cmp = [&](const Value& x, const Value& y) {
        if (!(x.is_number() || x.is_string()) || !(y.is_number() || y.is_string()))
            error_at(line, "test '" + name + "' needs comparable values");
        if (x.is_string() && y.is_string()) return x.as_string() < y.as_string() ? -1 : x.as_string() == y.as_string() ? 0 : 1;
        if (x.is_string() || y.is_string()) error_at(line, "test '" + name + "' cannot compare str and number");
        return x.as_double() < y.as_double() ? -1 : x.as_double() == y.as_double() ? 0 : 1;
    };
    if (name == "lt" || name == "<" || name == "lessthan") return num_cmp(v, other()) < 0;
    if (name == "le" || name == "<=") return num_cmp(v, other()) <= 0;
    if (name == "gt" || name == ">" || name == "greaterthan") return num_cmp(v, other()) > 0;
    if (name == "ge" || name == ">=") return num_cmp(v, other()) >= 0;
    error_at(line, "unsupported test '" + name + "'");
}

bool call_method(const Value& obj, const std::string& name, const CallArgs& a, Value& result) {
    const int line = a.line;
    const Value none(nullptr);
    if (obj.is_string()) {
        const std::string& s = obj.as_string();
        if (name == "startswith" || name == "endswith") {
            result = Value(starts_or_ends(s, arg(a, 0, "prefix", none), name == "startswith", line));
        } else if (name == "split" || name == "rsplit") {
            const Value& mx = arg(a, 1, "maxsplit", Value(-1));
            int64_t maxsplit = mx.is_int() ? mx.as_int() : -1;
            result = Value(name == "split" ? py_split(s, arg(a, 0, "sep", none), maxsplit, line)
                                           : py_rsplit(s, arg(a, 0, "sep", none), maxsplit, line));
        } else if (name == "center" || name == "ljust" || name == "rjust") {
            const Value width = arg(a, 0, "width", none);
            if (!width.is_int()) error_at(line, name + "() expects an integer width");
            result =
                Value(py_pad(s, width.as_int(), arg(a, 1, "fillchar", Value(" ")), name[0], line));
        } else if (name == "zfill") {
            const Value width = arg(a, 0, "width", none);
            if (!width.is_int()) error_at(line, "zfill() expects an integer width");
            // Zeros after a leading sign: '-42'.zfill(5) == '-0042'.
            const bool sign = !s.empty() && (s[0] == '-' || s[0] == '+');
            const std::string padded =
                py_pad(s.substr(sign), width.as_int() - sign, Value("0"), 'r', line);
            result = Value(s.substr(0, sign) + padded);
        } else if (name == "swapcase") {
            std::u32string u = to_u32(s);
            for (char32_t& c : u)
                c = u_isupper(UChar32(c))   ? char32_t(u_tolower(UChar32(c)))
                    : u_islower(UChar32(c)) ? char32_t(u_toupper(UChar32(c)))
                                            : c;
            result = Value(from_u32(u));
        } else if (name == "casefold") {
            icu::UnicodeString u = icu::UnicodeString::fromUTF8(s);
            std::string out;
            u.foldCase(U_FOLD_CASE_DEFAULT).toUTF8String(out);
            result = Value(out);
        } else if (name == "partition" || name == "rpartition") {
            const std::string sep = need_string(arg(a, 0, "sep", none), line, name + "()");
            result = Value(py_partition(s, sep, name == "rpartition", line));
        } else if (name == "strip" || name == "lstrip" || name == "rstrip") {
            result = Value(py_strip(s, arg(a, 0, "chars", none), name != "rstrip", name != "lstrip", line));
        } else if (name == "upper" || name == "lower") {
            result = Value(case_map(s, name == "upper"));
        } else if (name == "title") {
            result = Value(title(s));
        } else if (name == "capitalize") {
            result = Value(capitalize(s));
        } else if (name == "replace") {
            const Value& count = arg(a, 2, "count", none);
            result = Value(py_replace(s, need_string(arg(a, 0, "old", none), line, "replace()"),
                                      need_string(arg(a, 1, "new", none), line, "replace()"),
                                      count.is_int() ? count.as_int() : -1, line));
        } else if (name == "find" || name == "rfind" || name == "index") {
            std::string sub = need_string(arg(a, 0, "sub", none), line, name + "()");
            std::size_t p = name == "rfind" ? s.rfind(sub) : s.find(sub);
            if (p == std::string::npos && name == "index") error_at(line, "substring not found");
            result = Value(p == std::string::npos ? int64_t{-1}
                                                  : static_cast<int64_t>(to_u32(s.substr(0, p)).size()));
        } else if (name == "count") {
            std::string sub = need_string(arg(a, 0, "sub", none), line, "count()");
            int64_t n = 0;
            if (sub.empty())  // Python: the empty string occurs before each character and at the
                              // end
                n = static_cast<int64_t>(to_u32(s).size()) + 1;
            else
                for (std::size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
            result = Value(n);
        } else if (name == "join") {
            std::string out;
            Array items = iterate(arg(a, 0, "iterable", none), line);
            for (std::size_t i = 0; i < items.size(); ++i) {
                if (i) append_bounded(out, s, line);
                append_bounded(out, need_string(items[i], line, "join()"), line);
            }
            result = Value(std::move(out));
        } else if (name == "isdigit" || name == "isalpha" || name == "isspace" ||
                   name == "isalnum" || name == "islower" || name == "isupper") {
            std::u32string u = to_u32(s);
            bool ok = !u.empty();
            for (char32_t c : u) {
                bool digit = c >= '0' && c <= '9';
                bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
                if (name == "isdigit") ok &= digit;
                else if (name == "isalpha") ok &= alpha;
                else if (name == "isalnum") ok &= digit || alpha;
                else if (name == "isspace") ok &= py_space(c);
            }
            if (name == "islower" || name == "isupper") ok = all_cased_as(s, name == "isupper");
            result = Value(ok);
        } else if (name == "splitlines") {
            result = Value(py_splitlines(s));
        } else {
            return false;
        }
        return true;
    }
    if (obj.is_array()) {
        const Array& items = obj.as_array();
        if (name == "count") {
            const Value& x = arg(a, 0, "value", none);
            result = Value(static_cast<int64_t>(std::count_if(
                items.begin(), items.end(), [&](const Value& v) { return equals(v, x); })));
        } else if (name == "index") {
            const Value& x = arg(a, 0, "value", none);
            auto it = std::find_if(items.begin(), items.end(),
                                   [&](const Value& v) { return equals(v, x); });
            if (it == items.end()) error_at(line, x.repr() + " is not in list");
            result = Value(static_cast<int64_t>(it - items.begin()));
        } else {
            return false;
        }
        return true;
    }
    if (obj.is_object() && !obj.as_object().is_namespace) {
        const Object& o = obj.as_object();
        if (name == "items") {
            Array out;
            for (const auto& [k, v] : o.items) out.push_back(Value(Array{Value(k), v}));
            result = Value(std::move(out));
        } else if (name == "keys") {
            Array out;
            for (const auto& [k, v] : o.items) out.push_back(Value(k));
            result = Value(std::move(out));
        } else if (name == "values") {
            Array out;
            for (const auto& [k, v] : o.items) out.push_back(v);
            result = Value(std::move(out));
        } else if (name == "get") {
            const Value& key = arg(a, 0, "key", none);
            const Value* v = key.is_string() ? o.find(key.as_string()) : nullptr;
            result = v ? *v : arg(a, 1, "default", none);
        } else {
            return false;
        }
        return true;
    }
    return false;
}

void add_globals(Object& g) {
    auto add = [&](const std::string& name, std::function<Value(const CallArgs&)> fn) {
        auto c = std::make_shared<Callable>();
        c->name = name;
        c->fn = std::move(fn);
        g.set(name, Value(c));
    };
    add("range", [](const CallArgs& a) -> Value {
        int64_t start = 0, stop = 0, step = 1;
        auto num = [&](std::size_t i) {
            if (!a.positional[i].is_int()) error_at(a.line, "range() expects integers");
            return a.positional[i].as_int();
        };
        if (a.positional.size() == 1) stop = num(0);
        else if (a.positional.size() >= 2) {
            start = num(0);
            stop = num(1);
            if (a.positional.size() >= 3) step = num(2);
        } else error_at(a.line, "range() needs 1 to 3 arguments");
        if (step == 0) error_at(a.line, "range() step must not be zero");
        Array out;
        for (int64_t i = start; step > 0 ? i < stop : i > stop; i = step_toward(i, step, stop)) {
            if (out.size() >= kMaxListItems) error_at(a.line, "range() too long");
            out.push_back(Value(i));
        }
        return Value(std::move(out));
    });
    add("namespace", [](const CallArgs& a) -> Value {
        auto o = std::make_shared<Object>();
        o->is_namespace = true;
        for (const Value& p : a.positional)
            if (p.is_object())
                for (const auto& [k, v] : p.as_object().items) o->set(k, v);
        for (const auto& [k, v] : a.keyword) o->set(k, v);
        return Value(o);
    });
    add("dict", [](const CallArgs& a) -> Value {
        auto o = std::make_shared<Object>();
        for (const Value& p : a.positional)
            if (p.is_object())
                for (const auto& [k, v] : p.as_object().items) o->set(k, v);
        for (const auto& [k, v] : a.keyword) o->set(k, v);
        return Value(o);
    });
    add("raise_exception", [](const CallArgs& a) -> Value {
        std::string msg = a.positional.empty() ? "" : a.positional[0].str();
        fail("chat template line ", a.line, ": raise_exception: ", msg);
    });
    add("strftime_now", [](const CallArgs& a) -> Value {
        if (a.positional.empty() || !a.positional[0].is_string()) error_at(a.line, "strftime_now() needs a format string");
        std::time_t t = std::time(nullptr);
        std::tm tm{};
        localtime_r(&t, &tm);
        char buf[256];
        std::size_t n = std::strftime(buf, sizeof buf, a.positional[0].as_string().c_str(), &tm);
        return Value(std::string(buf, n));
    });
}

}  // namespace nextn::jinja
