// Separate MTP drafters (fixture README section 11): a qwen3_5_mtp directory (mlx-vlm split,
// bare names, norms stored shifted) and llama.cpp's MTP-only GGUF, attached to targets of any
// format; dimension checks and unknown architectures refused with clear messages.
#include <gtest/gtest.h>

#include <algorithm>
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

// A drafter folder's config.json, checked before any tensor is read: missing, not an object,
// no model_type (named "(none)"), and a qwen3_5_mtp config without text_config are each refused
// with what was wrong.
TEST(FormatsDrafter, DrafterConfigProblemsAreNamed) {
    Checkpoint target;
    const std::string empty = temp_dir("drafter-empty");
    EXPECT_EQ(error_of([&] { attach_drafter(target, empty); }),
              empty + ": drafter directory has no config.json");
    const std::string array = temp_dir("drafter-array");
    write_text(array + "/config.json", "[1, 2]");
    EXPECT_EQ(error_of([&] { attach_drafter(target, array); }),
              array + "/config.json: config is not a JSON object");
    const std::string untyped = temp_dir("drafter-untyped");
    write_text(untyped + "/config.json", R"({"hidden_size": 8})");
    EXPECT_NE(error_of([&] {
                  attach_drafter(target, untyped);
              }).find("unsupported draft architecture '(none)'"),
              std::string::npos);
    const std::string no_text = temp_dir("drafter-no-text");
    write_text(no_text + "/config.json", R"({"model_type": "qwen3_5_mtp", "text_config": 3})");
    EXPECT_EQ(error_of([&] { attach_drafter(target, no_text); }),
              no_text + "/config.json: qwen3_5_mtp drafter config lacks 'text_config'");
    EXPECT_EQ(target.mtp_source, "none");
}

// The fixture drafter (mlx-mtp-drafter) in a folder of its own whose text_config has `edit`
// applied; its tensors are the fixture's (a link).
std::string edited_drafter(const std::string& fx, const std::string& name,
                           const std::function<void(nlohmann::json&)>& edit) {
    const std::string src = fx + "/qwen35-dense-tiny/mlx-mtp-drafter";
    auto config = nlohmann::json::parse(read_text_file(src + "/config.json"));
    edit(config["text_config"]);
    const std::string dir = temp_dir(name);
    write_text(dir + "/config.json", config.dump());
    fs::remove(dir + "/model.safetensors");
    fs::create_symlink(src + "/model.safetensors", dir + "/model.safetensors");
    return dir;
}

// Every dimension the drafter shares with the target is compared, each named in the refusal
// with both values (the fixture target: vocabulary 1024, head_dim 64, 4 query / 2 KV heads).
TEST(FormatsDrafterFixtures, EachSharedDimensionIsCompared) {
    NEXTN_REQUIRE_FIXTURES(fx);
    const Checkpoint target = load_checkpoint(fx + "/qwen35-dense-tiny");
    struct Case {
        const char* key;
        int value;
        std::string want;
    };
    for (const Case& c :
         {Case{"vocab_size", 2048, "vocab_size 2048 does not match the target's 1024"},
          Case{"head_dim", 32, "head_dim 32 does not match the target's 64"},
          Case{"num_attention_heads", 8, "num_attention_heads 8 does not match the target's 4"},
          Case{"num_key_value_heads", 1, "num_key_value_heads 1 does not match the target's 2"}}) {
        const std::string dir = edited_drafter(
            fx, std::string("dim-") + c.key, [&](nlohmann::json& text) { text[c.key] = c.value; });
        Checkpoint copy = target;
        const std::string msg = error_of([&] { attach_drafter(copy, dir); });
        EXPECT_NE(msg.find(": drafter " + c.want), std::string::npos) << msg;
    }
}

// The drafter's tensors must have the target's shapes where the config comparison cannot see
// them: a target whose FFN is wider than the drafter's gate_proj ([256, 128]) is refused, naming
// the tensor, its shape and the one needed.
TEST(FormatsDrafterFixtures, FfnShapeIsCheckedAgainstTheTarget) {
    NEXTN_REQUIRE_FIXTURES(fx);
    Checkpoint target = load_checkpoint(fx + "/qwen35-dense-tiny");
    target.config.ffn_size = 512;
    const std::string msg =
        error_of([&] { attach_drafter(target, fx + "/qwen35-dense-tiny/mlx-mtp-drafter"); });
    EXPECT_NE(msg.find("gate_proj.weight' has shape [256, 128], the target needs [512, 128]"),
              std::string::npos)
        << msg;
}

