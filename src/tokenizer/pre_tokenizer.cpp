#include "tokenizer/pre_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "core/error.h"

namespace nextn {
namespace {

// GPT-2's split pattern, used by ByteLevel when use_regex is true (HF tokenizers' ByteLevel).
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

std::string pcre2_message(int code) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(code, buf, sizeof buf);
    return reinterpret_cast<const char*>(buf);
}

}  // namespace

SplitRegex::SplitRegex(const std::string& pattern, bool literal, const std::string& where)
    : where_(where) {
    int err = 0;
    PCRE2_SIZE err_off = 0;
    // MATCH_INVALID_UTF keeps PCRE2 safe on ill-formed input (we sanitize first anyway).
    // PCRE2_LITERAL refuses PCRE2_UCP (which only matters to \p, \w and the like).
    uint32_t options = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     options, &err, &err_off, nullptr);
    if (code == nullptr)
        fail(where, ": pre-tokenizer regex does not compile at offset ", err_off, ": ",
             pcre2_message(err), " (pattern: ", pattern, ")");
    code_ = code;
    jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
}

SplitRegex::~SplitRegex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

void SplitRegex::for_each_match(std::string_view text, uint32_t begin, uint32_t end,
                                const std::function<void(uint32_t, uint32_t)>& on_match) const {
    auto* code = static_cast<pcre2_code*>(code_);
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(code, nullptr);
    if (md == nullptr) fail(where_, ": out of memory for regex match data");
    struct Free {
        pcre2_match_data* md;
        ~Free() { pcre2_match_data_free(md); }
    } guard{md};
    auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    PCRE2_SIZE pos = begin;
    while (pos < end) {
        int rc = jit_ ? pcre2_jit_match(code, subject, end, pos, 0, md, nullptr)
                      : pcre2_match(code, subject, end, pos, 0, md, nullptr);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT)  // very long runs: fall back to the interpreter
            rc = pcre2_match(code, subject, end, pos, PCRE2_NO_JIT, md, nullptr);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) fail(where_, ": regex match failed: ", pcre2_message(rc));
        PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
        PCRE2_SIZE s = ov[0], e = ov[1];
        if (e > s) {
            on_match(static_cast<uint32_t>(s), static_cast<uint32_t>(e));
            pos = e;
        } else {
            // Empty match: step over one whole character.
            pos = s + 1;
            while (pos < end && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80) ++pos;
        }
    }
}

void PreTokenizer::add_step(const nlohmann::json& spec, const std::string& where) {
    if (!spec.is_object() || !spec.contains("type") || !spec["type"].is_string())
        fail(where, ": pre_tokenizer entry without a \"type\" string");
    std::string type = spec["type"].get<std::string>();
    if (type == "Sequence") {
        if (!spec.contains("pretokenizers") || !spec["pretokenizers"].is_array())
            fail(where, ": Sequence pre_tokenizer without a \"pretokenizers\" list");
        for (const auto& s : spec["pretokenizers"]) add_step(s, where);
        return;
    }
    Step step;
    if (type == "ByteLevel") {
        step.add_prefix_space = spec.value("add_prefix_space", false);
        if (spec.value("use_regex", true))
            step.regex = std::make_shared<SplitRegex>(kGpt2Pattern, false, where);
        // Without regex or prefix space ByteLevel does nothing here: the byte mapping itself
        // happens in the BPE model.
        if (step.regex || step.add_prefix_space) steps_.push_back(std::move(step));
        return;
    }
    if (type != "Split")
        fail(where, ": unsupported pre_tokenizer type \"", type, "\" (supported: Sequence, Split, ByteLevel)");
    if (spec.value("invert", false)) fail(where, ": Split pre_tokenizer with invert=true is not supported");
    const auto& pattern = spec.contains("pattern") ? spec["pattern"] : nlohmann::json();
    if (pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string())
        step.regex = std::make_shared<SplitRegex>(pattern["Regex"].get<std::string>(), false, where);
    else if (pattern.is_object() && pattern.contains("String") && pattern["String"].is_string())
        step.regex = std::make_shared<SplitRegex>(pattern["String"].get<std::string>(), true, where);
    else
        fail(where, ": Split pre_tokenizer needs pattern {\"Regex\": ...} or {\"String\": ...}");
    std::string behavior = spec.value("behavior", "Isolated");
    if (behavior == "Isolated") step.behavior = Behavior::Isolated;
    else if (behavior == "Removed") step.behavior = Behavior::Removed;
    else if (behavior == "MergedWithPrevious") step.behavior = Behavior::MergedWithPrevious;
    else if (behavior == "MergedWithNext") step.behavior = Behavior::MergedWithNext;
    else if (behavior == "Contiguous") step.behavior = Behavior::Contiguous;
    else fail(where, ": unsupported Split behavior \"", behavior, "\"");
    steps_.push_back(std::move(step));
}

