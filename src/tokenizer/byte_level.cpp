#include "tokenizer/byte_level.h"

#include "tokenizer/utf8.h"

namespace nextn::byte_level {
namespace {

bool stands_for_itself(int b) {
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Tables {
    std::array<char32_t, 256> to_char{};
    std::array<int16_t, 324> to_byte{};  // indexed by code point; the alphabet ends below U+0144
    Tables() {
        to_byte.fill(-1);
        char32_t next_extra = 0x100;
        for (int b = 0; b < 256; ++b) {
            to_char[b] = stands_for_itself(b) ? static_cast<char32_t>(b) : next_extra++;
            to_byte[to_char[b]] = static_cast<int16_t>(b);
        }
    }
};

const Tables& tables() {
    static const Tables t;  // immutable after construction
    return t;
}

}  // namespace

char32_t char_for_byte(uint8_t b) { return tables().to_char[b]; }

int byte_for_char(char32_t cp) {
    if (cp >= tables().to_byte.size()) return -1;
    return tables().to_byte[cp];
}

std::string encode(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size() * 2);
    for (char c : bytes) utf8::append(out, char_for_byte(static_cast<uint8_t>(c)));
    return out;
}

bool decode(std::string_view token, std::string& out) {
    std::size_t start = out.size();
    std::size_t pos = 0;
    while (pos < token.size()) {
        char32_t cp = utf8::next(token, pos);
        int b = byte_for_char(cp);
        if (b < 0) {
            out.resize(start);
            return false;
        }
        out.push_back(static_cast<char>(b));
    }
    return true;
}

}  // namespace nextn::byte_level
