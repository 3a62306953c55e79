#include "formats/mlx_weights.h"

#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "kernels/weight.h"

namespace nextn {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

int quant_int(const nlohmann::json& obj, const char* key, const std::string& origin,
              const std::string& where) {
    auto it = obj.find(key);
    if (it == obj.end()) fail(origin, ": ", where, " lacks '", key, "'");
    if (!it->is_number_integer()) fail(origin, ": ", where, " field '", key, "' must be an integer");
    return it->get<int>();
}

size_t scale_elem_size(DType t) { return t == DType::F32 ? 4 : 2; }

}  // namespace

bool is_one_plus_norm(const std::string& n) {
    if (ends_with(n, "linear_attn.norm.weight")) return false;
    return n == "norm.weight" || n == "mtp.norm.weight" || ends_with(n, ".input_layernorm.weight") ||
           ends_with(n, ".post_attention_layernorm.weight") || ends_with(n, ".q_norm.weight") ||
           ends_with(n, ".k_norm.weight") || ends_with(n, "pre_fc_norm_embedding.weight") ||
           ends_with(n, "pre_fc_norm_hidden.weight");
}

double mean_norm_value(const std::vector<const RawTensor*>& norms) {
    double sum = 0;
    int64_t count = 0;
    for (const RawTensor* t : norms) {
        for (float v : tensor_to_f32(*t)) sum += v;
        count += t->numel();
    }
    return count ? sum / double(count) : 0.0;
}

MlxQuantConfig parse_mlx_quant_config(const nlohmann::json& config, const std::string& origin) {
    MlxQuantConfig q;
    const nlohmann::json* section = nullptr;
    for (const char* key : {"quantization", "quantization_config"}) {
        auto it = config.find(key);
        // Anything else would be read as "not quantized", and packed codes as plain weights.
        if (it != config.end() && !it->is_object() && !it->is_null())
            fail(origin, ": '", key, "' must be a JSON object (bits, group_size)");
        if (it != config.end() && it->is_object()) {
            section = &*it;
            break;
        }
    }
    if (!section) return q;
    q.present = true;
    const std::string where = "quantization";
    q.bits = quant_int(*section, "bits", origin, where);
    q.group_size = quant_int(*section, "group_size", origin, where);
    if (auto it = section->find("mode"); it != section->end()) {
        if (!it->is_string()) fail(origin, ": quantization 'mode' must be a string");
        q.mode = it->get<std::string>();
    }
    if (q.mode != "affine")
        fail(origin, ": unsupported MLX quantization mode '", q.mode, "' (supported: affine)");
    auto check = [&](int bits, int group, const std::string& what) {
        if (bits < 2 || bits > 8)
            fail(origin, ": ", what, " has unsupported bits ", bits, " (supported: 2..8)");
        if (group <= 0 || (group & (group - 1)) != 0 || group > 1024)
            fail(origin, ": ", what, " has unsupported group_size ", group);
    };
    check(q.bits, q.group_size, where);
    for (auto& [key, value] : section->items()) {
        if (key == "bits" || key == "group_size" || key == "mode") continue;
        MlxQuantConfig::Override o;
        if (value.is_boolean()) {
            o.quantized = value.get<bool>();
            o.bits = q.bits;
            o.group_size = q.group_size;
        } else if (value.is_object()) {
            const std::string w = "quantization override '" + key + "'";
            o.bits = value.contains("bits") ? quant_int(value, "bits", origin, w) : q.bits;
            o.group_size =
                value.contains("group_size") ? quant_int(value, "group_size", origin, w) : q.group_size;
            if (auto m = value.find("mode"); m != value.end() && m->is_string() &&
                                            m->get<std::string>() != "affine")
                fail(origin, ": ", w, " uses unsupported mode '", m->get<std::string>(), "'");
            check(o.bits, o.group_size, w);
        } else {
            continue;  // unknown scalar settings do not describe a module
        }
        q.overrides[key] = o;
    }
    return q;
}

