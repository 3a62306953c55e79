#pragma once
// Stop strings on streamed text: text arrives in pieces (one decoded token at a time); the
// matcher releases what can no longer be the start of a stop string and holds back the rest,
// so a stop string split across tokens is never printed, and nothing after it is.
#include <string>
#include <vector>

namespace nextn {

class StopStringMatcher {
public:
    explicit StopStringMatcher(std::vector<std::string> stops);

    // Adds a piece of text; returns the text now safe to show. After it returns with stopped()
    // true, the text up to (not including) the earliest stop string has been released and the
    // caller should stop generating.
    std::string push(const std::string& piece);
    // The held-back text at the end of generation (no stop string matched).
    std::string flush();
    bool stopped() const { return stopped_; }

private:
    std::vector<std::string> stops_;
    std::string held_;  // text that may still begin a stop string
    bool stopped_ = false;
};

}  // namespace nextn
