#pragma once
// The `nextn` subcommands. Each takes its arguments (after the subcommand name) and returns the
// process exit code: 0 success, 1 runtime error (bad file, bad request), 2 usage error.
#include <string>
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
SamplerParams sampler_params_from(const Args& a);
// The context a command runs with: --ctx when given (a usage error above the model's context
// length, config max_positions, where the checkpoint states one), else `wanted` capped at that
// length (generation then ends where the context does).
int64_t context_from(const Args& a, int64_t wanted, const ModelConfig& config);

}  // namespace nextn::cli
