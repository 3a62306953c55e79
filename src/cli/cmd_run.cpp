// nextn run MODEL: generate from a prompt (text or token ids), with MTP speculation when the
// checkpoint has a head, streaming the output and reporting speed and acceptance.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/error.h"
#include "engine/decode_session.h"
#include "engine/model_tokenizer.h"
#include "engine/stop_strings.h"

namespace nextn::cli {

namespace {

std::vector<FlagSpec> run_flags() {
    std::vector<FlagSpec> f = {
        {"prompt", "p", true, "prompt text, encoded as-is (no chat template)", "TEXT"},
        {"tokens", "", true, "prompt as token ids, e.g. 1,2,3", "IDS"},
        {"n-predict", "n", true, "tokens to generate (default 128)", "N"},
        {"ids", "", false, "print generated token ids (space-separated, one line) instead of text"},
        {"draft-depth", "", true,
         "draft tokens per round: auto (default; adaptive, up to 4: from acceptance and measured "
         "speed, from acceptance alone when sampling) or 0..8 (0 = plain decoding)",
         "D"},
        {"ctx", "c", true,
         "context size in tokens (default: prompt + n + 16, at most the model's context length)",
         "N"},
        {"ignore-eos", "", false,
         "never end at an end-of-sequence token: they are banned (a -inf logit bias), as "
         "llama.cpp's "
         "--ignore-eos bans them"},
        {"logprobs", "", true,
         "print the log-probability of each token and N alternatives (0..20), from the model's "
         "distribution after logit bias and penalties, before temperature and top-k/top-p/min-p",
         "N"},
        {"stop", "", true,
         "stop when the output text contains STR (repeatable); STR is not printed; \\n, \\t, \\r, "
         "\\\\, \\xNN escapes are read as their bytes",
         "STR"},
        {"stats-json", "", true, "write the generated ids, speed and acceptance as JSON to FILE",
         "FILE"},
        {"quiet", "q", false, "do not print the speed / acceptance report"},
        {"help", "h", false, "show this help"},
    };
    for (auto& x : model_flags()) f.push_back(x);
    for (auto& x : sampling_flags()) f.push_back(x);
    return f;
}

void print_report(const DecodeStats& s, bool mtp, double load_seconds) {
    std::fprintf(stderr, "\n--- load: %.2f s\n", load_seconds);
    std::fprintf(stderr, "--- prefill: %lld tokens in %.3f s (%.1f tok/s)\n",
                 (long long)s.prompt_tokens, s.prefill_seconds,
                 s.prefill_seconds > 0 ? double(s.prompt_tokens) / s.prefill_seconds : 0.0);
    // The first generated token comes out of the prefill, so the decode's rate and tokens per
    // round count the others.
    std::fprintf(stderr,
                 "--- decode: %lld tokens in %.3f s (%.1f tok/s), %lld rounds, %.2f tokens/round "
                 "(%lld generated; the first came with the prefill)\n",
                 (long long)std::max<int64_t>(0, s.generated() - 1), s.decode_seconds,
                 s.decode_tokens_per_second(), (long long)s.rounds, s.tokens_per_round(),
                 (long long)s.generated());
    if (mtp && !s.drafted.empty()) {
        std::fprintf(stderr, "--- acceptance by depth:");
        for (size_t d = 0; d < s.drafted.size(); ++d) {
            if (!s.drafted[d]) continue;
            std::fprintf(stderr, "  d%zu %lld/%lld (%.0f%%)", d + 1, (long long)s.accepted[d],
                         (long long)s.drafted[d], 100.0 * double(s.accepted[d]) / double(s.drafted[d]));
        }
        std::fprintf(stderr, "\n--- GDN rollback memory (spare state, pending inputs): %.2f MiB\n",
                     double(s.rollback_bytes) / (1024.0 * 1024.0));
    }
    std::fprintf(stderr, "--- KV cache for the context: %.2f MiB (backed as positions are written)\n",
                 double(s.kv_cache_bytes) / (1024.0 * 1024.0));
}

void write_stats_json(const std::string& path, const DecodeStats& s,
                      const std::vector<int32_t>& ids, int depth, bool mtp, double load_seconds,
                      uint64_t seed) {
    nlohmann::ordered_json j;
    j["generated_ids"] = ids;
    j["seed"] = seed;
    j["load_seconds"] = load_seconds;
    j["prompt_tokens"] = s.prompt_tokens;
    j["generated"] = s.generated();
    j["prefill_tok_s"] = s.prefill_seconds > 0 ? double(s.prompt_tokens) / s.prefill_seconds : 0.0;
    j["decode_tok_s"] = s.decode_tokens_per_second();
    j["rounds"] = s.rounds;
    j["tokens_per_round"] = s.tokens_per_round();
    j["mtp"] = mtp;
    j["final_draft_depth"] = depth;
    j["drafted"] = s.drafted;
    j["accepted"] = s.accepted;
    std::vector<double> by_position;
    for (size_t d = 0; d < s.drafted.size(); ++d)
        by_position.push_back(s.drafted[d] ? double(s.accepted[d]) / double(s.drafted[d]) : 0.0);
    j["acceptance_by_position"] = by_position;
    j["rollback_bytes"] = s.rollback_bytes;
    j["kv_cache_bytes"] = s.kv_cache_bytes;
    j["stopped_by_token"] = s.stopped_by_token;
    j["stopped_by_context"] = s.stopped_by_context;
    std::ofstream f(path);
    if (!f) fail("--stats-json: cannot write '", path, "'");
    f << j.dump(2) << "\n";
    f.close();  // the buffered bytes are written here: a full disk shows only now
    if (!f) fail("--stats-json: error writing '", path, "'");
}

// Fails unless `path` can be written: checked before the model loads and the text is
// generated, which an unwritable path would otherwise throw away at the end. Nothing is created
// or truncated here, so a failed run leaves an existing file as it was.
void check_writable(const std::string& path, const std::string& flag) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (path.empty()) throw UsageError(flag + ": the file name is empty");
    if (fs::is_directory(path, ec)) fail(flag, ": '", path, "' is a directory");
    const fs::path parent =
        fs::path(path).has_parent_path() ? fs::path(path).parent_path() : fs::path(".");
    if (!fs::is_directory(parent, ec))
        fail(flag, ": the folder '", parent.string(), "' does not exist");
    const bool exists = fs::exists(path, ec);
    if (access(exists ? path.c_str() : parent.c_str(), W_OK) != 0)
        fail(flag, ": cannot write '", path, "' (permission denied)");
}

}  // namespace

