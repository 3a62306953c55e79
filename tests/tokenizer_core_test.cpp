// Tokenizer tests that run on a fresh clone: UTF-8 repair rules, the byte-level alphabet, the
// tiny fixture tokenizer against its golden ids (from transformers.js and llama.cpp), the GGUF
// constructor on the same vocabulary, and rejection of malformed tokenizer files.
#include <gtest/gtest.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/mapped_file.h"
#include "test_paths.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace nextn {
namespace {

using Json = nlohmann::ordered_json;
const std::string kFffd = "\xEF\xBF\xBD";

std::string tiny_dir() { return test::data_dir() + "/tokenizer/dense-tiny"; }

std::string repeat(const std::string& s, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += s;
    return out;
}

// Examples stated in the fixture README (maximal subparts, Unicode table 3-7).
TEST(TokenizerUtf8, MaximalSubpartReplacement) {
    EXPECT_EQ(utf8::lossy("\xF0\x9F\x98"), kFffd);                 // truncated 4-byte: one
    EXPECT_EQ(utf8::lossy("\x80\x80\xBF"), repeat(kFffd, 3));      // lone continuations: one each
    EXPECT_EQ(utf8::lossy("\xE0\x80\xAF"), repeat(kFffd, 3));      // overlong: E0 needs A0..BF next
    EXPECT_EQ(utf8::lossy("\xED\xA0\x80"), repeat(kFffd, 3));      // surrogate
    EXPECT_EQ(utf8::lossy("\xF4\x90\x80\x80"), repeat(kFffd, 4));  // above U+10FFFF
    EXPECT_EQ(utf8::lossy("a\xC3\xA9z"), "a\xC3\xA9z");
    EXPECT_EQ(utf8::lossy("\xC3(" ), kFffd + "(");
    EXPECT_EQ(utf8::lossy("\xE4\xB8" "a"), kFffd + "a");
    EXPECT_EQ(utf8::lossy("\xF0\x8F\xBF\xBF"), repeat(kFffd, 4));  // overlong: F0 needs 90..BF next
    EXPECT_EQ(utf8::lossy("\xF0\x90\x80\x80"), "\xF0\x90\x80\x80");  // U+10000, the first F0 one
    EXPECT_TRUE(utf8::is_valid("\xF0\x9F\x98\x80"));
    EXPECT_FALSE(utf8::is_valid("\xC0\x80"));
    EXPECT_FALSE(utf8::is_valid("a\xE4\xB8"));  // truncated at the end
    EXPECT_FALSE(
        utf8::is_valid("\xE4\xB8"
                       "a"));
}

// UTF-8 encoding at each length boundary (RFC 3629), and decoding back.
TEST(TokenizerUtf8, AppendAndNextAtLengthBoundaries) {
    const std::vector<std::pair<char32_t, std::string>> cases{{0x7F, "\x7F"},
                                                              {0x80, "\xC2\x80"},
                                                              {0x7FF, "\xDF\xBF"},
                                                              {0x800, "\xE0\xA0\x80"},
                                                              {0xFFFF, "\xEF\xBF\xBF"},
                                                              {0x10000, "\xF0\x90\x80\x80"},
                                                              {0x20000, "\xF0\xA0\x80\x80"},
                                                              {0x10FFFF, "\xF4\x8F\xBF\xBF"}};
    for (const auto& [cp, bytes] : cases) {
        std::string out;
        utf8::append(out, cp);
        EXPECT_EQ(out, bytes) << std::hex << uint32_t(cp);
        std::size_t pos = 0;
        EXPECT_EQ(utf8::next(bytes, pos), cp) << std::hex << uint32_t(cp);
        EXPECT_EQ(pos, bytes.size());
    }
}

TEST(TokenizerUtf8, StreamingKeepsUnfinishedCharacter) {
    std::string out;
    EXPECT_EQ(utf8::append_lossy(out, "ab\xE4\xB8", false), 2u);
    EXPECT_EQ(out, "ab");
    out.clear();
    EXPECT_EQ(utf8::append_lossy(out, "\xE4\xB8", true), 2u);
    EXPECT_EQ(out, kFffd);
}

// GPT-2 byte alphabet: printable Latin-1 stands for itself, others map in order from U+0100.
TEST(TokenizerByteLevel, Alphabet) {
    EXPECT_EQ(byte_level::char_for_byte('A'), U'A');
    EXPECT_EQ(byte_level::char_for_byte(0x00), U'\u0100');
    EXPECT_EQ(byte_level::char_for_byte(' '), U'\u0120');   // 'Ġ': 0x00..0x20 are the first 33
    EXPECT_EQ(byte_level::char_for_byte('\n'), U'\u010A');  // 'Ċ'
    EXPECT_EQ(byte_level::char_for_byte(0xAD), U'\u0143');  // soft hyphen is the last extra one
    for (int b = 0; b < 256; ++b) EXPECT_EQ(byte_level::byte_for_char(byte_level::char_for_byte(b)), b);
    std::string back;
    ASSERT_TRUE(byte_level::decode(byte_level::encode("h\xC3\xA9 \n"), back));
    EXPECT_EQ(back, "h\xC3\xA9 \n");
}

TEST(TokenizerNormalizer, Nfc) {
    EXPECT_EQ(nfc("e\xCC\x81"), "\xC3\xA9");  // e + U+0301 -> U+00E9
    EXPECT_EQ(nfc("abc"), "abc");
}

TEST(TokenizerTiny, GoldenIds) {
    Tokenizer tok = Tokenizer::load(tiny_dir());
    Json golden = Json::parse(read_text_file(tiny_dir() + "/tokenize.json"));
    ASSERT_FALSE(golden["texts"].empty());
    for (const auto& [text, ids] : golden["texts"].items()) {
        EXPECT_EQ(tok.encode(text), ids.get<std::vector<int32_t>>()) << text;
        EXPECT_EQ(tok.decode(ids.get<std::vector<int32_t>>()), text) << text;
    }
    EXPECT_EQ(tok.vocab_size(), 1024);
    EXPECT_EQ(tok.eos_id(), 1023);
    EXPECT_EQ(tok.eos_token(), "<|im_end|>");
    EXPECT_EQ(tok.pad_id(), 1021);
    EXPECT_EQ(tok.bos_id(), -1);
    EXPECT_TRUE(tok.is_special(1022));
    EXPECT_FALSE(tok.is_special(100));
    EXPECT_EQ(tok.token_to_id("<|im_start|>"), 1022);
    EXPECT_EQ(tok.id_to_token(1022), "<|im_start|>");
    EXPECT_EQ(tok.token_bytes(10), "\n");
    EXPECT_EQ(tok.id_to_token(10), "\xC4\x8A");  // 'Ċ'
    EXPECT_FALSE(tok.chat_template().empty());
}

TEST(TokenizerTiny, LoadFromJsonPath) {
    Tokenizer tok = Tokenizer::load(tiny_dir() + "/tokenizer.json");
    EXPECT_EQ(tok.encode("<|im_start|>user\nHi<|im_end|>\n"),
              (std::vector<int32_t>{1022, 117, 115, 260, 10, 72, 105, 1023, 10}));
}

TEST(TokenizerTiny, ParseSpecialOffTreatsMarkersAsText) {
    Tokenizer tok = Tokenizer::load(tiny_dir());
    std::vector<int32_t> ids = tok.encode("<|im_end|>", false);
    for (int32_t id : ids) EXPECT_LT(id, 1021);
    EXPECT_EQ(tok.decode(ids), "<|im_end|>");
}

TEST(TokenizerTiny, SkipSpecialAndStreaming) {
    Tokenizer tok = Tokenizer::load(tiny_dir());
    std::vector<int32_t> ids{1022, 117, 115, 260, 10, 72, 105, 1023, 10};
    EXPECT_EQ(tok.decode(ids, true), "user\nHi\n");
    // "你好 🚀" as single bytes: the stream must hold bytes until each character is complete.
    std::vector<int32_t> bytes{228, 189, 160, 229, 165, 189, 32, 240, 159, 154, 128};
    StreamDecoder sd(tok);
    std::string streamed;
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        std::string part = sd.push(bytes[i]);
        EXPECT_TRUE(utf8::is_valid(part));
        if (i == 0 || i == 1) {
            EXPECT_EQ(part, "");
        }
        streamed += part;
    }
    streamed += sd.flush();
    EXPECT_EQ(streamed, "\xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x9A\x80");
    EXPECT_EQ(streamed, tok.decode(bytes));
}

