// Sampled speculative decoding draws each whole continuation with exactly the plain sampler's
// probability. The plain sampler's joint distribution of the first L tokens is enumerated
// exactly (every branch of the sampling tree, each token's probability from process() on the
// model's logits after the prompt and that branch: a product of stated probabilities, no
// sampling), and thousands of seeded speculative runs are compared against it by a one-sample
// chi-square test over the whole sequences. Tokens 2..L depend on the ones before them, so this
// also checks what the marginals of spec_sampling_test.cpp cannot: the joint law across a
// round's accepted drafts, the residual draw and the bonus token, stop tokens inside a round,
// penalties that count in-flight drafts, and depths chosen by the adaptive controller.
//
// The drafts come from the embedded model's trained MTP head (models/nextn-tiny), and top-k of
// 2 or 3 keeps the tree small enough to enumerate (at most 3^L leaves).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "golden.h"
#include "model/qwen35.h"
#include "sampling/logit_pipeline.h"
#include "spec/depth_controller.h"
#include "spec/mtp_drafter.h"
#include "spec/speculative_decoder.h"
#include "spec_sampling_checks.h"

namespace nextn {
namespace {

using Sequence = std::vector<int32_t>;

struct Case {
    SamplerParams params;
    int depth = 0;
    int length = 0;           // L: tokens generated (fewer where a stop token ends a branch)
    int64_t draft_vocab = 0;  // 0: the whole vocabulary
    bool adaptive = false;    // depths chosen by the modelled-cost controller
    std::vector<int32_t> stop_tokens;
};

// Adds every continuation of `generated` (plain sampling) to `out` with its probability.
void enumerate(const Qwen35Model& m, const Sequence& prompt, const Case& c, Sequence& generated,
               double probability, std::map<Sequence, double>& out) {
    const bool stopped =
        !generated.empty() &&
        std::count(c.stop_tokens.begin(), c.stop_tokens.end(), generated.back()) > 0;
    if (int(generated.size()) == c.length || stopped) {
        out[generated] += probability;
        return;
    }
    Sequence context = prompt;
    context.insert(context.end(), generated.begin(), generated.end());
    SequenceState s = m.new_state(int64_t(context.size()) + 1, 1);
    std::vector<float> logits(size_t(m.config().vocab_size));  // [V]
    m.forward(s, context.data(), int64_t(context.size()), {nullptr, logits.data(), 1});
    // History = prompt and generated tokens, as the decoder's penalties see them.
    const Distribution p = process(logits, context, c.params);
    for (size_t i = 0; i < p.ids.size(); ++i) {
        generated.push_back(p.ids[i]);
        enumerate(m, prompt, c, generated, probability * p.probs[i], out);
        generated.pop_back();
    }
}

// Tokens ranked by the model's logits after the prompt: what the cases bias and stop on.
std::vector<int32_t> top_after(const Qwen35Model& m, const Sequence& prompt, int k) {
    SequenceState s = m.new_state(int64_t(prompt.size()) + 1, 1);
    std::vector<float> logits(size_t(m.config().vocab_size));
    m.forward(s, prompt.data(), int64_t(prompt.size()), {nullptr, logits.data(), 1});
    return top_k_ids(logits, k);
}

struct Verdict {
    double stat = 0, critical = 0;
    int impossible = 0;  // runs that produced a sequence of probability 0
    int64_t drafted = 0, accepted = 0;
};

// `runs` seeded speculative runs of case c (after `adjust` fixes its token-dependent settings)
// against the exact distribution; the drafter misstates its q when `misstated`.
Verdict sample_against_exact(Case c, int runs,
                             void (*adjust)(Case&, const std::vector<int32_t>& top),
                             bool misstated = false) {
    ModelOptions mo;
    mo.threads = 1;
    mo.matrix_type = WType::Q8_0;  // int8 kernels: the runs are many
    mo.draft_vocab = c.draft_vocab;
    if (c.draft_vocab) mo.draft_head_type = WType::Q8_0;
    LoadedModel lm = load_model(test::tiny_model_dir(), mo);
    const Qwen35Model& model = *lm.model;
    const Sequence prompt = test::tiny_prompt("p9");
    if (adjust) adjust(c, top_after(model, prompt, 4));

    std::map<Sequence, double> exact;
    Sequence generated;
    enumerate(model, prompt, c, generated, 1.0, exact);

    std::map<Sequence, int> observed;
    SequenceState state = model.new_state(int64_t(prompt.size()) + c.length + 4, c.depth + 1);
    std::unique_ptr<Drafter> drafter;
    if (misstated)
        drafter = std::make_unique<test::MisstatedQDrafter>(model, state);
    else
        drafter = std::make_unique<MtpDrafter>(model, state);
    Verdict v;
    for (int r = 0; r < runs; ++r) {
        state.reset();
        drafter->reset();
        DecodeOptions o;
        o.max_new_tokens = c.length;
        o.draft_depth = c.depth;
        o.sampler = c.params;
        o.sampler.seed = 12345 + uint64_t(r);
        o.stop_tokens = c.stop_tokens;
        std::optional<DepthController> controller;
        if (c.adaptive)
            o.controller = &controller.emplace(DepthController::with_modelled_costs(c.depth));
        const DecodeStats s = generate(model, state, drafter.get(), prompt, o,
                                       [](const EmittedToken&) { return true; });
        observed[s.tokens]++;
        for (int64_t d : s.drafted) v.drafted += d;
        for (int64_t a : s.accepted) v.accepted += a;
    }
    // Sequences expected fewer than 5 times share one bin.
    double stat = 0, rest_expected = 0;
    int bins = 0, rest_observed = 0;
    for (const auto& [sequence, probability] : exact) {
        const double e = probability * runs;
        const auto it = observed.find(sequence);
        const int o = it == observed.end() ? 0 : it->second;
        if (e < 5) {
            rest_expected += e;
            rest_observed += o;
            continue;
        }
        stat += (o - e) * (o - e) / e;
        ++bins;
    }
    if (rest_expected > 0) {
        stat += (rest_observed - rest_expected) * (rest_observed - rest_expected) / rest_expected;
        ++bins;
    }
    for (const auto& [sequence, count] : observed)
        if (!exact.count(sequence)) v.impossible += count;
    v.stat = stat;
    v.critical = test::chi2_critical(bins - 1);
    std::printf(
        "    %zu sequences, %d bins: chi2 %.1f, critical %.1f; %lld of %lld drafts accepted\n",
        exact.size(), bins, v.stat, v.critical, (long long)v.accepted, (long long)v.drafted);
    return v;
}

void check(const Case& c, int runs, void (*adjust)(Case&, const std::vector<int32_t>& top)) {
    const Verdict v = sample_against_exact(c, runs, adjust);
    EXPECT_EQ(v.impossible, 0) << "runs produced sequences plain sampling cannot";
    EXPECT_LT(v.stat, v.critical);
    // The test only means something if drafts are both accepted and rejected.
    EXPECT_GT(v.accepted, v.drafted / 20);
    EXPECT_LT(v.accepted, v.drafted);
}

// Top-k 3 with every penalty over a window of 3 tokens, a banned and a boosted token, and a
// 2048-token q8_0 draft head, at depth 4 (one round can draft all of L - 1).
TEST(SpeculativeExactDistribution, PenaltiesBiasAndDraftSubVocabulary) {
    Case c;
    c.params.temperature = 1.0f;
    c.params.top_k = 3;
    c.params.repeat_penalty = 1.5f;
    c.params.presence_penalty = 0.4f;
    c.params.frequency_penalty = 0.3f;
    c.params.penalty_last_n = 3;
    c.depth = 4;
    c.length = 5;
    c.draft_vocab = 2048;
    check(c, 3000, [](Case& c, const std::vector<int32_t>& top) {
        c.params.logit_bias[top[0]] = -INFINITY;  // the plain favourite, banned
        c.params.logit_bias[top[3]] = 2.0f;
    });
}

// Top-k 2 with top-p and whole-history penalties over several rounds of depth 2, and a stop
// token (the second favourite after the prompt) that can end a round early.
TEST(SpeculativeExactDistribution, StopTokenInsideRounds) {
    Case c;
    c.params.temperature = 0.9f;
    c.params.top_k = 2;
    c.params.top_p = 0.95f;
    c.params.repeat_penalty = 1.3f;
    c.params.frequency_penalty = 0.5f;
    c.params.penalty_last_n = -1;
    c.depth = 2;
    c.length = 7;
    check(c, 3000, [](Case& c, const std::vector<int32_t>& top) { c.stop_tokens = {top[1]}; });
}

// Top-k 2 with a presence penalty over 5 tokens, up to depth 4, 7 tokens.
Case top_2_depth_4() {
    Case c;
    c.params.temperature = 1.2f;
    c.params.top_k = 2;
    c.params.presence_penalty = 0.7f;
    c.params.penalty_last_n = 5;
    c.depth = 4;
    c.length = 7;
    return c;
}

// Depths chosen round by round by the adaptive controller (its modelled costs: a sampled request
// never follows timings), up to 4.
TEST(SpeculativeExactDistribution, AdaptiveDepth) {
    Case c = top_2_depth_4();
    c.adaptive = true;
    check(c, 3000, nullptr);
}

// The control: the same runs and statistic catch a drafter whose stated q is not the one its
// drafts were drawn from.
TEST(SpeculativeExactDistribution, MisstatedDraftDistributionIsCaught) {
    const Verdict v = sample_against_exact(top_2_depth_4(), 3000, nullptr, /*misstated=*/true);
    EXPECT_GT(v.stat, v.critical);
}

}  // namespace
}  // namespace nextn
