// The tokenizer loader survives corrupted files: deterministic random truncations, byte flips
// and JSON-structure edits of a real tokenizer.json / tokenizer_config.json either load or
// throw nextn::Error (never crash or throw anything else), and whatever loads still encodes
// and decodes without crashing.
#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "golden.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace nextn {
namespace {

std::string dir() { return test::data_dir() + "/tokenizer/dense-tiny"; }

// Loads and exercises; returns whether it loaded. Anything but nextn::Error escapes and fails.
bool try_load(const std::string& json, const std::string& config) {
    try {
        Tokenizer t = Tokenizer::from_json(json, config, "fuzz/tokenizer.json");
        std::vector<int32_t> ids = t.encode("def f(x):\n    return x + 1  # héllo <|im_end|>");
        t.decode(ids);
        return true;
    } catch (const Error&) {
        return false;
    }
}

std::string mutate(std::string s, std::mt19937& rng) {
    switch (rng() % 4) {
        case 0:  // truncate
            s.resize(rng() % (s.size() + 1));
            break;
        case 1:  // flip a few bytes
            for (int i = 0, n = 1 + int(rng() % 8); i < n && !s.empty(); ++i)
                s[rng() % s.size()] ^= char(1u << (rng() % 8));
            break;
        case 2: {  // overwrite a byte with JSON punctuation
            const char punct[] = "{}[]\",:0-e";
            if (!s.empty()) s[rng() % s.size()] = punct[rng() % (sizeof punct - 1)];
            break;
        }
        default: {  // delete a span
            if (s.empty()) break;
            size_t a = rng() % s.size(), n = rng() % 64;
            s.erase(a, n);
        }
    }
    return s;
}

TEST(TokenizerCorruption, TokenizerJsonMutations) {
    const std::string json = read_text_file(dir() + "/tokenizer.json");
    const std::string config = read_text_file(dir() + "/tokenizer_config.json");
    ASSERT_TRUE(try_load(json, config));
    std::mt19937 rng(42);
    int loaded = 0;
    for (int i = 0; i < 1500; ++i) loaded += try_load(mutate(json, rng), config);
    // Many mutations land in vocabulary strings and still load; many break the JSON.
    EXPECT_GT(loaded, 0);
    EXPECT_LT(loaded, 1500);
}

TEST(TokenizerCorruption, ConfigJsonMutations) {
    const std::string json = read_text_file(dir() + "/tokenizer.json");
    const std::string config = read_text_file(dir() + "/tokenizer_config.json");
    std::mt19937 rng(7);
    for (int i = 0; i < 1500; ++i) try_load(json, mutate(config, rng));
}

// The Jinja interpreter on mutated Qwen3 templates: parse and render either succeed or throw
// nextn::Error (naming the line); a mutation must never crash or loop.
TEST(TokenizerCorruption, ChatTemplateMutations) {
    nlohmann::json cfg = nlohmann::json::parse(
        read_text_file(test::data_dir() + "/tokenizer/qwen3/tokenizer_config.json"));
    const std::string source = cfg["chat_template"].get<std::string>();
    nlohmann::ordered_json messages = nlohmann::ordered_json::parse(R"([
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "<think>x</think>hello"},
        {"role": "user", "content": "again"}])");
    ASSERT_FALSE(ChatTemplate(source).render(messages, nullptr, true).empty());
    std::mt19937 rng(3);
    int rendered = 0;
    for (int i = 0; i < 1500; ++i) {
        try {
            ChatTemplate t(mutate(source, rng));
            t.render(messages, nullptr, true, i % 2 == 0);
            ++rendered;
        } catch (const Error&) {
        }
    }
    EXPECT_GT(rendered, 0);
    EXPECT_LT(rendered, 1500);
}

}  // namespace
}  // namespace nextn
