#pragma once
// Added tokens (special like <|im_start|> and non-special like <think>) are found in the raw text
// before normalization and pre-tokenization: at each position the longest token that matches
// wins, leftmost first, with no whitespace stripping around it.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nextn {

struct AddedToken {
    int32_t id = -1;
    std::string content;
    bool special = false;
};

class AddedTokenMatcher {
public:
    AddedTokenMatcher() = default;
    explicit AddedTokenMatcher(const std::vector<AddedToken>& tokens);

    struct Match {
        std::size_t pos = std::string_view::npos;  // npos: none found
        std::size_t length = 0;
        int32_t id = -1;
    };
    // First match at or after `from`. Special tokens are skipped when `include_special` is false.
    Match find(std::string_view text, std::size_t from, bool include_special) const;

private:
    struct Entry {
        std::string content;
        int32_t id;
        bool special;
    };
    std::vector<std::vector<Entry>> by_first_byte_;  // [256], each longest first
    bool may_start_[256] = {};
};

}  // namespace nextn
