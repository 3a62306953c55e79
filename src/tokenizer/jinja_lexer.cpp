#include "tokenizer/jinja_lexer.h"

#include <cctype>
#include <cstring>

#include "core/error.h"
#include "tokenizer/utf8.h"

namespace nextn::jinja {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

int line_at(const std::string& s, std::size_t pos) {
    int line = 1;
    for (std::size_t i = 0; i < pos && i < s.size(); ++i) line += s[i] == '\n';
    return line;
}

class Lexer {
public:
    explicit Lexer(std::string src) : s_(std::move(src)) {}

    std::vector<Chunk> run() {
        std::size_t pos = 0;
        bool line_start = true;  // the text about to be read starts a line
        bool strip_next = false; // a "-%}" / "-}}" before it strips its leading whitespace
        while (pos < s_.size()) {
            std::size_t open = find_open(pos);
            std::string text = s_.substr(pos, open == std::string::npos ? std::string::npos : open - pos);
            if (strip_next) {
                std::size_t k = 0;
                while (k < text.size() && is_space(text[k])) ++k;
                text.erase(0, k);
            }
            if (open == std::string::npos) {
                add_text(text);
                break;
            }
            char kind = s_[open + 1];  // '{', '%' or '#'
            std::size_t body = open + 2;
            char modifier = body < s_.size() ? s_[body] : 0;
            if (modifier == '-') {
                std::size_t k = text.size();
                while (k > 0 && is_space(text[k - 1])) --k;
                text.resize(k);
                ++body;
            } else if (modifier == '+') {
                ++body;
            } else if (kind != '{') {
                // lstrip_blocks: spaces and tabs from the start of the line up to a block tag.
                std::size_t nl = text.rfind('\n');
                std::size_t from = nl == std::string::npos ? 0 : nl + 1;
                if (nl != std::string::npos || line_start) {
                    bool blank = true;
                    for (std::size_t k = from; k < text.size(); ++k) blank &= (text[k] == ' ' || text[k] == '\t');
                    if (blank) text.resize(from);
                }
            }
            add_text(text);
            int line = line_at(s_, open);
            std::size_t end;
            if (kind == '#') {
                std::size_t close = s_.find("#}", body);
                if (close == std::string::npos) fail("chat template line ", line, ": unclosed comment");
                end = close + 2;
                strip_next = close > body && s_[close - 1] == '-';
                // "+#}" turns trim_blocks off for this tag, as "+%}" does for a block tag.
                if (!(close > body && s_[close - 1] == '+')) end = trim_block_newline(end);
            } else {
                Chunk chunk;
                chunk.kind = kind == '{' ? Chunk::Kind::Output : Chunk::Kind::Statement;
                chunk.line = line;
                char close_modifier = 0;
                end = lex_tag(body, kind == '{' ? "}}" : "%}", line, chunk.tokens, close_modifier);
                strip_next = close_modifier == '-';
                // trim_blocks, except after "+%}" (Jinja2: a plus sign at the end of a block
                // disables it for that block).
                if (kind == '%' && close_modifier != '+') end = trim_block_newline(end);
                if (kind == '%' && is_raw(chunk)) {
                    // "{% raw -%}" strips the start of the raw text; what follows {% endraw %}
                    // is stripped only by that tag's own "-%}" (read_raw skips it).
                    end = read_raw(end, line, strip_next);
                    strip_next = false;
                } else {
                    chunks_.push_back(std::move(chunk));
                }
            }
            line_start = end > 0 && s_[end - 1] == '\n';
            pos = end;
        }
        return std::move(chunks_);
    }

private:
    std::size_t find_open(std::size_t pos) const {
        for (std::size_t p = s_.find('{', pos); p != std::string::npos; p = s_.find('{', p + 1)) {
            if (p + 1 < s_.size() && (s_[p + 1] == '{' || s_[p + 1] == '%' || s_[p + 1] == '#')) return p;
        }
        return std::string::npos;
    }

