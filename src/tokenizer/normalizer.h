#pragma once
// Unicode normalization steps of a tokenizer.json `normalizer` (NFC, NFD, NFKC, NFKD, or a
// Sequence of them), done by ICU. Other normalizer types are rejected when loading.
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace nextn {

enum class NormalForm { NFC, NFD, NFKC, NFKD };

class Normalizer {
public:
    Normalizer() = default;
    explicit Normalizer(std::vector<NormalForm> steps) : steps_(std::move(steps)) {}

    // Reads the `normalizer` field (null -> no steps). `where` names the file for errors.
    static Normalizer from_json(const nlohmann::json& spec, const std::string& where);

    bool empty() const { return steps_.empty(); }

    // Applies every step. `text` must be valid UTF-8.
    std::string apply(std::string_view text) const;

private:
    std::vector<NormalForm> steps_;
};

// NFC of valid UTF-8 text (used by tests and the round-trip check).
std::string nfc(std::string_view text);

}  // namespace nextn
