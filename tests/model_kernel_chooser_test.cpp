// KernelChooser (model/kernel_chooser.h): which of two kernel tables each forward shape runs on,
// fed made-up forward times; and a model whose forwards and MTP head steps alternate between the
// two tables gives the bits of the model that runs one.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "kernels/kernels.h"
#include "model/kernel_chooser.h"
#include "model/qwen35.h"
#include "model/synthetic.h"
#if NEXTN_X86_KERNELS
#include "kernels/x86/x86_kernels.h"
#endif

namespace nextn {
namespace {

constexpr int64_t kTrial = 2 * KernelChooser::kTrialPairs;  // forwards a trial takes

// Two distinct tables (the chooser tells them apart by address only).
struct TwoTables {
    KernelTable base = kernels();
    KernelTable alternative = kernels();
};

// n forwards of one shape, each taking seconds_of(i, on the alternative): which table each ran
// on, and whether it was a trial's.
struct ShapeRun {
    std::vector<bool> alternative, trial;
    // The forwards in [from, to) outside trials, and how many of them ran the alternative.
    std::pair<int64_t, int64_t> outside_trials(int64_t from, int64_t to) const {
        int64_t n = 0, on = 0;
        for (int64_t i = from; i < to; ++i) {
            if (trial[size_t(i)]) continue;
            ++n;
            on += alternative[size_t(i)] ? 1 : 0;
        }
        return {n, on};
    }
    // One forward of a shape through the chooser, taking `seconds` on the base table and
    // `alt_seconds` on the alternative.
    void step(KernelChooser& c, const TwoTables& t, int64_t width, int64_t n_logits, double seconds,
              double alt_seconds) {
        trial.push_back(c.next_is_trial(width, n_logits));
        alternative.push_back(&c.pick(width, n_logits) == &t.alternative);
        c.record(width, n_logits, alternative.back() ? alt_seconds : seconds);
    }
    // Where each trial began.
    std::vector<int64_t> trial_starts() const {
        std::vector<int64_t> starts;
        for (size_t i = 0; i < trial.size(); ++i)
            if (trial[i] && (i == 0 || !trial[i - 1])) starts.push_back(int64_t(i));
        return starts;
    }
};
template <class Seconds>
ShapeRun run(KernelChooser& c, const TwoTables& t, int64_t width, int64_t n_logits, int64_t n,
             Seconds seconds_of) {
    ShapeRun r;
    for (int64_t i = 0; i < n; ++i)
        r.step(c, t, width, n_logits, seconds_of(i, false), seconds_of(i, true));
    return r;
}

TEST(KernelChooser, WithoutAnAlternativeEveryForwardRunsOnTheBase) {
    const TwoTables t;
    KernelChooser c(&t.base, nullptr);
    EXPECT_FALSE(c.active());
    for (int64_t w = 1; w <= 20; ++w) {
        EXPECT_FALSE(c.next_is_trial(w, 1));
        EXPECT_EQ(&c.pick(w, 1), &t.base);
        c.record(w, 1, 1.0);
    }
    EXPECT_EQ(c.counts().base + c.counts().alternative, 0);
}

TEST(KernelChooser, EachTrialRunsBothTablesInBalancedOrder) {
    const TwoTables t;
    KernelChooser c(&t.base, &t.alternative);
    // Equal times: no trial confirms a choice, so they come every kTrialEvery forwards.
    const ShapeRun r =
        run(c, t, 1, 1, 3 * KernelChooser::kTrialEvery, [](int64_t, bool) { return 1.0; });
    EXPECT_EQ(r.trial_starts(), (std::vector<int64_t>{0, KernelChooser::kTrialEvery,
                                                      2 * KernelChooser::kTrialEvery}));
    for (int64_t s : r.trial_starts()) {
        // base, alternative, alternative, base, ...: each pair one of each, the order turning.
        for (int64_t i = 0; i < kTrial; ++i) {
            EXPECT_TRUE(r.trial[size_t(s + i)]) << "trial at " << s << ", forward " << i;
            EXPECT_EQ(r.alternative[size_t(s + i)], i % 4 == 1 || i % 4 == 2)
                << "trial at " << s << ", forward " << i;
        }
        EXPECT_FALSE(r.trial[size_t(s + kTrial)]);
    }
    EXPECT_EQ(c.counts().base + c.counts().alternative, 3 * KernelChooser::kTrialEvery);
}

TEST(KernelChooser, RunsTheFasterTableBetweenTrialsAndTrialsLessOnceItIsClear) {
    const TwoTables t;
    for (bool alternative_faster : {true, false}) {
        KernelChooser c(&t.base, &t.alternative);
        const int64_t n = 1000;
        // The slower table takes 10% longer; the times also drift up (a growing KV cache).
        const ShapeRun r = run(c, t, 1, 1, n, [&](int64_t i, bool on_alt) {
            const double slower = on_alt == alternative_faster ? 1.0 : 1.1;
            return 0.01 * slower * (1.0 + 1e-3 * double(i));
        });
        const auto [outside, on] = r.outside_trials(0, n);
        EXPECT_EQ(on, alternative_faster ? outside : 0)
            << "alternative faster: " << alternative_faster;
        // The first trial chooses, each later one confirms it: 64, then 128, then 256 apart.
        const int64_t e = KernelChooser::kTrialEvery;
        EXPECT_EQ(r.trial_starts(), (std::vector<int64_t>{0, e, 3 * e, 7 * e, 11 * e, 15 * e}));
        const KernelChooser::Counts counts = c.counts();
        const int64_t on_slower = 6 * KernelChooser::kTrialPairs;
        EXPECT_EQ(alternative_faster ? counts.base : counts.alternative, on_slower);
    }
}

TEST(KernelChooser, FollowsTheMemoryWhenTheFasterTableChanges) {
    const TwoTables t;
    KernelChooser c(&t.base, &t.alternative);
    const int64_t flip = 300, n = 1200;
    // The alternative 15% faster until `flip`, then 15% slower.
    const ShapeRun r = run(c, t, 1, 1, n, [&](int64_t i, bool on_alt) {
        const bool alt_wins = i < flip;
        return on_alt == alt_wins ? 0.010 : 0.0115;
    });
    const auto [before, on_before] = r.outside_trials(0, flip);
    EXPECT_EQ(on_before, before);
    // The first trial after the flip outweighs the smoothed score of the ones before; it comes
    // at most kMaxTrialEvery forwards after the one before it.
    const std::vector<int64_t> starts = r.trial_starts();
    const auto next =
        std::find_if(starts.begin(), starts.end(), [&](int64_t s) { return s >= flip; });
    ASSERT_NE(next, starts.end());
    EXPECT_LE(*next, flip + KernelChooser::kMaxTrialEvery);
    const auto [after, on_after] = r.outside_trials(*next + kTrial, n);
    EXPECT_EQ(on_after, 0) << "of " << after;
    // The changed choice is not yet clear: trials come kTrialEvery apart again, then spread.
    ASSERT_NE(next + 1, starts.end());
    EXPECT_EQ(*(next + 1) - *next, KernelChooser::kTrialEvery);
}

TEST(KernelChooser, OneSlowForwardInATrialDoesNotDecideIt) {
    const TwoTables t;
    KernelChooser c(&t.base, &t.alternative);
    // The base is 5% faster, but one of a trial's base forwards takes 20x as long (a page fault,
    // another process): the median over the pairs ignores it.
    const ShapeRun r = run(c, t, 1, 1, 2 * KernelChooser::kTrialEvery, [&](int64_t i, bool on_alt) {
        if (i == 3) return 0.2;  // the second pair's base forward
        return on_alt ? 0.0105 : 0.010;
    });
    const auto [outside, on] = r.outside_trials(0, 2 * KernelChooser::kTrialEvery);
    EXPECT_EQ(on, 0) << "of " << outside;
}

TEST(KernelChooser, EachShapeChoosesForItselfAndWideForwardsAreNotTimed) {
    const TwoTables t;
    KernelChooser c(&t.base, &t.alternative);
    ShapeRun narrow, verify;
    // Width 1 favours the alternative, width 4 with 4 logits rows the base: interleaved.
    const int64_t n = 3 * KernelChooser::kTrialEvery;
    for (int64_t i = 0; i < n; ++i) {
        narrow.step(c, t, 1, 1, 0.010, 0.009);
        verify.step(c, t, 4, 4, 0.012, 0.013);
        // A prefill never picks the alternative and is not counted.
        EXPECT_FALSE(c.next_is_trial(KernelChooser::kMaxTimedWidth + 1, 1));
        EXPECT_EQ(&c.pick(KernelChooser::kMaxTimedWidth + 1, 1), &t.base);
        c.record(KernelChooser::kMaxTimedWidth + 1, 1, 0.5);
    }
    const auto [narrow_n, narrow_on] = narrow.outside_trials(0, n);
    const auto [verify_n, verify_on] = verify.outside_trials(0, n);
    EXPECT_EQ(narrow_on, narrow_n);
    EXPECT_EQ(verify_on, 0);
    EXPECT_EQ(c.counts().base + c.counts().alternative, 2 * n);
}

// Which shapes are timed (kernel_chooser.h): widths 1..kMaxTimedWidth, each with 0..width logits
// rows; a fresh chooser's first forward of a timed shape starts its trial, an untimed shape never
// has one.
TEST(KernelChooser, TimedShapesAreWidthsUpToTheLimitWithAtMostOneLogitsRowPerToken) {
    const TwoTables t;
    const KernelChooser c(&t.base, &t.alternative);
    const int64_t w = KernelChooser::kMaxTimedWidth;
    for (auto [width, n_logits] :
         {std::pair<int64_t, int64_t>{1, 0}, {1, 1}, {w, 0}, {w, w}, {3, 2}}) {
        EXPECT_TRUE(c.timed(width, n_logits)) << width << " " << n_logits;
        EXPECT_TRUE(c.next_is_trial(width, n_logits)) << width << " " << n_logits;
    }
    for (auto [width, n_logits] :
         {std::pair<int64_t, int64_t>{0, 0}, {w + 1, 1}, {1, 2}, {w, w + 1}, {2, -1}}) {
        EXPECT_FALSE(c.timed(width, n_logits)) << width << " " << n_logits;
        EXPECT_FALSE(c.next_is_trial(width, n_logits)) << width << " " << n_logits;
    }
}

// Equal times score 0, and the alternative runs only while the score is below zero
// (kernel_chooser.h): a tie keeps the base.
TEST(KernelChooser, ATieKeepsTheBase) {
    const TwoTables t;
    KernelChooser c(&t.base, &t.alternative);
    const int64_t n = 3 * KernelChooser::kTrialEvery;
    const ShapeRun r = run(c, t, 2, 1, n, [](int64_t, bool) { return 0.02; });
    const auto [outside, on] = r.outside_trials(0, n);
    EXPECT_GT(outside, 0);
    EXPECT_EQ(on, 0) << "of " << outside;
}

// Forward times for a shape whose first trial's pairs have these log(alternative / base)
// ratios (pair p: forwards 2p and 2p + 1 of the trial), and `later` after it.
auto trial_with_ratios(const std::array<double, KernelChooser::kTrialPairs>& ratios, double later) {
    return [ratios, later](int64_t i, bool on_alt) {
        const double r = i < 2 * KernelChooser::kTrialPairs ? ratios[size_t(i / 2)] : later;
        return on_alt ? 0.01 * std::exp(r) : 0.01;
    };
}

// A trial's score is the median over its pairs (kernel_chooser.h), with kTrialPairs = 4 the mean
// of the two middle ratios: -0.2, -0.1, 0.04, 0.3 give -0.03 (the alternative), and -0.3, -0.04,
// 0.1, 0.2 give +0.03 (the base), though the lower middle alone, or the upper, would choose the
// other way in one of the two.
TEST(KernelChooser, TheTrialScoreIsTheMedianOfItsPairs) {
    static_assert(KernelChooser::kTrialPairs == 4);
    const TwoTables t;
    const int64_t n = KernelChooser::kTrialEvery;  // the first trial, then its choice
    for (const auto& [ratios, want_alternative] :
         {std::pair<std::array<double, 4>, bool>{{-0.2, -0.1, 0.04, 0.3}, true},
          {{-0.3, -0.04, 0.1, 0.2}, false},
          {{0.3, 0.04, -0.1, -0.2}, true}}) {  // the order of the pairs does not matter
        KernelChooser c(&t.base, &t.alternative);
        const ShapeRun r = run(c, t, 1, 1, n, trial_with_ratios(ratios, 0.0));
        const auto [outside, on] = r.outside_trials(0, n);
        ASSERT_EQ(outside, n - 2 * KernelChooser::kTrialPairs);
        EXPECT_EQ(on, want_alternative ? outside : 0) << ratios[0] << " " << ratios[1];
    }
}

// The shape's score is the mean of its trial and the previous score; the first trial has no
// previous score, so it is the score. First trial -0.4 (alternative), second +0.3: the mean,
// -0.05, keeps the alternative (halving the first trial as if against a score of 0 would give
// -0.2, then +0.05: the base).
TEST(KernelChooser, TheFirstTrialAloneIsTheScore) {
    const TwoTables t;
    KernelChooser c(&t.base, &t.alternative);
    const int64_t e = KernelChooser::kTrialEvery, n = 2 * e;
    const ShapeRun r = run(c, t, 1, 1, n, [&](int64_t i, bool on_alt) {
        const double ratio = i < e ? -0.4 : 0.3;
        return on_alt ? 0.01 * std::exp(ratio) : 0.01;
    });
    ASSERT_EQ(r.trial_starts(), (std::vector<int64_t>{0, e}));  // the first trial confirms nothing
    const auto [first, on_first] = r.outside_trials(0, e);
    EXPECT_EQ(on_first, first);
    const auto [second, on_second] = r.outside_trials(e, n);
    EXPECT_EQ(on_second, second) << "score -0.05 after the second trial";
}

// Only a trial that confirms the choice by kClearMargin (about 5%) or more spreads the trials
// (kernel_chooser.h): with one table 3% faster, every trial is close, so they keep coming
// kTrialEvery forwards apart, whichever table is ahead; the choice still follows the faster.
TEST(KernelChooser, CloseTrialsDoNotSpreadTheTrials) {
    const TwoTables t;
    for (bool alternative_faster : {true, false}) {
        KernelChooser c(&t.base, &t.alternative);
        const int64_t e = KernelChooser::kTrialEvery, n = 5 * e;
        const ShapeRun r = run(c, t, 1, 1, n, [&](int64_t, bool on_alt) {
            return on_alt == alternative_faster ? 0.0100 : 0.0103;
        });
        EXPECT_EQ(r.trial_starts(), (std::vector<int64_t>{0, e, 2 * e, 3 * e, 4 * e}))
            << "alternative faster: " << alternative_faster;
        const auto [outside, on] = r.outside_trials(0, n);
        EXPECT_EQ(on, alternative_faster ? outside : 0);
    }
}

// A forward timed at 0 s (a clock too coarse for it) must not decide the choice forever: the
// alternative read 0 s throughout the first trial, then is 15% slower. Each later trial moves
// the score halfway to log 1.15 = +0.14, so it turns positive after a few trials; well before
// forward 1000 the base runs between trials.
TEST(KernelChooser, AZeroReadingDoesNotLockTheChoice) {
    const TwoTables t;
    KernelChooser c(&t.base, &t.alternative);
    const int64_t n = 1000;
    const ShapeRun r = run(c, t, 1, 1, n, [](int64_t i, bool on_alt) {
        if (i < 2 * KernelChooser::kTrialPairs) return on_alt ? 0.0 : 0.01;
        return on_alt ? 0.0115 : 0.01;
    });
    const auto [early, on_early] = r.outside_trials(0, KernelChooser::kTrialEvery);
    EXPECT_EQ(on_early, early) << "the first trial chose the alternative";
    const auto [late, on_late] = r.outside_trials(n - 200, n);
    EXPECT_GT(late, 0);
    EXPECT_EQ(on_late, 0) << "of " << late;
}

// The table to time against kernels() here: its own timed alternative where it has one (AMD),
// else on AVX-512 the other way to prefetch, else a copy (the mechanics alone).
KernelTable alternative_table() {
    const KernelTable& k = kernels();
    if (k.timed_alternative) return *k.timed_alternative;
    KernelTable copy = k;
#if NEXTN_X86_KERNELS
    if (std::string(k.isa) == "avx512" && k.amx_from_width == 0)
        copy.gemm_i8_rows = std::string(k.narrow_fetch) == "cursor"
                                ? avx512::gemm_i8_rows_group_streams
                                : avx512::gemm_i8_rows_cursor;
#endif
    return copy;
}

TEST(KernelChooser, ModelTimingTwoTablesGivesTheBitsOfEither) {
    if (kernels().timed_alternative) {
        // The alternative differs from the table in how its row-group matmuls prefetch alone.
        const KernelTable& a = kernels();
        const KernelTable& b = *a.timed_alternative;
        EXPECT_NE(a.gemm_i8_rows, b.gemm_i8_rows);
        EXPECT_EQ(a.gemm_rows, b.gemm_rows);
        EXPECT_EQ(a.quantize_columns, b.quantize_columns);
        EXPECT_EQ(a.gdn_recurrence_heads, b.gdn_recurrence_heads);
        EXPECT_EQ(a.rmsnorm, b.rmsnorm);
        EXPECT_EQ(a.share_narrow_tails, b.share_narrow_tails);
        EXPECT_EQ(b.timed_alternative, nullptr);
        EXPECT_STRNE(a.narrow_fetch, b.narrow_fetch);
    }
    const KernelTable alternative = alternative_table();
    for (WType type : {WType::Q4_0, WType::Q8_0}) {
        ModelConfig config = synthetic_config("qwen3.5-0.8b");
        config.n_layers = 4;
        config.is_linear = {true, true, true, false};
        config.vocab_size = 4096;
        SyntheticOptions o;
        o.matrix_type = type;
        LoadedModel timed = load_synthetic_model(config, "narrow-0.8b", o, 2);
        LoadedModel plain = load_synthetic_model(config, "narrow-0.8b", o, 2);
        timed.model->set_kernels(kernels(), &alternative);
        plain.model->set_kernels(kernels());
        ASSERT_TRUE(timed.model->kernels_timed());
        ASSERT_FALSE(plain.model->kernels_timed());
        const int64_t V = config.vocab_size;
        SequenceState ts = timed.model->new_state(256, 4), ps = plain.model->new_state(256, 4);
        std::vector<float> tl(size_t(4 * V)), pl(size_t(4 * V));
        std::vector<int32_t> prompt = {11, 2024, 7,  999, 1600, 3,   5,   8,  13,
                                       21, 34,   55, 89,  144,  233, 377, 610};
        timed.model->forward(ts, prompt.data(), int64_t(prompt.size()), {nullptr, tl.data(), 1});
        plain.model->forward(ps, prompt.data(), int64_t(prompt.size()), {nullptr, pl.data(), 1});
        ASSERT_EQ(tl, pl);
        // Decode steps and width-4 verifies, enough for a trial of each and its choice after.
        int32_t token = 42;
        for (int step = 0; step < 40; ++step) {
            const int64_t width = step % 2 ? 4 : 1;
            std::vector<int32_t> batch((size_t(width)));
            for (auto& b : batch) b = token = int32_t((token * 31 + 17) % V);
            timed.model->forward(ts, batch.data(), width, {nullptr, tl.data(), width}, true);
            plain.model->forward(ps, batch.data(), width, {nullptr, pl.data(), width}, true);
            timed.model->commit(ts, 1);
            plain.model->commit(ps, 1);
            ASSERT_EQ(tl, pl) << wtype_name(type) << ", step " << step << ", width " << width;
        }
        const KernelChooser::Counts counts = timed.model->kernel_choice_counts();
        EXPECT_EQ(counts.base + counts.alternative, 40);
        EXPECT_GE(counts.alternative, 2 * KernelChooser::kTrialPairs);  // both shapes' first trials
        EXPECT_GE(counts.base, 2 * KernelChooser::kTrialPairs);
        // MTP head steps, chained as drafting chains them (own trials: the head's shapes are not
        // the trunk's): the same bits on both models.
        const int64_t H = config.hidden_size, D = timed.model->draft_vocab();
        std::vector<float> th(static_cast<size_t>(H)), ph(th), th_next(th), ph_next(th);
        std::vector<float> tdl(static_cast<size_t>(D)), pdl(tdl);
        int32_t last = token;
        timed.model->forward(ts, &last, 1, {th.data(), tl.data(), 1});
        plain.model->forward(ps, &last, 1, {ph.data(), pl.data(), 1});
        ASSERT_EQ(th, ph);
        const int64_t pos = ts.n_past - 1;
        for (int step = 0; step < 20; ++step) {
            const int32_t draft = int32_t((last * 7 + step) % V);
            timed.model->mtp_forward(ts, th.data(), &draft, 1, pos + step,
                                     {th_next.data(), tdl.data(), 1});
            plain.model->mtp_forward(ps, ph.data(), &draft, 1, pos + step,
                                     {ph_next.data(), pdl.data(), 1});
            ASSERT_EQ(tdl, pdl) << wtype_name(type) << ", MTP step " << step;
            std::swap(th, th_next);
            std::swap(ph, ph_next);
        }
        const KernelChooser::Counts with_head = timed.model->kernel_choice_counts();
        EXPECT_EQ(with_head.base + with_head.alternative, 40 + 1 + 20);
        EXPECT_GE(with_head.alternative - counts.alternative,
                  KernelChooser::kTrialPairs);  // the head's trial
        // A forward that fails on its input changes nothing for the next.
        std::vector<int32_t> bad = {int32_t(V)};
        EXPECT_THROW(timed.model->forward(ts, bad.data(), 1, {nullptr, tl.data(), 1}), Error);
        timed.model->forward(ts, prompt.data(), 1, {nullptr, tl.data(), 1});
        plain.model->forward(ps, prompt.data(), 1, {nullptr, pl.data(), 1});
        EXPECT_EQ(tl, pl);
    }
}

}  // namespace
}  // namespace nextn
