// The `nextn` binary: dispatches to a subcommand and turns errors into messages + exit codes.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/error.h"

namespace {

const char* kUsage =
    "nextn: Qwen3.5 / Qwen3.6 inference with exact MTP self-speculative decoding\n"
    "\n"
    "usage: nextn COMMAND [args]   (nextn COMMAND --help for its flags)\n"
    "\n"
    "commands:\n"
    "  run MODEL        generate from -p TEXT or --tokens IDS (MTP drafts when the model has a head)\n"
    "  inspect MODEL    show format, architecture, dimensions, MTP head, tensor types\n"
    "  chat MODEL       interactive chat (chat template applied, history kept, Ctrl-D exits)\n"
    "  template MODEL MESSAGES.json   print the rendered chat prompt\n"
    "  tokenize MODEL   text on stdin -> token ids as JSON\n"
    "  bench            decode / verify-cost / bandwidth benchmark\n"
    "\n"
    "MODEL is a Hugging Face safetensors directory, an MLX directory, or a .gguf file.\n";

}  // namespace

int main(int argc, char** argv) {
    using namespace nextn;
    if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
        !std::strcmp(argv[1], "help")) {
        std::fputs(kUsage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const std::string command = argv[1];
    std::vector<std::string> args(argv + 2, argv + argc);
    try {
        if (command == "run") return cli::cmd_run(args);
        if (command == "inspect") return cli::cmd_inspect(args);
        if (command == "tokenize") return cli::cmd_tokenize(args);
        if (command == "bench") return cli::cmd_bench(args);
        if (command == "chat") return cli::cmd_chat(args);
        if (command == "template") return cli::cmd_template(args);
        std::fprintf(stderr, "nextn: unknown command '%s'\n\n%s", command.c_str(), kUsage);
        return 2;
    } catch (const cli::UsageError& e) {
        std::fprintf(stderr, "nextn %s: %s\n", command.c_str(), e.what());
        return 2;
    } catch (const Error& e) {
        std::fprintf(stderr, "nextn %s: error: %s\n", command.c_str(), e.what());
        return 1;
    } catch (const std::bad_alloc&) {
        std::fprintf(stderr, "nextn %s: error: out of memory\n", command.c_str());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "nextn %s: error: %s\n", command.c_str(), e.what());
        return 1;
    }
}