    // trim_blocks: one newline right after a block tag is dropped.
    std::size_t trim_block_newline(std::size_t end) const {
        if (end < s_.size() && s_[end] == '\n') return end + 1;
        return end;
    }

    void add_text(const std::string& text) {
        if (text.empty()) return;
        if (!chunks_.empty() && chunks_.back().kind == Chunk::Kind::Text) {
            chunks_.back().text += text;
            return;
        }
        Chunk c;
        c.kind = Chunk::Kind::Text;
        c.text = text;
        chunks_.push_back(std::move(c));
    }

    static bool is_raw(const Chunk& c) {
        return c.tokens.size() == 2 && c.tokens[0].kind == Token::Kind::Name && c.tokens[0].text == "raw";
    }

    // {% raw %} ... {% endraw %}: the text in between is kept verbatim.
    std::size_t read_raw(std::size_t pos, int line, bool strip_start) {
        for (std::size_t p = s_.find("{%", pos); p != std::string::npos; p = s_.find("{%", p + 2)) {
            std::size_t q = p + 2;
            bool strip_left = q < s_.size() && s_[q] == '-';
            if (q < s_.size() && (s_[q] == '-' || s_[q] == '+')) ++q;
            while (q < s_.size() && is_space(s_[q])) ++q;
            if (s_.compare(q, 6, "endraw") != 0) continue;
            q += 6;
            while (q < s_.size() && is_space(s_[q])) ++q;
            bool strip_right = q < s_.size() && s_[q] == '-';
            if (strip_right) ++q;
            if (s_.compare(q, 2, "%}") != 0) continue;
            std::string text = s_.substr(pos, p - pos);
            if (strip_start) {
                std::size_t k = 0;
                while (k < text.size() && is_space(text[k])) ++k;
                text.erase(0, k);
            }
            if (strip_left)
                while (!text.empty() && is_space(text.back())) text.pop_back();
            add_text(text);
            std::size_t end = trim_block_newline(q + 2);
            if (strip_right)
                while (end < s_.size() && is_space(s_[end])) ++end;
            return end;
        }
        fail("chat template line ", line, ": {% raw %} without {% endraw %}");
    }

