// Building a Tokenizer: from tokenizer.json (+ tokenizer_config.json and friends) or from a
// GGUF-style vocabulary.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/mapped_file.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_impl.h"

namespace nextn {
namespace {

// Plain json (sorted std::map objects): ordered_json inserts in linear time, far too slow for a
// 150k-entry vocab object.
using Json = nlohmann::json;

// Split regexes of the pre-tokenizers llama.cpp names in tokenizer.ggml.pre.
constexpr const char* kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen3.5 keeps combining marks with letters.
constexpr const char* kQwen35Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kGpt2Regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

Json parse_json(std::string_view text, const std::string& where) {
    try {
        return Json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::exception& e) {
        fail(where, ": not valid JSON: ", e.what());
    }
}

// Special-token fields are a string, null, or an AddedToken object {"content": ...}.
std::string token_field(const Json& config, const char* key) {
    if (!config.contains(key)) return "";
    const Json& v = config[key];
    if (v.is_string()) return v.get<std::string>();
    if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
    return "";
}

std::string template_from_config(const Json& config, const std::string& where) {
    if (!config.contains("chat_template")) return "";
    const Json& t = config["chat_template"];
    if (t.is_string()) return t.get<std::string>();
    if (t.is_array()) {  // [{"name": ..., "template": ...}]: the "default" one is the chat template
        for (const Json& e : t)
            if (e.is_object() && e.value("name", "") == "default" && e.contains("template") && e["template"].is_string())
                return e["template"].get<std::string>();
        fail(where, ": chat_template is a list without a \"default\" entry");
    }
    if (t.is_null()) return "";
    fail(where, ": chat_template must be a string or a list of {name, template}");
}

std::vector<std::pair<std::string, std::string>> read_merges(const Json& merges, const std::string& where) {
    std::vector<std::pair<std::string, std::string>> out;
    out.reserve(merges.size());
    for (std::size_t i = 0; i < merges.size(); ++i) {
        const Json& m = merges[i];
        if (m.is_string()) {  // "left right"
            const std::string& s = m.get_ref<const std::string&>();
            std::size_t sp = s.find(' ');
            if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
                fail(where, ": model.merges[", i, "] \"", s, "\" is not two tokens separated by one space");
            out.emplace_back(s.substr(0, sp), s.substr(sp + 1));
        } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
            out.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
        } else {
            fail(where, ": model.merges[", i, "] must be \"a b\" or [\"a\", \"b\"]");
        }
    }
    return out;
}

void check_decoder(const Json& decoder, const std::string& where) {
    if (decoder.is_object() && decoder.value("type", "") == "ByteLevel") return;
    if (decoder.is_object() && decoder.value("type", "") == "Sequence" && decoder.contains("decoders") &&
        decoder["decoders"].is_array() && decoder["decoders"].size() == 1) {
        check_decoder(decoder["decoders"][0], where);
        return;
    }
    fail(where, ": unsupported decoder ", decoder.dump(), " (only ByteLevel is supported)");
}

void check_post_processor(const Json& post, const std::string& where) {
    // ByteLevel post-processing only adjusts offsets; it adds no tokens.
    if (post.is_null() || (post.is_object() && post.value("type", "") == "ByteLevel")) return;
    if (post.is_object() && post.value("type", "") == "Sequence" && post.contains("processors") &&
        post["processors"].is_array()) {
        for (const Json& p : post["processors"]) check_post_processor(p, where);
        return;
    }
    fail(where, ": unsupported post_processor type ", post.value("type", std::string("?")),
         " (only ByteLevel is supported)");
}

}  // namespace