// The GGUF path on the same vocabulary must give the same ids (the golden note says llama.cpp's
// qwen35 pre-tokenizer on the GGUF agrees with tokenizer.json).
TEST(TokenizerTiny, FromVocabMatchesGolden) {
    Json tj = Json::parse(read_text_file(tiny_dir() + "/tokenizer.json"));
    std::vector<std::string> tokens(1024);
    std::vector<int32_t> types(1024, static_cast<int32_t>(GgufTokenType::Normal));
    for (const auto& [s, id] : tj["model"]["vocab"].items()) tokens[id.get<int>()] = s;
    for (const auto& t : tj["added_tokens"]) {
        tokens[t["id"].get<int>()] = t["content"].get<std::string>();
        types[t["id"].get<int>()] = static_cast<int32_t>(GgufTokenType::Control);
    }
    std::vector<std::string> merges;
    for (const auto& m : tj["model"]["merges"]) merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
    VocabOptions opt;
    opt.eos_id = 1023;
    opt.pad_id = 1021;
    Tokenizer tok = Tokenizer::from_vocab(tokens, merges, types, "qwen35", opt);
    Json golden = Json::parse(read_text_file(tiny_dir() + "/tokenize.json"));
    for (const auto& [text, ids] : golden["texts"].items())
        EXPECT_EQ(tok.encode(text), ids.get<std::vector<int32_t>>()) << text;
    EXPECT_TRUE(tok.is_eos(1023));
    EXPECT_TRUE(tok.is_special(1022));
    EXPECT_THROW(Tokenizer::from_vocab(tokens, merges, types, "llama-bpe"), Error);
}