std::map<std::string, RawTensor> assemble_mlx_tensors(const std::map<std::string, RawTensor>& file,
                                                      const MlxQuantConfig& quant,
                                                      const std::string& origin) {
    std::map<std::string, RawTensor> out;
    std::set<std::string> consumed;
    for (const auto& [name, w] : file) {
        if (w.dtype != DType::U32 || !ends_with(name, ".weight")) continue;
        const std::string path = name.substr(0, name.size() - 7);
        auto s_it = file.find(path + ".scales");
        auto b_it = file.find(path + ".biases");
        if (s_it == file.end() || b_it == file.end())
            fail(w.file, ": packed U32 tensor '", name, "' lacks its '", path,
                 s_it == file.end() ? ".scales" : ".biases", "' (only affine MLX quantization is supported)");
        const RawTensor& s = s_it->second;
        const RawTensor& b = b_it->second;
        if (!quant.present)
            fail(origin, ": tensor '", name, "' is quantized but config.json has no 'quantization'");
        int bits = quant.bits, group = quant.group_size;
        if (auto o = quant.overrides.find(path); o != quant.overrides.end()) {
            // MLX stores a module the config excludes as a plain weight: packed codes there mean
            // the files and the config disagree, and neither says which bits to read.
            if (!o->second.quantized)
                fail(w.file, ": tensor '", name,
                     "' is packed, but config.json's quantization marks '", path,
                     "' as not quantized (\"", path, "\": false)");
            bits = o->second.bits;
            group = o->second.group_size;
        }
        if (s.dtype != DType::BF16 && s.dtype != DType::F16 && s.dtype != DType::F32)
            fail(s.file, ": scales '", s.name, "' have dtype ", dtype_name(s.dtype),
                 " (expected BF16, F16 or F32)");
        if (b.dtype != s.dtype || b.shape != s.shape)
            fail(b.file, ": biases '", b.name, "' do not match scales '", s.name, "' (", b.shape_str(),
                 " ", dtype_name(b.dtype), " vs ", s.shape_str(), " ", dtype_name(s.dtype), ")");
        if (w.shape.empty() || s.shape.size() != w.shape.size() ||
            !std::equal(w.shape.begin(), w.shape.end() - 1, s.shape.begin()))
            fail(w.file, ": scales ", s.shape_str(), " of '", name, "' do not match packed shape ",
                 w.shape_str());
        const int64_t groups = s.shape.back();
        const int64_t in = groups * group;
        if (w.shape.back() * 32 != in * bits)
            fail(w.file, ": tensor '", name, "' packs ", w.shape.back(), " words per row, but ",
                 groups, " groups of ", group, " at ", bits, " bits need ", in * bits / 32,
                 " (check the quantization settings for '", path, "')");
        RawTensor t = w;
        t.dtype = DType::MLX_AFFINE;
        t.shape.back() = in;
        t.bits = bits;
        t.group_size = group;
        t.scale_dtype = s.dtype;
        t.scales = s.data;
        t.biases = b.data;
        out[name] = t;
        consumed.insert(path + ".scales");
        consumed.insert(path + ".biases");
    }
    for (const auto& [name, t] : file)
        if (!consumed.count(name) && !out.count(name)) out[name] = t;
    return out;
}

RawTensor expert_view(const RawTensor& stacked, int64_t e) {
    if (stacked.shape.size() != 3)
        fail(stacked.file, ": stacked expert tensor '", stacked.name, "' has shape ",
             stacked.shape_str(), ", expected [experts, rows, cols]");
    const int64_t E = stacked.shape[0];
    if (e < 0 || e >= E || stacked.nbytes % size_t(E) != 0)
        fail(stacked.file, ": cannot take expert ", e, " of '", stacked.name, "'");
    RawTensor t = stacked;
    t.name = stacked.name + "[" + std::to_string(e) + "]";
    t.shape = {stacked.shape[1], stacked.shape[2]};
    const size_t per = stacked.nbytes / size_t(E);
    t.data = stacked.data + size_t(e) * per;
    t.nbytes = per;
    if (stacked.dtype == DType::MLX_AFFINE) {
        const size_t groups = size_t(stacked.shape[1] * (stacked.shape[2] / stacked.group_size));
        const size_t scale_bytes = groups * scale_elem_size(stacked.scale_dtype);
        t.scales = stacked.scales + size_t(e) * scale_bytes;
        t.biases = stacked.biases + size_t(e) * scale_bytes;
    }
    return t;
}

void split_switch_mlp(std::map<std::string, RawTensor>& tensors) {
    std::vector<std::string> stacked;
    for (const auto& [name, t] : tensors)
        if (name.find("switch_mlp.") != std::string::npos && ends_with(name, "_proj.weight"))
            stacked.push_back(name);
    for (const auto& name : stacked) {
        const size_t at = name.find("switch_mlp.");
        const std::string prefix = name.substr(0, at);
        const std::string proj = name.substr(at + 11);  // "gate_proj.weight"
        const RawTensor t = tensors[name];
        if (t.shape.size() != 3)
            fail(t.file, ": stacked expert tensor '", name, "' has shape ", t.shape_str(),
                 ", expected [experts, rows, cols]");
        for (int64_t e = 0; e < t.shape[0]; ++e)
            tensors[prefix + "experts." + std::to_string(e) + "." + proj] = expert_view(t, e);
        tensors.erase(name);
    }
}

}  // namespace nextn