int cmd_run(const std::vector<std::string>& argv) {
    const std::vector<FlagSpec> specs = run_flags();
    Args a(specs, argv);
    if (a.has("help")) {
        std::cout << "usage: nextn run MODEL (-p TEXT | --tokens IDS) [options]\n\n"
                  << "Generates a continuation. With an MTP head the model drafts tokens and\n"
                  << "verifies them in one batched forward; greedy output is identical to\n"
                  << "--no-mtp, sampled output has the same distribution.\n\n"
                  << Args::help_text(specs);
        return 0;
    }
    if (a.positional().size() != 1) throw UsageError("expected exactly one MODEL path");
    if (a.has("prompt") == a.has("tokens"))
        throw UsageError("give exactly one of -p TEXT or --tokens IDS");
    if (a.has("stats-json")) check_writable(a.str("stats-json"), "--stats-json");
    const int64_t n_predict = token_count_flag(a, "n-predict", 128, 1);
    const bool auto_depth = a.str("draft-depth", "auto") == "auto";
    const int64_t depth = auto_depth ? 4 : a.integer("draft-depth", 3);
    if (depth < 0 || depth > 8) throw UsageError("--draft-depth must be auto or between 0 and 8");
    // As --no-mtp with --draft-model: drafts asked for and plain decoding asked for (0 agrees).
    if (a.has("no-mtp") && !auto_depth && depth > 0)
        throw UsageError("--no-mtp and --draft-depth " + std::to_string(depth) +
                         " contradict each other");
    const int64_t logprobs = a.integer("logprobs", 0);
    if (logprobs < 0 || logprobs > 20) throw UsageError("--logprobs must be between 0 and 20");
    ModelOptions mo = model_options_from(a);
    DecodeOptions opts;
    opts.sampler = sampler_params_from(a);
    opts.max_new_tokens = n_predict;
    opts.logprobs = int(logprobs);

    const auto load_start = std::chrono::steady_clock::now();
    LoadedModel lm = load_model(a.positional()[0], mo);
    const double load_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
    const Qwen35Model& model = *lm.model;
    std::optional<Tokenizer> tok = load_model_tokenizer(lm.checkpoint);
    std::vector<int32_t> prompt;
    if (a.has("tokens")) {
        prompt = parse_id_list(a.str("tokens"), "tokens");
    } else {
        if (!tok) fail(a.positional()[0], ": no tokenizer found; use --tokens");
        warn_if_not_utf8(a.str("prompt"), "the prompt");
        prompt = tok->encode(a.str("prompt"));
        if (prompt.empty()) throw UsageError("the prompt encodes to no tokens");
    }
    for (int32_t id : prompt)
        if (id >= model.config().vocab_size)
            fail("prompt token id ", id, " is outside the vocabulary of ", model.config().vocab_size);
    DecodeSession session(lm, tok ? &*tok : nullptr, {int(depth), auto_depth});
    if (!a.has("ignore-eos")) {
        opts.stop_tokens = session.eos_tokens();
    } else {
        // Banned rather than passed over: emitted, an end-of-sequence token would put its text
        // in the output and the model would go on from a sequence it had ended.
        for (int32_t id : session.eos_tokens())
            if (id >= 0 && id < model.config().vocab_size) opts.sampler.logit_bias[id] = -INFINITY;
    }
    if (!model.has_mtp() && mo.load_mtp)
        std::fprintf(stderr, "note: %s has no MTP head; plain decoding\n", a.positional()[0].c_str());
    const int64_t ctx = context_from(a, int64_t(prompt.size()) + n_predict + 16, model.config());
    if (ctx < int64_t(prompt.size()) + 1) {
        // --ctx below the prompt is a flag's fault (exit 2); a prompt longer than the model takes
        // is the request's (exit 1), as a token outside the vocabulary is.
        if (a.has("ctx"))  // a --ctx equal to the prompt, or 0 or negative, too
            throw UsageError("--ctx " + std::to_string(ctx) + " leaves no room after the prompt (" +
                             std::to_string(prompt.size()) + " tokens): it must be at least " +
                             std::to_string(prompt.size() + 1));
        fail("the prompt (", prompt.size(), " tokens) does not fit the model's context length (",
             ctx, ")");
    }

    const bool print_ids = a.has("ids") || !tok;
    std::vector<std::string> stops = a.all("stop");
    for (std::string& s : stops) s = process_escapes(s);
    if (!stops.empty() && !tok) throw UsageError("--stop needs a tokenizer to see the text");
    for (const auto& s : stops)
        if (s.empty()) throw UsageError("--stop: the stop string must not be empty");
    StopStringMatcher stop_matcher(stops);
    std::optional<StreamDecoder> stream;
    if (tok) stream.emplace(*tok);
    bool first = true;
    std::vector<int32_t> generated_ids;
    DecodeStats stats = session.generate(prompt, ctx, opts, [&](const EmittedToken& e) {
        generated_ids.push_back(e.id);
        if (print_ids) {
            std::cout << (first ? "" : " ") << e.id;
            if (!stops.empty()) stop_matcher.push(stream->push(e.id));
        } else {
            std::cout << stop_matcher.push(stream->push(e.id));
        }
        if (e.logprobs) {
            std::fprintf(stderr, "[logprob] %d %.4f |", e.id, e.logprobs->chosen.logprob);
            for (const auto& alt : e.logprobs->top)
                std::fprintf(stderr, " %d:%.4f", alt.token, alt.logprob);
            std::fprintf(stderr, "\n");
        }
        std::cout.flush();
        first = false;
        return !stop_matcher.stopped();  // a stop string ends the run after this token
    });
    if (!print_ids && !stop_matcher.stopped()) std::cout << stop_matcher.push(stream->flush()) << stop_matcher.flush();
    std::cout << std::endl;
    if (stats.stopped_by_context)
        std::fprintf(stderr, "note: stopped after %lld tokens at the end of the context (%lld tokens%s)\n",
                     (long long)stats.generated(), (long long)ctx,
                     a.has("ctx") ? ", --ctx" : ": the model's context length");
    if (a.has("stats-json"))
        write_stats_json(a.str("stats-json"), stats, generated_ids,
                         !session.uses_mtp()    ? 0
                         : session.controller() ? session.controller()->best_depth()
                                                : int(depth),
                         session.uses_mtp(), load_seconds, opts.sampler.seed);
    if (!a.has("quiet")) {
        print_report(stats, session.uses_mtp(), load_seconds);
        if (random_seed_requested(a) && !opts.sampler.greedy())
            std::fprintf(stderr, "--- seed: %llu (random; --seed %llu gives this text again)\n",
                         (unsigned long long)opts.sampler.seed,
                         (unsigned long long)opts.sampler.seed);
        if (session.controller())
            std::fprintf(stderr, "--- adaptive depth: settled on %d\n", session.controller()->best_depth());
    }
    return 0;
}

}  // namespace nextn::cli
