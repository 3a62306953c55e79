#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "cli/commands.h"
#include "core/error.h"
#include "tokenizer/utf8.h"

namespace nextn::cli {

std::vector<FlagSpec> model_flags() {
    return {
        {"threads", "t", true, "worker threads (default: one per hardware thread)", "N"},
        {"no-mtp", "", false, "ignore the MTP head: plain decoding"},
        {"draft-model", "", true, "separate MTP drafter checkpoint (qwen3_5_mtp, MTP-only GGUF)",
         "PATH"},
        {"quant", "", true,
         "convert every weight matrix at load: native (default: keep the file's values in a "
         "layout a kernel reads, widening to f32 only where none does; `inspect` shows which), "
         "f32, bf16, q8_0, q4; for `bench --synthetic` also q4_k_m (llama.cpp's Q4_K_M mix of Q4_K "
         "and Q6_K, held as a Q4_K_M file's tensors are) and q2_k (every matrix Q2_K, as a Q2_K "
         "file's are held)",
         "TYPE"},
        {"f32-activations", "", false,
         "multiply quantized weights with f32 activations (the arithmetic of dequantized weights; "
         "slower; the codes only the int8 kernels read, K-quants, Q5_1, IQ4_XS and MLX other than "
         "f16-exact 4-bit, are then widened to f32, and IQ4_NL and MXFP4 held as Q8_0) instead of int8-quantized ones (the default "
         "on any CPU with AVX2, and on aarch64)"},
        {"bf16-activations", "", false,
         "multiply bf16 weights (a bf16 checkpoint, or --quant bf16) with activations rounded to "
         "bf16, by the CPU's bf16 dot product (AVX512_BF16: Zen 4, Sapphire Rapids and later; "
         "elsewhere it changes nothing): prefill 1.5-1.7x faster on Zen 4, each activation keeping "
         "8 mantissa bits, as llama.cpp's bf16 path does. Default: f32 activations"},
        {"mtp-input", "", true,
         "hidden state the MTP head reads: post-norm (default; vLLM, llama.cpp) or pre-norm "
         "(MLX PR 990)",
         "MODE"},
        {"kv-type", "", true,
         "attention KV cache values: f32 (default), f16 (half the cache memory and half what "
         "a decode step reads from it at long contexts) or q8_0 (int8 codes with a scale per 32 "
         "values: 27% of f32; the queries are rounded to the same blocks and scored against the "
         "keys in integers, as llama.cpp does: the fastest at long contexts); each key and "
         "value rounded once, when written",
         "TYPE"},
        {"draft-vocab", "", true,
         "MTP drafts over token ids [0, N) only (0 = whole vocabulary; default: 32768 when the "
         "vocabulary is larger, else whole)",
         "N"},
        {"draft-quant", "", true,
         "type of the draft LM head: native (the LM head's own), f32, bf16, q8_0, q4 (default "
         "q8_0 for f32/bf16/f16 heads)",
         "TYPE"},
    };
}

std::vector<FlagSpec> sampling_flags() {
    return {
        {"temp", "", true,
         "temperature; 0 = greedy (default 0). Applied before top-p and min-p, as transformers and "
         "vLLM apply it (llama.cpp applies it after them)",
         "T"},
        {"top-k", "", true, "keep the K most likely tokens (default 0 = off)", "K"},
        {"top-p", "", true, "nucleus sampling mass (default 1 = off)", "P"},
        {"min-p", "", true, "drop tokens below P x the top probability (default 0 = off)", "P"},
        {"repeat-penalty", "", true,
         "llama.cpp repetition penalty: a repeated token's logit divided by R if positive, else "
         "multiplied (default 1 = off)",
         "R"},
        {"repeat-last-n", "", true,
         "tokens of prompt and output the penalties look back over (default 64; -1: all, 0: none)",
         "N"},
        {"presence-penalty", "", true,
         "logit -= X for a token among those --repeat-last-n tokens (OpenAI's formula, counted as "
         "llama.cpp counts: prompt included; default 0 = off)",
         "X"},
        {"frequency-penalty", "", true,
         "logit -= X x the token's count among those tokens (default 0 = off)", "X"},
        {"logit-bias", "l", true,
         "add BIAS to token ID's logit, as ID+BIAS or ID-BIAS (ID-inf bans it; repeatable), as "
         "llama.cpp's --logit-bias",
         "ID+BIAS"},
        {"seed", "s", true,
         "random seed (default 0; -1: a fresh random one, printed); the same seed and flags "
         "give the same text",
         "N"},
    };
}

std::function<void(size_t, size_t)> progress_printer(const std::string& what, double after_seconds) {
    const bool tty = isatty(STDERR_FILENO) != 0;
    const int step = tty ? 1 : 25;  // percent per line
    const auto start = std::chrono::steady_clock::now();
    return [what, tty, step, after_seconds, start, seen = 0, printed = false](size_t done,
                                                                             size_t total) mutable {
        if (total == 0) return;
        const int pct = int(100.0 * double(done) / double(total));
        const bool crossed = pct / step != seen / step;  // into a new step since the last call
        seen = pct;
        if (!crossed) return;
        if (!printed && std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
                                .count() < after_seconds)
            return;
        printed = true;
        std::fprintf(stderr, "%s%s: %3d%% of %.2f GB%s", tty ? "\r" : "", what.c_str(), pct,
                     double(total) / 1e9, tty && pct < 100 ? "" : "\n");
        std::fflush(stderr);
    };
}

ModelOptions model_options_from(const Args& a) {
    ModelOptions o;
    if (!a.positional().empty())
        o.load_progress = progress_printer("loading " + a.positional()[0], 1.0);
    o.threads = int(a.integer("threads", 0));
    if (o.threads < 0 || o.threads > 1024) throw UsageError("--threads must be between 0 and 1024");
    const unsigned cpus = std::thread::hardware_concurrency();
    if (cpus > 0 && unsigned(o.threads) > cpus)  // allowed (a user may know better), but say so
        std::fprintf(stderr,
                     "nextn: warning: --threads %d is more than the %u hardware threads here; the "
                     "workers will take turns on the cores and every matmul waits for the slowest\n",
                     o.threads, cpus);
    refuse_contradicting_load_flags(a);
    o.load_mtp = !a.has("no-mtp");
    o.draft_model = a.str("draft-model");
    std::string q = a.str("quant", "native");
    o.int8_activations = !a.has("f32-activations");
    o.bf16_activations = a.has("bf16-activations");
    if (o.bf16_activations && !kernels().bf16_dot_fast)
        std::fprintf(stderr,
                     "nextn: note: --bf16-activations: the %s kernel table has no bf16 dot "
                     "product (that needs the avx512 table on a CPU with AVX512_BF16); bf16 "
                     "weights keep f32 activations\n",
                     kernels().isa);
    if (q == "native") {
        o.matrix_type = WType::Native;
    } else if (q == "f32") {
        o.matrix_type = WType::F32;
    } else if (q == "bf16") {
        o.matrix_type = WType::BF16;
    } else if (q == "q8_0") {
        o.matrix_type = WType::Q8_0;
    } else if (q == "q4" || q == "q4_0") {
        o.matrix_type = WType::Q4_0;
    } else if (q == "q4_k_m" || q == "q2_k") {
        if (!a.has("synthetic"))  // the flag is bench's, so every other command lands here
            throw UsageError("--quant " + q +
                             " builds synthetic models (nextn bench --synthetic NAME); a checkpoint "
                             "is not requantized to it: a GGUF file of that type loads as it is "
                             "(--quant native)");
        if (q == "q4_k_m")
            o.q4_k_m = true;  // the types: SyntheticOptions (synthetic models only)
        else
            o.matrix_type = WType::Q2_KR;  // Q2_K's only form
    } else {
        throw UsageError("--quant: unknown type '" + q +
                         "' (supported: native, f32, bf16, q8_0, q4; q4_k_m and q2_k for synthetic models)");
    }
    try {
        o.mtp_input = parse_mtp_input(a.str("mtp-input", "post-norm"));
    } catch (const Error& e) {
        throw UsageError(std::string("--mtp-input: ") + e.what());
    }
    try {
        o.kv_cache_type = parse_kv_cache_type(a.str("kv-type", "f32"));
    } catch (const Error& e) {
        throw UsageError(std::string("--kv-type: ") + e.what());
    }
    o.draft_vocab = a.integer("draft-vocab", -1);  // -1: auto, ModelOptions's value, not a flag's
    if (a.has("draft-vocab") && o.draft_vocab < 0)
        throw UsageError("--draft-vocab must be >= 0 (0 = whole vocabulary), got " +
                         std::to_string(o.draft_vocab));
    o.draft_head_type = std::nullopt;  // auto unless --draft-quant says otherwise
    if (a.has("draft-quant")) {
        const std::string t = a.str("draft-quant");
        if (t == "native") {
            o.draft_head_type = WType::Native;
        } else if (t == "f32" || t == "bf16" || t == "q8_0" || t == "q8" || t == "q4" || t == "q4_0") {
            o.draft_head_type = parse_wtype(t);
        } else {
            throw UsageError("--draft-quant: unknown type '" + t +
                             "' (supported: native, f32, bf16, q8_0, q4)");
        }
    }
    return o;
}

void refuse_contradicting_load_flags(const Args& a) {
    // An empty path would mean "no drafter": the run would go on without the one asked for.
    if (a.has("draft-model") && a.str("draft-model").empty())
        throw UsageError("--draft-model: the path is empty");
    if (a.has("no-mtp") && a.has("draft-model"))
        throw UsageError("--no-mtp and --draft-model contradict each other");
    if (a.has("bf16-activations") && a.has("f32-activations"))
        throw UsageError("--bf16-activations and --f32-activations contradict each other");
}

namespace {

// The flag that sets a SamplerParams field, for validate()'s messages ("--top-k must be ...").
std::string flag_of(const char* field) {
    static constexpr std::pair<const char*, const char*> kFlagOf[] = {
        {"temperature", "--temp"},         {"top_k", "--top-k"},
        {"top_p", "--top-p"},              {"min_p", "--min-p"},
        {"penalty_last_n", "--repeat-last-n"}, {"repeat_penalty", "--repeat-penalty"},
        {"presence_penalty", "--presence-penalty"}, {"frequency_penalty", "--frequency-penalty"},
    };
    for (const auto& [f, flag] : kFlagOf)
        if (std::string_view(f) == field) return flag;
    return std::string("sampling: ") + field;
}

// An integer flag that must fit an int32 field (a larger value would wrap).
int32_t int32_flag(const Args& a, const char* name, int64_t fallback) {
    const int64_t v = a.integer(name, fallback);
    if (v < INT32_MIN || v > INT32_MAX)
        throw UsageError(std::string("--") + name + " " + std::to_string(v) + " is out of range");
    return int32_t(v);
}

// "ID+BIAS" / "ID-BIAS" (BIAS a number or inf; "ID-inf" bans the token), llama.cpp's form.
std::pair<int32_t, float> parse_logit_bias(const std::string& v) {
    const auto bad = [&] {
        return UsageError(
            "--logit-bias: expected TOKEN_ID+BIAS or TOKEN_ID-BIAS (e.g. 15043+1.5, 15043-inf), "
            "got '" +
            v + "'");
    };
    const size_t sign = v.find_first_of("+-");
    if (sign == 0 || sign == std::string::npos || sign + 1 == v.size()) throw bad();
    for (size_t i = 0; i < sign; ++i)
        if (!std::isdigit(static_cast<unsigned char>(v[i]))) throw bad();
    if (sign > 9) throw bad();  // more digits than any vocabulary
    const int32_t id = int32_t(std::stol(v.substr(0, sign)));
    const std::string magnitude = v.substr(sign + 1);
    float bias = 0;
    if (magnitude == "inf") {
        if (v[sign] == '+')
            throw UsageError("--logit-bias: +inf is not a bias (only -inf, which bans the token)");
        bias = -INFINITY;
    } else {
        size_t used = 0;
        try {
            bias = std::stof(magnitude, &used);
        } catch (const std::exception&) {
            throw bad();
        }
        if (used != magnitude.size() || !std::isfinite(bias) || magnitude[0] == '+' ||
            magnitude[0] == '-')
            throw bad();
        if (v[sign] == '-') bias = -bias;
    }
    return {id, bias};
}

}  // namespace

bool random_seed_requested(const Args& a) { return a.integer("seed", 0) == -1; }

SamplerParams sampler_params_from(const Args& a) {
    SamplerParams p;
    p.temperature = float(a.number("temp", 0.0));
    p.top_k = int32_flag(a, "top-k", 0);
    p.top_p = float(a.number("top-p", 1.0));
    p.min_p = float(a.number("min-p", 0.0));
    p.repeat_penalty = float(a.number("repeat-penalty", 1.0));
    p.penalty_last_n = int32_flag(a, "repeat-last-n", 64);
    p.presence_penalty = float(a.number("presence-penalty", 0.0));
    p.frequency_penalty = float(a.number("frequency-penalty", 0.0));
    for (const std::string& v : a.all("logit-bias")) {
        const auto [id, bias] = parse_logit_bias(v);
        p.logit_bias[id] += bias;  // the same id twice adds up, as repeated biases would
    }
    // -1 is llama.cpp's "pick one at random"; the pick is reported so that the text can be had
    // again.
    const int64_t seed = a.integer("seed", 0);
    if (seed < -1)
        throw UsageError("--seed must be -1 (random) or at least 0, got " + std::to_string(seed));
    p.seed = seed == -1 ? std::random_device{}() : uint64_t(seed);
    try {
        p.validate(flag_of);
    } catch (const std::exception& e) {
        throw UsageError(e.what());
    }
    return p;
}

void warn_if_not_utf8(std::string_view text, const std::string& what) {
    if (!utf8::is_valid(text))
        std::fprintf(
            stderr,
            "warning: %s is not valid UTF-8; each invalid byte sequence is read as U+FFFD\n",
            what.c_str());
}

int64_t token_count_flag(const Args& a, const std::string& name, int64_t fallback, int64_t min) {
    constexpr int64_t kMaxTokens = int64_t(1) << 44;
    const int64_t v = a.integer(name, fallback);
    if (v < min || v > kMaxTokens)
        throw UsageError("--" + name + " must be between " + std::to_string(min) + " and " +
                         std::to_string(kMaxTokens) + " (got " + std::to_string(v) + ")");
    return v;
}

int64_t context_from(const Args& a, int64_t wanted, const ModelConfig& config) {
    const int64_t limit = config.max_positions;  // 0: the checkpoint states none
    if (!a.has("ctx")) return limit > 0 ? std::min(wanted, limit) : wanted;
    const int64_t ctx = a.integer("ctx", wanted);
    if (limit > 0 && ctx > limit)
        throw UsageError("--ctx " + std::to_string(ctx) + " is more than the model's context length (" +
                         std::to_string(limit) + " tokens)");
    return ctx;
}

}  // namespace nextn::cli
