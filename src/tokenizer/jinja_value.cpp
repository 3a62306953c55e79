#include "tokenizer/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "tokenizer/jinja_limits.h"
#include "tokenizer/utf8.h"

namespace nextn::jinja {

const Value* Object::find(const std::string& key) const {
    for (const auto& [k, v] : items)
        if (k == key) return &v;
    return nullptr;
}

void Object::set(const std::string& key, Value v) {
    for (auto& [k, old] : items)
        if (k == key) {
            old = std::move(v);
            return;
        }
    items.emplace_back(key, std::move(v));
}

const Value* CallArgs::kw(const std::string& name) const {
    for (const auto& [k, v] : keyword)
        if (k == name) return &v;
    return nullptr;
}

bool Value::truthy() const {
    if (is_undefined() || is_none()) return false;
    if (is_bool()) return as_bool();
    if (is_int()) return as_int() != 0;
    if (is_float()) return std::get<double>(v_) != 0.0;
    if (is_string()) return !as_string().empty();
    if (is_array()) return !as_array().empty();
    if (is_object()) return as_object().is_namespace || !as_object().items.empty();
    return true;
}

std::string Value::type_name() const {
    if (is_undefined()) return "undefined";
    if (is_none()) return "NoneType";
    if (is_bool()) return "bool";
    if (is_int()) return "int";
    if (is_float()) return "float";
    if (is_string()) return "str";
    if (is_array()) return "list";
    if (is_object()) return as_object().is_namespace ? "Namespace" : "dict";
    return "function";
}

std::string python_float_repr(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
    if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
    char buf[64];
    // Shortest round-trip digits in scientific form: [-]d[.ddd]e[+-]XX.
    auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    std::string sci(buf, res.ptr);
    std::string sign;
    if (sci[0] == '-') {
        sign = "-";
        sci.erase(0, 1);
    }
    std::size_t e = sci.find('e');
    int exp = std::stoi(sci.substr(e + 1));
    std::string digits = sci.substr(0, e);
    digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
    // Python switches to exponent notation when exp < -4 or exp >= 16.
    if (exp < -4 || exp >= 16) {
        std::string mant = digits.substr(0, 1);
        if (digits.size() > 1) mant += "." + digits.substr(1);
        char eb[16];
        std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
        return sign + mant + eb;
    }
    std::string out;
    if (exp < 0) {
        out = "0." + std::string(-exp - 1, '0') + digits;
    } else if (static_cast<std::size_t>(exp) + 1 >= digits.size()) {
        out = digits + std::string(exp + 1 - digits.size(), '0') + ".0";
    } else {
        out = digits.substr(0, exp + 1) + "." + digits.substr(exp + 1);
    }
    return sign + out;
}

namespace {

std::string repr_string(const std::string& s) {
    bool has_single = s.find('\'') != std::string::npos;
    bool has_double = s.find('"') != std::string::npos;
    char quote = has_single && !has_double ? '"' : '\'';
    std::string out(1, quote);
    for (unsigned char c : s) {
        if (c == '\\') out += "\\\\";
        else if (c == static_cast<unsigned char>(quote)) out += std::string("\\") + quote;
        else if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (c < 0x20 || c == 0x7F) {
            char b[8];
            std::snprintf(b, sizeof b, "\\x%02x", c);
            out += b;
        } else out.push_back(static_cast<char>(c));
    }
    out.push_back(quote);
    return out;
}

void json_string(std::string& out, const std::string& s) {
    out.push_back('"');
    for (unsigned char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            default:
                if (c < 0x20) {
                    char b[8];
                    std::snprintf(b, sizeof b, "\\u%04x", c);
                    out += b;
                } else {
                    out.push_back(static_cast<char>(c));
                }
        }
    }
    out.push_back('"');
}

void json_dump(std::string& out, const Value& v, int indent, int depth) {
    if (depth > 200) fail("tojson: value nested too deeply");
    auto newline = [&](int d) {
        if (indent < 0) return;
        out.push_back('\n');
        out.append(static_cast<std::size_t>(indent) * d, ' ');
    };
    // Python uses ", " without indent and "," plus newline with it.
    const char* item_sep = indent < 0 ? ", " : ",";
    if (v.is_none()) out += "null";
    else if (v.is_bool()) out += v.as_bool() ? "true" : "false";
    else if (v.is_int()) out += std::to_string(v.as_int());
    else if (v.is_float()) {
        double d = v.as_double();
        out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d > 0 ? "Infinity" : "-Infinity") : python_float_repr(d);
    } else if (v.is_string()) json_string(out, v.as_string());
    else if (v.is_array()) {
        const Array& a = v.as_array();
        out.push_back('[');
        for (std::size_t i = 0; i < a.size(); ++i) {
            if (i) out += item_sep;
            newline(depth + 1);
            json_dump(out, a[i], indent, depth + 1);
        }
        if (!a.empty()) newline(depth);
        out.push_back(']');
    } else if (v.is_object()) {
        const Object& o = v.as_object();
        out.push_back('{');
        for (std::size_t i = 0; i < o.items.size(); ++i) {
            if (i) out += item_sep;
            newline(depth + 1);
            json_string(out, o.items[i].first);
            out += ": ";
            json_dump(out, o.items[i].second, indent, depth + 1);
        }
        if (!o.items.empty()) newline(depth);
        out.push_back('}');
    } else {
        fail("tojson: a value of type ", v.type_name(), " is not JSON serializable");
    }
}

}  // namespace