Tokenizer Tokenizer::from_json(std::string_view tokenizer_json, std::string_view config_json,
                               const std::string& where) {
    Json root = parse_json(tokenizer_json, where);
    if (!root.is_object()) fail(where, ": top level must be a JSON object");
    if (!root.contains("model") || !root["model"].is_object()) fail(where, ": missing \"model\" object");
    const Json& model = root["model"];
    std::string type = model.value("type", "");
    if (type != "BPE")
        fail(where, ": unsupported model type \"", type, "\" (only byte-level \"BPE\" is supported)");
    if (model.value("byte_fallback", false)) fail(where, ": BPE with byte_fallback is not supported");
    if (!model.contains("vocab") || !model["vocab"].is_object()) fail(where, ": model.vocab must be an object");
    if (!model.contains("merges") || !model["merges"].is_array()) fail(where, ": model.merges must be a list");

    auto impl = std::make_unique<Impl>();
    std::vector<std::string> vocab;
    for (const auto& [token, id_json] : model["vocab"].items()) {
        if (!id_json.is_number_integer()) fail(where, ": model.vocab[\"", token, "\"] is not an integer id");
        int64_t id = id_json.get<int64_t>();
        if (id < 0 || id > 100'000'000) fail(where, ": model.vocab[\"", token, "\"] has id ", id, " out of range");
        if (static_cast<std::size_t>(id) >= vocab.size()) vocab.resize(id + 1);
        vocab[id] = token;
    }
    impl->bpe = BpeModel(std::move(vocab), read_merges(model["merges"], where),
                         model.value("ignore_merges", false), RepeatedMerge::KeepLast, where);

    if (root.contains("added_tokens")) {
        if (!root["added_tokens"].is_array()) fail(where, ": added_tokens must be a list");
        for (const Json& t : root["added_tokens"]) {
            if (!t.is_object() || !t.contains("id") || !t["id"].is_number_integer() || !t.contains("content") ||
                !t["content"].is_string())
                fail(where, ": every added_tokens entry needs an integer \"id\" and a string \"content\"");
            AddedToken a;
            a.id = t["id"].get<int32_t>();
            a.content = t["content"].get<std::string>();
            a.special = t.value("special", false);
            if (t.value("lstrip", false) || t.value("rstrip", false) || t.value("single_word", false))
                fail(where, ": added token \"", a.content, "\" uses lstrip/rstrip/single_word, which is not supported");
            impl->added.push_back(std::move(a));
        }
    }
    impl->normalizer = Normalizer::from_json(root.value("normalizer", Json()), where);
    impl->pre_tokenizer = PreTokenizer::from_json(root.value("pre_tokenizer", Json()), where);
    check_decoder(root.value("decoder", Json()), where);
    check_post_processor(root.value("post_processor", Json()), where);

    if (!config_json.empty()) {
        std::string cwhere = where + " (tokenizer_config.json)";
        Json config = parse_json(config_json, cwhere);
        if (!config.is_object()) fail(cwhere, ": top level must be a JSON object");
        impl->bos_token = token_field(config, "bos_token");
        impl->eos_token = token_field(config, "eos_token");
        std::string pad = token_field(config, "pad_token");
        impl->add_bos = config.value("add_bos_token", false);
        impl->add_eos = config.value("add_eos_token", false);
        impl->chat_template = template_from_config(config, cwhere);
        impl->bos_id = impl->bos_token.empty() ? -1 : impl->lookup(impl->bos_token);
        impl->eos_id = impl->eos_token.empty() ? -1 : impl->lookup(impl->eos_token);
        impl->pad_id = pad.empty() ? -1 : impl->lookup(pad);
    }
    impl->finish(where);
    return Tokenizer(std::move(impl));
}