    // Reads tokens up to the closing delimiter; returns the position after it. `modifier` is the
    // '-' or '+' written before the delimiter, else 0.
    std::size_t lex_tag(std::size_t pos, const char* close, int line, std::vector<Token>& out,
                        char& modifier) {
        int depth = 0;  // open (, [ and { so "}}" inside a dict literal does not close the tag
        while (true) {
            while (pos < s_.size() && is_space(s_[pos])) {
                if (s_[pos] == '\n') ++line;
                ++pos;
            }
            if (pos >= s_.size()) fail("chat template line ", line, ": tag not closed (expected \"", close, "\")");
            if (depth == 0) {
                for (char m : {'-', '+', '\0'}) {
                    std::size_t q = pos + (m ? 1 : 0);
                    if (m && s_[pos] != m) continue;
                    if (s_.compare(q, 2, close) == 0) {
                        modifier = m;
                        out.push_back({Token::Kind::End, "", line});
                        return q + 2;
                    }
                }
            }
            char c = s_[pos];
            if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
                std::size_t b = pos;
                while (pos < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos])) || s_[pos] == '_')) ++pos;
                out.push_back({Token::Kind::Name, s_.substr(b, pos - b), line});
            } else if (std::isdigit(static_cast<unsigned char>(c))) {
                std::size_t b = pos;
                bool is_float = false;
                while (pos < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[pos])) || s_[pos] == '_')) ++pos;
                if (pos + 1 < s_.size() && s_[pos] == '.' && std::isdigit(static_cast<unsigned char>(s_[pos + 1]))) {
                    is_float = true;
                    ++pos;
                    while (pos < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos]))) ++pos;
                }
                if (pos < s_.size() && (s_[pos] == 'e' || s_[pos] == 'E')) {
                    std::size_t q = pos + 1;
                    if (q < s_.size() && (s_[q] == '+' || s_[q] == '-')) ++q;
                    if (q < s_.size() && std::isdigit(static_cast<unsigned char>(s_[q]))) {
                        is_float = true;
                        pos = q;
                        while (pos < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos]))) ++pos;
                    }
                }
                std::string num;
                for (std::size_t k = b; k < pos; ++k)
                    if (s_[k] != '_') num.push_back(s_[k]);
                out.push_back({is_float ? Token::Kind::Float : Token::Kind::Int, num, line});
            } else if (c == '\'' || c == '"') {
                out.push_back({Token::Kind::String, read_string(pos, line), line});
            } else {
                static const char* ops[] = {"**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<",
                                            ">",  "=",  "(",  ")",  "[",  "]",  "{", "}", ",", ".", ":", "|"};
                const char* found = nullptr;
                for (const char* op : ops)
                    if (s_.compare(pos, std::strlen(op), op) == 0) {
                        found = op;
                        break;
                    }
                if (!found) fail("chat template line ", line, ": unexpected character '", c, "'");
                if (*found == '(' || *found == '[' || *found == '{') ++depth;
                if ((*found == ')' || *found == ']' || *found == '}') && depth > 0) --depth;
                out.push_back({Token::Kind::Op, found, line});
                pos += std::strlen(found);
            }
        }
    }

    // Python-style string literal with backslash escapes.
    std::string read_string(std::size_t& pos, int& line) {
        char quote = s_[pos++];
        std::string out;
        while (true) {
            if (pos >= s_.size()) fail("chat template line ", line, ": unterminated string literal");
            char c = s_[pos++];
            if (c == quote) return out;
            if (c == '\n') ++line;
            if (c != '\\') {
                out.push_back(c);
                continue;
            }
            if (pos >= s_.size()) fail("chat template line ", line, ": unterminated string literal");
            char e = s_[pos++];
            switch (e) {
                case 'n': out.push_back('\n'); break;
                case 't': out.push_back('\t'); break;
                case 'r': out.push_back('\r'); break;
                case '0': out.push_back('\0'); break;
                case 'b': out.push_back('\b'); break;
                case 'f': out.push_back('\f'); break;
                case 'v': out.push_back('\v'); break;
                case 'a': out.push_back('\a'); break;
                case '\\': out.push_back('\\'); break;
                case '\'': out.push_back('\''); break;
                case '"': out.push_back('"'); break;
                case '\n': ++line; break;  // line continuation
                case 'x': case 'u': case 'U': {
                    int n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
                    if (pos + n > s_.size()) fail("chat template line ", line, ": bad \\", e, " escape");
                    char32_t cp = 0;
                    for (int k = 0; k < n; ++k) {
                        char h = s_[pos + k];
                        if (!std::isxdigit(static_cast<unsigned char>(h))) fail("chat template line ", line, ": bad \\", e, " escape");
                        cp = cp * 16 + (std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
                    }
                    pos += n;
                    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
                    utf8::append(out, cp);
                    break;
                }
                default:  // unknown escapes stay as written, as in Python
                    out.push_back('\\');
                    out.push_back(e);
            }
        }
    }

    std::string s_;
    std::vector<Chunk> chunks_;
};

}  // namespace

std::vector<Chunk> lex_template(const std::string& source) {
    // Jinja normalizes newlines to "\n" and drops one trailing newline (keep_trailing_newline=False).
    std::string src;
    src.reserve(source.size());
    for (std::size_t i = 0; i < source.size(); ++i) {
        if (source[i] == '\r') {
            src.push_back('\n');
            if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
        } else {
            src.push_back(source[i]);
        }
    }
    if (!src.empty() && src.back() == '\n') src.pop_back();
    return Lexer(std::move(src)).run();
}

}  // namespace nextn::jinja
