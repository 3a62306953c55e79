// libFuzzer target: arbitrary bytes as prompt text through the tokenizer of the tiny Qwen3.5
// fixture (tests/data/tokenizer/dense-tiny: NFC normalizer, the Qwen3.5 split regex, byte-level
// BPE, <|im_start|>-style added tokens), loaded once. Checks what tokenizer.h promises:
// - encode never fails on any bytes (ill-formed UTF-8 becomes U+FFFD first), with and without
//   special-token parsing, and every id it returns is in the vocabulary;
// - decode(encode(x)) == NFC(x) for valid UTF-8 x (for any x: NFC of its U+FFFD-repaired form);
// - StreamDecoder's pushes plus flush equal decode of the same ids.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace {

const nextn::Tokenizer& tokenizer() {
    // Loaded once per process (function-local static, read-only after): the fixture is 30 KB.
    static const nextn::Tokenizer tok = nextn::Tokenizer::load(NEXTN_FUZZ_TOKENIZER_DIR);
    return tok;
}

[[noreturn]] void bug(const char* what) {
    std::fprintf(stderr, "tokenizer_fuzz: %s\n", what);
    std::abort();
}

void check(const nextn::Tokenizer& tok, std::string_view text, bool parse_special) {
    std::vector<int32_t> ids = tok.encode(text, parse_special);
    for (int32_t id : ids)
        if (id < 0 || id >= tok.vocab_size()) bug("encode returned an id outside the vocabulary");
    std::string decoded = tok.decode(ids);
    if (decoded != nextn::nfc(nextn::utf8::lossy(text))) bug("decode(encode(x)) != NFC(x)");
    nextn::StreamDecoder sd(tok);
    std::string streamed;
    for (int32_t id : ids) streamed += sd.push(id);
    streamed += sd.flush();
    if (streamed != decoded) bug("StreamDecoder output != decode");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const nextn::Tokenizer& tok = tokenizer();
    std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        check(tok, text, true);
        check(tok, text, false);
    } catch (const nextn::Error& e) {
        // encode/decode promise to accept any bytes: an error here is a bug too.
        std::fprintf(stderr, "tokenizer_fuzz: unexpected error: %s\n", e.what());
        std::abort();
    }
    return 0;
}