PreTokenizer PreTokenizer::from_json(const nlohmann::json& spec, const std::string& where) {
    PreTokenizer p;
    if (!spec.is_null()) p.add_step(spec, where);
    return p;
}

PreTokenizer PreTokenizer::isolated_regex(const std::string& pattern, const std::string& where) {
    PreTokenizer p;
    Step split;
    split.regex = std::make_shared<SplitRegex>(pattern, false, where);
    p.steps_.push_back(std::move(split));  // ByteLevel(use_regex=false) adds no step
    return p;
}

void PreTokenizer::apply_step(const Step& step, std::string_view text, const PrePiece& piece,
                              const std::function<void(const PrePiece&)>& emit) {
    bool prefix = piece.prefix_space || (step.add_prefix_space && text[piece.offset] != ' ');
    if (!step.regex) {  // ByteLevel without regex: only the optional prefix space
        emit({piece.offset, piece.length, prefix});
        return;
    }
    uint32_t begin = piece.offset, end = piece.offset + piece.length;
    // A prefix space (added here or by an earlier step) goes on the first sub-piece.
    auto out = [&](uint32_t s, uint32_t e) {
        emit({s, e - s, prefix});
        prefix = false;
    };
    if (step.behavior == Behavior::Isolated) {  // the common case, without temporaries
        uint32_t cursor = begin;
        step.regex->for_each_match(text, begin, end, [&](uint32_t s, uint32_t e) {
            if (s > cursor) out(cursor, s);
            out(s, e);
            cursor = e;
        });
        if (cursor < end) out(cursor, end);
        return;
    }
    // Other behaviors: list (range, is_match) spans covering the piece, then join them.
    std::vector<std::pair<PrePiece, bool>> spans;
    uint32_t cursor = begin;
    step.regex->for_each_match(text, begin, end, [&](uint32_t s, uint32_t e) {
        if (s > cursor) spans.push_back({{cursor, s - cursor, false}, false});
        spans.push_back({{s, e - s, false}, true});
        cursor = e;
    });
    if (cursor < end) spans.push_back({{cursor, end - cursor, false}, false});
    std::vector<PrePiece> pieces;
    for (std::size_t i = 0; i < spans.size(); ++i) {
        auto [range, is_match] = spans[i];
        bool prev_match = i > 0 && spans[i - 1].second;
        bool join = false;
        switch (step.behavior) {
            case Behavior::Isolated: break;
            case Behavior::Removed:
                if (is_match) continue;
                break;
            case Behavior::MergedWithPrevious: join = is_match && i > 0 && !prev_match; break;
            case Behavior::MergedWithNext: join = !is_match && prev_match; break;
            case Behavior::Contiguous: join = is_match && prev_match; break;
        }
        if (join && !pieces.empty())
            pieces.back().length += range.length;
        else
            pieces.push_back(range);
    }
    for (const PrePiece& p : pieces) out(p.offset, p.offset + p.length);
}

void PreTokenizer::split(std::string_view text, const std::function<void(const PrePiece&)>& emit) const {
    if (text.empty()) return;
    PrePiece whole{0, static_cast<uint32_t>(text.size()), false};
    if (steps_.empty()) {
        emit(whole);
        return;
    }
    // Every step but the last builds the list the next one consumes; the last one streams.
    std::vector<PrePiece> cur{whole}, next;
    for (std::size_t k = 0; k + 1 < steps_.size(); ++k) {
        next.clear();
        for (const PrePiece& p : cur) apply_step(steps_[k], text, p, [&](const PrePiece& q) { next.push_back(q); });
        cur.swap(next);
    }
    for (const PrePiece& p : cur) apply_step(steps_.back(), text, p, emit);
}

}  // namespace nextn
