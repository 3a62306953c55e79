#include "model/kernel_chooser.h"

#include <algorithm>
#include <cmath>

namespace nextn {

KernelChooser::KernelChooser(const KernelTable* base, const KernelTable* alternative)
    : base_(base), alternative_(alternative) {}

const KernelTable& KernelChooser::pick(int64_t width, int64_t n_logits) {
    Shape* s = shape_of(width, n_logits);
    if (!s) return *base_;
    const int64_t slot = s->since_trial;
    s->last_was_alternative =
        slot < 2 * kTrialPairs ? trial_slot_is_alternative(slot) : s->use_alternative;
    return s->last_was_alternative ? *alternative_ : *base_;
}

bool KernelChooser::next_is_trial(int64_t width, int64_t n_logits) const {
    return timed(width, n_logits) &&
           shapes_[size_t(width - 1)][size_t(n_logits)].since_trial < 2 * kTrialPairs;
}

void KernelChooser::record(int64_t width, int64_t n_logits, double seconds) {
    Shape* s = shape_of(width, n_logits);
    if (!s) return;
    ++(s->last_was_alternative ? counts_.alternative : counts_.base);
    const int64_t slot = s->since_trial++;
    if (s->since_trial >= s->interval) s->since_trial = 0;  // the next forward starts a trial
    if (slot >= 2 * kTrialPairs) return;
    s->trial_seconds[size_t(slot)] = std::max(seconds, 1e-9);
    if (slot != 2 * kTrialPairs - 1) return;
    // The trial's last forward: each pair's log(alternative / base), their median, the score.
    std::array<double, kTrialPairs> log_ratios{};
    for (int p = 0; p < kTrialPairs; ++p) {
        const double first = s->trial_seconds[size_t(2 * p)],
                     second = s->trial_seconds[size_t(2 * p + 1)];
        const bool first_is_alternative = trial_slot_is_alternative(2 * p);
        log_ratios[size_t(p)] =
            first_is_alternative ? std::log(first / second) : std::log(second / first);
    }
    std::sort(log_ratios.begin(), log_ratios.end());
    const double trial = 0.5 * (log_ratios[kTrialPairs / 2 - 1] + log_ratios[kTrialPairs / 2]);
    const bool confirms =
        s->scored && (s->use_alternative ? trial <= -kClearMargin : trial >= kClearMargin);
    s->score = s->scored ? 0.5 * (s->score + trial) : trial;
    s->scored = true;
    s->use_alternative = s->score < 0.0;
    s->interval = confirms ? std::min(2 * s->interval, kMaxTrialEvery) : kTrialEvery;
}

}  // namespace nextn
