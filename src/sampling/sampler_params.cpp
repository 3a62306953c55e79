#include "sampling/sampler_params.h"

#include <cmath>

#include "core/error.h"

namespace nextn {

void SamplerParams::validate(FieldNamer name_of) const {
    auto field = [name_of](const char* f) { return name_of ? name_of(f) : std::string("sampling: ") + f; };
    if (!std::isfinite(temperature) || temperature < 0.0f)
        fail(field("temperature"), " must be a finite value >= 0 (0 = greedy), got ", temperature);
    if (top_k < 0) fail(field("top_k"), " must be >= 0 (0 = off), got ", top_k);
    if (!(top_p > 0.0f && top_p <= 1.0f)) fail(field("top_p"), " must be in (0, 1] (1 = off), got ", top_p);
    if (!(min_p >= 0.0f && min_p <= 1.0f)) fail(field("min_p"), " must be in [0, 1] (0 = off), got ", min_p);
    if (penalty_last_n < -1)
        fail(field("penalty_last_n"), " must be >= -1 (-1 = whole history, 0 = off), got ", penalty_last_n);
    if (!std::isfinite(repeat_penalty) || repeat_penalty <= 0.0f)
        fail(field("repeat_penalty"), " must be a finite value > 0 (1 = off), got ", repeat_penalty);
    if (!std::isfinite(presence_penalty)) fail(field("presence_penalty"), " must be finite, got ", presence_penalty);
    if (!std::isfinite(frequency_penalty))
        fail(field("frequency_penalty"), " must be finite, got ", frequency_penalty);
    for (const auto& [id, bias] : logit_bias) {
        if (id < 0) fail("sampling: logit_bias token id must be >= 0, got ", id);
        // -inf is the documented way to ban a token; +inf or NaN would break the softmax.
        if (std::isnan(bias) || bias == INFINITY)
            fail("sampling: logit_bias for token ", id, " must be finite or -inf, got ", bias);
    }
}

void SamplerParams::validate_for_vocab(int64_t vocab_size) const {
    validate();
    for (const auto& [id, bias] : logit_bias)
        if (id >= vocab_size)
            fail("sampling: logit_bias token id ", id, " is outside the vocabulary (size ",
                 vocab_size, ")");
}

}  // namespace nextn