std::string Value::str() const {
    if (is_undefined()) return "";
    if (is_none()) return "None";
    if (is_bool()) return as_bool() ? "True" : "False";
    if (is_int()) return std::to_string(as_int());
    if (is_float()) return python_float_repr(as_double());
    if (is_string()) return as_string();
    if (is_array()) {
        std::string out = "[";
        const Array& a = as_array();
        for (std::size_t i = 0; i < a.size(); ++i) out += (i ? ", " : "") + a[i].repr();
        return out + "]";
    }
    if (is_object()) {
        std::string out = "{";
        const Object& o = as_object();
        for (std::size_t i = 0; i < o.items.size(); ++i)
            out += (i ? ", " : "") + repr_string(o.items[i].first) + ": " + o.items[i].second.repr();
        return out + "}";
    }
    return "<function " + as_callable().name + ">";
}

std::string Value::repr() const { return is_string() ? repr_string(as_string()) : str(); }

std::string Value::to_json(int indent) const {
    std::string out;
    json_dump(out, *this, indent, 0);
    return out;
}

namespace {

// Messages and tools come from a request: a deeply nested argument must not recurse until the
// stack overflows (here, or later when the template prints or compares it).
Value from_json_at(const nlohmann::ordered_json& j, int depth) {
    if (depth > kMaxValueDepth)
        fail("chat template: message or tool JSON nested more than ", kMaxValueDepth,
             " levels deep");
    switch (j.type()) {
        case nlohmann::ordered_json::value_t::null: return Value(nullptr);
        case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
        case nlohmann::ordered_json::value_t::number_integer: return Value(j.get<int64_t>());
        case nlohmann::ordered_json::value_t::number_unsigned: return Value(static_cast<int64_t>(j.get<uint64_t>()));
        case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
        case nlohmann::ordered_json::value_t::string: return Value(j.get<std::string>());
        case nlohmann::ordered_json::value_t::array: {
            Array a;
            a.reserve(j.size());
            for (const auto& e : j) a.push_back(from_json_at(e, depth + 1));
            return Value(std::move(a));
        }
        case nlohmann::ordered_json::value_t::object: {
            auto o = std::make_shared<Object>();
            for (const auto& [k, e] : j.items())
                o->items.emplace_back(k, from_json_at(e, depth + 1));
            return Value(std::move(o));
        }
        default: return Value(nullptr);
    }
}

}  // namespace

Value Value::from_json(const nlohmann::ordered_json& j) { return from_json_at(j, 0); }

bool equals(const Value& a, const Value& b) {
    if ((a.is_number() || a.is_bool()) && (b.is_number() || b.is_bool())) {
        if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
        int64_t x = a.is_bool() ? a.as_bool() : a.as_int();
        int64_t y = b.is_bool() ? b.as_bool() : b.as_int();
        return x == y;
    }
    if (a.is_undefined() || b.is_undefined()) return a.is_undefined() && b.is_undefined();
    if (a.is_none() || b.is_none()) return a.is_none() && b.is_none();
    if (a.is_string() && b.is_string()) return a.as_string() == b.as_string();
    if (a.is_array() && b.is_array()) {
        const Array &x = a.as_array(), &y = b.as_array();
        if (x.size() != y.size()) return false;
        for (std::size_t i = 0; i < x.size(); ++i)
            if (!equals(x[i], y[i])) return false;
        return true;
    }
    if (a.is_object() && b.is_object()) {
        const Object &x = a.as_object(), &y = b.as_object();
        if (&x == &y) return true;
        if (x.items.size() != y.items.size()) return false;
        for (const auto& [k, v] : x.items) {
            const Value* w = y.find(k);
            if (!w || !equals(v, *w)) return false;
        }
        return true;
    }
    if (a.is_callable() && b.is_callable()) return &a.as_callable() == &b.as_callable();
    return false;
}

}  // namespace nextn::jinja
