// config.json as the architecture spec (section 1) reads it: text_config if present, else the top
// level; the defaults and the layer-type rule for keys a config leaves out; rope_parameters over
// the older top-level RoPE keys; the consistency checks; and the HF loader's rules that the file,
// not the config, decides tying and that --no-mtp leaves the mtp.* tensors out. Every config the
// fixtures hold states each of these keys, so the loaders' own tests never reach the fallbacks.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "error_of.h"
#include "formats/checkpoint.h"
#include "formats/model_config.h"
#include "test_paths.h"

namespace nextn {
namespace {

namespace fs = std::filesystem;
using test::error_of;

nlohmann::json fixture_config(const std::string& model = "qwen35-dense-tiny") {
    return nlohmann::json::parse(read_text_file(test::data_dir() + "/" + model + "/config.json"));
}

// The dense fixture's config with `edit` applied to its text_config, parsed.
ModelConfig dense_with(const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json root = fixture_config();
    edit(root["text_config"]);
    return parse_hf_config(root, "config.json");
}

std::string dense_error(const std::function<void(nlohmann::json&)>& edit) {
    return error_of([&] { dense_with(edit); });
}

TEST(FormatsModelConfig, AbsentKeysTakeTheReleasedValues) {
    // Spec 1.2 / 1.3: K = 4, eps 1e-6, 262144 positions, rope_theta 1e7 in every release.
    const ModelConfig c = dense_with([](nlohmann::json& t) {
        for (const char* k : {"linear_conv_kernel_dim", "rms_norm_eps", "max_position_embeddings"})
            t.erase(k);
        t["rope_parameters"].erase("rope_theta");
    });
    EXPECT_EQ(c.conv_kernel, 4);
    EXPECT_EQ(c.rms_eps, 1e-6f);
    EXPECT_EQ(c.max_positions, 262144);
    EXPECT_EQ(c.rope_theta, 1e7);
    // The fixture states other values for each, and they are read.
    const ModelConfig s = dense_with([](nlohmann::json& t) {
        t["linear_conv_kernel_dim"] = 3;
        t["rms_norm_eps"] = 1e-5;
        t["max_position_embeddings"] = 512;
    });
    EXPECT_EQ(s.conv_kernel, 3);
    EXPECT_EQ(s.rms_eps, 1e-5f);
    EXPECT_EQ(s.max_positions, 512);
}

TEST(FormatsModelConfig, WithoutLayerTypesEveryIntervalthLayerIsFullAttention) {
    // Spec 1.2: layer i is full attention iff (i + 1) % full_attention_interval == 0 (default 4).
    auto kinds = [](const std::function<void(nlohmann::json&)>& edit) {
        return dense_with([&](nlohmann::json& t) {
                   t.erase("layer_types");
                   edit(t);
               })
            .is_linear;
    };
    const std::vector<bool> every_fourth = {true, true, true, false, true, true, true, false};
    EXPECT_EQ(kinds([](nlohmann::json& t) { t.erase("full_attention_interval"); }), every_fourth);
    EXPECT_EQ(kinds([](nlohmann::json&) {}), every_fourth);
    EXPECT_EQ(kinds([](nlohmann::json& t) { t["full_attention_interval"] = 3; }),
              (std::vector<bool>{true, true, false, true, true, false, true, true}));
    EXPECT_EQ(kinds([](nlohmann::json& t) { t["full_attention_interval"] = 1; }),
              std::vector<bool>(8, false));
    EXPECT_NE(dense_error([](nlohmann::json& t) {
                  t.erase("layer_types");
                  t["full_attention_interval"] = 0;
              }).find("full_attention_interval must be positive"),
              std::string::npos);
    // An explicit list is taken as it is, whatever the interval says.
    EXPECT_EQ(dense_with([](nlohmann::json& t) {
                  t["full_attention_interval"] = 2;
                  t["layer_types"][0] = "full_attention";
              }).is_linear,
              (std::vector<bool>{false, true, true, false, true, true, true, false}));
}

TEST(FormatsModelConfig, RopeParametersOverrideTheTopLevelKeys) {
    // head_dim 64: rotary dims = int(64 * partial_rotary_factor).
    const ModelConfig nested = dense_with([](nlohmann::json& t) {
        t["rope_theta"] = 5e5;
        t["partial_rotary_factor"] = 0.5;
        t["rope_parameters"]["rope_theta"] = 2e6;
        t["rope_parameters"]["partial_rotary_factor"] = 0.125;
    });
    EXPECT_EQ(nested.rope_theta, 2e6);
    EXPECT_EQ(nested.rotary_dims, 8);
    // Older exports: the top-level keys, where rope_parameters does not name them.
    const ModelConfig older = dense_with([](nlohmann::json& t) {
        t["rope_theta"] = 5e5;
        t["partial_rotary_factor"] = 0.5;
        t["rope_parameters"].erase("rope_theta");
        t["rope_parameters"].erase("partial_rotary_factor");
    });
    EXPECT_EQ(older.rope_theta, 5e5);
    EXPECT_EQ(older.rotary_dims, 32);
    const ModelConfig no_object = dense_with([](nlohmann::json& t) {
        t["rope_theta"] = 5e5;
        t["partial_rotary_factor"] = 0.5;
        t.erase("rope_parameters");
    });
    EXPECT_EQ(no_object.rope_theta, 5e5);
    EXPECT_EQ(no_object.rotary_dims, 32);
}

TEST(FormatsModelConfig, TextConfigIsReadFirstThenTheTopLevel) {
    // A text-only re-export holds the same keys at the top level (spec 1.1) and reads the same.
    nlohmann::json nested = fixture_config();
    nlohmann::json flat = nested["text_config"];
    const ModelConfig a = parse_hf_config(nested, "nested"), b = parse_hf_config(flat, "flat");
    EXPECT_EQ(b.architecture, "qwen3_5");
    EXPECT_EQ(a.hidden_size, b.hidden_size);
    EXPECT_EQ(a.is_linear, b.is_linear);
    EXPECT_EQ(a.eos_token_ids, (std::vector<int>{1021}));
    EXPECT_EQ(b.eos_token_ids, (std::vector<int>{1021}));

    // eos_token_id: text_config's wins; the top level's is read only where text_config has none;
    // a list is read whole.
    nlohmann::json both = nested;
    both["eos_token_id"] = 7;
    EXPECT_EQ(parse_hf_config(both, "both").eos_token_ids, (std::vector<int>{1021}));
    both["text_config"].erase("eos_token_id");
    EXPECT_EQ(parse_hf_config(both, "top").eos_token_ids, (std::vector<int>{7}));
    both["text_config"]["eos_token_id"] = {5, 6};
    EXPECT_EQ(parse_hf_config(both, "list").eos_token_ids, (std::vector<int>{5, 6}));

    // tie_word_embeddings sits at both levels (spec 1.1); text_config's wins where both are set.
    for (bool top : {false, true})
        for (bool text : {false, true}) {
            nlohmann::json t = nested;
            t["tie_word_embeddings"] = top;
            t["text_config"]["tie_word_embeddings"] = text;
            EXPECT_EQ(parse_hf_config(t, "tie").tied_embeddings, text) << top << text;
            t["text_config"].erase("tie_word_embeddings");
            EXPECT_EQ(parse_hf_config(t, "tie").tied_embeddings, top) << top;
        }
}

TEST(FormatsModelConfig, ConsistencyChecks) {
    EXPECT_NE(dense_error([](nlohmann::json& t) {
                  t["num_key_value_heads"] = 3;
              }).find("num_attention_heads 4 is not a multiple of num_key_value_heads 3"),
              std::string::npos);
    EXPECT_NE(dense_error([](nlohmann::json& t) {
                  t["linear_num_value_heads"] = 3;
              }).find("linear_num_value_heads 3 is not a multiple of linear_num_key_heads 2"),
              std::string::npos);
    // int(64 * 0.015625) = 1: RoPE rotates pairs of dimensions.
    EXPECT_NE(dense_error([](nlohmann::json& t) {
                  t["rope_parameters"]["partial_rotary_factor"] = 0.015625;
              }).find("rotary dimensions 1 invalid for head_dim 64"),
              std::string::npos);
    EXPECT_NE(dense_error([](nlohmann::json& t) {
                  t["layer_types"].erase(0);
              }).find("layer_types has 7 entries for 8 layers"),
              std::string::npos);
    EXPECT_NE(dense_error([](nlohmann::json& t) {
                  t["layer_types"].push_back("linear_attention");
              }).find("layer_types has 9 entries for 8 layers"),
              std::string::npos);

    // MoE: every expert routed (k = E) is a valid config; more than E is not.
    nlohmann::json moe = fixture_config("qwen35-moe-tiny");
    const int E = moe["text_config"]["num_experts"].get<int>();
    moe["text_config"]["num_experts_per_tok"] = E;
    EXPECT_EQ(parse_hf_config(moe, "moe").n_experts_used, E);
    moe["text_config"]["num_experts_per_tok"] = E + 1;
    EXPECT_NE(error_of([&] { parse_hf_config(moe, "moe"); })
                  .find("num_experts_per_tok " + std::to_string(E + 1) + " > num_experts " +
                        std::to_string(E)),
              std::string::npos);
}

// A model directory holding the dense fixture's weights under the given config.
std::string dense_dir_with_config(const std::string& name, const nlohmann::json& config) {
    const fs::path dir = fs::path(test::scratch_dir()) / name;
    fs::create_directories(dir);
    fs::create_symlink(fs::path(test::data_dir()) / "qwen35-dense-tiny" / "model.safetensors",
                       dir / "model.safetensors");
    std::ofstream(dir / "config.json") << config.dump();
    return dir.string();
}

TEST(FormatsModelConfig, HfLoaderTiesByTheFileAndLeavesMtpOutOnRequest) {
    // The file holds lm_head.weight: not tied, whatever both config flags say (spec 1.1).
    nlohmann::json config = fixture_config();
    config["tie_word_embeddings"] = true;
    config["text_config"]["tie_word_embeddings"] = true;
    const std::string dir = dense_dir_with_config("tie_flag_true", config);
    const Checkpoint ck = load_checkpoint(dir);
    EXPECT_NE(ck.find("lm_head.weight"), nullptr);
    EXPECT_FALSE(ck.config.tied_embeddings);
    EXPECT_EQ(ck.mtp_source, "inline");
    EXPECT_NE(ck.find("mtp.fc.weight"), nullptr);

    LoadOptions no_mtp;
    no_mtp.load_mtp = false;
    const Checkpoint trunk = load_checkpoint(dir, no_mtp);
    EXPECT_EQ(trunk.mtp_source, "none");
    for (const auto& [name, t] : trunk.tensors) EXPECT_NE(name.rfind("mtp.", 0), 0u) << name;
    // A missing tensor is named as the file names it.
    EXPECT_NE(error_of([&] {
                  trunk.require("layers.0.input_layernorm.weight_x");
              }).find("missing tensor 'model.language_model.layers.0.input_layernorm.weight_x'"),
              std::string::npos);
    EXPECT_NE(
        error_of([&] { trunk.require("mtp.fc.weight"); }).find("missing tensor 'mtp.fc.weight'"),
        std::string::npos);
}

}  // namespace
}  // namespace nextn
