#include "engine/stop_strings.h"

#include <algorithm>

#include "core/error.h"

namespace nextn {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
    for (const auto& s : stops_)
        if (s.empty()) fail("a stop string must not be empty");
}

std::string StopStringMatcher::push(const std::string& piece) {
    if (stopped_) return {};
    held_ += piece;
    // The earliest complete stop string ends generation; text before it is released.
    size_t first = std::string::npos;
    for (const auto& s : stops_) first = std::min(first, held_.find(s));
    if (first != std::string::npos) {
        stopped_ = true;
        std::string out = held_.substr(0, first);
        held_.clear();
        return out;
    }
    // Hold back the longest suffix that is a proper prefix of some stop string.
    size_t keep = 0;
    for (const auto& s : stops_) {
        for (size_t n = std::min(s.size() - 1, held_.size()); n > keep; --n) {
            if (held_.compare(held_.size() - n, n, s, 0, n) == 0) {
                keep = n;
                break;
            }
        }
    }
    std::string out = held_.substr(0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    return out;
}

std::string StopStringMatcher::flush() {
    std::string out;
    out.swap(held_);
    return out;
}

}  // namespace nextn
