#pragma once
// Splits template source into text and tag chunks (applying whitespace control, trim_blocks and
// lstrip_blocks), and tag contents into tokens.
#include <string>
#include <vector>

namespace nextn::jinja {

struct Token {
    enum class Kind { Name, String, Int, Float, Op, End };
    Kind kind;
    std::string text;  // name, operator, or unescaped string literal
    int line = 0;
};

struct Chunk {
    enum class Kind { Text, Output, Statement };
    Kind kind;
    std::string text;           // Text
    std::vector<Token> tokens;  // Output / Statement, ending with an End token
    int line = 0;
};

std::vector<Chunk> lex_template(const std::string& source);

}  // namespace nextn::jinja
