// The tokenizer a GGUF file carries (read by formats/gguf_tokenizer) built with
// Tokenizer::from_vocab must give the tiny fixture's golden ids, which llama.cpp's
// llama-tokenize produced from the same GGUF (pre-tokenizer qwen35).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/mapped_file.h"
#include "formats/gguf_tokenizer.h"
#include "test_paths.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace nextn {
namespace {

Tokenizer tokenizer_from_gguf(const std::string& path) {
    GgufTokenizerData d = read_gguf_tokenizer(path);
    VocabOptions o;
    o.bos_id = static_cast<int32_t>(d.bos_id);
    o.eos_id = static_cast<int32_t>(d.eos_id);
    o.pad_id = static_cast<int32_t>(d.pad_id);
    if (d.eot_id >= 0) o.extra_eos_ids.push_back(static_cast<int32_t>(d.eot_id));
    o.add_bos = d.add_bos;
    o.add_eos = d.add_eos;
    o.chat_template = d.chat_template;
    return Tokenizer::from_vocab(d.tokens, d.merges, d.token_types, d.pre, o);
}

TEST(TokenizerGguf, TinyGgufMatchesGolden) {
    NEXTN_REQUIRE_FIXTURES(fx);
    std::string gguf = fx + "/qwen35-dense-tiny/model-Q4_0.gguf";
    if (!file_exists(gguf)) GTEST_SKIP() << "SKIPPED: " << gguf << " not found";
    Tokenizer tok = tokenizer_from_gguf(gguf);
    auto golden = nlohmann::ordered_json::parse(read_text_file(test::data_dir() + "/tokenizer/dense-tiny/tokenize.json"));
    for (const auto& [text, ids] : golden["texts"].items()) {
        EXPECT_EQ(tok.encode(text), ids.get<std::vector<int32_t>>()) << text;
        EXPECT_EQ(tok.decode(ids.get<std::vector<int32_t>>()), text) << text;
    }
    EXPECT_TRUE(tok.is_special(1022));
    EXPECT_TRUE(tok.is_eos(1023));
    const auto& r = golden["chat_template_rendering"];
    EXPECT_EQ(ChatTemplate::for_tokenizer(tok).render(r["messages"], nullptr, r["add_generation_prompt"].get<bool>()),
              r["text"].get<std::string>());
}

}  // namespace
}  // namespace nextn
