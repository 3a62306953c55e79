#include "tokenizer/utf8.h"

#include <cstdint>

namespace nextn::utf8 {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the character a lead byte starts (0: the byte cannot start one) and the allowed
// range of the second byte, which is narrower than 80..BF for E0, ED, F0 and F4 (table 3-7).
struct LeadInfo {
    int length;
    uint8_t second_lo, second_hi;
};

LeadInfo lead_info(uint8_t b) {
    if (b < 0x80) return {1, 0, 0};
    if (b < 0xC2) return {0, 0, 0};
    if (b < 0xE0) return {2, 0x80, 0xBF};
    if (b == 0xE0) return {3, 0xA0, 0xBF};
    if (b == 0xED) return {3, 0x80, 0x9F};
    if (b < 0xF0) return {3, 0x80, 0xBF};
    if (b == 0xF0) return {4, 0x90, 0xBF};
    if (b < 0xF4) return {4, 0x80, 0xBF};
    if (b == 0xF4) return {4, 0x80, 0x8F};
    return {0, 0, 0};
}

// Number of bytes starting at `pos` that form a valid prefix of one character (1..length), and
// whether that prefix is the complete character.
struct Scan {
    std::size_t valid_len;
    bool complete;
};

Scan scan_char(std::string_view s, std::size_t pos) {
    uint8_t b = static_cast<uint8_t>(s[pos]);
    LeadInfo info = lead_info(b);
    if (info.length == 0) return {0, false};
    if (info.length == 1) return {1, true};
    std::size_t k = 1;
    for (; k < static_cast<std::size_t>(info.length); ++k) {
        if (pos + k >= s.size()) return {k, false};
        uint8_t c = static_cast<uint8_t>(s[pos + k]);
        uint8_t lo = k == 1 ? info.second_lo : 0x80;
        uint8_t hi = k == 1 ? info.second_hi : 0xBF;
        if (c < lo || c > hi) return {k, false};
    }
    return {k, true};
}

}  // namespace

void append(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

bool is_valid(std::string_view bytes) {
    std::size_t pos = 0;
    while (pos < bytes.size()) {
        if (static_cast<uint8_t>(bytes[pos]) < 0x80) {
            ++pos;
            continue;
        }
        Scan sc = scan_char(bytes, pos);
        if (!sc.complete) return false;
        pos += sc.valid_len;
    }
    return true;
}

std::size_t append_lossy(std::string& out, std::string_view bytes, bool final) {
    std::size_t pos = 0;
    while (pos < bytes.size()) {
        std::size_t run = pos;  // copy runs of ASCII in one go
        while (run < bytes.size() && static_cast<uint8_t>(bytes[run]) < 0x80) ++run;
        out.append(bytes.data() + pos, run - pos);
        pos = run;
        if (pos >= bytes.size()) break;
        Scan sc = scan_char(bytes, pos);
        if (sc.complete) {
            out.append(bytes.data() + pos, sc.valid_len);
            pos += sc.valid_len;
        } else if (sc.valid_len == 0) {
            out.append(kReplacement);
            ++pos;
        } else if (pos + sc.valid_len >= bytes.size() && !final) {
            return pos;  // unfinished character at the end: more bytes may complete it
        } else {
            out.append(kReplacement);  // one U+FFFD for the whole maximal subpart
            pos += sc.valid_len;
        }
    }
    return pos;
}

std::string lossy(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    append_lossy(out, bytes, true);
    return out;
}

char32_t next(std::string_view s, std::size_t& pos) {
    uint8_t b = static_cast<uint8_t>(s[pos]);
    if (b < 0x80) {
        ++pos;
        return b;
    }
    int len = b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    char32_t cp = b & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
    for (int k = 1; k < len && pos + k < s.size(); ++k)
        cp = (cp << 6) | (static_cast<uint8_t>(s[pos + k]) & 0x3F);
    pos += len;
    return cp;
}

}  // namespace nextn::utf8