Tokenizer Tokenizer::load(const std::string& path) {
    std::string dir, json_path;
    if (is_directory(path)) {
        dir = path;
        json_path = path + "/tokenizer.json";
    } else {
        json_path = path;
        std::size_t slash = path.find_last_of('/');
        dir = slash == std::string::npos ? "." : path.substr(0, slash);
    }
    if (!file_exists(json_path)) fail(json_path, ": tokenizer file not found");
    std::string config_path = dir + "/tokenizer_config.json";
    std::string config = file_exists(config_path) ? read_text_file(config_path) : std::string();
    Tokenizer tok = from_json(read_text_file(json_path), config, json_path);
    // transformers saves the template to its own file in newer versions; that file wins.
    if (std::string jinja = dir + "/chat_template.jinja"; file_exists(jinja))
        tok.impl_->chat_template = read_text_file(jinja);
    // generation_config.json lists every id that stops generation (Qwen: <|im_end|>, <|endoftext|>).
    if (std::string gen = dir + "/generation_config.json"; file_exists(gen)) {
        Json g = parse_json(read_text_file(gen), gen);
        if (g.is_object() && g.contains("eos_token_id")) {
            const Json& e = g["eos_token_id"];
            std::vector<int32_t> ids;
            if (e.is_number_integer()) ids.push_back(e.get<int32_t>());
            else if (e.is_array())
                for (const Json& x : e)
                    if (x.is_number_integer()) ids.push_back(x.get<int32_t>());
            for (int32_t id : ids)
                if (!tok.is_eos(id)) tok.impl_->eos_ids.push_back(id);
        }
    }
    return tok;
}

Tokenizer Tokenizer::from_vocab(const std::vector<std::string>& tokens, const std::vector<std::string>& merges,
                                const std::vector<int32_t>& token_types, const std::string& pre_name,
                                const VocabOptions& options) {
    const std::string where = "GGUF tokenizer (pre \"" + pre_name + "\")";
    const char* regex = nullptr;
    if (pre_name == "qwen2" || pre_name == "qwen3") regex = kQwen2Regex;
    else if (pre_name == "qwen35") regex = kQwen35Regex;
    else if (pre_name == "gpt2" || pre_name == "default") regex = kGpt2Regex;
    else fail(where, ": unknown tokenizer.ggml.pre \"", pre_name, "\" (known: qwen2, qwen3, qwen35, gpt2)");
    if (!token_types.empty() && token_types.size() != tokens.size())
        fail(where, ": ", token_types.size(), " token types for ", tokens.size(), " tokens");

    auto impl = std::make_unique<Impl>();
    std::vector<std::string> vocab(tokens.size());
    for (std::size_t id = 0; id < tokens.size(); ++id) {
        auto type = static_cast<GgufTokenType>(token_types.empty() ? 1 : token_types[id]);
        if (type == GgufTokenType::Control || type == GgufTokenType::UserDefined)
            impl->added.push_back({static_cast<int32_t>(id), tokens[id], type == GgufTokenType::Control});
        else
            vocab[id] = tokens[id];
    }
    std::vector<std::pair<std::string, std::string>> pairs;
    pairs.reserve(merges.size());
    for (std::size_t i = 0; i < merges.size(); ++i) {
        std::size_t sp = merges[i].find(' ');
        if (sp == std::string::npos) fail(where, ": merge #", i, " \"", merges[i], "\" has no space");
        pairs.emplace_back(merges[i].substr(0, sp), merges[i].substr(sp + 1));
    }
    impl->bpe = BpeModel(std::move(vocab), pairs, false, RepeatedMerge::KeepFirst, where);
    impl->normalizer = Normalizer({NormalForm::NFC});  // as Qwen's tokenizer.json specifies
    impl->pre_tokenizer = PreTokenizer::isolated_regex(regex, where);
    auto check_id = [&](int32_t id, const char* what) {
        if (id >= static_cast<int32_t>(tokens.size())) fail(where, ": ", what, " ", id, " is out of range");
        return id;
    };
    impl->bos_id = check_id(options.bos_id, "bos id");
    impl->eos_id = check_id(options.eos_id, "eos id");
    impl->pad_id = check_id(options.pad_id, "pad id");
    if (impl->bos_id >= 0) impl->bos_token = tokens[impl->bos_id];
    if (impl->eos_id >= 0) impl->eos_token = tokens[impl->eos_id];
    for (int32_t id : options.extra_eos_ids) impl->eos_ids.push_back(check_id(id, "eos id"));
    impl->add_bos = options.add_bos;
    impl->add_eos = options.add_eos;
    impl->chat_template = options.chat_template;
    impl->finish(where);
    return Tokenizer(std::move(impl));
}

}  // namespace nextn