// attach_drafter replaces the target's mtp.* tensors (drafter.h): any the target had that the
// drafter lacks are gone, and so are their "stored shifted" marks; the MTP layer count is the
// drafter's (one layer); a note of the file's own head now says the drafter replaced it; the
// drafter's file tensor names are added to the target's; tensors outside mtp.* stay.
TEST(FormatsDrafterFixtures, AttachReplacesEveryMtpPieceOfTheTarget) {
    NEXTN_REQUIRE_FIXTURES(fx);
    const std::string drafter = fx + "/qwen35-dense-tiny/mlx-mtp-drafter";
    Checkpoint target = load_checkpoint(fx + "/qwen35-dense-tiny");
    const size_t file_names = target.file_tensor_names.size();
    target.tensors["mtp.layers.1.extra.weight"] = target.require("mtp.fc.weight");
    target.norms_already_shifted.insert("mtp.layers.1.input_layernorm.weight");
    target.norms_already_shifted.insert("model.norm.weight");  // not the head's: kept
    target.config.mtp_layers = 2;
    target.notes.push_back("MTP head: block blk.8");
    attach_drafter(target, drafter);
    EXPECT_EQ(target.tensors.count("mtp.layers.1.extra.weight"), 0u);
    EXPECT_EQ(target.norms_already_shifted.count("mtp.layers.1.input_layernorm.weight"), 0u);
    EXPECT_EQ(target.norms_already_shifted.count("model.norm.weight"), 1u);
    EXPECT_EQ(target.config.mtp_layers, 1);
    EXPECT_EQ(target.mtp_source, "drafter");
    EXPECT_TRUE(std::find(target.notes.begin(), target.notes.end(),
                          "MTP head in the file replaced by the drafter " + drafter) !=
                target.notes.end());
    for (const std::string& note : target.notes)
        EXPECT_FALSE(starts_with(note, "MTP head:")) << note;
    EXPECT_EQ(target.file_tensor_names.size(), file_names + 15);  // the drafter file's 15 tensors
    EXPECT_TRUE(std::find(target.file_tensor_names.begin(), target.file_tensor_names.end(),
                          "fc.weight") != target.file_tensor_names.end());
    EXPECT_TRUE(target.tensors.count("lm_head.weight"));
    // The fixture drafter is bare-named with shifted norms, as mlx-vlm writes it: nothing to
    // remark on beyond what was loaded.
    for (const std::string& note : target.notes)
        EXPECT_FALSE(starts_with(note, "note: drafter norm")) << note;
}

// A copy of the fixture drafter whose tensor names carry `prefix` (HF form: "mtp." or
// "language_model.mtp."; the fixture's are bare): the safetensors header is rewritten with the
// new names (offsets count from the end of the header, so the data is copied unchanged).
std::string prefixed_drafter(const std::string& fx, const std::string& prefix,
                             const std::string& name) {
    const std::string src = fx + "/qwen35-dense-tiny/mlx-mtp-drafter";
    const std::string bytes = read_text_file(src + "/model.safetensors");
    uint64_t header_size = 0;
    for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | uint8_t(bytes[size_t(i)]);
    const auto header = nlohmann::json::parse(bytes.substr(8, header_size));
    nlohmann::json renamed = nlohmann::json::object();
    for (const auto& [key, value] : header.items())
        renamed[key == "__metadata__" ? key : prefix + key] = value;
    std::string text = renamed.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i) out[size_t(i)] = char((uint64_t(text.size()) >> (8 * i)) & 0xff);
    out += text;
    out += bytes.substr(8 + header_size);
    const std::string dir = temp_dir(name);
    write_text(dir + "/config.json", read_text_file(src + "/config.json"));
    std::ofstream(dir + "/model.safetensors", std::ios::binary) << out;
    return dir;
}

// HF-form names ("mtp.fc.weight", "language_model.mtp.fc.weight") load as the same canonical
// tensors as the bare ones, with the same values. The norms are still stored shifted: the values
// decide that (drafter.cpp), and a note says the mtp.-prefixed names suggested otherwise.
TEST(FormatsDrafterFixtures, PrefixedNamesAreTheSameTensors) {
    NEXTN_REQUIRE_FIXTURES(fx);
    const std::string dense = fx + "/qwen35-dense-tiny";
    Checkpoint bare = load_checkpoint(dense);
    attach_drafter(bare, dense + "/mlx-mtp-drafter");
    for (const std::string& prefix : {std::string("mtp."), std::string("language_model.mtp.")}) {
        SCOPED_TRACE(prefix);
        Checkpoint target = load_checkpoint(dense);
        attach_drafter(target,
                       prefixed_drafter(fx, prefix, "prefixed-" + std::to_string(prefix.size())));
        int mtp = 0;
        for (const auto& [name, t] : target.tensors) {
            if (!starts_with(name, "mtp.")) continue;
            ++mtp;
            const RawTensor* same = bare.find(name);
            ASSERT_NE(same, nullptr) << name;
            EXPECT_EQ(tensor_to_f32(t), tensor_to_f32(*same)) << name;
        }
        EXPECT_EQ(mtp, 15);
        EXPECT_EQ(target.norms_already_shifted, bare.norms_already_shifted);
        const std::string note =
            "note: drafter norm values say shifted, unlike what its mtp.-prefixed tensor names "
            "suggest";
        const bool noted =
            std::find(target.notes.begin(), target.notes.end(), note) != target.notes.end();
        EXPECT_TRUE(noted);
    }
}

TEST(FormatsDrafterFixtures, DrafterDirectoryIsNotAModel) {
    NEXTN_REQUIRE_FIXTURES(fx);
    EXPECT_THROW(load_checkpoint(fx + "/qwen35-dense-tiny/mlx-mtp-drafter"), Error);
}

}  // namespace
}  // namespace nextn
