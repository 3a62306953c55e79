#pragma once
// Bounds on what one chat-template render may build or do. A template comes from a model file
// (tokenizer_config.json, a GGUF), which may be corrupt or hostile: without bounds, a few bytes
// such as `{{ 'x' * 10**12 }}`, `{{ 9223372036854775807 + 1 }}` or two nested loops over
// range(1000000) exhaust memory, hit signed overflow (undefined behaviour) or never finish. Real
// chat templates stay far below every bound, so each one fails with a clear nextn::Error.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace nextn::jinja {

// Longest string a render builds (output, concatenations, filters): far beyond any context.
constexpr std::size_t kMaxStringBytes = std::size_t{32} << 20;
// Most items in one list (range(), repetition, concatenation, the characters of a string).
constexpr std::size_t kMaxListItems = 1'000'000;
// Expression evaluations plus loop iterations in one render (a long conversation through the
// Qwen3 template takes about 100 per message).
constexpr int64_t kMaxSteps = 10'000'000;
// Deepest nesting of lists and dicts in a value: printing, comparing and freeing one recurse
// per level, so a value built one level per loop iteration would overflow the stack.
constexpr int kMaxValueDepth = 200;
// A string value costs one step per this many bytes (so at most ~320 MB of strings are built).
constexpr std::size_t kBytesPerStep = 32;
// Deepest nesting of expressions and blocks (macro calls included) one render evaluates.
constexpr int kMaxNesting = 400;

[[noreturn]] void error_at(int line, const std::string& what);

// Appends `s` to `out`, or fails when the result would exceed kMaxStringBytes.
inline void append_bounded(std::string& out, std::string_view s, int line) {
    if (s.size() > kMaxStringBytes - out.size())
        error_at(line, "string longer than " + std::to_string(kMaxStringBytes >> 20) + " MiB");
    out.append(s);
}

// Python integers are unbounded; ours are int64, so an overflowing result is an error instead of
// undefined behaviour (or a silently wrapped number).
[[noreturn]] inline void integer_overflow(int line) {
    error_at(line, "integer overflow (results must fit in 64 bits)");
}
inline int64_t checked_int(bool overflowed, int64_t result, int line) {
    if (overflowed) integer_overflow(line);
    return result;
}
inline int64_t add_int(int64_t a, int64_t b, int line) {
    int64_t r;
    const bool overflowed = __builtin_add_overflow(a, b, &r);
    return checked_int(overflowed, r, line);
}
inline int64_t sub_int(int64_t a, int64_t b, int line) {
    int64_t r;
    const bool overflowed = __builtin_sub_overflow(a, b, &r);
    return checked_int(overflowed, r, line);
}
inline int64_t mul_int(int64_t a, int64_t b, int line) {
    int64_t r;
    const bool overflowed = __builtin_mul_overflow(a, b, &r);
    return checked_int(overflowed, r, line);
}

// The index after i, stepping by `step` (not 0) toward `bound`: i + step while that stays short
// of the bound, else the bound itself, so a loop `i != bound` ends without i + step ever passing
// int64's range (undefined behaviour with a step near 2**63). The distance is taken unsigned: the
// distance between two int64 values always fits in a uint64.
inline int64_t step_toward(int64_t i, int64_t step, int64_t bound) {
    const uint64_t left = step > 0 ? uint64_t(bound) - uint64_t(i) : uint64_t(i) - uint64_t(bound);
    const uint64_t stride = step > 0 ? uint64_t(step) : uint64_t(0) - uint64_t(step);
    return left <= stride ? bound : i + step;
}

}  // namespace nextn::jinja
