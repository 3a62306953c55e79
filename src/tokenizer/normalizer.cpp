#include "tokenizer/normalizer.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/stringpiece.h>

#include "core/error.h"

namespace nextn {
namespace {

const icu::Normalizer2& instance(NormalForm form) {
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2* n = nullptr;
    switch (form) {
        case NormalForm::NFC: n = icu::Normalizer2::getNFCInstance(status); break;
        case NormalForm::NFD: n = icu::Normalizer2::getNFDInstance(status); break;
        case NormalForm::NFKC: n = icu::Normalizer2::getNFKCInstance(status); break;
        case NormalForm::NFKD: n = icu::Normalizer2::getNFKDInstance(status); break;
    }
    if (U_FAILURE(status) || n == nullptr) fail("tokenizer: ICU normalizer unavailable: ", u_errorName(status));
    return *n;
}

bool is_ascii(std::string_view text) {
    for (char c : text)
        if (static_cast<unsigned char>(c) >= 0x80) return false;
    return true;
}

std::string normalize(NormalForm form, std::string_view text) {
    const icu::Normalizer2& n = instance(form);
    UErrorCode status = U_ZERO_ERROR;
    icu::StringPiece piece(text.data(), static_cast<int32_t>(text.size()));
    if (n.isNormalizedUTF8(piece, status) && U_SUCCESS(status)) return std::string(text);
    status = U_ZERO_ERROR;
    std::string out;
    out.reserve(text.size());
    icu::StringByteSink<std::string> sink(&out);
    n.normalizeUTF8(0, piece, sink, nullptr, status);
    if (U_FAILURE(status)) fail("tokenizer: Unicode normalization failed: ", u_errorName(status));
    return out;
}

NormalForm parse_form(const nlohmann::json& spec, const std::string& where) {
    if (!spec.is_object() || !spec.contains("type") || !spec["type"].is_string())
        fail(where, ": normalizer entry without a \"type\" string");
    std::string type = spec["type"].get<std::string>();
    if (type == "NFC") return NormalForm::NFC;
    if (type == "NFD") return NormalForm::NFD;
    if (type == "NFKC") return NormalForm::NFKC;
    if (type == "NFKD") return NormalForm::NFKD;
    fail(where, ": unsupported normalizer type \"", type, "\" (supported: NFC, NFD, NFKC, NFKD, Sequence)");
}

}  // namespace

Normalizer Normalizer::from_json(const nlohmann::json& spec, const std::string& where) {
    if (spec.is_null()) return {};
    std::vector<NormalForm> steps;
    if (spec.is_object() && spec.value("type", "") == "Sequence") {
        if (!spec.contains("normalizers") || !spec["normalizers"].is_array())
            fail(where, ": Sequence normalizer without a \"normalizers\" list");
        for (const auto& step : spec["normalizers"]) steps.push_back(parse_form(step, where));
    } else {
        steps.push_back(parse_form(spec, where));
    }
    return Normalizer(std::move(steps));
}

std::string Normalizer::apply(std::string_view text) const {
    // ASCII is unchanged by every normal form, and most text is ASCII.
    if (steps_.empty() || is_ascii(text)) return std::string(text);
    std::string cur(text);
    for (NormalForm f : steps_) cur = normalize(f, cur);
    return cur;
}

std::string nfc(std::string_view text) {
    if (is_ascii(text)) return std::string(text);
    return normalize(NormalForm::NFC, text);
}

}  // namespace nextn
