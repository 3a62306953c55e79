#include "formats/mlx_checkpoint.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "formats/drafter.h"
#include "formats/mlx_weights.h"
#include "formats/safetensors.h"

namespace nextn {

namespace {

bool starts_with(const std::string& s, const std::string& prefix) {
    return s.rfind(prefix, 0) == 0;
}

std::string string_field(const nlohmann::json& obj, const char* key) {
    auto it = obj.find(key);
    return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool has_mlx_tensor_names(const std::string& dir) {
    try {
        for (const auto& f : read_safetensors_dir(dir))
            for (const auto& [name, t] : f.tensors)
                if (starts_with(name, "language_model.model.") || starts_with(name, "language_model.mtp."))
                    return true;
    } catch (const Error&) {
        return false;  // the HF loader reports unreadable files with its own message
    }
    return false;
}

// Adds the canonical form of `tensors` (already assembled) to ck; returns how many were added.
int add_canonical(Checkpoint& ck, const std::map<std::string, RawTensor>& tensors, bool load_mtp) {
    int added = 0;
    for (const auto& [name, t] : tensors) {
        std::string canonical = mlx_canonical_name(name);
        if (canonical.empty()) continue;
        if (starts_with(canonical, "mtp.") && !load_mtp) continue;
        ck.tensors[canonical] = t;
        ++added;
    }
    return added;
}

void erase_mtp(Checkpoint& ck) {
    for (auto it = ck.tensors.begin(); it != ck.tensors.end();)
        it = starts_with(it->first, "mtp.") ? ck.tensors.erase(it) : std::next(it);
}

std::vector<const RawTensor*> norms_where(const Checkpoint& ck, bool mtp) {
    std::vector<const RawTensor*> out;
    for (const auto& [name, t] : ck.tensors)
        if (is_one_plus_norm(name) && starts_with(name, "mtp.") == mtp) out.push_back(&t);
    return out;
}

std::string quant_summary(const Checkpoint& ck) {
    std::map<std::pair<int, int>, int> counts;
    int plain = 0;
    for (const auto& [name, t] : ck.tensors) {
        if (t.dtype == DType::MLX_AFFINE) counts[{t.bits, t.group_size}]++;
        else plain++;
    }
    std::string s = "MLX affine quantization:";
    for (const auto& [k, n] : counts)
        s += " " + std::to_string(k.first) + "-bit g" + std::to_string(k.second) + " x" + std::to_string(n) + ",";
    s += " unquantized x" + std::to_string(plain) + "; dequantized as w = scale*q + bias in f32";
    return s;
}

}  // namespace

std::string mlx_canonical_name(const std::string& n) {
    if (starts_with(n, "language_model.model.")) return n.substr(21);
    if (starts_with(n, "language_model.lm_head.")) return n.substr(15);
    if (starts_with(n, "language_model.mtp.")) return n.substr(15);
    if (starts_with(n, "model.language_model.")) return n.substr(21);
    if (starts_with(n, "vision_tower.") || starts_with(n, "visual.") ||
        starts_with(n, "model.visual.") || starts_with(n, "language_model.vision"))
        return "";
    if (starts_with(n, "model.")) return n.substr(6);
    return n;  // lm_head.*, mtp.*, or unknown (kept so inspect can report it)
}

bool is_mlx_checkpoint(const nlohmann::json& config, const std::string& dir) {
    if (config.contains("quantization") || config.contains("mlx_lm_extra_tensors")) return true;
    // HF's own quantization_config always names a quant_method (fp8, gptq, ...); MLX's does not.
    if (auto it = config.find("quantization_config"); it != config.end() && it->is_object() &&
                                                      !it->contains("quant_method"))
        return true;
    return has_mlx_tensor_names(dir);
}

Checkpoint load_mlx_checkpoint(const std::string& dir, const nlohmann::json& config,
                               const LoadOptions& options) {
    const std::string config_path = dir + "/config.json";
    if (string_field(config, "model_type") == "qwen3_5_mtp")
        fail(dir, ": this is an MTP drafter (model_type qwen3_5_mtp), not a model; pass it with "
                  "--draft-model next to a full model");
    Checkpoint ck;
    ck.path = dir;
    ck.format = "mlx";
    ck.config = parse_hf_config(config, config_path);
    if (file_exists(dir + "/tokenizer.json")) ck.tokenizer_dir = dir;
    const MlxQuantConfig quant = parse_mlx_quant_config(config, config_path);

    std::map<std::string, RawTensor> file_tensors;
    for (auto& f : read_safetensors_dir(dir)) {
        ck.keep_alive.push_back(f.file);
        for (auto& [name, t] : f.tensors) {
            ck.file_tensor_names.push_back(name);
            file_tensors[name] = t;
        }
    }
    add_canonical(ck, assemble_mlx_tensors(file_tensors, quant, config_path), options.load_mtp);
    if (ck.find("mtp.fc.weight")) ck.mtp_source = "inline";

    // MTPLX sidecar: HF-named mtp.* tensors in a separate file named by the config.
    if (auto extra = config.find("mlx_lm_extra_tensors"); extra != config.end() && extra->is_object()) {
        auto file = extra->find("mtp_file");
        if (file != extra->end()) {
            if (!file->is_string()) fail(config_path, ": mlx_lm_extra_tensors.mtp_file must be a string");
            const std::string name = file->get<std::string>();
            if (name.empty() || name.find('/') != std::string::npos || name.find("..") != std::string::npos)
                fail(config_path, ": mlx_lm_extra_tensors.mtp_file '", name,
                     "' must be a file name inside the model directory");
            const std::string path = dir + "/" + name;
            if (!options.load_mtp) {
                ck.notes.push_back("MTP sidecar " + name + " ignored (--no-mtp)");
            } else if (!file_exists(path)) {
                // An error, not a note: a run would otherwise go on without the head the config
                // promises and say only "no MTP head".
                fail(config_path, ": mlx_lm_extra_tensors.mtp_file names '", name,
                     "', which is not in the model directory (--no-mtp runs without the head)");
            } else {
                SafetensorsFile side = read_safetensors(path);
                ck.keep_alive.push_back(side.file);
                for (const auto& [n, t] : side.tensors) ck.file_tensor_names.push_back(n);
                if (ck.mtp_source == "inline") {
                    ck.notes.push_back("inline MTP tensors replaced by the sidecar " + name);
                    erase_mtp(ck);
                }
                add_canonical(ck, assemble_mlx_tensors(side.tensors, quant, path), true);
                if (!ck.find("mtp.fc.weight"))
                    fail(path, ": MTP sidecar has no mtp.fc.weight");
                ck.mtp_source = "sidecar";
                ck.notes.push_back("MTP head from sidecar " + name);
            }
        }
    }
    split_switch_mlp(ck.tensors);

    // Trunk norms: mlx-lm adds +1 exactly when it moves conv1d to MLX's [C, K, 1] layout, so
    // that layout says the stored norms include the +1.
    bool trunk_shifted = true;
    for (int i = 0; i < ck.config.n_layers; ++i) {
        if (const RawTensor* conv = ck.find("layers." + std::to_string(i) + ".linear_attn.conv1d.weight")) {
            trunk_shifted = conv->shape.size() == 3 && conv->shape[2] == 1 && conv->shape[1] != 1;
            break;
        }
    }
    const double trunk_mean = mean_norm_value(norms_where(ck, false));
    if ((trunk_mean > kShiftedNormThreshold) != trunk_shifted)
        ck.notes.push_back("warning: trunk norm weights average " + std::to_string(trunk_mean) +
                           ", which does not match the " + (trunk_shifted ? "shifted" : "unshifted") +
                           " form the conv1d layout implies");
    // MTP norms: MTPLX declares zero-centred ("delta") storage; otherwise decide numerically
    // (PR #990 and MTPLX store them shifted; shifting again would double the scale).
    bool mtp_shifted = false;
    if (ck.mtp_source != "none") {
        const std::string encoding = string_field(config, "mtplx_mtp_norm_encoding");
        const double mtp_mean = mean_norm_value(norms_where(ck, true));
        mtp_shifted = encoding == "delta" ? false : mtp_mean > kShiftedNormThreshold;
        ck.notes.push_back(std::string("MTP norms stored ") + (mtp_shifted ? "shifted (1+w)" : "zero-centred (w)") +
                           (encoding.empty() ? ", detected numerically (mean " + std::to_string(mtp_mean) + ")"
                                             : ", as mtplx_mtp_norm_encoding says"));
    }
    for (const auto& [name, t] : ck.tensors)
        if (is_one_plus_norm(name) && (starts_with(name, "mtp.") ? mtp_shifted : trunk_shifted))
            ck.norms_already_shifted.insert(name);

    ck.config.tied_embeddings = ck.find("lm_head.weight") == nullptr;
    ck.notes.push_back(quant_summary(ck));
    if (!options.draft_model.empty()) attach_drafter(ck, options.draft_model);
    return ck;
}

}  // namespace nextn
