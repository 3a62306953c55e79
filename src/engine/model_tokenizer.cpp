#include "engine/model_tokenizer.h"

#include "core/error.h"
#include "core/mapped_file.h"
#include "formats/gguf_checkpoint.h"
#include "formats/gguf_tokenizer.h"

namespace nextn {

namespace {

Tokenizer tokenizer_from_gguf(const std::string& path) {
    GgufTokenizerData d = read_gguf_tokenizer(path);
    VocabOptions o;
    o.bos_id = int32_t(d.bos_id);
    o.eos_id = int32_t(d.eos_id);
    o.pad_id = int32_t(d.pad_id);
    if (d.eot_id >= 0) o.extra_eos_ids.push_back(int32_t(d.eot_id));
    o.add_bos = d.add_bos;
    o.add_eos = d.add_eos;
    o.chat_template = d.chat_template;
    return Tokenizer::from_vocab(d.tokens, d.merges, d.token_types, d.pre, o);
}

}  // namespace

std::optional<Tokenizer> load_model_tokenizer(const Checkpoint& ck) {
    if (!ck.tokenizer_dir.empty()) return Tokenizer::load(ck.tokenizer_dir);
    if (ck.format == "gguf") return tokenizer_from_gguf(ck.path);
    return std::nullopt;
}

Tokenizer load_tokenizer_from_path(const std::string& path) {
    if (is_directory(path)) {
        if (!file_exists(path + "/tokenizer.json"))
            fail(path, ": no tokenizer.json in this directory");
        return Tokenizer::load(path);
    }
    require_file(path, "tokenizer path");
    if (is_gguf_file(path)) return tokenizer_from_gguf(path);
    return Tokenizer::load(path);
}

}  // namespace nextn
