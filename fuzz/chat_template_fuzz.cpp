// libFuzzer target: chat-template (Jinja) source through the parser and the interpreter. The input
// is the template text, optionally followed by a NUL byte and a message content string (so the
// fuzzer can also vary what the template escapes, slices and prints). Each parsed template is
// rendered with a small fixed conversation that uses every field the Qwen templates read. A clean
// nextn::Error is the expected answer to a bad template; any other exception, a crash, a
// sanitizer report or a hang is a bug.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/error.h"
#include "tokenizer/chat_template.h"

namespace {

using Json = nlohmann::ordered_json;

Json conversation(const std::string& content) {
    Json tool_call = {
        {"type", "function"},
        {"function", {{"name", "get_weather"}, {"arguments", {{"city", "Paris"}, {"days", 2}}}}}};
    return Json::array({
        {{"role", "system"}, {"content", "You are helpful."}},
        {{"role", "user"}, {"content", content}},
        {{"role", "assistant"},
         {"content", "<think>\nhmm\n</think>\n\nLet me check."},
         {"reasoning_content", "hmm"},
         {"tool_calls", Json::array({tool_call})}},
        {{"role", "tool"}, {"content", "{\"temp\": 21.5}"}, {"name", "get_weather"}},
        {{"role", "assistant"}, {"content", content}},
        {{"role", "user"}, {"content", "Thanks! é ✓ 日本"}},
    });
}

Json tools() {
    return Json::array(
        {{{"type", "function"},
          {"function",
           {{"name", "get_weather"},
            {"description", "Weather for a city"},
            {"parameters",
             {{"type", "object"},
              {"properties", {{"city", {{"type", "string"}}}, {"days", {{"type", "integer"}}}}},
              {"required", Json::array({"city"})}}}}}}});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string input(reinterpret_cast<const char*>(data), size);
    std::size_t nul = input.find('\0');
    std::string source = input.substr(0, nul);
    std::string content =
        nul == std::string::npos ? "What is the weather in Paris?" : input.substr(nul + 1);
    try {
        nextn::ChatTemplate tpl(source);
        tpl.set_variable("bos_token", "<|endoftext|>");
        tpl.set_variable("eos_token", "<|im_end|>");
        // Content bytes go in as they are, invalid UTF-8 included: the library API takes any
        // ordered_json, and a GGUF template can hold any bytes too.
        Json messages = conversation(content);
        (void)tpl.render(messages, tools(), true, false);
        (void)tpl.render(messages, nullptr, false, std::nullopt,
                         Json{{"documents", Json::array({"doc"})}});
    } catch (const nextn::Error&) {
        // A clear error is the right answer to a bad template.
    }
    return 0;
}
