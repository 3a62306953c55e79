#pragma once
// Jinja2 filters, tests, methods of str/dict, and global functions, with Python semantics.
#include <string>

#include "tokenizer/jinja_value.h"

namespace nextn::jinja {

Value apply_filter(const std::string& name, const Value& input, const CallArgs& args);
bool apply_test(const std::string& name, const Value& input, const CallArgs& args);
// Sets `result` and returns true when `name` is a method of obj's type.
bool call_method(const Value& obj, const std::string& name, const CallArgs& args, Value& result);
// Attribute lookup as Jinja does it: dict keys, namespace attributes; undefined otherwise.
Value get_attribute(const Value& obj, const std::string& name, int line);
// Subscript: list index (negative counts from the end), dict key, string character.
Value get_item(const Value& obj, const Value& key, int line);
// Python slice obj[start:stop:step] of a list or string (null parts are omitted ones).
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step, int line);
// Iteration as in a for loop: list items, dict keys, string characters.
Array iterate(const Value& v, int line);
// Python's s.strip(): the surrounding whitespace (str.isspace's) removed.
std::string python_strip(const std::string& s);
// The built-in functions: range, namespace, dict, raise_exception, strftime_now.
void add_globals(Object& globals);

}  // namespace nextn::jinja