std::string tiny_json() { return read_text_file(tiny_dir() + "/tokenizer.json"); }

TEST(TokenizerErrors, MalformedFilesThrowError) {
    EXPECT_THROW(Tokenizer::from_json("{not json"), Error);
    EXPECT_THROW(Tokenizer::from_json("[]"), Error);
    EXPECT_THROW(Tokenizer::from_json(R"({"model": {"type": "WordPiece", "vocab": {}}})"), Error);
    EXPECT_THROW(Tokenizer::from_json(R"({"model": {"type": "BPE", "vocab": {"a": "x"}, "merges": []}})"), Error);
    EXPECT_THROW(Tokenizer::from_json(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}})"), Error);
    EXPECT_THROW(Tokenizer::load(test::data_dir() + "/tokenizer/does-not-exist"), Error);

    Json j = Json::parse(tiny_json());
    j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "([unclosed";
    EXPECT_THROW(Tokenizer::from_json(j.dump()), Error);
    j = Json::parse(tiny_json());
    j["model"]["type"] = "Unigram";
    try {
        Tokenizer::from_json(j.dump(), {}, "x/tokenizer.json");
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("Unigram"), std::string::npos) << e.what();
    }
    j = Json::parse(tiny_json());
    j["normalizer"] = Json{{"type", "Lowercase"}};
    EXPECT_THROW(Tokenizer::from_json(j.dump()), Error);
    EXPECT_THROW(Tokenizer::from_json(tiny_json(), "{bad"), Error);
}

// Merges given as "a b" strings and as [a, b] pairs are the same model.
TEST(TokenizerTiny, MergeStringFormat) {
    Json j = Json::parse(tiny_json());
    Json merges = Json::array();
    for (const auto& m : j["model"]["merges"]) merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
    j["model"]["merges"] = merges;
    Tokenizer a = Tokenizer::from_json(j.dump());
    Tokenizer b = Tokenizer::load(tiny_dir());
    std::string text = "The capital of France is Paris. def main(): return 0";
    EXPECT_EQ(a.encode(text), b.encode(text));
}

// tokenizer_config.json may hold a list of named templates; "default" is the chat template.
TEST(TokenizerTiny, ChatTemplateListAndJinjaFile) {
    Json config = Json::parse(read_text_file(tiny_dir() + "/tokenizer_config.json"));
    config["chat_template"] = Json::parse(R"([{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}])");
    Tokenizer tok = Tokenizer::from_json(tiny_json(), config.dump());
    EXPECT_EQ(tok.chat_template(), "D");
    config["chat_template"] = Json::parse(R"([{"name": "tool_use", "template": "T"}])");
    EXPECT_THROW(Tokenizer::from_json(tiny_json(), config.dump()), Error);

    // A chat_template.jinja file beside tokenizer.json wins over the config's template.
    std::string dir = test::scratch_dir() + "/jinja";
    std::string cmd = "mkdir -p '" + dir + "' && cp '" + tiny_dir() + "/tokenizer.json' '" + tiny_dir() +
                      "/tokenizer_config.json' '" + dir + "/' && printf 'J' > '" + dir + "/chat_template.jinja'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    EXPECT_EQ(Tokenizer::load(dir).chat_template(), "J");
}

TEST(TokenizerTiny, InvalidUtf8InputIsReplaced) {
    Tokenizer tok = Tokenizer::load(tiny_dir());
    EXPECT_EQ(tok.decode(tok.encode("a\xFF" "b")), "a" + kFffd + "b");
    EXPECT_EQ(tok.encode("b\xE4\xB8"), tok.encode("b" + kFffd));  // a truncated character too
}

}  // namespace
}  // namespace nextn
