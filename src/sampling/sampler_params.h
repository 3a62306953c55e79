#pragma once
// User-facing sampling settings, shared by plain and speculative decoding. Every field has an
// "off" value; with all processors off and temperature 1 sampling is plain softmax sampling.
#include <cstdint>
#include <map>
#include <string>

namespace nextn {

struct SamplerParams {
    float temperature = 1.0f;  // 0 = greedy (argmax, ties to the lowest id); must be >= 0
    int32_t top_k = 0;         // keep the k most likely tokens; 0 = off
    float top_p = 1.0f;        // keep the smallest most-likely prefix with mass >= top_p; 1 = off
    float min_p = 0.0f;        // keep tokens with p >= min_p * max p; 0 = off

    // Penalties look at the last penalty_last_n tokens of the history the caller passes
    // (-1 = the whole history, 0 = penalties off).
    int32_t penalty_last_n = 64;
    // llama.cpp semantics: a penalized token's logit is divided by it when positive and
    // multiplied by it otherwise. 1 = off; must be > 0.
    float repeat_penalty = 1.0f;
    // OpenAI's formula, logit -= presence * [count > 0] + frequency * count, with count taken
    // over the same window as repeat_penalty (prompt included), as llama.cpp counts. 0 = off.
    float presence_penalty = 0.0f;
    float frequency_penalty = 0.0f;

    // token id -> additive bias on its logit; -inf bans the token.
    std::map<int32_t, float> logit_bias;

    uint64_t seed = 0;

    bool greedy() const { return temperature == 0.0f; }
    bool penalties_active() const {
        return penalty_last_n != 0 &&
               (repeat_penalty != 1.0f || presence_penalty != 0.0f || frequency_penalty != 0.0f);
    }
    // Whether the logit bias or the penalties change the logits (sampling steps 1-2); when not,
    // process() samples from its input in place, without a copy.
    bool changes_logits() const { return !logit_bias.empty() || penalties_active(); }

    // Throws nextn::Error naming the first field out of range: "sampling: top_k must be ...",
    // or, with `name_of`, name_of("top_k") + " must be ..." (the CLI names its flags).
    using FieldNamer = std::string (*)(const char* field);
    void validate(FieldNamer name_of = nullptr) const;
    // validate() plus: every logit_bias id lies in [0, vocab_size).
    void validate_for_vocab(int64_t vocab_size) const;
};

}  // namespace nextn
