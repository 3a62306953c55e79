#include "tokenizer/chat_template.h"

#include "core/error.h"
#include "tokenizer/jinja_ast.h"
#include "tokenizer/jinja_builtins.h"
#include "tokenizer/jinja_eval.h"
#include "tokenizer/tokenizer.h"

namespace nextn {

ChatTemplate::ChatTemplate(const std::string& source)
    : source_(source), body_(std::make_shared<const jinja::Body>(jinja::parse_template(source))) {}

const std::string& ChatTemplate::chatml_source() {
    static const std::string kChatml =
        "{%- for message in messages %}"
        "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
        "{%- endfor %}"
        "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";
    return kChatml;
}

ChatTemplate ChatTemplate::for_tokenizer(const Tokenizer& tokenizer) {
    ChatTemplate t(tokenizer.chat_template().empty() ? chatml_source() : tokenizer.chat_template());
    t.set_variable("bos_token", tokenizer.bos_token());
    t.set_variable("eos_token", tokenizer.eos_token());
    return t;
}

void ChatTemplate::set_variable(const std::string& name, const nlohmann::ordered_json& value) {
    variables_[name] = value;
}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                 bool add_generation_prompt, std::optional<bool> enable_thinking,
                                 const nlohmann::ordered_json& extra) const {
    if (!messages.is_array()) fail("chat template: messages must be a JSON array");
    // Checked here because a template meets a malformed message as an undefined variable deep
    // inside its own logic ("'role' is undefined"), which names neither the message nor the field.
    // Content is left to the template: its shape legitimately varies (a string, a list of parts,
    // null beside tool_calls).
    for (size_t i = 0; i < messages.size(); ++i) {
        const auto& m = messages[i];
        if (!m.is_object()) fail("chat template: message ", i, " is not a JSON object");
        if (!m.contains("role") || !m["role"].is_string())
            fail("chat template: message ", i, " has no string 'role'");
    }
    if (!tools.is_null()) {
        if (!tools.is_array()) fail("chat template: tools must be a JSON array of tool objects");
        for (size_t i = 0; i < tools.size(); ++i)
            if (!tools[i].is_object()) fail("chat template: tool ", i, " is not a JSON object");
    }
    if (!extra.is_object()) fail("chat template: extra variables must be a JSON object");
    jinja::Object globals;
    jinja::add_globals(globals);
    for (const auto& [k, v] : variables_.items()) globals.set(k, jinja::Value::from_json(v));
    globals.set("messages", jinja::Value::from_json(messages));
    // As transformers' apply_chat_template renders: tools and documents are always passed, None
    // where absent, so a template's `tools is not none` is false without tools (undefined would
    // make it true).
    globals.set("tools", jinja::Value::from_json(tools));
    globals.set("documents", jinja::Value(nullptr));
    globals.set("add_generation_prompt", jinja::Value(add_generation_prompt));
    if (enable_thinking) globals.set("enable_thinking", jinja::Value(*enable_thinking));
    for (const auto& [k, v] : extra.items()) globals.set(k, jinja::Value::from_json(v));

    jinja::Scope scope;
    for (auto& [k, v] : globals.items) scope.vars[k] = std::move(v);
    jinja::Interpreter interpreter(scope);
    return interpreter.render(*body_);
}

}  // namespace nextn
