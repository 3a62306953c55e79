#include "tokenizer/added_tokens.h"

#include <algorithm>

namespace nextn {

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken>& tokens) : by_first_byte_(256) {
    for (const AddedToken& t : tokens) {
        if (t.content.empty()) continue;
        auto first = static_cast<uint8_t>(t.content[0]);
        by_first_byte_[first].push_back({t.content, t.id, t.special});
        may_start_[first] = true;
    }
    for (auto& list : by_first_byte_)
        std::stable_sort(list.begin(), list.end(),
                         [](const Entry& a, const Entry& b) { return a.content.size() > b.content.size(); });
}

AddedTokenMatcher::Match AddedTokenMatcher::find(std::string_view text, std::size_t from,
                                                 bool include_special) const {
    if (by_first_byte_.empty()) return {};
    for (std::size_t pos = from; pos < text.size(); ++pos) {
        auto b = static_cast<uint8_t>(text[pos]);
        if (!may_start_[b]) continue;
        for (const Entry& e : by_first_byte_[b]) {
            if (e.special && !include_special) continue;
            if (text.compare(pos, e.content.size(), e.content) == 0) return {pos, e.content.size(), e.id};
        }
    }
    return {};
}

}  // namespace nextn
