// Exactness of speculative acceptance: the emitted token must be distributed as the target p,
// whatever the draft q. Checked by Pearson's chi-square goodness-of-fit at alpha = 1e-4 with
// 10^6 draws per test; the same statistic is shown to reject three plausible wrong samplers,
// so a pass is evidence, not luck. All randomness is seeded: the outcome is deterministic.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

#include "core/error.h"
#include "sampling/logit_pipeline.h"
#include "sampling/rng.h"
#include "sampling/speculative_accept.h"

namespace nextn {
namespace {

constexpr double kAlpha = 1e-4;
constexpr int kDraws = 1000000;

// Regularized upper incomplete gamma Q(a, x) = Gamma(a, x) / Gamma(a): power series for
// x < a + 1, Lentz continued fraction otherwise (both converge fast in their ranges).
double upper_regularized_gamma(double a, double x) {
    if (x <= 0.0) return 1.0;
    const double log_prefix = -x + a * std::log(x) - std::lgamma(a);
    if (x < a + 1.0) {
        double term = 1.0 / a, sum = term;
        for (int n = 1; n < 10000; ++n) {
            term *= x / (a + n);
            sum += term;
            if (term < sum * 1e-16) break;
        }
        return 1.0 - sum * std::exp(log_prefix);
    }
    const double tiny = 1e-300;
    double b = x + 1.0 - a, c = 1.0 / tiny, d = 1.0 / b, h = d;
    for (int i = 1; i < 10000; ++i) {
        const double an = -i * (i - a);
        b += 2.0;
        d = an * d + b;
        if (std::fabs(d) < tiny) d = tiny;
        c = b + an / c;
        if (std::fabs(c) < tiny) c = tiny;
        d = 1.0 / d;
        const double step = d * c;
        h *= step;
        if (std::fabs(step - 1.0) < 1e-16) break;
    }
    return std::exp(log_prefix) * h;
}

// P(chi2_df >= stat).
double chi_square_p_value(double stat, int df) { return upper_regularized_gamma(df / 2.0, stat / 2.0); }

TEST(SamplingChiSquare, PValueMatchesClosedForms) {
    // df = 2: P = exp(-x / 2). df = 1: P = erfc(sqrt(x / 2)).
    for (double x : {0.5, 2.0, 7.0, 30.0}) {
        EXPECT_NEAR(chi_square_p_value(x, 2), std::exp(-x / 2), 1e-12);
        EXPECT_NEAR(chi_square_p_value(x, 1), std::erfc(std::sqrt(x / 2)), 1e-12);
    }
    // Textbook critical value: chi2(0.9999, df = 10) = 35.56.
    EXPECT_NEAR(chi_square_p_value(35.56, 10), 1e-4, 2e-6);
}

struct FitResult {
    double stat = 0.0;
    int df = 0;
    double p_value = 0.0;
    long outside_support = 0;  // draws of tokens p gives probability 0
};

// Pearson's statistic of counts against p over p's support; bins with expected count < 5 are
// pooled into one, so the chi-square approximation holds.
FitResult fit_against(const Distribution& p, const std::vector<long>& counts, long n_draws) {
    FitResult r;
    double pooled_expected = 0.0, pooled_observed = 0.0;
    int bins = 0;
    long inside = 0;
    for (size_t i = 0; i < p.ids.size(); ++i) {
        const double expected = n_draws * static_cast<double>(p.probs[i]);
        const double observed = static_cast<double>(counts[p.ids[i]]);
        inside += counts[p.ids[i]];
        if (expected < 5.0) {
            pooled_expected += expected;
            pooled_observed += observed;
            continue;
        }
        r.stat += (observed - expected) * (observed - expected) / expected;
        ++bins;
    }
    if (pooled_expected > 0.0) {
        r.stat += (pooled_observed - pooled_expected) * (pooled_observed - pooled_expected) /
                  pooled_expected;
        ++bins;
    }
    r.outside_support = n_draws - inside;
    r.df = bins - 1;
    r.p_value = chi_square_p_value(r.stat, r.df);
    std::printf("  chi2 = %.1f, df = %d, p-value = %.3g\n", r.stat, r.df, r.p_value);
    return r;
}

// A speculative step under test: given p, q and the draft token x ~ q, the emitted token.
using Step = std::function<int32_t(const Distribution&, const Distribution&, int32_t, Rng&)>;

int32_t exact_step(const Distribution& p, const Distribution& q, int32_t x, Rng& rng) {
    return accept_or_resample(p, q, x, rng).token;
}

FitResult run_speculation(const Distribution& p, const Distribution& q, const Step& step,
                          uint64_t seed, long* accepted_out = nullptr) {
    Rng rng(seed);
    std::vector<long> counts(static_cast<size_t>(p.vocab_size), 0);
    long accepted = 0;
    for (int i = 0; i < kDraws; ++i) {
        const int32_t x = sample(q, rng);
        const int32_t token = step(p, q, x, rng);
        accepted += token == x;
        ++counts[static_cast<size_t>(token)];
    }
    if (accepted_out) *accepted_out = accepted;
    return fit_against(p, counts, kDraws);
}

std::vector<float> random_logits(size_t n, double scale, uint64_t seed) {
    Rng rng(seed);
    std::vector<float> logits(n);  // [n]
    for (float& l : logits) l = static_cast<float>(rng.uniform() * scale);
    return logits;
}

double overlap(const Distribution& p, const Distribution& q) {  // sum_x min(p, q)
    double sum = 0.0;
    for (size_t i = 0; i < p.ids.size(); ++i) sum += std::min(p.probs[i], q.prob(p.ids[i]));
    return sum;
}

constexpr size_t kVocab = 300;

TEST(SamplingSpeculative, AcceptedTokensFollowTargetFullSupport) {
    const Distribution p = process(random_logits(kVocab, 4.0, 1), {}, SamplerParams{});
    const Distribution q = process(random_logits(kVocab, 4.0, 2), {}, SamplerParams{});
    long accepted = 0;
    const FitResult fit = run_speculation(p, q, exact_step, 11, &accepted);
    EXPECT_EQ(fit.outside_support, 0);
    EXPECT_GT(fit.p_value, kAlpha) << "chi2 = " << fit.stat << " df = " << fit.df;
    // Acceptance rate is sum_x min(p, q); binomial, within 5 sigma.
    const double rate = overlap(p, q);
    const double sigma = std::sqrt(rate * (1 - rate) / kDraws);
    EXPECT_NEAR(static_cast<double>(accepted) / kDraws, rate, 5 * sigma);
    EXPECT_LT(rate, 0.9);  // p and q differ enough for the residual to matter
}

TEST(SamplingSpeculative, DraftOverSmallerSubVocabulary) {
    // The draft scores only the first 100 of 300 ids (its logit vector is shorter); p puts about
    // 2/3 of its mass outside q's support, reachable only through the residual.
    const Distribution p = process(random_logits(kVocab, 3.0, 3), {}, SamplerParams{});
    const Distribution q = process(random_logits(100, 3.0, 4), {}, SamplerParams{});
    ASSERT_EQ(q.vocab_size, 100);
    const FitResult fit = run_speculation(p, q, exact_step, 12);
    EXPECT_EQ(fit.outside_support, 0);
    EXPECT_GT(fit.p_value, kAlpha) << "chi2 = " << fit.stat << " df = " << fit.df;
}

TEST(SamplingSpeculative, DraftZeroOutsideASubsetAndTargetFiltered) {
    // Same vocabulary, but q bans every id >= 150 and p is top-k / top-p filtered, so the
    // supports overlap only partly.
    SamplerParams draft_params;
    for (int32_t id = 150; id < static_cast<int32_t>(kVocab); ++id)
        draft_params.logit_bias[id] = -INFINITY;
    draft_params.top_k = 120;
    SamplerParams target_params;
    target_params.top_k = 200;
    target_params.top_p = 0.9f;
    const Distribution p = process(random_logits(kVocab, 5.0, 5), {}, target_params);
    const Distribution q = process(random_logits(kVocab, 5.0, 6), {}, draft_params);
    ASSERT_LT(q.support_size(), 121u);
    const FitResult fit = run_speculation(p, q, exact_step, 13);
    EXPECT_EQ(fit.outside_support, 0);
    EXPECT_GT(fit.p_value, kAlpha) << "chi2 = " << fit.stat << " df = " << fit.df;
}

// norm(max(0, p - q)) built directly, for the wrong samplers below.
Distribution residual(const Distribution& p, const Distribution& q) {
    Distribution r;
    r.vocab_size = p.vocab_size;
    double total = 0.0;
    for (size_t i = 0; i < p.ids.size(); ++i) total += std::max(0.0f, p.probs[i] - q.prob(p.ids[i]));
    for (size_t i = 0; i < p.ids.size(); ++i) {
        const float excess = p.probs[i] - q.prob(p.ids[i]);
        if (excess > 0.0f) {
            r.ids.push_back(p.ids[i]);
            r.probs.push_back(static_cast<float>(excess / total));
        }
    }
    return r;
}

// The statistic has power: each wrong sampler is rejected at the same alpha on the same data.
TEST(SamplingSpeculative, WrongSamplersAreRejectedBySameStatistic) {
    const Distribution p = process(random_logits(kVocab, 4.0, 1), {}, SamplerParams{});
    const Distribution q = process(random_logits(kVocab, 4.0, 2), {}, SamplerParams{});
    const Step always_accept = [](const Distribution&, const Distribution&, int32_t x, Rng&) {
        return x;
    };
    const Step resample_from_p = [](const Distribution& p, const Distribution& q, int32_t x,
                                    Rng& rng) {
        if (rng.uniform() * q.prob(x) < p.prob(x)) return x;
        return sample(p, rng);  // wrong: should be norm(max(0, p - q))
    };
    const Step inverted_ratio = [](const Distribution& p, const Distribution& q, int32_t x,
                                   Rng& rng) {
        if (rng.uniform() * p.prob(x) < q.prob(x)) return x;  // wrong: min(1, q / p)
        return sample(residual(p, q), rng);
    };
    for (const auto& [name, step] : {std::pair<const char*, Step>{"always accept", always_accept},
                                     {"resample from p", resample_from_p},
                                     {"inverted ratio", inverted_ratio}}) {
        const FitResult fit = run_speculation(p, q, step, 11);
        EXPECT_LT(fit.p_value, kAlpha) << name << ": chi2 = " << fit.stat << " df = " << fit.df;
    }
}

TEST(SamplingSpeculative, ChainFirstTokenFollowsTargetAndBonusFollowsLastTarget) {
    // Context-free targets: the first emitted token must follow p0; whenever all k = 2 drafts are
    // accepted, the bonus token must follow p2.
    std::vector<Distribution> target, draft;
    for (uint64_t s = 0; s < 3; ++s) target.push_back(process(random_logits(50, 2.0, 20 + s), {}, {}));
    for (uint64_t s = 0; s < 2; ++s) draft.push_back(process(random_logits(50, 2.0, 30 + s), {}, {}));
    Rng rng(14);
    std::vector<long> first(50, 0), bonus(50, 0);
    long n_bonus = 0, n_total = 0;
    for (int i = 0; i < kDraws / 2; ++i) {
        const int32_t drafts[2] = {sample(draft[0], rng), sample(draft[1], rng)};
        const DraftVerdict v = verify_draft(target, draft, drafts, rng);
        ASSERT_EQ(v.tokens.size(), static_cast<size_t>(v.n_accepted) + 1);
        for (int j = 0; j < v.n_accepted; ++j) ASSERT_EQ(v.tokens[j], drafts[j]);
        ++first[v.tokens[0]];
        ++n_total;
        if (v.n_accepted == 2) {
            ++bonus[v.tokens[2]];
            ++n_bonus;
        }
    }
    const FitResult fit_first = fit_against(target[0], first, n_total);
    EXPECT_GT(fit_first.p_value, kAlpha) << "chi2 = " << fit_first.stat;
    ASSERT_GT(n_bonus, 10000);
    const FitResult fit_bonus = fit_against(target[2], bonus, n_bonus);
    EXPECT_GT(fit_bonus.p_value, kAlpha) << "chi2 = " << fit_bonus.stat;
}

TEST(SamplingSpeculative, ZeroDraftProbabilityIsRejected) {
    Distribution p, q;
    p.vocab_size = q.vocab_size = 4;
    p.ids = {0, 1, 2};
    p.probs = {0.2f, 0.3f, 0.5f};
    q.ids = {0, 1};
    q.probs = {0.5f, 0.5f};
    Rng rng(3);
    for (int i = 0; i < 1000; ++i) {
        // x = 2 is outside q's support: always rejected; the residual is max(0, p - q) = {2: 0.5}.
        const AcceptResult r = accept_or_resample(p, q, 2, rng);
        EXPECT_FALSE(r.accepted);
        EXPECT_EQ(r.token, 2);
    }
    EXPECT_THROW(accept_or_resample(p, q, 4, rng), Error);
    EXPECT_THROW(accept_or_resample(p, q, -1, rng), Error);
}

// No uniform is drawn where the outcome is certain (speculative_accept.h): here p(x) = 0 while
// q(x) > 0, so x is rejected without a draw, and the residual max(0, p - q) = {0: 0.5, 1: 0}
// has one token with positive mass (token 1's excess is exactly 0: p and q agree on it), so the
// replacement is token 0, again without a draw. The generator is left where it was.
TEST(SamplingSpeculative, CertainOutcomesDrawNoUniform) {
    Distribution p, q;
    p.vocab_size = q.vocab_size = 3;
    p.ids = {0, 1};
    p.probs = {0.5f, 0.5f};
    q.ids = {1, 2};
    q.probs = {0.5f, 0.5f};
    Rng rng(21);
    const AcceptResult r = accept_or_resample(p, q, 2, rng);
    EXPECT_FALSE(r.accepted);
    EXPECT_EQ(r.token, 0);
    EXPECT_EQ(rng.next_u64(), Rng(21).next_u64()) << "a uniform was drawn";
}

TEST(SamplingSpeculative, EmptyTargetIsAnError) {
    Distribution p, q = Distribution::one_hot(4, 1);
    p.vocab_size = 4;
    Rng rng(1);
    EXPECT_THROW(accept_or_resample(p, q, 1, rng), Error);
}

TEST(SamplingSpeculative, ResidualWithoutMassFallsBackToP) {
    // Inconsistent float masses: q >= p everywhere, so max(0, p - q) is all zero while x = 0 can
    // still be rejected (p/q = 5/6). The replacement must then come from p.
    Distribution p, q;
    p.vocab_size = q.vocab_size = 2;
    p.ids = q.ids = {0, 1};
    p.probs = {0.5f, 0.5f};
    q.probs = {0.6f, 0.6f};
    Rng rng(4);
    long rejected = 0, rejected_to_one = 0;
    for (int i = 0; i < 20000; ++i) {
        const AcceptResult r = accept_or_resample(p, q, 0, rng);
        if (r.accepted) continue;
        ++rejected;
        rejected_to_one += r.token == 1;
        ASSERT_TRUE(r.token == 0 || r.token == 1);
    }
    EXPECT_NEAR(rejected / 20000.0, 1.0 / 6, 0.02);
    EXPECT_NEAR(static_cast<double>(rejected_to_one) / rejected, 0.5, 0.05);
}

// Greedy: p and q one-hot. Accept iff x == argmax p; otherwise argmax p. No randomness used.
TEST(SamplingSpeculative, GreedyIsExactAndUsesNoRandomness) {
    SamplerParams greedy;
    greedy.temperature = 0.0f;
    const std::vector<float> target_logits = {0.1f, 2.0f, 0.3f, 2.0f};
    const std::vector<float> good_draft = {0.0f, 5.0f, 0.0f, 0.0f};
    const std::vector<float> bad_draft = {0.0f, 0.0f, 5.0f, 0.0f};
    const Distribution p = process(target_logits, {}, greedy);
    EXPECT_EQ(p.ids, (std::vector<int32_t>{1}));
    Rng rng(99);
    const Distribution q_good = process(good_draft, {}, greedy);
    const Distribution q_bad = process(bad_draft, {}, greedy);
    const int32_t x_good = sample(q_good, rng), x_bad = sample(q_bad, rng);
    EXPECT_EQ(x_good, 1);
    EXPECT_EQ(x_bad, 2);
    const AcceptResult keep = accept_or_resample(p, q_good, x_good, rng);
    EXPECT_TRUE(keep.accepted);
    EXPECT_EQ(keep.token, 1);
    const AcceptResult fix = accept_or_resample(p, q_bad, x_bad, rng);
    EXPECT_FALSE(fix.accepted);
    EXPECT_EQ(fix.token, 1);
    const std::vector<Distribution> targets = {p, p, p};
    const std::vector<Distribution> drafts = {q_good, q_bad};
    const std::vector<int32_t> tokens = {1, 2};
    const DraftVerdict v = verify_draft(targets, drafts, tokens, rng);
    EXPECT_EQ(v.n_accepted, 1);
    EXPECT_EQ(v.tokens, (std::vector<int32_t>{1, 1}));
    const DraftVerdict all = verify_draft(targets, std::vector<Distribution>{q_good, q_good},
                                          std::vector<int32_t>{1, 1}, rng);
    EXPECT_EQ(all.n_accepted, 2);
    EXPECT_EQ(all.tokens, (std::vector<int32_t>{1, 1, 1}));
    // The generator was never advanced.
    EXPECT_EQ(rng.next_u64(), Rng(99).next_u64());
}

// The decode loop reuses one verdict round after round: each call reports its own chain only.
TEST(SamplingSpeculative, AReusedVerdictHoldsOnlyTheLastChain) {
    const Distribution p = Distribution::one_hot(4, 1);
    const std::vector<Distribution> targets = {p, p, p};
    const std::vector<Distribution> drafts = {p, p};
    Rng rng(5);
    DraftVerdict verdict;
    verify_draft(targets, drafts, std::vector<int32_t>{1, 1}, rng, verdict);
    EXPECT_EQ(verdict.n_accepted, 2);
    EXPECT_EQ(verdict.tokens, (std::vector<int32_t>{1, 1, 1}));
    verify_draft(targets, std::vector<Distribution>{Distribution::one_hot(4, 2), p},
                 std::vector<int32_t>{2, 1}, rng, verdict);
    EXPECT_EQ(verdict.n_accepted, 0);
    EXPECT_EQ(verdict.tokens, (std::vector<int32_t>{1}));
}

TEST(SamplingSpeculative, SameSeedSameTokens) {
    const Distribution p = process(random_logits(kVocab, 4.0, 1), {}, SamplerParams{});
    const Distribution q = process(random_logits(kVocab, 4.0, 2), {}, SamplerParams{});
    auto run = [&](uint64_t seed) {
        Rng rng(seed);
        std::vector<int32_t> out;
        for (int i = 0; i < 2000; ++i) out.push_back(exact_step(p, q, sample(q, rng), rng));
        return out;
    };
    EXPECT_EQ(run(5), run(5));
    EXPECT_NE(run(5), run(6));
}

TEST(SamplingSpeculative, VerifyDraftChecksShapes) {
    const Distribution p = Distribution::one_hot(4, 1);
    Rng rng(0);
    EXPECT_THROW(verify_draft(std::vector<Distribution>{p}, std::vector<Distribution>{p},
                              std::vector<int32_t>{1}, rng),
                 Error);
}

}  // namespace
}  // namespace nextn
