#pragma once
// UTF-8 helpers shared by the tokenizer and the template engine. Invalid input is replaced the way
// HF tokenizers (Rust String::from_utf8_lossy) and WHATWG TextDecoder do it: every *maximal
// subpart* of an ill-formed sequence becomes one U+FFFD (Unicode 15, section 3.9, table 3-7).
#include <cstddef>
#include <string>
#include <string_view>

namespace nextn::utf8 {

// Appends the UTF-8 encoding of a code point (must be a scalar value, <= U+10FFFF).
void append(std::string& out, char32_t cp);

// True when `bytes` is well-formed UTF-8 (no surrogates, no overlongs, <= U+10FFFF).
bool is_valid(std::string_view bytes);

// Appends `bytes` to `out` with ill-formed parts replaced by U+FFFD. With `final == false` a
// trailing sequence that is a valid but unfinished character is left alone; the return value is
// the number of bytes consumed (so the caller keeps bytes[consumed..] for later). With
// `final == true` everything is consumed.
std::size_t append_lossy(std::string& out, std::string_view bytes, bool final);

// Whole-string lossy conversion.
std::string lossy(std::string_view bytes);

// Decodes the code point starting at bytes[pos] of a *valid* UTF-8 string and advances pos.
char32_t next(std::string_view bytes, std::size_t& pos);

}  // namespace nextn::utf8
