// Tokenizer rules on small hand-made tokenizers, each expectation taken from the rule it checks:
// the pre-tokenizer regexes (GPT-2's for ByteLevel, Qwen2's and Qwen3.5's for the GGUF names;
// the expected pieces are Python `regex` findall on the stated patterns), HF tokenizers' Split
// behaviors (its documented "the-final--countdown" example), BPE's lowest-rank-first,
// leftmost-on-a-tie merging, ignore_merges, Unicode normal forms, added-token matching, and what
// the loaders accept or refuse. The fixture tokenizers use none of ByteLevel's regex, Split's
// other behaviors, the other normal forms or the GGUF qwen2/gpt2 names, so a mutant of those
// passed every other test.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "error_of.h"
#include "test_paths.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/tokenizer.h"

namespace nextn {
namespace {

using Json = nlohmann::ordered_json;
using Pieces = std::vector<std::string>;

// A byte-level BPE vocabulary: the 256 byte tokens (token id = byte value) and, for each of
// `pieces`, every prefix of it, with merges that build each piece one byte at a time (ranks in
// the order given). A pre-token equal to one of `pieces` becomes that piece's single token, so
// decoding id by id shows where the pre-tokenizer cut.
struct Vocab {
    std::vector<std::string> tokens;  // byte-level strings, index = id
    std::vector<std::pair<std::string, std::string>> merges;
};

// The 256 byte tokens alone (token id = byte value), no merges.
Vocab byte_vocab() {
    Vocab v;
    for (int b = 0; b < 256; ++b) v.tokens.push_back(byte_level::encode(std::string(1, char(b))));
    return v;
}

Vocab chain_vocab(const Pieces& pieces) {
    Vocab v = byte_vocab();
    auto has = [&](const std::string& t) {
        return std::find(v.tokens.begin(), v.tokens.end(), t) != v.tokens.end();
    };
    for (const std::string& p : pieces)
        for (std::size_t k = 2; k <= p.size(); ++k) {
            std::string whole = byte_level::encode(p.substr(0, k));
            if (has(whole)) continue;
            v.tokens.push_back(whole);
            v.merges.emplace_back(byte_level::encode(p.substr(0, k - 1)),
                                  byte_level::encode(p.substr(k - 1, 1)));
        }
    return v;
}

Json tokenizer_json(const Vocab& v, const Json& pre_tokenizer, bool ignore_merges = false) {
    Json vocab = Json::object();
    for (std::size_t id = 0; id < v.tokens.size(); ++id) vocab[v.tokens[id]] = id;
    Json merges = Json::array();
    for (const auto& [l, r] : v.merges) merges.push_back(Json::array({l, r}));
    return Json{
        {"model",
         {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"ignore_merges", ignore_merges}}},
        {"pre_tokenizer", pre_tokenizer},
        {"decoder", {{"type", "ByteLevel"}}}};
}

// The 256 byte tokens and each of `pieces` as one token, no merges, ignore_merges on: a pre-token
// that is one of `pieces` becomes its token, any other one its single bytes. The pre-tokenizer
// tests use it, so any other cut shows.
Json pieces_json(const Pieces& pieces, const Json& pre_tokenizer) {
    Vocab v = byte_vocab();
    for (const std::string& p : pieces)
        if (p.size() > 1) v.tokens.push_back(byte_level::encode(p));
    return tokenizer_json(v, pre_tokenizer, true);
}

Tokenizer load(const Json& j, const Json& config = nullptr) {
    return Tokenizer::from_json(j.dump(), config.is_null() ? "" : config.dump(),
                                "test/tokenizer.json");
}

Pieces split(const Tokenizer& tok, std::string_view text) {
    Pieces out;
    for (int32_t id : tok.encode(text)) out.push_back(tok.token_bytes(id));
    return out;
}

Json byte_level_pre(bool add_prefix_space, bool use_regex) {
    return Json{
        {"type", "ByteLevel"}, {"add_prefix_space", add_prefix_space}, {"use_regex", use_regex}};
}

// GPT-2's pattern: case-sensitive contractions, a digit run is one piece with its space.
const char* kText1 = "I'm here, it's 2024!!  ok'RE\n\n x";
const char* kText2 = "He'LL say: x=10;\r\n\tdone  ";
const Pieces kGpt2Text1{"I",  "'m", " here", ",", " it", "'s",   " 2024",
                        "!!", " ",  " ok",   "'", "RE",  "\n\n", " x"};
const Pieces kGpt2Text2{"He", "'", "LL",   " say", ":",    " x", "=",
                        "10", ";", "\r\n", "\t",   "done", "  "};
// Qwen2's: case-insensitive contractions, one digit a piece, punctuation takes the newlines after
// it, a letter run takes one non-letter before it.
const Pieces kQwen2Text1{"I", "'m", " here", ",", " it", "'s",  " ",    "2", "0",
                         "2", "4",  "!!",    " ", " ok", "'RE", "\n\n", " x"};
const Pieces kQwen2Text2{"He", "'LL", " say", ":", " x", "=", "1", "0", ";\r\n", "\tdone", "  "};

Pieces concat(std::initializer_list<Pieces> lists) {
    Pieces out;
    for (const Pieces& l : lists) out.insert(out.end(), l.begin(), l.end());
    return out;
}

TEST(TokenizerPreTokenizer, ByteLevelRegexIsGpt2s) {
    Tokenizer tok =
        load(pieces_json(concat({kGpt2Text1, kGpt2Text2}), byte_level_pre(false, true)));
    EXPECT_EQ(split(tok, kText1), kGpt2Text1);
    EXPECT_EQ(split(tok, kText2), kGpt2Text2);
    // No normalizer here: a combining mark is not a letter to \p{L}.
    Tokenizer marks = load(pieces_json({"e", "\xCC\x81", "t\xC3\xA9", " _", " \xD9\xA3\xD9\xA4"},
                                       byte_level_pre(false, true)));
    EXPECT_EQ(split(marks, "e\xCC\x81t\xC3\xA9 _ \xD9\xA3\xD9\xA4"),
              (Pieces{"e", "\xCC\x81", "t\xC3\xA9", " _",
                      " \xD9\xA3\xD9\xA4"}));  // Arabic-Indic digits are \p{N}
}

// ByteLevel(add_prefix_space) puts a space before a piece that does not start with one; without
// use_regex the whole text is one piece.
TEST(TokenizerPreTokenizer, ByteLevelPrefixSpace) {
    Tokenizer tok =
        load(pieces_json({" hello", " world", " hi", "hello"}, byte_level_pre(true, true)));
    EXPECT_EQ(split(tok, "hello world"), (Pieces{" hello", " world"}));
    EXPECT_EQ(split(tok, " hi"), (Pieces{" hi"}));
    EXPECT_EQ(split(tok, "hello!hello"),
              (Pieces{" hello", "!", "hello"}));  // only the text's first piece
    // use_regex defaults to true (HF).
    Tokenizer by_default = load(pieces_json({"a b", " b"}, Json{{"type", "ByteLevel"}}));
    EXPECT_EQ(split(by_default, "a b"), (Pieces{"a", " b"}));
    Tokenizer whole = load(pieces_json({" a b"}, byte_level_pre(true, false)));
    EXPECT_EQ(split(whole, "a b"), (Pieces{" a b"}));
    Tokenizer none = load(pieces_json({"a b"}, byte_level_pre(false, false)));
    EXPECT_EQ(split(none, "a b"), (Pieces{"a b"}));
    // In a Sequence each step works on every piece the step before made.
    Json seq{{"type", "Sequence"},
             {"pretokenizers",
              Json::array(
                  {Json{{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", "Removed"}},
                   byte_level_pre(true, false)})}};
    Tokenizer each = load(pieces_json({" a", " b"}, seq));
    EXPECT_EQ(split(each, "a-b"), (Pieces{" a", " b"}));
}

// HF tokenizers' SplitDelimiterBehavior, on the example its documentation gives.
TEST(TokenizerPreTokenizer, SplitBehaviors) {
    const Pieces pieces{"the",    "final",  "countdown",  "the-",
                        "final-", "-final", "-countdown", "--"};
    auto with = [&](const char* behavior) {
        return load(pieces_json(
            pieces,
            Json{{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", behavior}}));
    };
    const char* text = "the-final--countdown";
    EXPECT_EQ(split(with("Removed"), text), (Pieces{"the", "final", "countdown"}));
    EXPECT_EQ(split(with("Isolated"), text), (Pieces{"the", "-", "final", "-", "-", "countdown"}));
    EXPECT_EQ(split(with("MergedWithPrevious"), text),
              (Pieces{"the-", "final-", "-", "countdown"}));
    EXPECT_EQ(split(with("MergedWithNext"), text), (Pieces{"the", "-final", "-", "-countdown"}));
    EXPECT_EQ(split(with("Contiguous"), text), (Pieces{"the", "-", "final", "--", "countdown"}));
    EXPECT_NE(
        test::error_of([&] { with("Shuffled"); }).find("unsupported Split behavior \"Shuffled\""),
        std::string::npos);
    Json inverted{{"type", "Split"},
                  {"pattern", {{"String", "-"}}},
                  {"behavior", "Removed"},
                  {"invert", true}};
    EXPECT_NE(test::error_of([&] {
                  load(pieces_json(pieces, inverted));
              }).find("invert=true is not supported"),
              std::string::npos);
}

// A String pattern is literal text, a Regex pattern is a regex.
TEST(TokenizerPreTokenizer, SplitStringIsLiteral) {
    Tokenizer literal = load(pieces_json(
        {}, Json{{"type", "Split"}, {"pattern", {{"String", "."}}}, {"behavior", "Removed"}}));
    EXPECT_EQ(split(literal, "a.b"), (Pieces{"a", "b"}));
    Tokenizer regex = load(pieces_json(
        {}, Json{{"type", "Split"}, {"pattern", {{"Regex", "."}}}, {"behavior", "Removed"}}));
    EXPECT_EQ(split(regex, "a.b"), Pieces{});
}

// The GGUF constructor picks the regex llama.cpp names in tokenizer.ggml.pre.
Tokenizer from_vocab(const Vocab& v, const std::string& pre) {
    std::vector<std::string> merges;
    for (const auto& [l, r] : v.merges) merges.push_back(l + " " + r);
    return Tokenizer::from_vocab(v.tokens, merges, {}, pre);
}

// Each two neighbouring pieces joined (decoys, ranked first), then each expected piece: a wrong
// cut shows as a decoy token or as pieces that no longer merge whole.
Vocab with_decoys(const std::vector<Pieces>& texts) {
    Pieces all;
    for (const Pieces& t : texts)
        for (std::size_t i = 0; i + 1 < t.size(); ++i) all.push_back(t[i] + t[i + 1]);
    for (const Pieces& t : texts) all.insert(all.end(), t.begin(), t.end());
    return chain_vocab(all);
}

TEST(TokenizerPreTokenizer, GgufRegexes) {
    // "x" + U+0301 has no precomposed form, so NFC keeps the mark; Qwen3.5 keeps it with the
    // letters.
    const char* marks = "x\xCC\x81y \xD9\xA3\xD9\xA4";
    const Pieces qwen2_marks{"x", "\xCC\x81y", " ", "\xD9\xA3", "\xD9\xA4"};
    const Pieces qwen35_marks{"x\xCC\x81y", " ", "\xD9\xA3", "\xD9\xA4"};
    // Contractions match in any case, and only the contraction: "'LL" then "ama".
    const char* contraction = "x'LLama 'Sup";
    const Pieces qwen_contraction{"x", "'LL", "ama", " '", "Sup"};
    const Pieces gpt2_contraction{"x", "'", "LLama", " '", "Sup"};
    // Qwen3.5's first: its piece's merges must rank before those of the shorter "\xCC\x81y".
    Vocab qwen =
        with_decoys({qwen35_marks, qwen2_marks, kQwen2Text1, kQwen2Text2, qwen_contraction});
    for (const char* pre : {"qwen2", "qwen3", "qwen35"}) {
        Tokenizer tok = from_vocab(qwen, pre);
        EXPECT_EQ(split(tok, kText1), kQwen2Text1) << pre;
        EXPECT_EQ(split(tok, kText2), kQwen2Text2) << pre;
        EXPECT_EQ(split(tok, contraction), qwen_contraction) << pre;
        EXPECT_EQ(split(tok, marks), std::string(pre) == "qwen35" ? qwen35_marks : qwen2_marks)
            << pre;
    }
    Vocab gpt2 = with_decoys({kGpt2Text1, kGpt2Text2, gpt2_contraction});
    for (const char* pre : {"gpt2", "default"}) {
        Tokenizer tok = from_vocab(gpt2, pre);
        EXPECT_EQ(split(tok, kText1), kGpt2Text1) << pre;
        EXPECT_EQ(split(tok, kText2), kGpt2Text2) << pre;
        EXPECT_EQ(split(tok, contraction), gpt2_contraction) << pre;
    }
}

// BPE applies the lowest-ranked merge first and, among equal ones, the leftmost; pieces past 48
// bytes take another code path, so each rule is checked on a short and on a long piece.
Vocab plain_vocab(const std::vector<std::string>& extra,
                  const std::vector<std::pair<std::string, std::string>>& merges) {
    Vocab v = byte_vocab();
    for (const std::string& t : extra) v.tokens.push_back(t);
    v.merges = merges;
    return v;
}

std::string repeat(const std::string& s, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += s;
    return out;
}

Pieces repeat(const Pieces& p, int n) {
    Pieces out;
    for (int i = 0; i < n; ++i) out.insert(out.end(), p.begin(), p.end());
    return out;
}

TEST(TokenizerBpe, LowestRankFirstLeftmostOnATie) {
    Tokenizer aa = load(tokenizer_json(plain_vocab({"aa"}, {{"a", "a"}}), nullptr));
    EXPECT_EQ(split(aa, "aaa"), (Pieces{"aa", "a"}));
    EXPECT_EQ(split(aa, repeat("a", 49)), concat({repeat(Pieces{"aa"}, 24), Pieces{"a"}}));

    Tokenizer bc_first =
        load(tokenizer_json(plain_vocab({"ab", "bc"}, {{"b", "c"}, {"a", "b"}}), nullptr));
    EXPECT_EQ(split(bc_first, "abc"), (Pieces{"a", "bc"}));
    EXPECT_EQ(split(bc_first, repeat("abc", 20)), repeat(Pieces{"a", "bc"}, 20));
    Tokenizer ab_first =
        load(tokenizer_json(plain_vocab({"ab", "bc"}, {{"a", "b"}, {"b", "c"}}), nullptr));
    EXPECT_EQ(split(ab_first, "abc"), (Pieces{"ab", "c"}));
    EXPECT_EQ(split(ab_first, repeat("abc", 20)), repeat(Pieces{"ab", "c"}, 20));
}

// After a merge, the pairs it forms with its left and its right neighbour become candidates.
TEST(TokenizerBpe, NewPairsWithBothNeighbours) {
    Tokenizer tok = load(tokenizer_json(
        plain_vocab({"ab", "xab", "cd", "cde"}, {{"a", "b"}, {"x", "ab"}, {"c", "d"}, {"cd", "e"}}),
        nullptr));
    EXPECT_EQ(split(tok, "xabcde"), (Pieces{"xab", "cde"}));
    EXPECT_EQ(split(tok, repeat("xabcde", 10)), repeat(Pieces{"xab", "cde"}, 10));
}

// A piece given a prefix space is not the same piece without it (the per-call piece cache must
// tell them apart).
TEST(TokenizerBpe, PrefixSpaceIsPartOfThePiece) {
    Tokenizer tok =
        load(tokenizer_json(chain_vocab({" hello", "hello"}), byte_level_pre(true, true)));
    EXPECT_EQ(split(tok, "hello!hello"), (Pieces{" hello", "!", "hello"}));
    EXPECT_EQ(split(tok, "hello!hello"), (Pieces{" hello", "!", "hello"}));  // with a warm cache
}

// A pair listed twice keeps the rank its format's own reader gives it: Hugging Face tokenizers
// collects tokenizer.json's merges into a hash map (the later entry wins), llama.cpp emplaces a
// GGUF's into a std::map (the first wins). With "a b" at ranks 0 and 2 and "b c" at 1, "abc" is
// "a" "bc" from tokenizer.json and "ab" "c" from a GGUF.
TEST(TokenizerBpe, RepeatedMergeKeepsTheRankItsFormatsReaderGives) {
    const Vocab v = plain_vocab({"ab", "bc"}, {{"a", "b"}, {"b", "c"}, {"a", "b"}});
    EXPECT_EQ(split(load(tokenizer_json(v, nullptr)), "abc"), (Pieces{"a", "bc"}));
    const Tokenizer gguf = Tokenizer::from_vocab(v.tokens, {"a b", "b c", "a b"}, {}, "qwen2");
    EXPECT_EQ(split(gguf, "abc"), (Pieces{"ab", "c"}));
}

// ignore_merges: a pre-token that is itself in the vocab is that token, whatever the merges say.
TEST(TokenizerBpe, IgnoreMerges) {
    Vocab v = plain_vocab({"ab", "abc"}, {{"a", "b"}});
    EXPECT_EQ(split(load(tokenizer_json(v, nullptr, false)), "abc"), (Pieces{"ab", "c"}));
    EXPECT_EQ(split(load(tokenizer_json(v, nullptr, true)), "abc"), (Pieces{"abc"}));
    EXPECT_EQ(split(load(tokenizer_json(v, nullptr, true)), "abd"), (Pieces{"ab", "d"}));
}

// The Unicode normal forms (UAX #15): U+FB01 "fi" ligature and superscript two are compatibility
// characters; é composes under C and decomposes under D.
TEST(TokenizerNormalizer, NormalForms) {
    auto apply = [](const Json& spec, const std::string& text) {
        return Normalizer::from_json(nlohmann::json::parse(spec.dump()), "test").apply(text);
    };
    const std::string text =
        "\xEF\xAC\x81\xC2\xB2 e\xCC\x81 \xC3\xA9";  // "ﬁ² é é" (first é decomposed)
    EXPECT_EQ(apply(Json{{"type", "NFC"}}, text), "\xEF\xAC\x81\xC2\xB2 \xC3\xA9 \xC3\xA9");
    EXPECT_EQ(apply(Json{{"type", "NFD"}}, text), "\xEF\xAC\x81\xC2\xB2 e\xCC\x81 e\xCC\x81");
    EXPECT_EQ(apply(Json{{"type", "NFKC"}}, text), "fi2 \xC3\xA9 \xC3\xA9");
    EXPECT_EQ(apply(Json{{"type", "NFKD"}}, text), "fi2 e\xCC\x81 e\xCC\x81");
    Json seq{{"type", "Sequence"},
             {"normalizers", Json::array({Json{{"type", "NFKD"}}, Json{{"type", "NFC"}}})}};
    EXPECT_EQ(apply(seq, text), "fi2 \xC3\xA9 \xC3\xA9");
    EXPECT_NE(test::error_of([&] {
                  apply(Json{{"type", "Lowercase"}}, text);
              }).find("unsupported normalizer type \"Lowercase\""),
              std::string::npos);
}

Json with_added(Json j, const Json& added) {
    j["added_tokens"] = added;
    return j;
}

// Added tokens: the longest one wins where several start at the same place; special ones match
// only with parse_special, others always; "special" defaults to false.
TEST(TokenizerAddedTokens, LongestMatchAndSpecialFlag) {
    Vocab v = chain_vocab({"x"});
    int32_t n = static_cast<int32_t>(v.tokens.size());
    Json added = Json::array({Json{{"id", n}, {"content", "<a>"}, {"special", true}},
                              Json{{"id", n + 1}, {"content", "<a>b"}, {"special", false}},
                              Json{{"id", n + 2}, {"content", "<a>bc"}, {"special", true}},
                              Json{{"id", n + 3}, {"content", "<t>"}}});
    Tokenizer tok = load(with_added(tokenizer_json(v, nullptr), added));
    EXPECT_EQ(tok.vocab_size(), n + 4);
    EXPECT_EQ(tok.encode("x<a>bcx"), (std::vector<int32_t>{'x', n + 2, 'x'}));
    EXPECT_EQ(tok.encode("x<a>bx"), (std::vector<int32_t>{'x', n + 1, 'x'}));
    EXPECT_EQ(tok.encode("<a>x"), (std::vector<int32_t>{n, 'x'}));
    // parse_special off: the special ones are text, the non-special one still matches.
    EXPECT_EQ(tok.encode("<a>bc", false), (std::vector<int32_t>{n + 1, 'c'}));
    EXPECT_EQ(tok.encode("<a>", false), (std::vector<int32_t>{'<', 'a', '>'}));
    EXPECT_FALSE(tok.is_special(n + 3));
    EXPECT_TRUE(tok.is_added(n + 3));
    EXPECT_TRUE(tok.is_special(n + 2));
    EXPECT_EQ(tok.encode("<t>", false), (std::vector<int32_t>{n + 3}));
    // Decoding keeps the order of bytes and added tokens; a character cut by an added token is
    // U+FFFD, and skip_special drops only special ones.
    EXPECT_EQ(tok.decode(std::vector<int32_t>{'x', n, 'x', n + 3}), "x<a>x<t>");
    EXPECT_EQ(tok.decode(std::vector<int32_t>{0xC3, n + 3, 0xA9}), "\xEF\xBF\xBD<t>\xEF\xBF\xBD");
    EXPECT_EQ(tok.decode(std::vector<int32_t>{'x', n, n + 3}, true), "x<t>");
    StreamDecoder sd(tok);
    EXPECT_EQ(sd.push('x'), "x");
    EXPECT_EQ(sd.push(0xC3), "");
    EXPECT_EQ(sd.push(n + 3), "\xEF\xBF\xBD<t>");
    EXPECT_EQ(sd.push(0xC3), "");
    EXPECT_EQ(sd.push(0xA9), "\xC3\xA9");
    EXPECT_EQ(sd.push(0xFF), "\xEF\xBF\xBD");  // a byte no character starts with needs no wait
}

// Invalid UTF-8 in the text is encoded as its U+FFFD repair (one per maximal subpart).
TEST(TokenizerBpe, InvalidUtf8IsEncodedAsReplacement) {
    Tokenizer tok = load(pieces_json({}, nullptr));
    EXPECT_EQ(tok.encode("a\xFF"
                         "b\xE4\xB8"),
              tok.encode("a\xEF\xBF\xBD"
                         "b\xEF\xBF\xBD"));
}

// A vocab token with a character outside the byte alphabet decodes to its own UTF-8 text (HF's
// ByteLevel decoder keeps such a token as it is).
TEST(TokenizerBpe, TokenOutsideByteAlphabetIsItsText) {
    Vocab v = chain_vocab({});
    v.tokens.push_back("\xE2\x82\xAC");           // U+20AC, not in the byte alphabet
    v.tokens.push_back("a\xC4\xA0\xE2\x82\xAC");  // "aĠ€": byte-level until the euro sign
    Tokenizer tok = load(tokenizer_json(v, nullptr));
    EXPECT_EQ(tok.token_bytes(256), "\xE2\x82\xAC");
    EXPECT_EQ(tok.token_bytes(257), "a\xC4\xA0\xE2\x82\xAC");
    EXPECT_EQ(tok.decode(std::vector<int32_t>{'x', 256}), "x\xE2\x82\xAC");
}

TEST(TokenizerLoad, RefusesWhatItCannotFollow) {
    Json base = tokenizer_json(chain_vocab({}), nullptr);
    auto error = [](const Json& j) { return test::error_of([&] { load(j); }); };
    Json j = base;
    j["model"]["byte_fallback"] = true;
    EXPECT_NE(error(j).find("byte_fallback is not supported"), std::string::npos);
    j = base;
    j["model"]["vocab"]["zz"] = -1;
    EXPECT_NE(error(j).find("out of range"), std::string::npos);
    j = base;
    j["model"]["merges"] = Json::array({"a b c"});
    EXPECT_NE(error(j).find("not two tokens separated by one space"), std::string::npos);
    for (const char* flag : {"lstrip", "rstrip", "single_word"}) {
        j = with_added(base, Json::array({Json{{"id", 300}, {"content", "<x>"}, {flag, true}}}));
        EXPECT_NE(error(j).find("lstrip/rstrip/single_word, which is not supported"),
                  std::string::npos)
            << flag;
    }
    j = base;
    j["decoder"] = Json{{"type", "WordPiece"}};
    EXPECT_NE(error(j).find("unsupported decoder"), std::string::npos);
    j["decoder"] =
        Json{{"type", "Sequence"}, {"decoders", Json::array({Json{{"type", "ByteLevel"}}})}};
    EXPECT_EQ(error(j), "(no error)");
    j["post_processor"] = Json{{"type", "TemplateProcessing"}};
    EXPECT_NE(error(j).find("unsupported post_processor type TemplateProcessing"),
              std::string::npos);
    j["post_processor"] =
        Json{{"type", "Sequence"}, {"processors", Json::array({Json{{"type", "ByteLevel"}}})}};
    EXPECT_EQ(error(j), "(no error)");
    j["pre_tokenizer"] = Json{{"type", "Whitespace"}};
    EXPECT_NE(error(j).find("unsupported pre_tokenizer type \"Whitespace\""), std::string::npos);
}

// tokenizer_config.json: special tokens as strings or {"content": ...} objects; add_bos_token /
// add_eos_token add them only when encode is asked to add special tokens.
TEST(TokenizerLoad, ConfigSpecialTokens) {
    Vocab v = chain_vocab({});
    int32_t n = static_cast<int32_t>(v.tokens.size());
    Json j =
        with_added(tokenizer_json(v, nullptr),
                   Json::array({Json{{"id", n}, {"content", "<s>"}, {"special", true}},
                                Json{{"id", n + 1}, {"content", "</s>"}, {"special", true}},
                                Json{{"id", n + 2}, {"content", "<pad>"}, {"special", true}}}));
    Json config{{"bos_token", {{"content", "<s>"}, {"lstrip", false}}},
                {"eos_token", "</s>"},
                {"pad_token", {{"content", "<pad>"}}},
                {"add_bos_token", true},
                {"add_eos_token", true}};
    Tokenizer tok = load(j, config);
    EXPECT_EQ(tok.bos_id(), n);
    EXPECT_EQ(tok.bos_token(), "<s>");
    EXPECT_EQ(tok.eos_id(), n + 1);
    EXPECT_EQ(tok.pad_id(), n + 2);
    EXPECT_TRUE(tok.is_eos(n + 1));
    EXPECT_EQ(tok.encode("a", true, true), (std::vector<int32_t>{n, 'a', n + 1}));
    EXPECT_EQ(tok.encode("a", true, false), (std::vector<int32_t>{'a'}));
    config["add_bos_token"] = false;
    EXPECT_EQ(load(j, config).encode("a", true, true), (std::vector<int32_t>{'a', n + 1}));
    config["add_eos_token"] = false;
    config["add_bos_token"] = true;
    EXPECT_EQ(load(j, config).encode("a", true, true), (std::vector<int32_t>{n, 'a'}));

    // Without add_bos_token / add_eos_token nothing is added (tokenizer.json's ByteLevel
    // post-processor adds no tokens).
    EXPECT_EQ(load(j, Json{{"bos_token", "<s>"}, {"eos_token", "</s>"}}).encode("a", true, true),
              (std::vector<int32_t>{'a'}));
    config["chat_template"] = nullptr;  // as transformers saves "no template"
    EXPECT_EQ(load(j, config).chat_template(), "");

    // ChatTemplate::for_tokenizer passes both to the template.
    config["chat_template"] = "{{ bos_token }}|{{ eos_token }}|{{ enable_thinking is defined }}";
    Tokenizer with_template = load(j, config);
    ChatTemplate tpl = ChatTemplate::for_tokenizer(with_template);
    EXPECT_EQ(tpl.render(Json::array(), nullptr, false), "<s>|</s>|False");
    EXPECT_EQ(tpl.render(Json::array(), nullptr, false, false), "<s>|</s>|True");
    // render's extra variables are visible and win over set_variable's.
    ChatTemplate vars("{{ a }}|{{ b }}");
    vars.set_variable("a", "set");
    vars.set_variable("b", "set");
    EXPECT_EQ(vars.render(Json::array(), nullptr, false, std::nullopt, Json{{"b", "extra"}}),
              "set|extra");
}

// generation_config.json's eos_token_id (a number or a list) adds stop ids beside the config's.
TEST(TokenizerLoad, GenerationConfigEosIds) {
    Vocab v = chain_vocab({});
    int32_t n = static_cast<int32_t>(v.tokens.size());
    Json j = with_added(tokenizer_json(v, nullptr),
                        Json::array({Json{{"id", n}, {"content", "<e1>"}, {"special", true}},
                                     Json{{"id", n + 1}, {"content", "<e2>"}, {"special", true}},
                                     Json{{"id", n + 2}, {"content", "<e3>"}, {"special", true}}}));
    std::string dir = test::scratch_dir() + "/gen";
    ASSERT_EQ(std::system(("mkdir -p '" + dir + "'").c_str()), 0);
    auto write = [&](const std::string& name, const std::string& text) {
        std::ofstream(dir + "/" + name) << text;
    };
    write("tokenizer.json", j.dump());
    write("tokenizer_config.json", Json{{"eos_token", "<e1>"}}.dump());
    write("generation_config.json",
          R"({"eos_token_id": [)" + std::to_string(n) + ", " + std::to_string(n + 2) + "]}");
    Tokenizer tok = Tokenizer::load(dir);
    EXPECT_EQ(tok.eos_ids(), (std::vector<int32_t>{n, n + 2}));
    write("generation_config.json", R"({"eos_token_id": )" + std::to_string(n + 1) + "}");
    EXPECT_EQ(Tokenizer::load(dir).eos_ids(), (std::vector<int32_t>{n, n + 1}));
    // Given the tokenizer.json path, the other files come from its directory.
    EXPECT_EQ(Tokenizer::load(dir + "/tokenizer.json").eos_ids(), (std::vector<int32_t>{n, n + 1}));
}

// GGUF token types: Control is a special added token, UserDefined a non-special added token.
TEST(TokenizerLoad, GgufTokenTypes) {
    Vocab v = chain_vocab({});
    std::vector<std::string> tokens = v.tokens;
    tokens.push_back("<ctl>");
    tokens.push_back("<usr>");
    std::vector<int32_t> types(tokens.size(), static_cast<int32_t>(GgufTokenType::Normal));
    types[256] = static_cast<int32_t>(GgufTokenType::Control);
    types[257] = static_cast<int32_t>(GgufTokenType::UserDefined);
    VocabOptions o;
    o.bos_id = 256;
    o.eos_id = 257;
    o.extra_eos_ids = {256};
    o.add_bos = true;
    Tokenizer tok = Tokenizer::from_vocab(tokens, {}, types, "qwen2", o);
    EXPECT_TRUE(tok.is_special(256));
    EXPECT_FALSE(tok.is_special(257));
    EXPECT_TRUE(tok.is_added(257));
    EXPECT_EQ(tok.encode("<usr><ctl>", false),
              (std::vector<int32_t>{257, '<', 'c', 't', 'l', '>'}));
    EXPECT_EQ(tok.bos_token(), "<ctl>");
    EXPECT_EQ(tok.eos_token(), "<usr>");
    EXPECT_EQ(tok.eos_ids(), (std::vector<int32_t>{257, 256}));
    EXPECT_EQ(tok.encode("a", true, true), (std::vector<int32_t>{256, 'a'}));
    types.pop_back();
    EXPECT_NE(test::error_of([&] {
                  Tokenizer::from_vocab(tokens, {}, types, "qwen2");
              }).find("257 token types for 258 tokens"),
              std::string::npos);
    o.eos_id = 258;
    types.push_back(0);
    EXPECT_NE(test::error_of([&] {
                  Tokenizer::from_vocab(tokens, {}, types, "qwen2", o);
              }).find("eos id 258 is out of range"),
              std::string::npos);
}

}  // namespace
}  // namespace nextn
