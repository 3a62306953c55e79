// Qwen3 tokenizer against the shared golden records (transformers.js, cross-checked with HF Rust
// tokenizers; encode_divergent.jsonl holds the HF Rust ids). Needs the 11 MB tokenizer.json from
// the fixtures, so every test skips without them.
#include <gtest/gtest.h>

#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/mapped_file.h"
#include "test_paths.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace nextn {
namespace {

using Json = nlohmann::ordered_json;

std::vector<Json> read_jsonl(const std::string& path) {
    std::vector<Json> out;
    std::istringstream in(read_text_file(path));
    std::string line;
    while (std::getline(in, line))
        if (!line.empty()) out.push_back(Json::parse(line));
    return out;
}

class Qwen3Tokenizer : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        std::string fx = test::fixtures_dir();
        if (fx.empty() || !file_exists(fx + "/tokenizer/tokenizer.json")) return;
        dir_ = fx + "/tokenizer";
        tok_ = std::make_unique<Tokenizer>(Tokenizer::load(dir_));
    }
    static void TearDownTestSuite() { tok_.reset(); }
    void SetUp() override {
        if (!tok_) GTEST_SKIP() << "SKIPPED: Qwen3 tokenizer fixtures not found (set NEXTN_FIXTURES)";
    }
    static inline std::unique_ptr<Tokenizer> tok_;
    static inline std::string dir_;
};

TEST_F(Qwen3Tokenizer, Metadata) {
    EXPECT_EQ(tok_->vocab_size(), 151669);
    EXPECT_EQ(tok_->eos_id(), 151645);  // <|im_end|>
    EXPECT_EQ(tok_->pad_id(), 151643);  // <|endoftext|>
    EXPECT_EQ(tok_->bos_id(), -1);
    EXPECT_TRUE(tok_->is_special(151644));
    EXPECT_FALSE(tok_->is_special(151667));  // <think> is an added token but not special
    EXPECT_TRUE(tok_->is_added(151667));
    EXPECT_EQ(tok_->token_to_id("<think>"), 151667);
    EXPECT_FALSE(tok_->chat_template().empty());
}

TEST_F(Qwen3Tokenizer, EncodeRecords) {
    auto records = read_jsonl(dir_ + "/encode.jsonl");
    ASSERT_EQ(records.size(), 325u);
    int failures = 0;
    for (const Json& r : records) {
        std::string text = r["text"].get<std::string>();
        auto expected = r["ids"].get<std::vector<int32_t>>();
        auto ids = tok_->encode(text, true, r["add_special_tokens"].get<bool>());
        if (ids != expected && ++failures <= 10) ADD_FAILURE() << r["name"] << " ids differ";
        EXPECT_EQ(tok_->decode(expected), r["decoded"].get<std::string>()) << r["name"];
    }
    EXPECT_EQ(failures, 0);
}

TEST_F(Qwen3Tokenizer, DivergentRecordsFollowHfRust) {
    auto records = read_jsonl(dir_ + "/encode_divergent.jsonl");
    ASSERT_EQ(records.size(), 9u);
    for (const Json& r : records)
        EXPECT_EQ(tok_->encode(r["text"].get<std::string>()), r["ids"].get<std::vector<int32_t>>()) << r["name"];
}

TEST_F(Qwen3Tokenizer, DecodeRecords) {
    auto records = read_jsonl(dir_ + "/decode.jsonl");
    ASSERT_EQ(records.size(), 406u);
    for (const Json& r : records)
        EXPECT_EQ(tok_->decode(r["ids"].get<std::vector<int32_t>>(), r["skip_special_tokens"].get<bool>()),
                  r["decoded"].get<std::string>())
            << r["name"];
}

TEST_F(Qwen3Tokenizer, RoundTripIsNfc) {
    for (const char* file : {"/encode.jsonl", "/encode_divergent.jsonl"})
        for (const Json& r : read_jsonl(dir_ + file)) {
            std::string text = r["text"].get<std::string>();
            EXPECT_EQ(tok_->decode(tok_->encode(text)), nfc(text)) << r["name"];
        }
}

// Streaming must emit only complete UTF-8 and add up to the one-shot decode.
TEST_F(Qwen3Tokenizer, StreamingMatchesOneShot) {
    for (const Json& r : read_jsonl(dir_ + "/decode.jsonl")) {
        auto ids = r["ids"].get<std::vector<int32_t>>();
        bool skip = r["skip_special_tokens"].get<bool>();
        StreamDecoder sd(*tok_, skip);
        std::string streamed;
        for (int32_t id : ids) {
            std::string part = sd.push(id);
            EXPECT_TRUE(utf8::is_valid(part)) << r["name"];
            streamed += part;
        }
        streamed += sd.flush();
        EXPECT_EQ(streamed, tok_->decode(ids, skip)) << r["name"];
        EXPECT_EQ(streamed, r["decoded"].get<std::string>()) << r["name"];
    }
}

// The streamed text of a long encoding arrives as soon as each character is complete: after
// every push, output so far is a prefix of the final text.
TEST_F(Qwen3Tokenizer, StreamingEncodeRecords) {
    for (const Json& r : read_jsonl(dir_ + "/encode.jsonl")) {
        auto ids = r["ids"].get<std::vector<int32_t>>();
        std::string full = tok_->decode(ids);
        StreamDecoder sd(*tok_);
        std::string streamed;
        for (int32_t id : ids) {
            streamed += sd.push(id);
            ASSERT_EQ(full.compare(0, streamed.size(), streamed), 0) << r["name"];
        }
        streamed += sd.flush();
        EXPECT_EQ(streamed, full) << r["name"];
    }
}

}  // namespace
}  // namespace nextn
