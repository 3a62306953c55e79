// nextn template MODEL MESSAGES.json: print the rendered prompt (for debugging templates).
// nextn chat MODEL: interactive chat with the model's template; history kept, Ctrl-D exits.
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/interrupt.h"
#include "core/error.h"
#include "core/json_file.h"
#include "engine/model_tokenizer.h"
#include "engine/decode_session.h"
#include "tokenizer/chat_template.h"

namespace nextn::cli {

namespace {


std::optional<bool> thinking_flag(const Args& a) {
    if (!a.has("thinking")) return std::nullopt;
    const std::string v = a.str("thinking");
    if (v == "on") return true;
    if (v == "off") return false;
    throw UsageError("--thinking expects on or off, got '" + v + "'");
}

}  // namespace

int cmd_template(const std::vector<std::string>& argv) {
    std::vector<FlagSpec> specs = {
        {"tools", "", true, "JSON file with the tools list", "FILE"},
        {"no-generation-prompt", "", false, "do not append the assistant turn opener"},
        {"thinking", "", true, "enable_thinking on|off (default: not passed)", "on|off"},
        {"help", "h", false, "show this help"},
    };
    Args a(specs, argv);
    if (a.has("help")) {
        std::cout << "usage: nextn template MODEL MESSAGES.json [options]\n\n" << Args::help_text(specs);
        return 0;
    }
    if (a.positional().size() != 2) throw UsageError("expected MODEL and MESSAGES.json");
    Tokenizer tok = load_tokenizer_from_path(a.positional()[0]);
    ChatTemplate t = ChatTemplate::for_tokenizer(tok);
    nlohmann::ordered_json messages = read_json_file<nlohmann::ordered_json>(a.positional()[1]);
    if (!messages.is_array()) fail(a.positional()[1], ": expected a JSON array of messages");
    nlohmann::ordered_json tools = a.has("tools") ? read_json_file<nlohmann::ordered_json>(a.str("tools")) : nullptr;
    std::cout << t.render(messages, tools, !a.has("no-generation-prompt"), thinking_flag(a));
    return 0;
}

int cmd_chat(const std::vector<std::string>& argv) {
    std::vector<FlagSpec> specs = {
        {"system", "", true, "system prompt", "TEXT"},
        {"n-predict", "n", true, "maximum tokens per reply (default 512)", "N"},
        {"ctx", "c", true,
         "context size in tokens (default 4096, at most the model's context length)", "N"},
        {"raw", "", false,
         "no chat template: each line is sent as-is (so no --system, --thinking)"},
        {"thinking", "", true, "enable_thinking on|off", "on|off"},
        {"verbose", "v", false, "after each reply print prompt reuse, speed and tokens/round"},
        {"help", "h", false, "show this help"},
    };
    for (auto& x : model_flags()) specs.push_back(x);
    for (auto& x : sampling_flags()) specs.push_back(x);
    Args a(specs, argv);
    if (a.has("help")) {
        std::cout << "usage: nextn chat MODEL [options]\n\n"
                  << "Type a message; Enter sends it, Ctrl-C stops a reply, Ctrl-D exits. Each turn\n"
                  << "prefills only the tokens the conversation adds.\n\n"
                  << Args::help_text(specs);
        return 0;
    }
    if (a.positional().size() != 1) throw UsageError("expected exactly one MODEL path");
    ModelOptions mo = model_options_from(a);
    DecodeOptions opts;
    opts.sampler = sampler_params_from(a);
    opts.max_new_tokens = token_count_flag(a, "n-predict", 512, 1);
    if (a.integer("ctx", 4096) < 16)
        throw UsageError("--ctx must be at least 16");  // before the load
    std::optional<bool> thinking = thinking_flag(a);
    // Both go through the chat template, which --raw skips: they would be dropped silently.
    for (const char* flag : {"system", "thinking"})
        if (a.has("raw") && a.has(flag))
            throw UsageError(std::string("--") + flag +
                             " needs the chat template, and --raw sends each line as-is");
    LoadedModel lm = load_model(a.positional()[0], mo);
    const int64_t ctx = context_from(a, 4096, lm.model->config());
    std::optional<Tokenizer> tok = load_model_tokenizer(lm.checkpoint);
    if (!tok) fail(a.positional()[0], ": chat needs a tokenizer, and none was found");
    ChatTemplate tmpl = ChatTemplate::for_tokenizer(*tok);
    DecodeSession session(lm, &*tok, {4, true});
    opts.stop_tokens = session.eos_tokens();
    // Turn t samples with seed + t: one seed for every turn would draw each reply from the same
    // random numbers; this way the conversation still repeats with the same --seed.
    const uint64_t first_seed = opts.sampler.seed;
    if (random_seed_requested(a) && !opts.sampler.greedy())
        std::cerr << "seed: " << first_seed << " (random; --seed " << first_seed
                  << " repeats this chat)\n";
    uint64_t turn = 0;

    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    if (a.has("system")) messages.push_back({{"role", "system"}, {"content", a.str("system")}});
    std::string line;
    while (true) {
        std::cout << "> " << std::flush;
        if (!std::getline(std::cin, line)) break;
        if (line.empty()) continue;
        warn_if_not_utf8(line, "the message");
        std::string prompt_text;
        if (a.has("raw")) {
            prompt_text = line;
        } else {
            messages.push_back({{"role", "user"}, {"content", line}});
            prompt_text = tmpl.render(messages, nullptr, true, thinking);
        }
        // Each turn renders the whole conversation; the session prefills only what extends the
        // sequence it kept from the last turn (when the template reproduces it token for token).
        std::vector<int32_t> prompt = tok->encode(prompt_text);
        // A reply may use whatever context is left (generate stops there); only a conversation
        // that leaves no room for one ends the chat.
        if (int64_t(prompt.size()) + 1 > ctx) {
            std::cerr << "error: the conversation (" << prompt.size()
                      << " tokens) no longer fits --ctx " << ctx
                      << "; start a new chat or raise --ctx\n";
            return 1;
        }
        StreamDecoder stream(*tok, /*skip_special=*/true);
        std::vector<int32_t> reply;
        InterruptScope interrupt;  // Ctrl-C ends this reply, not the program
        opts.sampler.seed = first_seed + turn++;
        DecodeStats stats = session.generate(prompt, ctx, opts, [&](const EmittedToken& e) {
            reply.push_back(e.id);
            std::cout << stream.push(e.id) << std::flush;
            return !interrupt.requested();
        });
        std::cout << stream.flush() << (interrupt.requested() ? " [interrupted]" : "") << "\n";
        if (stats.stopped_by_context)
            std::cerr << "note: the reply stopped at the end of the context (--ctx " << ctx
                      << ")\n";
        if (a.has("verbose"))
            std::cerr << "[" << prompt.size() << " prompt tokens, " << session.reused_tokens()
                      << " reused; " << stats.generated() << " generated at "
                      << stats.decode_tokens_per_second() << " tok/s, "
                      << stats.tokens_per_round() << " tokens/round]\n";
        if (!a.has("raw"))
            messages.push_back({{"role", "assistant"}, {"content", tok->decode(reply, true)}});
    }
    std::cout << "\n";
    return 0;
}

}  // namespace nextn::cli
