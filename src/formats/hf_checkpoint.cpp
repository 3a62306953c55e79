// Hugging Face safetensors checkpoints: official multimodal layout (model.language_model.*),
// text-only layout (model.*), inline MTP head (mtp.*), and qwen3_5_mtp drafters (--draft-model).
#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/error.h"
#include "core/json_file.h"
#include "formats/checkpoint.h"
#include "formats/drafter.h"
#include "formats/mlx_checkpoint.h"
#include "formats/safetensors.h"

namespace nextn {

namespace {


bool starts_with(const std::string& s, const std::string& prefix) {
    return s.rfind(prefix, 0) == 0;
}

// A view of one expert's slice [rows_begin, rows_begin + rows) of a fused [E, R, C] tensor.
RawTensor expert_slice(const RawTensor& fused, int64_t expert, int64_t rows_begin, int64_t rows) {
    const int64_t R = fused.shape[1], C = fused.shape[2];
    const size_t elem = fused.nbytes / size_t(fused.numel());
    RawTensor t = fused;
    t.name = fused.name + "[" + std::to_string(expert) + "]";
    t.shape = {rows, C};
    t.data = fused.data + (size_t(expert) * R + rows_begin) * C * elem;
    t.nbytes = size_t(rows * C) * elem;
    return t;
}

void add_fused_experts(Checkpoint& ck, const std::string& prefix, const RawTensor& gate_up,
                       const RawTensor* down) {
    const auto& cfg = ck.config;
    const int64_t E = cfg.n_experts, I = cfg.expert_ffn_size, H = cfg.hidden_size;
    if (gate_up.shape != std::vector<int64_t>{E, 2 * I, H})
        fail(gate_up.file, ": tensor '", gate_up.name, "' has shape ", gate_up.shape_str(),
             ", expected [", E, ", ", 2 * I, ", ", H, "]");
    for (int64_t e = 0; e < E; ++e) {
        std::string base = prefix + "experts." + std::to_string(e) + ".";
        ck.tensors[base + "gate_proj.weight"] = expert_slice(gate_up, e, 0, I);
        ck.tensors[base + "up_proj.weight"] = expert_slice(gate_up, e, I, I);
        if (down) {
            if (down->shape != std::vector<int64_t>{E, H, I})
                fail(down->file, ": tensor '", down->name, "' has shape ", down->shape_str(),
                     ", expected [", E, ", ", H, ", ", I, "]");
            ck.tensors[base + "down_proj.weight"] = expert_slice(*down, e, 0, H);
        }
    }
}

}  // namespace

Checkpoint load_hf_checkpoint(const std::string& dir, const LoadOptions& options) {
    const std::string config_path = dir + "/config.json";
    nlohmann::json root = read_json_file(config_path);
    if (is_mlx_checkpoint(root, dir)) return load_mlx_checkpoint(dir, root, options);

    Checkpoint ck;
    ck.path = dir;
    ck.format = "safetensors";
    ck.config = parse_hf_config(root, config_path);
    if (file_exists(dir + "/tokenizer.json")) ck.tokenizer_dir = dir;

    std::vector<SafetensorsFile> files = read_safetensors_dir(dir);
    std::map<std::string, const RawTensor*> fused;  // canonical fused-expert names
    for (auto& f : files) {
        ck.keep_alive.push_back(f.file);
        for (auto& [name, t] : f.tensors) {
            ck.file_tensor_names.push_back(name);
            std::string canonical;
            if (starts_with(name, "model.language_model.")) {
                canonical = name.substr(21);
            } else if (starts_with(name, "model.visual.") || starts_with(name, "visual.")) {
                continue;  // vision tower: not used by the text model
            } else if (starts_with(name, "model.")) {
                canonical = name.substr(6);
            } else if (name == "lm_head.weight" || starts_with(name, "mtp.")) {
                canonical = name;
            } else {
                canonical = name;  // kept so that inspect can report it as unused
            }
            if (starts_with(canonical, "mtp.") && !options.load_mtp) continue;
            ck.tensors[canonical] = t;
        }
    }
    // Split fused MoE expert tensors ([E, 2I, H] gate|up and [E, H, I] down) into per-expert views.
    if (ck.config.moe) {
        std::vector<std::string> fused_names;
        const std::string fused_suffix = "mlp.experts.gate_up_proj";
        for (auto& [name, t] : ck.tensors)
            if (name.size() >= fused_suffix.size() &&
                name.compare(name.size() - fused_suffix.size(), fused_suffix.size(), fused_suffix) == 0)
                fused_names.push_back(name);
        for (const auto& name : fused_names) {
            std::string prefix = name.substr(0, name.size() - fused_suffix.size()) + "mlp.";
            const RawTensor gate_up = ck.tensors[name];
            auto down_it = ck.tensors.find(prefix + "experts.down_proj");
            std::optional<RawTensor> down;
            if (down_it != ck.tensors.end()) down = down_it->second;
            add_fused_experts(ck, prefix, gate_up, down ? &*down : nullptr);
            ck.tensors.erase(name);
            if (down) ck.tensors.erase(prefix + "experts.down_proj");
        }
    }
    const bool multimodal_names =
        std::any_of(ck.file_tensor_names.begin(), ck.file_tensor_names.end(),
                    [](const std::string& n) { return starts_with(n, "model.language_model."); });
    ck.file_name_of = [prefix = std::string(multimodal_names ? "model.language_model." : "model.")](
                          const std::string& canonical) {
        return starts_with(canonical, "mtp.") || canonical == "lm_head.weight" ? canonical
                                                                               : prefix + canonical;
    };
    // Tied or not is decided by what the files hold, not by the config flag.
    ck.config.tied_embeddings = ck.find("lm_head.weight") == nullptr;
    bool has_mtp = ck.find("mtp.fc.weight") != nullptr;
    ck.mtp_source = has_mtp ? "inline" : "none";
    if (!options.draft_model.empty()) attach_drafter(ck, options.draft_model);
    return ck;
}

}  // namespace nextn
