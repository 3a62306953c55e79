#pragma once
// Pre-tokenization: splits normalized text into pieces that BPE encodes one by one. Supports the
// tokenizer.json forms Qwen uses: Sequence[Split(Regex, Isolated), ByteLevel(use_regex=false)],
// a plain ByteLevel (with its GPT-2 regex when use_regex is true), and Split on its own. The
// regex runs in PCRE2 with UTF | UCP so that \s, \p{L}, ... follow Unicode like Oniguruma does.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace nextn {

// One piece of the input: bytes [offset, offset + length) of the segment, optionally preceded by
// a space that ByteLevel(add_prefix_space) adds.
struct PrePiece {
    uint32_t offset;
    uint32_t length;
    bool prefix_space;
};

// A compiled PCRE2 pattern (JIT when available). Immutable, safe to share between threads.
class SplitRegex {
public:
    SplitRegex(const std::string& pattern, bool literal, const std::string& where);
    ~SplitRegex();
    SplitRegex(const SplitRegex&) = delete;
    SplitRegex& operator=(const SplitRegex&) = delete;

    // Calls on_match(start, end) for each match in text[begin, end) (absolute byte offsets), in
    // order. Empty matches are skipped.
    void for_each_match(std::string_view text, uint32_t begin, uint32_t end,
                        const std::function<void(uint32_t, uint32_t)>& on_match) const;

private:
    void* code_ = nullptr;  // pcre2_code_8*
    bool jit_ = false;
    std::string where_;
};

class PreTokenizer {
public:
    PreTokenizer() = default;
    // Reads the `pre_tokenizer` field; `where` names the file for errors.
    static PreTokenizer from_json(const nlohmann::json& spec, const std::string& where);
    // Split(Regex, Isolated) followed by ByteLevel(use_regex=false), as Qwen uses.
    static PreTokenizer isolated_regex(const std::string& pattern, const std::string& where);

    // Splits `text` (valid UTF-8) into pieces and hands them to `emit` in order. The last step
    // streams its pieces, so no list of all pieces is built for one-step splits.
    void split(std::string_view text, const std::function<void(const PrePiece&)>& emit) const;

private:
    enum class Behavior { Isolated, Removed, MergedWithPrevious, MergedWithNext, Contiguous };
    struct Step {
        std::shared_ptr<const SplitRegex> regex;  // null: ByteLevel without regex
        Behavior behavior = Behavior::Isolated;
        bool add_prefix_space = false;            // ByteLevel only
    };
    void add_step(const nlohmann::json& spec, const std::string& where);
    // Applies one step to one piece.
    static void apply_step(const Step& step, std::string_view text, const PrePiece& piece,
                           const std::function<void(const PrePiece&)>& emit);
    std::vector<Step> steps_;
};

}  // namespace nextn
