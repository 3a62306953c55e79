// nextn tokenize MODEL: text on stdin -> token ids as a JSON array (llama-tokenize's job).
#include <iostream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/error.h"
#include "engine/model_tokenizer.h"

namespace nextn::cli {

int cmd_tokenize(const std::vector<std::string>& argv) {
    std::vector<FlagSpec> specs = {
        {"special", "", false, "parse special tokens such as <|im_start|> in the text"},
        {"jsonl", "", false,
         "read one JSON string per line, print one JSON array per line (a blank line, or one of "
         "only spaces and tabs: [])"},
        {"help", "h", false, "show this help"},
    };
    Args a(specs, argv);
    if (a.has("help")) {
        std::cout << "usage: nextn tokenize MODEL [--special] [--jsonl] < text\n\n"
                  << "MODEL may be a model directory, a directory with only tokenizer files,\n"
                  << "a tokenizer.json, or a .gguf file.\n\n"
                  << Args::help_text(specs);
        return 0;
    }
    if (a.positional().size() != 1) throw UsageError("expected exactly one MODEL path");
    Tokenizer tok = load_tokenizer_from_path(a.positional()[0]);
    const bool special = a.has("special");
    if (a.has("jsonl")) {
        std::string line;
        int64_t line_no = 0;
        while (std::getline(std::cin, line)) {
            ++line_no;
            // A blank line (nothing but spaces and tabs, or a CRLF file's bare \r) is an empty
            // text: its line gets an empty array, so output line N always answers input line N.
            if (line.find_first_not_of(" \t\r") == std::string::npos) {
                std::cout << "[]\n";
                continue;
            }
            nlohmann::json j;
            try {
                j = nlohmann::json::parse(line);
            } catch (const std::exception& e) {
                fail("stdin line ", line_no, ": not valid JSON: ", e.what());
            }
            if (!j.is_string()) fail("stdin line ", line_no, ": expected a JSON string");
            std::cout << nlohmann::json(tok.encode(j.get<std::string>(), special)).dump() << "\n";
        }
        return 0;
    }
    std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    warn_if_not_utf8(text, "the input");
    std::cout << nlohmann::json(tok.encode(text, special)).dump() << "\n";
    return 0;
}

}  // namespace nextn::cli
