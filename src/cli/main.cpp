// The `nextn` binary: dispatches to a subcommand and turns errors into messages + exit codes.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
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
    "MODEL is a Hugging Face safetensors directory, an MLX directory, or a .gguf file.\n"
    "\n"
    "environment (read once, at the first use of the kernels; a bad value is an error naming it):\n"
    "  NEXTN_ISA=scalar|avx2|avxvnni|avx512   the kernel table (default: the best this CPU runs;\n"
    "                                         `nextn inspect` prints it); an aarch64 build has\n"
    "                                         scalar|neon|dotprod (dotprod: Armv8.2's SDOT)\n"
    "  NEXTN_AMX=on|off                       AMX int8 tiles for Q4_0 / Q8_0 matmuls of 8 or more\n"
    "                                         columns (default off: not yet faster)\n"
    "  NEXTN_Q4_0_LAYOUT=rows|chunked         how the int8 tables hold Q4_0 (default rows: 16-row\n"
    "                                         groups); also NEXTN_Q8_0_LAYOUT, NEXTN_Q4_K_LAYOUT,\n"
    "                                         NEXTN_Q5_K_LAYOUT, NEXTN_Q6_K_LAYOUT (Q6_K and Q3_K;\n"
    "                                         chunked holds Q3_K as Q6_K)\n"
    "  NEXTN_ROW_GROUP_FETCH=auto|cursor|streams   how the avx512 decode matmuls prefetch weights\n"
    "                                         (default auto: on AMD both ways timed while decoding,\n"
    "                                         the faster kept; elsewhere group streams; on Zen 5\n"
    "                                         streams read the narrowest Q4_0 / Q8_0 products as\n"
    "                                         one stream a group, without software prefetch)\n";

// `rc`, or 1 when the output could not be written: stdio keeps a write error (a full disk, a
// closed pipe or stdout) to itself, so without this check a command whose output was lost would
// still exit 0.
int output_checked(const char* command, int rc) {
    std::cout.flush();
    errno = 0;
    const bool flushed = std::fflush(stdout) == 0;
    const int err = errno;
    if (flushed && !std::ferror(stdout) && std::cout.good()) return rc;
    std::fprintf(stderr, "nextn%s%s: error: cannot write the output to stdout%s%s\n",
                 *command ? " " : "", command, err ? ": " : "", err ? std::strerror(err) : "");
    return rc == 0 ? 1 : rc;
}

int run_command(const std::string& command, const std::vector<std::string>& args) {
    using namespace nextn;
    if (command == "run") return cli::cmd_run(args);
    if (command == "inspect") return cli::cmd_inspect(args);
    if (command == "tokenize") return cli::cmd_tokenize(args);
    if (command == "bench") return cli::cmd_bench(args);
    if (command == "chat") return cli::cmd_chat(args);
    if (command == "template") return cli::cmd_template(args);
    std::fprintf(stderr, "nextn: unknown command '%s'\n\n%s", command.c_str(), kUsage);
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace nextn;
    if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
        !std::strcmp(argv[1], "help")) {
        std::fputs(kUsage, argc < 2 ? stderr : stdout);
        return output_checked("", argc < 2 ? 2 : 0);
    }
    const std::string command = argv[1];
    std::vector<std::string> args(argv + 2, argv + argc);
    try {
        return output_checked(command.c_str(), run_command(command, args));
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
