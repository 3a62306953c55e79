#pragma once
// Values of the chat-template interpreter, with Python/Jinja2 semantics: undefined vs none,
// Python truthiness, str()/repr() printing, and json.dumps(ensure_ascii=False) for tojson.
// Lists and dicts are shared by reference like Python's (namespace() attributes are assigned
// through them). Dicts keep insertion order.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace nextn::jinja {

class Value;
using Array = std::vector<Value>;

struct Object {
    std::vector<std::pair<std::string, Value>> items;  // insertion order
    bool is_namespace = false;                         // namespace(): attributes assignable
    const Value* find(const std::string& key) const;
    void set(const std::string& key, Value v);
};

struct CallArgs {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keyword;
    int line = 0;
    const Value* kw(const std::string& name) const;
};

struct Callable {
    std::string name;
    std::function<Value(const CallArgs&)> fn;
};

struct Undefined {
    std::string name;  // what was looked up, for error messages
};

class Value {
public:
    using Storage = std::variant<Undefined, std::nullptr_t, bool, int64_t, double, std::string,
                                 std::shared_ptr<Array>, std::shared_ptr<Object>, std::shared_ptr<Callable>>;
    Value() : v_(Undefined{}) {}
    Value(std::nullptr_t) : v_(nullptr) {}
    Value(bool b) : v_(b) {}
    Value(int v) : v_(static_cast<int64_t>(v)) {}
    Value(int64_t v) : v_(v) {}
    Value(double v) : v_(v) {}
    Value(std::string s) : v_(std::move(s)) {}
    Value(const char* s) : v_(std::string(s)) {}
    Value(Array a) : v_(std::make_shared<Array>(std::move(a))) {}
    Value(std::shared_ptr<Object> o) : v_(std::move(o)) {}
    Value(std::shared_ptr<Callable> c) : v_(std::move(c)) {}
    static Value undefined(std::string name = {}) { Value v; v.v_ = Undefined{std::move(name)}; return v; }
    static Value object() { return Value(std::make_shared<Object>()); }

    bool is_undefined() const { return std::holds_alternative<Undefined>(v_); }
    bool is_none() const { return std::holds_alternative<std::nullptr_t>(v_); }
    bool is_bool() const { return std::holds_alternative<bool>(v_); }
    bool is_int() const { return std::holds_alternative<int64_t>(v_); }
    bool is_float() const { return std::holds_alternative<double>(v_); }
    bool is_number() const { return is_int() || is_float(); }
    bool is_string() const { return std::holds_alternative<std::string>(v_); }
    bool is_array() const { return std::holds_alternative<std::shared_ptr<Array>>(v_); }
    bool is_object() const { return std::holds_alternative<std::shared_ptr<Object>>(v_); }
    bool is_callable() const { return std::holds_alternative<std::shared_ptr<Callable>>(v_); }

    bool as_bool() const { return std::get<bool>(v_); }
    int64_t as_int() const { return std::get<int64_t>(v_); }
    double as_double() const { return is_int() ? static_cast<double>(as_int()) : is_bool() ? as_bool() : std::get<double>(v_); }
    const std::string& as_string() const { return std::get<std::string>(v_); }
    Array& as_array() const { return *std::get<std::shared_ptr<Array>>(v_); }
    Object& as_object() const { return *std::get<std::shared_ptr<Object>>(v_); }
    const Callable& as_callable() const { return *std::get<std::shared_ptr<Callable>>(v_); }
    const std::string& undefined_name() const { return std::get<Undefined>(v_).name; }

    // Python truthiness; undefined is false.
    bool truthy() const;
    // Python type name for messages ("str", "list", "dict", "NoneType", "undefined", ...).
    std::string type_name() const;
    // Python str(); undefined prints as "".
    std::string str() const;
    // Python repr() (used for items inside printed lists and dicts).
    std::string repr() const;
    // Python json.dumps(x, ensure_ascii=False, indent=indent) with ", " and ": " separators;
    // indent < 0 means none. Throws Error for values JSON cannot hold.
    std::string to_json(int indent = -1) const;

    // Conversions from and to ordered JSON (keys keep their order).
    static Value from_json(const nlohmann::ordered_json& j);

private:
    Storage v_;
};

// Python ==, with 1 == 1.0 == True and deep comparison of lists and dicts.
bool equals(const Value& a, const Value& b);

// Python's repr() of a float: shortest round-trip digits, "1.0", "1e-07", "1e+16", "inf", "nan".
std::string python_float_repr(double d);

}  // namespace nextn::jinja
