#pragma once
// Hugging Face tokenizer.json byte-level BPE tokenizer, as Qwen2/Qwen3/Qwen3.5 models use it.
//
//   Tokenizer tok = Tokenizer::load("models/qwen3");          // dir or path of tokenizer.json
//   std::vector<int32_t> ids = tok.encode("Hello <|im_end|>"); // added tokens are parsed
//   std::string text = tok.decode(ids);
//   StreamDecoder sd(tok);  for (id : generated) std::cout << sd.push(id);  std::cout << sd.flush();
//
// Encoding: added tokens are found in the raw text (longest match), the text between them is
// normalized (NFC), split by the pre-tokenizer regex (PCRE2, UTF + UCP) and each piece is BPE
// encoded. Decoding maps byte-level characters back to bytes and replaces ill-formed UTF-8 with
// U+FFFD per maximal subpart. Ids outside the vocabulary are skipped when decoding, as HF does.
// A Tokenizer is immutable after loading (its piece cache is internally locked): share it freely.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nextn {

// tokenizer.ggml.token_type values, numbered as llama.cpp writes them.
enum class GgufTokenType : int32_t {
    Undefined = 0, Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6
};

// What a GGUF file says besides the vocab (all optional).
struct VocabOptions {
    int32_t bos_id = -1;               // tokenizer.ggml.bos_token_id
    int32_t eos_id = -1;               // tokenizer.ggml.eos_token_id
    int32_t pad_id = -1;               // tokenizer.ggml.padding_token_id
    std::vector<int32_t> extra_eos_ids;  // e.g. tokenizer.ggml.eot_token_id
    bool add_bos = false;              // tokenizer.ggml.add_bos_token
    bool add_eos = false;              // tokenizer.ggml.add_eos_token
    std::string chat_template;         // tokenizer.chat_template ("" = none)
};

class Tokenizer {
public:
    // `path` is a directory holding tokenizer.json (and optionally tokenizer_config.json,
    // chat_template.jinja, generation_config.json), or the path of a tokenizer.json file whose
    // siblings are read the same way.
    static Tokenizer load(const std::string& path);

    // From file contents. `config_json` may be empty (no tokenizer_config.json). `where` names
    // the source in error messages.
    static Tokenizer from_json(std::string_view tokenizer_json, std::string_view config_json = {},
                               const std::string& where = "tokenizer.json");

    // From a GGUF-style vocabulary: tokens[i] is the byte-level string of id i, merges are
    // "left right" strings (best first), token_types[i] a GgufTokenType value (Control tokens
    // become special added tokens, UserDefined non-special added tokens). `pre_name` is
    // tokenizer.ggml.pre: "qwen2" (also "qwen3"), "qwen35", or "gpt2". Text is NFC-normalized.
    static Tokenizer from_vocab(const std::vector<std::string>& tokens, const std::vector<std::string>& merges,
                                const std::vector<int32_t>& token_types, const std::string& pre_name,
                                const VocabOptions& options = {});

    Tokenizer(Tokenizer&&) noexcept;
    Tokenizer& operator=(Tokenizer&&) noexcept;
    ~Tokenizer();

    // `parse_special`: match special added tokens in the text (non-special added tokens such as
    // <think> are always matched, like HF's split_special_tokens=false/true). `add_special`:
    // add BOS/EOS when the config asks for it (add_bos_token / add_eos_token; Qwen adds none).
    // Ill-formed UTF-8 in `text` is replaced by U+FFFD first.
    std::vector<int32_t> encode(std::string_view text, bool parse_special = true, bool add_special = false) const;

    // `skip_special` drops tokens marked special (not <think>, <tool_call> and other
    // non-special added tokens).
    std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;

    // Number of ids (largest id + 1 over the vocab and the added tokens).
    int32_t vocab_size() const;
    // -1 when unknown. Looks at added tokens' text first, then the byte-level vocab strings.
    int32_t token_to_id(std::string_view token) const;
    // Added token text or byte-level vocab string ("" for an id without a token).
    const std::string& id_to_token(int32_t id) const;
    // The raw bytes one token decodes to ("" for an id without a token).
    const std::string& token_bytes(int32_t id) const;
    bool is_special(int32_t id) const;  // an added token marked special
    bool is_added(int32_t id) const;    // any added token (special or not)

    int32_t bos_id() const;  // -1 when none
    int32_t eos_id() const;  // the config's eos_token, -1 when none
    int32_t pad_id() const;  // -1 when none
    // Every id that ends generation: eos_id plus generation_config.json's eos_token_id list.
    const std::vector<int32_t>& eos_ids() const;
    bool is_eos(int32_t id) const;
    const std::string& bos_token() const;  // text, "" when none
    const std::string& eos_token() const;
    bool add_bos() const;

    // Template source from chat_template.jinja or tokenizer_config.json ("default" entry when it
    // is a list); "" when there is none (see ChatTemplate::for_tokenizer for the fallback).
    const std::string& chat_template() const;

    struct Impl;

private:
    explicit Tokenizer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

// Turns ids into text one at a time, as they are generated. push() returns only complete UTF-8:
// bytes of an unfinished character wait for the next ids. The concatenation of every push()
// plus flush() equals Tokenizer::decode of the whole sequence. The tokenizer must outlive it.
class StreamDecoder {
public:
    explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special = false);
    std::string push(int32_t id);
    // Emits what is still buffered (an unfinished character becomes U+FFFD) and resets.
    std::string flush();
    // Bytes waiting for the rest of a character.
    std::size_t pending_bytes() const { return pending_.size(); }

private:
    const Tokenizer* tokenizer_;
    bool skip_special_;
    std::string pending_;
};

}  // namespace nextn
