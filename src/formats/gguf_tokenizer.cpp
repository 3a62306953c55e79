#include "formats/gguf_tokenizer.h"

#include "core/error.h"

namespace nextn {

namespace {

const std::vector<std::string>& string_array(const GgufFile& f, const std::string& key,
                                             bool required) {
    static const std::vector<std::string> empty;
    const GgufValue* v = f.find(key);
    if (!v) {
        if (required) fail(f.path, ": GGUF file has no tokenizer (missing '", key, "')");
        return empty;
    }
    if (v->type != GgufType::ARRAY || v->elem_type != GgufType::STRING)
        fail(f.path, ": GGUF metadata '", key, "' must be an array of strings");
    return v->strings;
}

}  // namespace

GgufTokenizerData read_gguf_tokenizer(const GgufFile& f) {
    GgufTokenizerData t;
    t.model = f.get_string("tokenizer.ggml.model");
    t.pre = f.get_string("tokenizer.ggml.pre");
    t.tokens = string_array(f, "tokenizer.ggml.tokens", true);
    t.merges = string_array(f, "tokenizer.ggml.merges", false);
    if (const GgufValue* v = f.find("tokenizer.ggml.token_type")) {
        if (v->type != GgufType::ARRAY || v->integers.size() != v->count)
            fail(f.path, ": GGUF metadata 'tokenizer.ggml.token_type' must be an integer array");
        if (v->count != t.tokens.size())
            fail(f.path, ": tokenizer.ggml.token_type has ", v->count, " entries for ",
                 t.tokens.size(), " tokens");
        for (int64_t x : v->integers) t.token_types.push_back(int32_t(x));
    }
    const int64_t n = int64_t(t.tokens.size());
    auto id = [&](const char* key) {
        int64_t v = f.get_int(key, -1);
        if (v < -1 || v >= n)
            fail(f.path, ": ", key, " = ", v, " is outside the vocabulary of ", n, " tokens");
        return v;
    };
    t.bos_id = id("tokenizer.ggml.bos_token_id");
    t.eos_id = id("tokenizer.ggml.eos_token_id");
    t.eot_id = id("tokenizer.ggml.eot_token_id");
    t.pad_id = id("tokenizer.ggml.padding_token_id");
    t.unk_id = id("tokenizer.ggml.unknown_token_id");
    t.add_bos = f.get_bool("tokenizer.ggml.add_bos_token", false);
    t.add_eos = f.get_bool("tokenizer.ggml.add_eos_token", false);
    t.chat_template = f.get_string("tokenizer.chat_template");
    return t;
}

GgufTokenizerData read_gguf_tokenizer(const std::string& path) {
    return read_gguf_tokenizer(read_gguf(path));
}

}  // namespace nextn
