#include "formats/drafter.h"

#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_file.h"
#include "formats/gguf_checkpoint.h"
#include "formats/mlx_weights.h"
#include "formats/safetensors.h"

namespace nextn {

namespace {

bool starts_with(const std::string& s, const std::string& prefix) {
    return s.rfind(prefix, 0) == 0;
}

// A drafter reduced to what attach_drafter needs: its config and canonical mtp.* tensors.
struct Drafter {
    std::string path;
    ModelConfig config;
    std::map<std::string, RawTensor> tensors;  // canonical mtp.* names
    std::set<std::string> shifted_norms;
    std::vector<std::shared_ptr<void>> keep_alive;
    std::vector<std::string> file_tensor_names;
    std::vector<std::string> notes;
};

Drafter drafter_from_gguf(const std::string& path) {
    Checkpoint ck = load_gguf_drafter(path);
    Drafter d;
    d.path = path;
    d.config = ck.config;
    for (auto& [name, t] : ck.tensors)
        if (starts_with(name, "mtp.")) d.tensors[name] = t;
    if (d.tensors.empty()) fail(path, ": GGUF file has no MTP block (nextn_predict_layers ", ck.config.mtp_layers, ")");
    for (const auto& n : ck.norms_already_shifted)
        if (starts_with(n, "mtp.")) d.shifted_norms.insert(n);
    d.keep_alive = ck.keep_alive;
    d.file_tensor_names = ck.file_tensor_names;
    d.notes.push_back("MTP drafter: GGUF " + path + " (norms stored shifted, as the converter writes them)");
    return d;
}

Drafter drafter_from_dir(const std::string& dir) {
    const std::string config_path = dir + "/config.json";
    if (!file_exists(config_path)) fail(dir, ": drafter directory has no config.json");
    nlohmann::json root = read_json_file(config_path);
    if (!root.is_object()) fail(config_path, ": config is not a JSON object");
    std::string type;
    if (auto it = root.find("model_type"); it != root.end() && it->is_string()) type = it->get<std::string>();
    if (type != "qwen3_5_mtp")
        fail(config_path, ": unsupported draft architecture '", type.empty() ? "(none)" : type,
             "' (supported: qwen3_5_mtp directories and MTP GGUF files)");
    auto text_it = root.find("text_config");
    if (text_it == root.end() || !text_it->is_object())
        fail(config_path, ": qwen3_5_mtp drafter config lacks 'text_config'");
    nlohmann::json text = *text_it;
    if (!text.contains("model_type"))
        text["model_type"] = text.contains("num_experts") ? "qwen3_5_moe_text" : "qwen3_5_text";

    Drafter d;
    d.path = dir;
    d.config = parse_hf_config(text, config_path + " (text_config)");
    const MlxQuantConfig quant = parse_mlx_quant_config(root, config_path);
    std::map<std::string, RawTensor> file_tensors;
    for (auto& f : read_safetensors_dir(dir)) {
        d.keep_alive.push_back(f.file);
        for (auto& [name, t] : f.tensors) {
            d.file_tensor_names.push_back(name);
            file_tensors[name] = t;
        }
    }
    // Names come bare (mlx-vlm's splitter: fc.weight, layers.0...), or with an mtp. /
    // language_model.mtp. prefix (HF form).
    bool bare = false;
    for (auto& [name, t] : assemble_mlx_tensors(file_tensors, quant, config_path)) {
        std::string n = name;
        if (starts_with(n, "language_model.")) n = n.substr(15);
        if (starts_with(n, "model.")) n = n.substr(6);
        if (!starts_with(n, "mtp.")) {
            n = "mtp." + n;
            bare = true;
        }
        d.tensors[n] = t;
    }
    split_switch_mlp(d.tensors);
    if (!d.tensors.count("mtp.fc.weight")) fail(dir, ": drafter has no fc.weight / mtp.fc.weight");

    // mlx-vlm stores bare-named drafters with the +1 already applied and adds it at load time
    // to mtp.-prefixed ones; the values decide, the naming only explains.
    std::vector<const RawTensor*> norms;
    for (const auto& [name, t] : d.tensors)
        if (is_one_plus_norm(name)) norms.push_back(&t);
    const double mean = mean_norm_value(norms);
    const bool shifted = mean > kShiftedNormThreshold;
    for (const auto& [name, t] : d.tensors)
        if (shifted && is_one_plus_norm(name)) d.shifted_norms.insert(name);
    d.notes.push_back("MTP drafter: " + dir + " (" + std::to_string(d.tensors.size()) + " tensors, " +
                      (quant.present ? "MLX-quantized" : "unquantized") + ", norms stored " +
                      (shifted ? "shifted" : "zero-centred") + ", mean " + std::to_string(mean) + ")");
    if (bare != shifted)
        d.notes.push_back(std::string("note: drafter norm values say ") + (shifted ? "shifted" : "zero-centred") +
                          ", unlike what its " + (bare ? "bare" : "mtp.-prefixed") + " tensor names suggest");
    return d;
}

void require_equal(const Drafter& d, const Checkpoint& target, const char* what, int64_t drafter_value,
                   int64_t target_value) {
    if (drafter_value != target_value)
        fail(d.path, ": drafter ", what, " ", drafter_value, " does not match the target's ", target_value,
             " (", target.path, ")");
}

void require_shape(const Drafter& d, const std::string& name, const std::vector<int64_t>& shape) {
    auto it = d.tensors.find(name);
    if (it == d.tensors.end()) fail(d.path, ": drafter lacks '", name, "'");
    if (it->second.shape != shape) {
        RawTensor expected;
        expected.shape = shape;
        fail(d.path, ": drafter tensor '", it->second.name, "' has shape ", it->second.shape_str(),
             ", the target needs ", expected.shape_str());
    }
}

}  // namespace

void attach_drafter(Checkpoint& target, const std::string& path) {
    Drafter d;
    if (is_directory(path)) {
        d = drafter_from_dir(path);
    } else {
        require_file(path, "draft model path");
        if (!is_gguf_file(path))
            fail(path,
                 ": unrecognised draft model (expected a qwen3_5_mtp directory or a GGUF file)");
        d = drafter_from_gguf(path);
    }

    const ModelConfig& t = target.config;
    const ModelConfig& c = d.config;
    require_equal(d, target, "hidden_size", c.hidden_size, t.hidden_size);
    require_equal(d, target, "vocab_size", c.vocab_size, t.vocab_size);
    require_equal(d, target, "head_dim", c.head_dim, t.head_dim);
    require_equal(d, target, "num_attention_heads", c.n_q_heads, t.n_q_heads);
    require_equal(d, target, "num_key_value_heads", c.n_kv_heads, t.n_kv_heads);
    if (c.moe != t.moe)
        fail(d.path, ": drafter has a ", c.moe ? "MoE" : "dense", " MLP but the target is ",
             t.moe ? "MoE" : "dense", " (", target.path, ")");
    const int64_t H = t.hidden_size, D = t.head_dim;
    require_shape(d, "mtp.fc.weight", {H, 2 * H});
    require_shape(d, "mtp.layers.0.self_attn.q_proj.weight", {2 * t.n_q_heads * D, H});
    require_shape(d, "mtp.layers.0.self_attn.k_proj.weight", {t.n_kv_heads * D, H});
    if (t.moe) {
        require_equal(d, target, "num_experts", c.n_experts, t.n_experts);
        require_shape(d, "mtp.layers.0.mlp.experts.0.gate_proj.weight", {t.expert_ffn_size, H});
    } else {
        require_shape(d, "mtp.layers.0.mlp.gate_proj.weight", {t.ffn_size, H});
    }

    for (auto it = target.tensors.begin(); it != target.tensors.end();)
        it = starts_with(it->first, "mtp.") ? target.tensors.erase(it) : std::next(it);
    for (auto it = target.norms_already_shifted.begin(); it != target.norms_already_shifted.end();)
        it = starts_with(*it, "mtp.") ? target.norms_already_shifted.erase(it) : std::next(it);
    std::set<std::string> layers;
    for (auto& [name, tensor] : d.tensors) {
        target.tensors[name] = tensor;
        if (starts_with(name, "mtp.layers.")) layers.insert(name.substr(11, name.find('.', 11) - 11));
    }
    target.norms_already_shifted.insert(d.shifted_norms.begin(), d.shifted_norms.end());
    target.config.mtp_layers = int(layers.size());
    // The file's own head, if it had one, is gone: its notes ("MTP head: block blk.8") would
    // contradict "mtp head: drafter".
    if (target.mtp_source != "none")
        for (std::string& note : target.notes)
            if (starts_with(note, "MTP head:"))
                note = "MTP head in the file replaced by the drafter " + d.path;
    target.mtp_source = "drafter";
    target.keep_alive.insert(target.keep_alive.end(), d.keep_alive.begin(), d.keep_alive.end());
    target.file_tensor_names.insert(target.file_tensor_names.end(), d.file_tensor_names.begin(),
                                    d.file_tensor_names.end());
    target.notes.insert(target.notes.end(), d.notes.begin(), d.notes.end());
    target.notes.push_back("the drafter uses the target's embed_tokens and lm_head");
}

}  // namespace nextn
