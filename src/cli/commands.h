#pragma once
// The `nextn` subcommands. Each takes its arguments (after the subcommand name) and returns the
// process exit code: 0 success, 1 runtime error (bad file, bad request), 2 usage error.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/args.h"
#include "model/qwen35.h"
#include "sampling/sampler_params.h"

namespace nextn::cli {

int cmd_run(const std::vector<std::string>& args);
int cmd_inspect(const std::vector<std::string>& args);
int cmd_tokenize(const std::vector<std::string>& args);
int cmd_bench(const std::vector<std::string>& args);
int cmd_chat(const std::vector<std::string>& args);
int cmd_template(const std::vector<std::string>& args);

// Flags shared by the commands that load a model and generate.
std::vector<FlagSpec> model_flags();
std::vector<FlagSpec> sampling_flags();
ModelOptions model_options_from(const Args& a);
// Usage errors for load flags that contradict each other (--no-mtp with --draft-model,
// --bf16-activations with --f32-activations) or an empty --draft-model: model_options_from's,
// and inspect's, which loads without it.
void refuse_contradicting_load_flags(const Args& a);
SamplerParams sampler_params_from(const Args& a);
// --seed -1: sampler_params_from drew the seed at random (the command then reports it).
bool random_seed_requested(const Args& a);
// A token count flag (-n, --prompt-tokens, ...) of at least `min`: a usage error below it, or
// above 2^44 tokens, where sums of counts (a context of prompt + n + slack) could overflow
// long before any machine could hold the tokens.
int64_t token_count_flag(const Args& a, const std::string& name, int64_t fallback, int64_t min);
// The context a command runs with: --ctx when given (a usage error above the model's context
// length, config max_positions, where the checkpoint states one), else `wanted` capped at that
// length (generation then ends where the context does).
int64_t context_from(const Args& a, int64_t wanted, const ModelConfig& config);
// A warning on stderr when `text` is not valid UTF-8: the tokenizer reads each invalid byte
// sequence as U+FFFD (as Python's errors="replace" does before a Hugging Face tokenizer), so
// the model sees other text than the bytes given.
void warn_if_not_utf8(std::string_view text, const std::string& what);
// Progress of long work on stderr ("WHAT:  42% of 1.23 GB"): in place on a terminal, every 25%
// otherwise. Silent until `after_seconds` have passed since it was made, so a quick load
// prints nothing; once it has printed, it prints 100% at the end.
std::function<void(size_t done, size_t total)> progress_printer(const std::string& what,
                                                                double after_seconds);

}  // namespace nextn::cli
