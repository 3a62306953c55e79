#pragma once
// Ctrl-C as "stop this reply": while an InterruptScope lives, SIGINT sets a flag instead of
// killing the process; the generation callback polls it and returns stop, which leaves the
// session's caches consistent. Outside a scope Ctrl-C behaves as usual.
namespace nextn::cli {

class InterruptScope {
public:
    InterruptScope();
    ~InterruptScope();
    InterruptScope(const InterruptScope&) = delete;
    InterruptScope& operator=(const InterruptScope&) = delete;

    bool requested() const;
};

}  // namespace nextn::cli
