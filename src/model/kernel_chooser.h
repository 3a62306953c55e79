#pragma once
// Chooses, forward by forward, between two kernel tables that compute the same bits and differ
// only in speed, by timing them against each other while the model decodes.
//
// Why: on the Zen 5 VM the faster way to prefetch a decode step's weights (one cursor over a
// matmul's bytes, or each row group's own stream) changes with the memory's state from one
// minute to the next, and no single rate predicts which wins (docs/speed-log.md, sessions 31-32,
// 43 and 45). A fixed choice loses 5-15% in the spells that favour the other.
//
// How: each forward shape (width, logits rows) up to kMaxTimedWidth keeps its own choice. Every
// kTrialEvery forwards of a shape run a trial: kTrialPairs pairs of forwards, one on each table,
// in the order base, alternative, alternative, base, ... (so a steady drift in the step's cost,
// such as a growing KV cache, favours neither). A trial's score is the median over its pairs of
// log(alternative time / base time); the shape's score is the mean of its trial and the previous
// score, and the alternative runs while that score is below zero. A trial costs the loser's
// excess on kTrialPairs of kTrialEvery forwards (about 6% of them: under 1% of the time for a
// 15% difference).
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
    // Forwards of a shape from one trial's start to the next.
    static constexpr int64_t kTrialEvery = 64;

    KernelChooser() = default;
    // alternative null: every forward runs on base, none is timed.
    KernelChooser(const KernelTable* base, const KernelTable* alternative);

    bool active() const { return alternative_ != nullptr; }
    // The table a forward of `width` tokens with `n_logits` logits rows runs on.
    const KernelTable& pick(int64_t width, int64_t n_logits);
    // The forward that pick() answered last took `seconds`. Call once after each pick.
    void record(int64_t width, int64_t n_logits, double seconds);

    // Forwards run on each table so far, over all shapes (the timed ones only).
    struct Counts {
        int64_t base = 0, alternative = 0;
    };
    Counts counts() const { return counts_; }

  private:
    struct Shape {
        int64_t forwards = 0;  // forwards of this shape so far
        bool use_alternative = false;
        bool scored = false;  // a trial has ended
        double score = 0.0;   // log(alternative / base) time, smoothed over trials
        std::array<double, 2 * kTrialPairs> trial_seconds{};
        bool last_was_alternative = false;
    };
    Shape* shape_of(int64_t width, int64_t n_logits);
    static bool trial_slot_is_alternative(int64_t slot) { return slot % 4 == 1 || slot % 4 == 2; }

    const KernelTable* base_ = nullptr;
    const KernelTable* alternative_ = nullptr;
    // [width - 1][n_logits]: n_logits 0..width
    std::array<std::array<Shape, kMaxTimedWidth + 1>, kMaxTimedWidth> shapes_{};
    Counts counts_;
};

}  // namespace nextn
