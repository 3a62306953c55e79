// nextn bench MODEL: machine read bandwidth, prefill and plain decode speed, the verify cost
// curve cost(N)/cost(1) of one trunk forward of width N, and MTP decode at depths 1..4.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <random>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/error.h"
#include "kernels/measure.h"
#include "spec/mtp_drafter.h"
#include "spec/speculative_decoder.h"

namespace nextn::cli {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Bytes of weights one trunk token streams (every matrix once; MoE: router + used experts).
double bytes_per_token(const Qwen35Model& m) {
    const ModelWeights& w = m.weights();
    auto mb = [](const WeightMatrix& x) { return double(x.row_bytes) * double(x.rows); };
    double total = mb(w.lm_head);
    for (const auto& l : w.layers) {
        for (const WeightMatrix* x : {&l.in_qkv, &l.in_z, &l.in_b, &l.in_a, &l.out_proj, &l.q_proj,
                                      &l.k_proj, &l.v_proj, &l.o_proj, &l.ffn.gate, &l.ffn.up,
                                      &l.ffn.down, &l.ffn.router, &l.ffn.shared_gate,
                                      &l.ffn.shared_up, &l.ffn.shared_down})
            if (!x->empty()) total += mb(*x);
        if (l.ffn.moe && !l.ffn.experts.empty()) {
            const auto& e = l.ffn.experts[0];
            total += m.config().n_experts_used * (mb(e.gate) + mb(e.up) + mb(e.down));
        }
    }
    return total;
}

}  // namespace

int cmd_bench(const std::vector<std::string>& argv) {
    std::vector<FlagSpec> specs = {
        {"json", "", false, "print the results as one JSON object"},
        {"prompt-tokens", "", true, "prefill length (default 128)", "N"},
        {"decode-tokens", "", true, "tokens per decode measurement (default 64)", "N"},
        {"help", "h", false, "show this help"},
    };
    for (auto& x : model_flags()) specs.push_back(x);
    Args a(specs, argv);
    if (a.has("help") || a.positional().size() != 1) {
        std::cout << "usage: nextn bench MODEL [options]\n\n"
                  << "Measures read bandwidth, prefill and decode speed, the verify cost curve\n"
                  << "cost(N)/cost(1) for N = 1..8, and MTP decode at depths 1..4 (greedy).\n\n"
                  << Args::help_text(specs);
        return a.has("help") ? 0 : 2;
    }
    const int64_t n_prompt = a.integer("prompt-tokens", 128);
    const int64_t n_decode = a.integer("decode-tokens", 64);
    if (n_prompt < 1 || n_decode < 2) throw UsageError("bench: token counts too small");
    ModelOptions mo = model_options_from(a);
    LoadedModel lm = load_model(a.positional()[0], mo);
    const Qwen35Model& model = *lm.model;
    const int64_t V = model.config().vocab_size;
    const bool json = a.has("json");
    auto say = [&](const char* fmt, auto... xs) {
        if (!json) std::fprintf(stderr, fmt, xs...);
    };
    nlohmann::ordered_json out;
    out["isa"] = kernels().isa;
    out["threads"] = lm.pool->size();

    const double bw = measure_read_bandwidth_gbs(*lm.pool);
    say("read bandwidth: %.1f GB/s (%s, %d threads)\n", bw, kernels().isa, lm.pool->size());

    std::mt19937 rng(1234);
    std::vector<int32_t> prompt(static_cast<size_t>(n_prompt));
    for (auto& t : prompt) t = int32_t(rng() % uint32_t(V));

    // Prefill.
    SequenceState state = model.new_state(n_prompt + n_decode + 32, 9);
    auto t0 = Clock::now();
    model.forward(state, prompt.data(), n_prompt, {});
    const double prefill_s = since(t0);
    say("prefill: %.1f tok/s\n", double(n_prompt) / prefill_s);

    // Verify cost curve: one snapshot forward of width N, rolled back, repeated.
    std::vector<double> cost;
    std::vector<float> logits(size_t(9 * V));
    for (int n = 1; n <= 8; ++n) {
        std::vector<int32_t> batch(static_cast<size_t>(n));
        for (auto& t : batch) t = int32_t(rng() % uint32_t(V));
        double best = 1e30;
        for (int rep = 0; rep < 5; ++rep) {
            t0 = Clock::now();
            model.forward(state, batch.data(), n, {nullptr, logits.data(), n}, true);
            best = std::min(best, since(t0));
            model.commit(state, 0);  // drop it: every repeat starts from the same state
        }
        cost.push_back(best);
    }
    std::vector<double> ratios;
    for (double c : cost) ratios.push_back(c / cost[0]);
    say("verify cost cost(N)/cost(1), N=1..8:");
    for (double r : ratios) say(" %.2f", r);
    say("\n");

    // Plain decode and MTP decode at depths 1..4 (greedy).
    auto decode = [&](int depth) {
        SequenceState s = model.new_state(n_prompt + n_decode + 16, depth + 1);
        std::unique_ptr<Drafter> d;
        if (depth > 0) d = std::make_unique<MtpDrafter>(model, s);
        DecodeOptions o;
        o.max_new_tokens = n_decode;
        o.draft_depth = depth;
        return generate(model, s, d.get(), prompt, o, [](const EmittedToken&) { return true; });
    };
    DecodeStats plain = decode(0);
    const double decode_tps = plain.decode_tokens_per_second();
    const double gbs = bytes_per_token(model) * decode_tps / 1e9;
    say("decode: %.1f tok/s, %.2f GB/s of weights = %.0f%% of read bandwidth\n", decode_tps, gbs,
        100.0 * gbs / bw);
    out["prefill_tok_s"] = double(n_prompt) / prefill_s;
    out["decode_tok_s"] = decode_tps;
    out["verify_cost"] = ratios;
    out["bandwidth_gbs"] = gbs;
    out["machine_read_bandwidth_gbs"] = bw;
    out["bandwidth_pct"] = 100.0 * gbs / bw;
    if (model.has_mtp()) {
        nlohmann::ordered_json mtp = nlohmann::json::array();
        for (int depth = 1; depth <= 4; ++depth) {
            DecodeStats s = decode(depth);
            double acc = s.drafted.empty() || !s.drafted[0] ? 0.0
                                                            : double(s.accepted[0]) / double(s.drafted[0]);
            say("mtp depth %d: %.1f tok/s (%.2fx plain), %.2f tokens/round, depth-1 acceptance %.0f%%\n",
                depth, s.decode_tokens_per_second(), s.decode_tokens_per_second() / decode_tps,
                s.tokens_per_round(), 100.0 * acc);
            mtp.push_back({{"depth", depth},
                           {"decode_tok_s", s.decode_tokens_per_second()},
                           {"speedup", s.decode_tokens_per_second() / decode_tps},
                           {"tokens_per_round", s.tokens_per_round()},
                           {"acceptance_d1", acc}});
        }
        out["mtp"] = mtp;
    }
    if (json) std::cout << out.dump(2) << "\n";
    return 0;
}

}  // namespace nextn::cli
