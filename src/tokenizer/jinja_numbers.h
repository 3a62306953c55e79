#pragma once
// Numbers from template values as Python reads them: int() and float() of a string (Python's
// syntax, not C's), a float truncated to an int, and Jinja2's int and float filters.
#include <cstdint>

#include "tokenizer/jinja_value.h"

namespace nextn::jinja {

// float -> int as Python's int() truncates; NaN, infinities and values past int64 are an error.
int64_t truncate_to_int(double d, int line);

// The int and float filters (as_int: int, whose strings are read in `base`), as Jinja2's do_int
// and do_float: `fallback` where Python's int() and float() raise ValueError. A string's
// surrounding whitespace is ignored, as Python's int() and float() ignore it.
Value number_filter(const Value& v, bool as_int, const Value& fallback, int64_t base, int line);

}  // namespace nextn::jinja
