// Separate MTP drafters (fixture README section 11): a qwen3_5_mtp directory (mlx-vlm split,
// bare names, norms stored shifted) and llama.cpp's MTP-only GGUF, attached to targets of any
// format; dimension checks and unknown architectures refused with clear messages.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/half.h"
#include "error_of.h"
#include "formats/checkpoint.h"
#include "formats/drafter.h"
#include "kernels/weight.h"
#include "test_paths.h"

namespace nextn {
namespace {

namespace fs = std::filesystem;

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

using test::error_of;

std::string temp_dir(const std::string& name) {
    fs::path dir = fs::path(test::scratch_dir()) / name;
    fs::create_directories(dir);
    return dir.string();
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::vector<float> bf16_one_plus(const RawTensor& hf_norm) {
    auto v = tensor_to_f32(hf_norm);
    for (float& x : v) x = bf16_to_f32(f32_to_bf16(x + 1.0f));
    return v;
}

const char* kNorms[] = {"mtp.norm.weight", "mtp.pre_fc_norm_embedding.weight", "mtp.pre_fc_norm_hidden.weight",
                        "mtp.layers.0.input_layernorm.weight", "mtp.layers.0.post_attention_layernorm.weight",
                        "mtp.layers.0.self_attn.q_norm.weight", "mtp.layers.0.self_attn.k_norm.weight"};

TEST(FormatsDrafter, UnknownArchitectureAndMissingPath) {
    const std::string dir = temp_dir("llama");
    write_text(dir + "/config.json", R"({"model_type": "llama", "hidden_size": 8})");
    Checkpoint target;
    EXPECT_NE(error_of([&] { attach_drafter(target, dir); }).find("unsupported draft architecture 'llama'"),
              std::string::npos);
    EXPECT_NE(error_of([&] { attach_drafter(target, dir + "/nope"); }).find("does not exist"), std::string::npos);
    write_text(dir + "/plain.bin", "hello");
    EXPECT_NE(error_of([&] { attach_drafter(target, dir + "/plain.bin"); }).find("unrecognised draft model"),
              std::string::npos);
}

TEST(FormatsDrafterFixtures, MlxDrafterOnHfTarget) {
    NEXTN_REQUIRE_FIXTURES(fx);
    const std::string dense = fx + "/qwen35-dense-tiny";
    Checkpoint hf = load_checkpoint(dense);
    LoadOptions opts;
    opts.draft_model = dense + "/mlx-mtp-drafter";
    Checkpoint ck = load_checkpoint(dense, opts);
    EXPECT_EQ(ck.mtp_source, "drafter");
    EXPECT_EQ(ck.config.mtp_layers, 1);
    int mtp = 0;
    for (const auto& [name, t] : ck.tensors) {
        if (!starts_with(name, "mtp.")) continue;
        ++mtp;
        const RawTensor& ref = hf.require(name);
        ASSERT_EQ(t.shape, ref.shape) << name;
        EXPECT_EQ(t.file, dense + "/mlx-mtp-drafter/model.safetensors") << name;
        if (ck.norms_already_shifted.count(name))
            EXPECT_EQ(tensor_to_f32(t), bf16_one_plus(ref)) << name;
        else
            EXPECT_EQ(tensor_to_f32(t), tensor_to_f32(ref)) << name;
    }
    EXPECT_EQ(mtp, 15);
    for (const char* n : kNorms) EXPECT_TRUE(ck.norms_already_shifted.count(n)) << n;
    // The trunk and the target's embedding / head are untouched.
    EXPECT_EQ(ck.require("lm_head.weight").file, hf.require("lm_head.weight").file);
}

TEST(FormatsDrafterFixtures, MtpOnlyGgufOnHfAndGgufTargets) {
    NEXTN_REQUIRE_FIXTURES(fx);
    const std::string dense = fx + "/qwen35-dense-tiny";
    Checkpoint f32 = load_checkpoint(dense + "/model-f32.gguf");
    for (const std::string& target : {dense, dense + "/model-Q8_0.gguf", dense + "/mlx-6bit"}) {
        SCOPED_TRACE(target);
        LoadOptions opts;
        opts.draft_model = dense + "/mtp-model-bf16.gguf";
        Checkpoint ck = load_checkpoint(target, opts);
        EXPECT_EQ(ck.mtp_source, "drafter");
        int mtp = 0;
        for (const auto& [name, t] : ck.tensors) {
            if (!starts_with(name, "mtp.")) continue;
            ++mtp;
            // README 11.2: every tensor, widened to f32, equals model-f32.gguf's bit for bit.
            EXPECT_EQ(tensor_to_f32(t), tensor_to_f32(f32.require(name))) << name;
        }
        EXPECT_EQ(mtp, 15);
        for (const char* n : kNorms) EXPECT_TRUE(ck.norms_already_shifted.count(n)) << n;
        EXPECT_EQ(ck.require("mtp.fc.weight").dtype, DType::BF16);
    }
}

TEST(FormatsDrafterFixtures, MismatchesAreRefused) {
    NEXTN_REQUIRE_FIXTURES(fx);
    const std::string dense = fx + "/qwen35-dense-tiny";
    // A drafter whose config claims another hidden size.
    auto config = nlohmann::json::parse(read_text_file(dense + "/mlx-mtp-drafter/config.json"));
    config["text_config"]["hidden_size"] = 256;
    const std::string dir = temp_dir("wide");
    write_text(dir + "/config.json", config.dump());
    fs::remove(dir + "/model.safetensors");
    fs::create_symlink(dense + "/mlx-mtp-drafter/model.safetensors", dir + "/model.safetensors");
    Checkpoint target = load_checkpoint(dense);
    const std::string msg = error_of([&] { attach_drafter(target, dir); });
    EXPECT_NE(msg.find("hidden_size 256 does not match the target's 128"), std::string::npos) << msg;
    EXPECT_EQ(target.mtp_source, "inline");  // unchanged on failure
    // A dense drafter for a MoE target.
    Checkpoint moe = load_checkpoint(fx + "/qwen35-moe-tiny");
    const std::string moe_msg = error_of([&] { attach_drafter(moe, dense + "/mlx-mtp-drafter"); });
    EXPECT_NE(moe_msg.find("dense MLP but the target is MoE"), std::string::npos) << moe_msg;
}

TEST(FormatsDrafterFixtures, DrafterDirectoryIsNotAModel) {
    NEXTN_REQUIRE_FIXTURES(fx);
    EXPECT_THROW(load_checkpoint(fx + "/qwen35-dense-tiny/mlx-mtp-drafter"), Error);
}

}  // namespace
}  // namespace nextn
