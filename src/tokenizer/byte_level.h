#pragma once
// The GPT-2 "byte-level" alphabet: every byte 0..255 is shown as one printable code point, so a
// BPE vocabulary over bytes can be stored as JSON text. Printable Latin-1 bytes (! .. ~, ¡ .. ¬,
// ® .. ÿ) stand for themselves; the other 68 bytes map, in byte order, to U+0100, U+0101, ...
// (space 0x20 -> U+0120 'Ġ', newline 0x0A -> U+010A 'Ċ').
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace nextn::byte_level {

// Code point that stands for byte b.
char32_t char_for_byte(uint8_t b);

// Byte a code point stands for, or -1 when it is not part of the alphabet.
int byte_for_char(char32_t cp);

// UTF-8 text of the byte-level form of `bytes` (what vocab keys look like).
std::string encode(std::string_view bytes);

// Appends the raw bytes a vocab string stands for. Returns false (appending nothing) when some
// character is outside the alphabet; HF's ByteLevel decoder then keeps the token's text as is.
bool decode(std::string_view token, std::string& out);

}  // namespace nextn::byte_level
