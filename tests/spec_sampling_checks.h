#pragma once
// What the sampled-speculation tests share (spec_sampling_test.cpp,
// spec_exact_distribution_test.cpp): the chi-square critical value their statistics are held
// to, and the drafter of their controls, which a statistic that passes the real drafter must
// fail.
#include <cmath>

#include "spec/mtp_drafter.h"

namespace nextn::test {

// Upper critical value of chi-square with df degrees of freedom at alpha = 1e-3
// (Wilson-Hilferty: z = 3.09).
inline double chi2_critical(int df) {
    const double z = 3.090232, k = double(df);
    const double t = 1.0 - 2.0 / (9.0 * k) + z * std::sqrt(2.0 / (9.0 * k));
    return k * t * t * t;
}

// Draws its drafts from the MTP head's q but reports q sharpened (q^2, renormalised), as a
// drafter that scored its drafts with the wrong temperature would: acceptance then uses a q the
// drafts were not drawn from, and the output distribution is no longer p.
class MisstatedQDrafter : public Drafter {
  public:
    MisstatedQDrafter(const Qwen35Model& model, SequenceState& state) : inner_(model, state) {}
    void on_commit(const float* hidden, const int32_t* next_tokens, int64_t n,
                   int64_t pos0) override {
        inner_.on_commit(hidden, next_tokens, n, pos0);
    }
    void flush() override { inner_.flush(); }
    void reset() override { inner_.reset(); }
    void draft(const DraftRequest& request, DraftProposal& out) override {
        inner_.draft(request, drawn_);
        out.clear();
        for (size_t i = 0; i < drawn_.size(); ++i) {
            Distribution& q = out.next_q();
            q = drawn_.q()[i];
            double total = 0;
            for (float& v : q.probs) total += double(v) * v;
            for (float& v : q.probs) v = float(double(v) * v / total);
            out.add(drawn_.tokens()[i]);
        }
    }

  private:
    MtpDrafter inner_;
    DraftProposal drawn_;
};

}  // namespace nextn::test
