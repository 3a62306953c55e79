#pragma once
// Chooses, forward by forward, between two kernel tables that compute the same bits and differ
// only in speed, by timing them against each other while the model decodes.
//
// Why: on the Zen 5 VM the faster way to prefetch a decode step's weights (one cursor over a
// matmul's bytes, or each row group's own stream) changes with the memory's state from one
// minute to the next, and no single rate predicts which wins (docs/speed-log.md, sessions 31-32,
// 43 and 45). A fixed choice loses 5-15% in the spells that favour the other.
//
// How: each forward shape (width, logits rows) up to kMaxTimedWidth keeps its own choice. A
// shape's first kTrialPairs pairs of forwards are a trial, one forward of each pair on each table,
// in the order base, alternative, alternative, base, ... (so a steady drift in the step's cost,
// such as a growing KV cache, favours neither). A trial's score is the median over its pairs of
// log(alternative time / base time); the shape's score is the mean of its trial and the previous
// score, and the alternative runs while that score is below zero. The next trial starts
// kTrialEvery forwards after this one began; each trial that confirms the choice by kClearMargin
// or more doubles that distance, up to kMaxTrialEvery, and any other puts it back. A trial costs
// the loser's excess on kTrialPairs forwards: for a 15% difference 0.9% of the time at first,
// 0.23% once the choice is clear, while a change of spell is still found within 256 forwards.
#include <array>
#include <cstdint>

#include "kernels/kernels.h"

namespace nextn {

class KernelChooser {
  public:
    // Forwards up to this wide are timed (decode steps, verifies, short prompt tails); wider
    // ones (prefill) run on the base table.
    static constexpr int64_t kMaxTimedWidth = 16;
    static constexpr int kTrialPairs = 4;
    // Forwards of a shape from one trial's start to the next: at first and after a close or
    // contrary trial, and at most.
    static constexpr int64_t kTrialEvery = 64;
    static constexpr int64_t kMaxTrialEvery = 256;
    // A trial whose score (log of the time ratio) is this far from zero on the side of the
    // choice confirms it: about 5%.
    static constexpr double kClearMargin = 0.05;

    KernelChooser() = default;
    // alternative null: every forward runs on base, none is timed.
    KernelChooser(const KernelTable* base, const KernelTable* alternative);

    bool active() const { return alternative_ != nullptr; }
    // Whether forwards of this shape are timed (then shapes_[width - 1][n_logits] is theirs);
    // the others run on the base table, untimed.
    bool timed(int64_t width, int64_t n_logits) const {
        return active() && width >= 1 && width <= kMaxTimedWidth && n_logits >= 0 &&
               n_logits <= width;
    }
    // The table a forward of `width` tokens with `n_logits` logits rows runs on.
    const KernelTable& pick(int64_t width, int64_t n_logits);
    // The forward that pick() answered last took `seconds`. Call once after each pick.
    void record(int64_t width, int64_t n_logits, double seconds);
    // Whether the next forward of this shape is part of a trial (false where none is timed).
    bool next_is_trial(int64_t width, int64_t n_logits) const;

    // Forwards run on each table so far, over all shapes (the timed ones only).
    struct Counts {
        int64_t base = 0, alternative = 0;
    };
    Counts counts() const { return counts_; }

  private:
    struct Shape {
        int64_t since_trial = 0;         // forwards since the last trial began
        int64_t interval = kTrialEvery;  // forwards from that trial's start to the next
        bool use_alternative = false;
        bool scored = false;  // a trial has ended
        double score = 0.0;   // log(alternative / base) time, smoothed over trials
        std::array<double, 2 * kTrialPairs> trial_seconds{};
        bool last_was_alternative = false;
    };
    Shape* shape_of(int64_t width, int64_t n_logits) {
        return timed(width, n_logits) ? &shapes_[size_t(width - 1)][size_t(n_logits)] : nullptr;
    }
    static bool trial_slot_is_alternative(int64_t slot) { return slot % 4 == 1 || slot % 4 == 2; }

    const KernelTable* base_ = nullptr;
    const KernelTable* alternative_ = nullptr;
    // [width - 1][n_logits]: n_logits 0..width
    std::array<std::array<Shape, kMaxTimedWidth + 1>, kMaxTimedWidth> shapes_{};
    Counts counts_;
};

}  // namespace nextn
