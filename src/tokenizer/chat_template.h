#pragma once
// Renders a model's Jinja chat template, as Python transformers does (Jinja2 with
// trim_blocks/lstrip_blocks, tojson = json.dumps(ensure_ascii=False), keys kept in order).
//
//   ChatTemplate tpl = ChatTemplate::for_tokenizer(tokenizer);
//   std::string prompt = tpl.render(messages, nullptr, /*add_generation_prompt=*/true);
//
// Messages and tools are JSON as an OpenAI-style request carries them. `content` must be a string
// (join list-of-parts content and turn null into "" first: the reference engines fail on both).
// Errors (syntax, unsupported features, raise_exception, type errors) are nextn::Error with the
// template line.
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace nextn {

class Tokenizer;

namespace jinja {
struct Stmt;
}

class ChatTemplate {
public:
    // Parses the template; throws nextn::Error on a syntax error or unsupported statement.
    explicit ChatTemplate(const std::string& source);

    // The tokenizer's template (chat_template.jinja / tokenizer_config.json / GGUF), or ChatML
    // when it has none; bos_token and eos_token are set from the tokenizer.
    static ChatTemplate for_tokenizer(const Tokenizer& tokenizer);

    // Plain ChatML (<|im_start|>role\ncontent<|im_end|>\n ...), used when a model has no template.
    static const std::string& chatml_source();

    // Sets a variable visible to every render (e.g. bos_token); render's `extra` wins over it.
    void set_variable(const std::string& name, const nlohmann::ordered_json& value);

    // `tools`: null means not passed (undefined in the template, unlike []). `enable_thinking`:
    // nullopt means not passed. `extra`: more variables (an object), e.g. {"documents": [...]}.
    std::string render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                       bool add_generation_prompt, std::optional<bool> enable_thinking = std::nullopt,
                       const nlohmann::ordered_json& extra = nlohmann::ordered_json::object()) const;

    const std::string& source() const { return source_; }

private:
    std::string source_;
    std::shared_ptr<const std::vector<std::unique_ptr<jinja::Stmt>>> body_;
    nlohmann::ordered_json variables_ = nlohmann::ordered_json::object();
};

}  // namespace nextn
