// nextn bench MODEL | --synthetic NAME: machine read bandwidth, prefill and plain decode speed,
// the verify cost curve cost(N)/cost(1) of one trunk forward of width N, and MTP decode at
// depths 1..4. Synthetic models (src/model/synthetic.h) give the real shapes without a download,
// with a random MTP head (the floor of speculation) or a perfect one (its ceiling).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <random>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/cpu_info.h"
#include "core/error.h"
#include "kernels/int8_dot.h"
#include "kernels/measure.h"
#include "model/synthetic.h"
#include "spec/depth_controller.h"
#include "spec/mtp_drafter.h"
#include "spec/speculation_model.h"
#include "spec/speculative_decoder.h"

namespace nextn::cli {

namespace {

// How much faster than the large read probe a buffer the size of the weights must read for
// bench to call them cache-served: the probes of one size spread about 10% on a shared VM.
constexpr double kCacheServedRatio = 1.25;

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Sum of f(matrix) over the matrices one trunk token multiplies (every matrix once; MoE: router
// and the used experts), with or without the LM head.
double sum_per_token(const Qwen35Model& m, const std::function<double(const WeightMatrix&)>& f,
                     bool with_lm_head) {
    const ModelWeights& w = m.weights();
    double total = with_lm_head ? f(w.lm_head) : 0.0;
    for (const auto& l : w.layers) {
        for (const WeightMatrix* x : {&l.in_qkv, &l.in_z, &l.in_b, &l.in_a, &l.out_proj, &l.q_proj,
                                      &l.k_proj, &l.v_proj, &l.o_proj, &l.ffn.gate, &l.ffn.up,
                                      &l.ffn.down, &l.ffn.router, &l.ffn.shared_gate,
                                      &l.ffn.shared_up, &l.ffn.shared_down})
            if (!x->empty()) total += f(*x);
        if (l.ffn.moe && !l.ffn.experts.empty()) {
            const auto& e = l.ffn.experts[0];
            total += m.config().n_experts_used * (f(e.gate) + f(e.up) + f(e.down));
        }
    }
    return total;
}

// Bytes of weights one decode token streams.
double bytes_per_token(const Qwen35Model& m) {
    return sum_per_token(m, [](const WeightMatrix& x) { return double(x.row_bytes) * double(x.rows); }, true);
}

// Multiply-adds of the matrices one prefill token multiplies (no LM head: bench's prefill asks
// for no logits). Attention and the recurrence are left out: at bench's prompt lengths they are
// a few percent of the matmuls (the 0.8B at 128 tokens: about 4%).
double matmul_macs_per_prefill_token(const Qwen35Model& m) {
    return sum_per_token(m, [](const WeightMatrix& x) { return double(x.rows) * double(x.cols); }, false);
}

// Bytes of sequence state one decode token moves at `position` (its KV cache length), besides
// the weights: each Gated-DeltaNet layer reads and writes its fp32 recurrent state and conv
// window; each attention layer reads its K and V cache (--kv-type) and appends one position.
double state_bytes_per_token(const ModelConfig& c, KvCacheType kv, int64_t position) {
    const double f = sizeof(float);
    const double kv_row = double(kv_row_bytes(kv, c.head_dim));  // one head, one position
    const double gdn = 2.0 * f * (double(c.gdn_v_heads) * c.gdn_k_dim * c.gdn_v_dim +
                                  double(c.conv_kernel - 1) * double(c.gdn_conv_dim()));
    const double attention = 2.0 * kv_row * double(c.n_kv_heads) * double(position + 1);
    double total = 0.0;
    for (const bool linear : c.is_linear) total += linear ? gdn : attention;
    return total;
}

// The weight type holding most of the trunk's bytes: what --quant (or the file) really gave.
WType dominant_weight_type(const ModelWeights& w) {
    std::map<WType, double> bytes;
    for_each_matrix(w, [&](const WeightMatrix& x) { bytes[x.type] += double(x.nbytes()); });
    WType best = WType::F32;
    double most = -1;
    for (const auto& [type, b] : bytes)
        if (b > most) most = b, best = type;
    return best;
}

struct BenchModel {
    LoadedModel lm;
    std::string name;     // path, or synthetic:NAME
    std::string draft;    // synthetic draft variant, or the checkpoint's MTP head source
    ModelOptions options;  // as parsed from the flags (the draft head is restored from them)
};

BenchModel open_bench_model(const Args& a) {
    const bool synthetic = a.has("synthetic");
    const ModelOptions mo = model_options_from(a);
    if (synthetic == (a.positional().size() == 1) || a.positional().size() > 1)
        throw UsageError("give either MODEL or --synthetic NAME (not both, not neither)");
    if (!synthetic) {
        if (a.has("draft")) throw UsageError("--draft applies to --synthetic models only");
        const auto t0 = Clock::now();
        BenchModel m{load_model(a.positional()[0], mo), a.positional()[0], "", mo};
        m.draft = m.lm.model->has_mtp() ? m.lm.checkpoint.mtp_source : "none";
        std::fprintf(stderr, "loaded in %.1f s\n", since(t0));
        return m;
    }
    if (a.has("draft-model")) throw UsageError("--draft-model does not apply to --synthetic models");
    SyntheticOptions so;
    so.matrix_type = a.has("quant") ? mo.matrix_type : WType::Q8_0;
    // Block types are held as the kernels multiply them best here (the int8-dot layouts where
    // the table has int8 kernels).
    so.matrix_type = kernel_storage_type(so.matrix_type, mo.int8_activations, mo.bf16_activations);
    if (mo.matrix_type == WType::Q2_KR && !int8_kernels_in_use(mo.int8_activations))
        throw UsageError("--quant q2_k needs the int8 kernels (a CPU with AVX2, or aarch64, without "
                         "--f32-activations): elsewhere a Q2_K file's matrices are widened to f32");
    if (mo.q4_k_m) {
        // Held as the loader holds a Q4_K_M file's tensors on this table (model/weights.cpp).
        if (!int8_kernels_in_use(mo.int8_activations))
            throw UsageError("--quant q4_k_m needs the int8 kernels (a CPU with AVX2, or aarch64, "
                             "without --f32-activations): elsewhere a Q4_K_M file's matrices are "
                             "widened to f32");
        so.q4_k_m = true;
        so.q4_k_type = k_quant_storage_type(DType::Q4_K, kernels().row_groups);
        so.q6_k_type = k_quant_storage_type(DType::Q6_K, kernels().row_groups);
    }
    if (a.has("no-mtp") && a.has("draft") &&
        a.str("draft") != "none")  // --draft none agrees with it
        throw UsageError("--no-mtp and --draft contradict each other");
    try {
        so.draft = a.has("no-mtp") ? SyntheticDraft::None
                                   : parse_synthetic_draft(a.str("draft", "random"));
    } catch (const Error& e) {
        throw UsageError(std::string("--draft: ") + e.what());
    }
    const std::string name = a.str("synthetic");
    ModelConfig config;
    try {
        config = synthetic_config(name);
    } catch (const Error& e) {
        throw UsageError(std::string("--synthetic: ") + e.what());
    }
    const std::string types = so.q4_k_m ? std::string("q4_k_m: ") + wtype_name(so.q4_k_type) +
                                              " and " + wtype_name(so.q6_k_type)
                                        : wtype_name(so.matrix_type);
    so.progress = progress_printer("building " + name + " (" + types + ", " +
                                       synthetic_draft_name(so.draft) + " draft head)",
                                   0.0);
    const auto t0 = Clock::now();
    BenchModel m{load_synthetic_model(config, name, so, mo.threads), "synthetic:" + name,
                 synthetic_draft_name(so.draft), mo};
    apply_model_options(*m.lm.model, mo);  // the same draft head a real checkpoint gets
    std::fprintf(stderr, "built in %.1f s\n", since(t0));
    return m;
}

// What a round's drafting at a fixed depth consists of, for bench's round line ("" for none).
std::string drafting_parts(int depth) {
    if (depth <= 0) return "";
    std::string parts = " (the last round's pairs flushed";
    if (depth > 1)
        parts += ", then " + std::to_string(depth - 1) +
                 (depth == 2 ? " chained step" : " chained steps");
    return parts + ")";
}

}  // namespace

int cmd_bench(const std::vector<std::string>& argv) {
    std::vector<FlagSpec> specs = {
        {"json", "", false, "print the results as one JSON object"},
        {"prompt-tokens", "", true,
         "prefill length (default 128); the verify cost curve, rollback, decode and MTP runs "
         "continue from that context, so a long prompt measures them all at long context",
         "N"},
        {"decode-tokens", "", true, "tokens per decode measurement (default 64)", "N"},
        {"repeat", "", true,
         "runs per prefill and decode measurement, the fastest reported (default 3)", "R"},
        {"synthetic", "", true,
         "benchmark a model with random weights and real shapes instead of MODEL: qwen3.5-0.8b, "
         "qwen3.5-2b, qwen3.5-9b, qwen3.5-35b-a3b (--quant defaults to q8_0 here)",
         "NAME"},
        {"draft", "", true,
         "synthetic MTP head: random (default; drafts almost never accepted), perfect (every "
         "draft accepted: the ceiling of speculation) or none",
         "KIND"},
        {"help", "h", false, "show this help"},
    };
    for (auto& x : model_flags()) specs.push_back(x);
    Args a(specs, argv);
    // Without any model the help is the answer (exit 2); two models are an error naming that.
    if (a.has("help") || (a.positional().empty() && !a.has("synthetic"))) {
        std::cout << "usage: nextn bench MODEL [options]\n"
                  << "       nextn bench --synthetic NAME [--quant TYPE] [--draft random|perfect|none] [options]\n\n"
                  << "Measures read bandwidth (over a buffer of 4x the last-level cache, at least\n"
                  << "1 GB, so that the cache serves none of it) and the cores' compute peak,\n"
                  << "prefill (its matmuls' work as a share of that peak), decode speed (between\n"
                  << "read probes, for its share of the bandwidth, and back to back, as a user\n"
                  << "decodes), the verify cost curve cost(N)/cost(1) for N = 1..8 (cost(1): a\n"
                  << "plain decoding step; N >= 2: a verify forward of N positions), the cost of\n"
                  << "rolling a verify back, and MTP decode at depths 1..4 (greedy; its speed-up\n"
                  << "over the back-to-back plain decode), each with where a round's time went\n"
                  << "(drafting, verify, sampling and acceptance, commit) and next to its\n"
                  << "modelled speed-up (tokens per round from the run's per-position acceptance\n"
                  << "over the round's cost: cost(k+1)/cost(1) + k draft steps).\n"
                  << "A synthetic model is built in memory with seeded random weights of the\n"
                  << "release's shapes (it fails up front when MemAvailable is too small).\n\n"
                  << Args::help_text(specs);
        return a.has("help") ? 0 : 2;
    }
    const int64_t n_prompt = token_count_flag(a, "prompt-tokens", 128, 1);
    // The first token comes from the prefill: N tokens time N - 1 decode steps.
    const int64_t n_decode = token_count_flag(a, "decode-tokens", 64, 2);
    const int64_t repeat = a.integer("repeat", 3);
    if (repeat < 1 || repeat > 100) throw UsageError("--repeat must be between 1 and 100");
    BenchModel bm = open_bench_model(a);
    LoadedModel& lm = bm.lm;
    const Qwen35Model& model = *lm.model;
    const int64_t V = model.config().vocab_size;
    const bool json = a.has("json");
    if (const int64_t limit = model.config().max_positions;
        limit > 0 && n_prompt + n_decode > limit)
        std::fprintf(
            stderr,
            "note: --prompt-tokens %lld + --decode-tokens %lld run past the model's context length "
            "(%lld tokens); those positions are timed all the same\n",
            (long long)n_prompt, (long long)n_decode, (long long)limit);
    // The report is the command's output: on stdout, as every command's results are (with
    // --json the JSON alone is); load times and notes stay on stderr.
    auto say = [&](const char* fmt, auto... xs) {
        if (!json) {
            std::fprintf(stdout, fmt, xs...);
            std::fflush(stdout);  // each line as it is measured, also into a pipe
        }
    };
    nlohmann::ordered_json out;
    const WType quant = dominant_weight_type(model.weights());
    out["model"] = bm.name;
    // The values' type (q8_0, q4_0, ...) and, separately, how activations meet them.
    const bool int8 = is_int8_dot_type(quant), bf16_dot = quant == WType::BF16D;
    // The kind of multiply-add the matmuls run: also the compute peak prefill is held against.
    const PeakKind peak_kind = int8 ? PeakKind::Int8 : bf16_dot ? PeakKind::Bf16 : PeakKind::F32;
    const char* activations = peak_kind_name(peak_kind);
    const char* values = bm.options.q4_k_m    ? "q4_k_m"  // the mix, not its dominant type
                         : quant == WType::Q2_KR ? "q2_k"
                         : bf16_dot              ? wtype_name(WType::BF16)
                                           : wtype_name(int8_dot_source_type(quant));
    out["quant"] = values;
    out["activations"] = activations;
    out["draft"] = bm.draft;
    out["kv_type"] = kv_cache_type_name(model.kv_cache_type());
    say("model: %s, %s weights, %s activations, %s KV cache, MTP head: %s\n", bm.name.c_str(), values,
        activations, kv_cache_type_name(model.kv_cache_type()), bm.draft.c_str());
    out["isa"] = kernels().isa;
    const std::string cpu = cpu_model_name();
    out["cpu"] = cpu;
    out["threads"] = lm.pool->size();
    // The caches first (zero pages: no memory until written), so that lengths this machine
    // cannot hold fail before the probes rather than after them.
    SequenceState state = [&] {
        try {
            return model.new_state(n_prompt + n_decode + 48, 9);  // + rollback's 25, cost(1)'s 7
        } catch (const Error& e) {
            fail("--prompt-tokens ", n_prompt, " with --decode-tokens ", n_decode, ": ", e.what());
        }
    }();

    // Every probe reads a buffer far larger than the last-level cache (measure.h says why), the
    // same buffer each time, touched once; released once the last probe has read it.
    const size_t probe_bytes = read_probe_bytes();
    std::optional<ReadProbe> probe(std::in_place, *lm.pool, probe_bytes);
    const double bw = probe->measure_gbs(kernels());
    say("read bandwidth: %.1f GB/s over a %.0f MB buffer (%s%s, %d threads, %s)\n", bw, double(probe_bytes) / 1e6,
        kernels().isa, kernels().amx_from_width > 0 ? " with AMX tiles" : "", lm.pool->size(), cpu.c_str());
    // How the decode-width matmuls prefetch their weights, and whether two ways are timed
    // against each other forward by forward (kernels/kernels.h, model/kernel_chooser.h).
    const KernelTable& table = model.kernel_table();
    if (const std::string fetch = narrow_fetch_summary(table); !fetch.empty())
        say("decode-width matmuls prefetch: %s%s\n", fetch.c_str(),
            model.kernels_timed() ? ", each forward shape on the faster "
                                    "(NEXTN_ROW_GROUP_FETCH=cursor|streams fixes one)"
                                  : "");
    out["narrow_fetch"] = model.kernels_timed() ? "timed" : table.narrow_fetch;
    out["read_probe_bytes"] = probe_bytes;
    out["first_read_probe_gbs"] =
        bw;  // the report's first line (the decode's own probes come later)

    std::mt19937 rng(1234);
    std::vector<int32_t> prompt(static_cast<size_t>(n_prompt));
    for (auto& t : prompt) t = int32_t(rng() % uint32_t(V));

    // Prefill, the fastest of `repeat` runs, and its matmuls' work against the cores' peak for
    // the activations' kind of multiply-add (measured here, as the bandwidth is). Each run after
    // the first starts from the reset state, whose pages the first wrote (as llama-bench's prompt
    // runs reuse their context); one timed run had swung by up to 15% from one bench to the next.
    double prefill_s = 1e30;
    Clock::time_point t0;
    for (int64_t r = 0; r < repeat; ++r) {
        if (r > 0) state.reset();
        t0 = Clock::now();
        model.forward(state, prompt.data(), n_prompt, {});
        prefill_s = std::min(prefill_s, since(t0));
    }
    const double prefill_ops = 2.0 * matmul_macs_per_prefill_token(model) * double(n_prompt) / prefill_s;
    out["prefill_matmul_ops_per_s"] = prefill_ops;
    out["prefill_runs"] = repeat;
    // The scalar table (the oracle) has no peak worth the name: its probe's std::fma chains run
    // slower than the compiler's code for its plain loops.
    if (&kernels() == &reference_kernels()) {
        say("prefill (fastest of %d): %.1f tok/s; its matmuls %.3g G %s ops/s (the scalar table: "
            "no compute peak to compare with)\n",
            int(repeat), double(n_prompt) / prefill_s, prefill_ops / 1e9, activations);
    } else {
        const double peak_ops = measure_compute_peak_ops(kernels(), *lm.pool, peak_kind);
        say("prefill (fastest of %d): %.1f tok/s; its matmuls %.3g G %s ops/s = %.0f%% of the "
            "cores' %s peak (%.3g G ops/s, measured with this ISA's %s on %d threads)\n",
            int(repeat), double(n_prompt) / prefill_s, prefill_ops / 1e9, activations,
            100.0 * prefill_ops / peak_ops, activations, peak_ops / 1e9, peak_probe_name(peak_kind),
            lm.pool->size());
        out["compute_peak_kind"] = activations;
        out["compute_peak_ops_per_s"] = peak_ops;
        out["prefill_peak_pct"] = 100.0 * prefill_ops / peak_ops;
    }

    // Verify cost curve: one left-open forward of width N, rolled back; the fastest of 7.
    // cost(1) is a step of plain decoding as it runs, committed at once (the recurrent state
    // updated in place: a few percent cheaper than a width-1 forward left open), so cost(N) /
    // cost(1) is what a round of N positions costs against decoding one token. The widths take
    // turns (round after round over N = 1..8) rather than each running its repeats back to
    // back: on a shared machine a slow spell then lands on every width alike instead of on one
    // end of the curve (back to back, cost(8) read 1.29 in one run and 2.09 in the next).
    constexpr int kMaxWidth = 8, kRounds = 7;
    std::vector<double> cost(kMaxWidth, 1e30);
    std::vector<float> logits(size_t(kMaxWidth * V));
    std::vector<std::vector<int32_t>> batches(kMaxWidth);
    for (int n = 1; n <= kMaxWidth; ++n) {
        batches[size_t(n - 1)].resize(size_t(n));
        for (auto& t : batches[size_t(n - 1)]) t = int32_t(rng() % uint32_t(V));
    }
    for (int round = 0; round < kRounds; ++round) {
        for (int n = 1; n <= kMaxWidth; ++n) {
            t0 = Clock::now();
            const bool open = n > 1;
            model.forward(state, batches[size_t(n - 1)].data(), n, {nullptr, logits.data(), n}, open);
            cost[size_t(n - 1)] = std::min(cost[size_t(n - 1)], since(t0));
            if (open) model.commit(state, 0);  // drop it: the verify forwards start from one state
        }
    }
    std::vector<double> ratios;
    for (double c : cost) ratios.push_back(c / cost[0]);
    say("verify cost cost(N)/cost(1), N=1..8:");
    for (double r : ratios) say(" %.2f", r);
    say("\n");

    // Rollback: a width-5 verify that keeps n of its positions re-runs the Gated-DeltaNet
    // recurrence over those n on commit (keeping all five costs nothing): n = 1 when every
    // draft is rejected, n = 4 (the most) when only the last one is. In units of cost(1).
    auto rollback_cost = [&](int64_t keep) {
        std::vector<int32_t> batch(5);
        for (auto& t : batch) t = int32_t(rng() % uint32_t(V));
        double best = 1e30;
        for (int rep = 0; rep < 5; ++rep) {
            model.forward(state, batch.data(), 5, {nullptr, logits.data(), 5}, true);
            t0 = Clock::now();
            model.commit(state, keep);
            best = std::min(best, since(t0));
        }
        return best / cost[0];
    };
    const double rollback_keep1 = rollback_cost(1), rollback_keep4 = rollback_cost(4);
    say("rollback of a width-5 verify, x cost(1): %.3f keeping 1 position, %.3f keeping 4\n",
        rollback_keep1, rollback_keep4);

    // Plain decode and MTP decode at depths 1..4 and auto (greedy); each the fastest of
    // `repeat` runs (other processes on the machine only ever slow a run down).
    // `warm`: a controller carried over from earlier runs (as a server keeps one per model);
    // otherwise an adaptive run starts cold, as a first request on this model does.
    auto decode_once = [&](int depth, bool adaptive, DepthController* warm) {
        SequenceState s = model.new_state(n_prompt + n_decode + 16, depth + 1);
        std::unique_ptr<Drafter> d;
        if (depth > 0) d = std::make_unique<MtpDrafter>(model, s);
        DepthController cold(depth);
        DepthController& controller = warm ? *warm : cold;
        DecodeOptions o;
        o.max_new_tokens = n_decode;
        o.draft_depth = depth;
        if (adaptive) o.controller = &controller;
        DecodeStats stats = generate(model, s, d.get(), prompt, o, [](const EmittedToken&) { return true; });
        return std::make_pair(stats, adaptive ? controller.best_depth() : depth);
    };
    // after_run(is_best) runs after each run, told whether that run is the fastest so far.
    auto decode = [&](int depth, bool adaptive = false, int* settled = nullptr,
                      DepthController* warm = nullptr,
                      const std::function<void(bool)>& after_run = nullptr) {
        DecodeStats best;
        for (int64_t r = 0; r < repeat; ++r) {
            auto [stats, depth_after] = decode_once(depth, adaptive, warm);
            const bool is_best = r == 0 || stats.decode_tokens_per_second() > best.decode_tokens_per_second();
            if (is_best) {
                best = stats;
                if (settled) *settled = depth_after;
            }
            if (after_run) after_run(is_best);
        }
        return best;
    };
    auto acceptance_d1 = [](const DecodeStats& s) {
        return s.drafted.empty() || !s.drafted[0] ? 0.0 : double(s.accepted[0]) / double(s.drafted[0]);
    };
    // Plain decode: every run between two probes of the machine's read rate, and the fastest
    // run over the better of its own two probes. The rate of this shared VM swings from 35 to
    // 66 GB/s within a minute; probes only at the start and the end put one decode at 95% of
    // a probe from a slow spell and the next at 45% of one from a fast spell. The better of the
    // two probes, never their mean: a ratio over a slow probe would overstate the decode.
    std::vector<double> probes{probe->measure_gbs(kernels())};
    double bw_best = 0.0;
    const DecodeStats plain = decode(0, false, nullptr, nullptr, [&](bool is_best) {
        probes.push_back(probe->measure_gbs(kernels()));
        if (is_best) bw_best = std::max(probes[probes.size() - 2], probes.back());
    });
    const double decode_tps = plain.decode_tokens_per_second();
    const double weight_bytes = bytes_per_token(model);
    const double gbs = weight_bytes * decode_tps / 1e9;
    const auto [probe_min, probe_max] = std::minmax_element(probes.begin(), probes.end());
    // The state's traffic, at the run's mean KV length, reported apart: the weights alone are
    // what the issue's bandwidth target and earlier figures count.
    const double state_gbs =
        state_bytes_per_token(model.config(), model.kv_cache_type(), n_prompt + n_decode / 2) * decode_tps / 1e9;
    say("decode: %.1f tok/s, %.2f GB/s of weights = %.0f%% of read bandwidth (%.1f GB/s, the "
        "better of the probes just before and after that run; all %zu probes %.1f-%.1f); with "
        "the recurrent state and KV cache it moves (+%.2f GB/s): %.0f%%\n",
        decode_tps, gbs, 100.0 * gbs / bw_best, bw_best, probes.size(), *probe_min, *probe_max,
        state_gbs, 100.0 * (gbs + state_gbs) / bw_best);
    // A model whose weights fit in the cache is read from cache, not memory: its percentages
    // exceed 100 (the embedded tiny model's 10 MB read 150%) and measure nothing. Whether they
    // fit is measured, not read off sysfs alone: a VM's sysfs names the host's whole last-level
    // cache (503 MB on a 2-core Xeon slice whose reads fall to the memory's rate beyond ~100 MB,
    // so the 0.8B's 424 MB were called cache-resident when they were not). The probe over a
    // buffer the size of the weights reads from wherever they would; well above the large
    // probe's rate, they are served by cache. Weights larger than the cache reported are at
    // most partly served by it: on the 2-core Xeon VM with 260 MB of L3, a 423 MB buffer read
    // 1.34x the 1 GB probe's rate in some spells while the 0.8B's decode stayed below that
    // probe's rate. Bench says so, with the decode's share of that rate too.
    const size_t weight_sized_bytes =
        std::clamp<size_t>(size_t(weight_bytes), size_t(1) << 20, probe_bytes);
    const double weight_sized_gbs = probe->measure_gbs(kernels(), weight_sized_bytes);
    probe.reset();
    const size_t cache_bytes = reported_last_level_cache_bytes();
    const bool cache_served = weight_sized_gbs >= kCacheServedRatio * bw_best;
    const bool larger_than_cache = cache_bytes > 0 && weight_bytes > double(cache_bytes);
    const bool fits_in_cache = cache_served && !larger_than_cache;
    // Said in every case, so that the verdict can always be checked against its rates; a note
    // where the cache serves the buffer.
    say("%sa buffer the size of the %.0f MB of weights a token reads is read at %.1f GB/s, %.2fx "
        "the large probe's rate: ",
        cache_served ? "note: " : "", weight_bytes / 1e6, weight_sized_gbs,
        weight_sized_gbs / bw_best);
    if (fits_in_cache)
        say("decode reads the weights from cache, and the percentages above do not measure memory "
            "streaming\n");
    else if (cache_served)
        say("the last-level cache (%.0f MB reported) serves part of such a buffer now, and may "
            "serve part of the weights; against that rate decode reaches %.0f%%\n",
            double(cache_bytes) / 1e6, 100.0 * gbs / weight_sized_gbs);
    else
        say("not served by cache\n");
    // Plain decode again, runs back to back with no probe between them, just before the MTP
    // runs and timed as they are: the MTP speed-ups divide by this. Over the probed runs they
    // mixed two ways of timing and two moments of a VM whose rate drifts: on the 2-core Xeon VM
    // auto settled on depth 0 (plain decoding, with a head that never drafted right) read
    // 0.99-1.12x "plain", median 1.03, in five benches. The two plain figures of one bench
    // differ by 0.92-1.07x there.
    // The probed rate stays the one the bandwidth shares above divide, since those pair a
    // decode with the machine's read rate at that moment.
    const double back_to_back_tps = decode(0).decode_tokens_per_second();
    say("decode back to back (no probe between runs, as the MTP runs are timed): %.1f tok/s "
        "(%.2fx the probed runs)\n",
        back_to_back_tps, back_to_back_tps / decode_tps);
    out["weight_bytes_per_token"] = weight_bytes;
    out["last_level_cache_bytes"] = cache_bytes;
    out["weight_sized_read_gbs"] = weight_sized_gbs;
    out["bandwidth_pct_of_weight_sized_read"] = 100.0 * gbs / weight_sized_gbs;
    out["weights_fit_in_cache"] = fits_in_cache;
    out["prefill_tok_s"] = double(n_prompt) / prefill_s;
    out["decode_tok_s"] = decode_tps;
    out["decode_back_to_back_tok_s"] = back_to_back_tps;
    out["verify_cost"] = ratios;
    out["rollback_cost"] = {{"keep_1_of_5", rollback_keep1}, {"keep_4_of_5", rollback_keep4}};
    out["bandwidth_gbs"] = gbs;
    out["machine_read_bandwidth_gbs"] = bw_best;
    out["read_bandwidth_probes_gbs"] = probes;
    out["bandwidth_pct"] = 100.0 * gbs / bw_best;
    out["state_bandwidth_gbs"] = state_gbs;
    out["bandwidth_pct_with_state"] = 100.0 * (gbs + state_gbs) / bw_best;
    if (model.has_mtp()) {
        // One chained draft step (head forward + draft LM head) as a share of a trunk token,
        // with the configured draft head and with the full LM head; first, for the model of
        // each depth's speed-up below.
        Qwen35Model& m = *lm.model;
        const int64_t H = m.config().hidden_size;
        auto draft_step_cost = [&] {
            SequenceState s = m.new_state(n_prompt + 8, 1);
            std::vector<float> hidden(static_cast<size_t>(n_prompt * H)), h(static_cast<size_t>(H));
            std::vector<float> dl(static_cast<size_t>(m.draft_vocab()));
            m.forward(s, prompt.data(), n_prompt, {hidden.data(), nullptr, 0});
            // The fastest of at least 5 steps and 50 ms of them: a tiny model's step takes tens of
            // microseconds, and 5 of them had spread 0.15-1.7 trunk tokens between runs.
            double best_s = 1e30, spent = 0;
            for (int rep = 0; rep < 5 || (spent < 0.05 && rep < 10000); ++rep) {
                const int32_t tok = prompt[size_t(rep) % prompt.size()];
                t0 = Clock::now();
                m.mtp_forward(s, hidden.data() + (n_prompt - 1) * H, &tok, 1, n_prompt - 1,
                              {h.data(), dl.data(), 1});
                const double step = since(t0);
                best_s = std::min(best_s, step);
                spent += step;
            }
            return best_s / cost[0];
        };
        const int64_t draft_vocab = m.draft_vocab();
        const std::string draft_type = wtype_name(m.draft_lm_head().type);
        const bool reduced_head = draft_vocab < V || m.draft_lm_head().type != m.weights().lm_head.type;
        const double configured = draft_step_cost();
        m.set_draft_head(0, WType::Native);
        const double full = draft_step_cost();
        apply_model_options(m, bm.options);  // the configured head again, for the runs below

        nlohmann::ordered_json mtp = nlohmann::json::array();
        // depth > 0: a fixed depth, reported with its modelled speed-up.
        auto report = [&](const std::string& label, const DecodeStats& s, nlohmann::ordered_json row,
                          int depth = 0) {
            const double acc = acceptance_d1(s);
            say("mtp %s: %.1f tok/s (%.2fx plain), %.2f tokens/round, depth-1 acceptance %.0f%%\n",
                label.c_str(), s.decode_tokens_per_second(),
                s.decode_tokens_per_second() / back_to_back_tps, s.tokens_per_round(), 100.0 * acc);
            row["decode_tok_s"] = s.decode_tokens_per_second();
            row["speedup"] = s.decode_tokens_per_second() / back_to_back_tps;
            row["tokens_per_round"] = s.tokens_per_round();
            row["acceptance_d1"] = acc;
            // Where a round's time went: what the model below leaves out shows here (the
            // drafter's flush of the last round's pairs reads the MTP head from memory after the
            // verify has streamed the trunk, so it costs more than the chained steps the model
            // counts; the host's sampling; the commit).
            if (s.rounds > 0) {
                const auto per_round_ms = [&](double seconds) {
                    return 1e3 * seconds / double(s.rounds);
                };
                const DecodeStats::RoundTimes& t = s.round_times;
                const double total = per_round_ms(s.decode_seconds);
                const std::string steps = drafting_parts(depth);
                say("  a round: %.2f ms = drafting %.2f%s + verify %.2f + sampling and "
                    "acceptance %.2f + commit %.2f + %.2f else; %.2f plain tokens\n",
                    total, per_round_ms(t.draft), steps.c_str(), per_round_ms(t.verify),
                    per_round_ms(t.accept), per_round_ms(t.commit), total - per_round_ms(t.sum()),
                    total * 1e-3 * back_to_back_tps);
                row["round_ms"] = {{"draft", per_round_ms(t.draft)},
                                   {"verify", per_round_ms(t.verify)},
                                   {"accept", per_round_ms(t.accept)},
                                   {"commit", per_round_ms(t.commit)},
                                   {"total", total}};
            }
            if (depth > 0) {
                const SpeculationModel sm = speculation_model(s.drafted, s.accepted, depth, ratios, configured);
                say("  model: %.2f tokens/round from the per-position acceptance over a round costing "
                    "%.2f plain tokens (cost(%d) %.2f + %d x %.3f draft step) = %.2fx\n",
                    sm.tokens_per_round, sm.round_cost, depth + 1, ratios[size_t(depth)], depth,
                    configured, sm.speedup());
                row["model_tokens_per_round"] = sm.tokens_per_round;
                row["model_round_cost"] = sm.round_cost;
                row["model_speedup"] = sm.speedup();
            }
            mtp.push_back(row);
        };
        for (int depth = 1; depth <= 4; ++depth)
            report("depth " + std::to_string(depth), decode(depth), {{"depth", depth}}, depth);
        int settled = 0;
        DecodeStats adaptive = decode(4, true, &settled);
        report("auto (cold start, up to 4; settled on " + std::to_string(settled) + ")", adaptive,
               {{"depth", "auto"}, {"settled_depth", settled}});
        // The same after untimed runs have trained the controller: nearer the state a server
        // reaches (it keeps the controller across requests and saves it per model).
        constexpr int kWarmRuns = 4;
        DepthController warm(4);
        for (int r = 0; r < kWarmRuns; ++r) decode_once(4, true, &warm);
        int settled_warm = 0;
        DecodeStats adaptive_warm = decode(4, true, &settled_warm, &warm);
        report("auto (warm, after " + std::to_string(kWarmRuns) + " untimed runs; settled on " +
                   std::to_string(settled_warm) + ")",
               adaptive_warm, {{"depth", "auto-warm"}, {"settled_depth", settled_warm}});
        out["mtp"] = mtp;

        nlohmann::ordered_json head = {{"draft_vocab", draft_vocab},
                                       {"draft_head_type", draft_type},
                                       {"draft_step_cost", configured},
                                       {"full_head_draft_step_cost", full}};
        say("draft step cost (x one trunk token): %.3f with the %lld-token %s draft head, %.3f with "
            "the full LM head\n", configured, (long long)draft_vocab, draft_type.c_str(), full);
        if (reduced_head) {
            m.set_draft_head(0, WType::Native);
            DecodeStats with_full = decode(2);
            head["full_head_depth2_tok_s"] = with_full.decode_tokens_per_second();
            head["full_head_depth2_acceptance_d1"] = acceptance_d1(with_full);
            const double full_tps = with_full.decode_tokens_per_second();
            say("mtp depth 2 with the full LM head: %.1f tok/s (%.2fx plain), depth-1 acceptance %.0f%%\n",
                full_tps, full_tps / back_to_back_tps, 100.0 * acceptance_d1(with_full));
            apply_model_options(m, bm.options);
        }
        out["draft_head"] = head;
    }
    if (model.kernels_timed()) {
        const KernelChooser::Counts counts = model.kernel_choice_counts();
        const double all = double(std::max<int64_t>(1, counts.base + counts.alternative));
        say("timed forwards and MTP head steps: %lld on the %s (%.0f%%), %lld on %s (%.0f%%)\n",
            (long long)counts.base, table.narrow_fetch, 100.0 * double(counts.base) / all,
            (long long)counts.alternative, table.timed_alternative->narrow_fetch,
            100.0 * double(counts.alternative) / all);
        out["timed_forwards"] = {{table.narrow_fetch, counts.base},
                                 {table.timed_alternative->narrow_fetch, counts.alternative}};
    }
    if (json) std::cout << out.dump(2) << "\n";
    return 0;
}

}  // namespace nextn::cli
