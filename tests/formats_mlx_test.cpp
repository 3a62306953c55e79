// MLX checkpoints (fixture README section 10): config, quantization per tensor, canonical names
// and shapes equal to the HF checkpoint's, dequantized weights within the quantization step of
// the bf16 HF weights, norms stored as bf16(1 + w), sidecar / inline MTP heads, --no-mtp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <vector>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/half.h"
#include "core/mapped_file.h"
#include "error_of.h"
#include "formats/checkpoint.h"
#include "formats/mlx_checkpoint.h"
#include "formats/mlx_weights.h"
#include "kernels/weight.h"
#include "test_paths.h"

namespace nextn {
namespace {

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

float scale_at(const RawTensor& t, size_t group) {
    uint16_t h;
    std::memcpy(&h, t.scales + 2 * group, 2);
    return t.scale_dtype == DType::F16 ? f16_to_f32(h) : bf16_to_f32(h);
}

// README 10.2: the dequantized value can be up to about 1.5 steps from the source (the scale
// is shrunk to edge/q0 and rounded to bf16; a few codes saturate).
constexpr double kMaxSteps = 1.5;

double worst_steps(const RawTensor& q, const RawTensor& ref) {
    EXPECT_EQ(q.dtype, DType::MLX_AFFINE) << q.name;
    EXPECT_EQ(q.scale_dtype, DType::BF16) << q.name;
    auto d = tensor_to_f32(q);
    auto r = tensor_to_f32(ref);
    EXPECT_EQ(d.size(), r.size()) << q.name;
    double worst = 0;
    for (size_t i = 0; i < d.size() && i < r.size(); ++i) {
        const double step = std::fabs(double(scale_at(q, i / size_t(q.group_size))));
        worst = std::max(worst, std::fabs(double(d[i]) - double(r[i])) / step);
    }
    return worst;
}

std::vector<float> bf16_one_plus(const RawTensor& hf_norm) {
    auto v = tensor_to_f32(hf_norm);
    for (float& x : v) x = bf16_to_f32(f32_to_bf16(x + 1.0f));  // mlx-lm adds 1 on the bf16 array
    return v;
}

struct Case {
    const char* model;
    const char* folder;
    int bits;
    const char* mtp;  // expected mtp_source
};

void check_folder(const Case& c) {
    const std::string fx = test::fixtures_dir();
    const std::string hf_dir = fx + "/" + c.model;
    const std::string dir = hf_dir + "/" + c.folder;
    SCOPED_TRACE(dir);
    Checkpoint hf = load_checkpoint(hf_dir);
    Checkpoint ck = load_checkpoint(dir);
    EXPECT_EQ(ck.format, "mlx");
    EXPECT_EQ(ck.mtp_source, c.mtp);
    EXPECT_EQ(ck.tokenizer_dir, dir);
    EXPECT_FALSE(ck.gdn_tiled_heads);
    EXPECT_EQ(ck.config.hidden_size, hf.config.hidden_size);
    EXPECT_EQ(ck.config.n_layers, hf.config.n_layers);
    EXPECT_EQ(ck.config.is_linear, hf.config.is_linear);
    EXPECT_EQ(ck.config.moe, hf.config.moe);
    EXPECT_FALSE(ck.config.tied_embeddings);

    // Same canonical tensors as the HF checkpoint (MTP only where the folder has a head).
    const bool has_mtp = std::string(c.mtp) != "none";
    size_t expected = 0;
    double worst = 0;
    for (const auto& [name, ref] : hf.tensors) {
        if (starts_with(name, "mtp.") && !has_mtp) continue;
        ++expected;
        const RawTensor* t = ck.find(name);
        ASSERT_TRUE(t) << "missing " << name;
        if (name.find("conv1d") != std::string::npos) {
            EXPECT_EQ(t->shape, (std::vector<int64_t>{ref.shape[0], ref.shape[2], 1})) << name;  // [C, K, 1]
            EXPECT_EQ(tensor_to_f32(*t), tensor_to_f32(ref)) << name;  // same memory order
            continue;
        }
        ASSERT_EQ(t->shape, ref.shape) << name;
        if (t->dtype == DType::MLX_AFFINE) {
            int bits = c.bits;
            const bool router = name.find("mlp.gate.weight") != std::string::npos ||
                                name.find("shared_expert_gate") != std::string::npos;
            if (ck.config.moe && router) bits = 8;  // quant_predicate's per-path overrides
            EXPECT_EQ(t->bits, bits) << name;
            EXPECT_EQ(t->group_size, 64) << name;
            const double w = worst_steps(*t, ref);
            worst = std::max(worst, w);
            EXPECT_LE(w, kMaxSteps) << name;
        } else if (ck.norms_already_shifted.count(name)) {
            EXPECT_EQ(tensor_to_f32(*t), bf16_one_plus(ref)) << name;
        } else {
            EXPECT_EQ(tensor_to_f32(*t), tensor_to_f32(ref)) << name;  // A_log, dt_bias, GDN norm, bf16 MTP
        }
    }
    EXPECT_EQ(ck.tensors.size(), expected);
    std::printf("%s: worst dequantization error %.3f steps (scales)\n", dir.c_str(), worst);
    // Every (1+w) norm, MTP included, is marked shifted; the GDN output norm is not.
    for (const auto& [name, t] : ck.tensors) {
        const bool one_plus = name.find("layernorm") != std::string::npos || name.find("q_norm") != std::string::npos ||
                              name.find("k_norm") != std::string::npos || name == "norm.weight" ||
                              name == "mtp.norm.weight" || name.find("pre_fc_norm") != std::string::npos;
        EXPECT_EQ(ck.norms_already_shifted.count(name) == 1, one_plus) << name;
    }
}

TEST(FormatsMlxFixtures, Dense4BitWithSidecar) {
    NEXTN_REQUIRE_FIXTURES(fx);
    check_folder({"qwen35-dense-tiny", "mlx-4bit", 4, "sidecar"});
}

TEST(FormatsMlxFixtures, Dense6BitWithoutMtp) {
    NEXTN_REQUIRE_FIXTURES(fx);
    check_folder({"qwen35-dense-tiny", "mlx-6bit", 6, "none"});
}

TEST(FormatsMlxFixtures, Dense8BitInlineMtp) {
    NEXTN_REQUIRE_FIXTURES(fx);
    check_folder({"qwen35-dense-tiny", "mlx-8bit", 8, "inline"});
}

TEST(FormatsMlxFixtures, Moe4BitWithSidecar) {
    NEXTN_REQUIRE_FIXTURES(fx);
    check_folder({"qwen35-moe-tiny", "mlx-4bit", 4, "sidecar"});
}

TEST(FormatsMlxFixtures, Moe8BitInlineMtp) {
    NEXTN_REQUIRE_FIXTURES(fx);
    check_folder({"qwen35-moe-tiny", "mlx-8bit", 8, "inline"});
}

TEST(FormatsMlxFixtures, NoMtpSkipsSidecarAndInlineHeads) {
    NEXTN_REQUIRE_FIXTURES(fx);
    LoadOptions opts;
    opts.load_mtp = false;
    for (const char* folder : {"qwen35-dense-tiny/mlx-4bit", "qwen35-dense-tiny/mlx-8bit", "qwen35-moe-tiny/mlx-4bit"}) {
        Checkpoint ck = load_checkpoint(fx + "/" + folder, opts);
        EXPECT_EQ(ck.mtp_source, "none") << folder;
        for (const auto& [name, t] : ck.tensors) EXPECT_FALSE(starts_with(name, "mtp.")) << folder << " " << name;
        EXPECT_TRUE(ck.find("layers.0.linear_attn.in_proj_qkv.weight")) << folder;
    }
}

nlohmann::json config_of(const std::filesystem::path& folder) {
    return nlohmann::json::parse(read_text_file((folder / "config.json").string()));
}

// A scratch folder `name` with links to the trunk's weights and tokenizer files of the fixture
// folder `from`, and to its `extra` files, with `config` as its config.json: a fixture with its
// config edited.
std::filesystem::path linked_folder(const std::filesystem::path& from, const std::string& name,
                                    const nlohmann::json& config,
                                    std::initializer_list<const char*> extra = {}) {
    namespace fs = std::filesystem;
    const fs::path dir = test::scratch_dir() + "/" + name;
    fs::create_directories(dir);
    std::vector<const char*> files = {"model.safetensors", "model.safetensors.index.json",
                                      "tokenizer.json", "tokenizer_config.json"};
    files.insert(files.end(), extra.begin(), extra.end());
    for (const char* f : files)
        if (!fs::exists(dir / f)) fs::create_symlink(from / f, dir / f);
    std::ofstream((dir / "config.json").string()) << config.dump();
    return dir;
}

// A config that names a sidecar the directory lacks is an error naming it (a run would otherwise
// go on without the head it promises); --no-mtp loads the trunk all the same.
TEST(FormatsMlxFixtures, MissingSidecarIsAnErrorUnlessNoMtp) {
    NEXTN_REQUIRE_FIXTURES(fx);
    namespace fs = std::filesystem;
    const fs::path from = fx + "/qwen35-dense-tiny/mlx-4bit";
    nlohmann::json config = config_of(from);
    ASSERT_TRUE(config.contains("mlx_lm_extra_tensors"));
    config["mlx_lm_extra_tensors"]["mtp_file"] = "nope.safetensors";
    const fs::path dir = linked_folder(from, "mlx-4bit-no-sidecar", config);
    const std::string error = test::error_of([&] { load_checkpoint(dir.string()); });
    EXPECT_NE(error.find("mtp_file names 'nope.safetensors', which is not in the model directory"),
              std::string::npos)
        << error;
    LoadOptions no_mtp;
    no_mtp.load_mtp = false;
    EXPECT_EQ("none", load_checkpoint(dir.string(), no_mtp).mtp_source);
}

// A sidecar replaces an inline MTP head whole: the 8-bit folder's inline head with the 4-bit
// folder's (float) sidecar named in its config, the sidecar's mtp.fc.weight left out. Kept beside
// the sidecar's tensors, the inline head's fc would stand in for the missing one; the load must
// instead say the sidecar has none.
TEST(FormatsMlxFixtures, SidecarReplacesTheInlineHeadWhole) {
    NEXTN_REQUIRE_FIXTURES(fx);
    namespace fs = std::filesystem;
    const fs::path inline_dir = fx + "/qwen35-dense-tiny/mlx-8bit",
                   sidecar_from = fx + "/qwen35-dense-tiny/mlx-4bit/mtp.safetensors";
    nlohmann::json config = config_of(inline_dir);
    ASSERT_FALSE(config.contains("mlx_lm_extra_tensors")) << "the premise: an inline head";
    ASSERT_EQ("inline", load_checkpoint(inline_dir.string()).mtp_source);
    config["mlx_lm_extra_tensors"]["mtp_file"] = "mtp.safetensors";
    const fs::path dir = linked_folder(inline_dir, "mlx-8bit-with-sidecar", config);

    // The sidecar less mtp.fc.weight: its header without that entry, then the same data bytes
    // (offsets count from the data's start, so the other entries still point at their bytes).
    std::ifstream in(sidecar_from.string(), std::ios::binary);
    uint64_t header_bytes = 0;
    in.read(reinterpret_cast<char*>(&header_bytes), 8);
    std::string header(header_bytes, '\0');
    in.read(header.data(), std::streamsize(header_bytes));
    const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    nlohmann::json h = nlohmann::json::parse(header);
    ASSERT_EQ(1u, h.erase("mtp.fc.weight"));
    const std::string new_header = h.dump();
    const uint64_t new_bytes = new_header.size();
    std::ofstream out((dir / "mtp.safetensors").string(), std::ios::binary);
    out.write(reinterpret_cast<const char*>(&new_bytes), 8);
    out << new_header << data;
    out.close();

    EXPECT_NE(test::error_of([&] {
                  load_checkpoint(dir.string());
              }).find("MTP sidecar has no mtp.fc.weight"),
              std::string::npos);
}

// README 10.3(b): MTPLX adds 1 to the sidecar's MTP norms only where the config declares
// mtplx_mtp_norm_encoding "delta"; the declaration wins over what the values look like. The
// fixture's sidecar norms are stored shifted (mean near 1) and the config has no such key.
TEST(FormatsMlxFixtures, DeclaredDeltaNormEncodingWinsOverTheValues) {
    NEXTN_REQUIRE_FIXTURES(fx);
    namespace fs = std::filesystem;
    const fs::path from = fx + "/qwen35-dense-tiny/mlx-4bit";
    nlohmann::json config = config_of(from);
    ASSERT_FALSE(config.contains("mtplx_mtp_norm_encoding"));
    const std::vector<std::string> mtp_norms = {
        "mtp.norm.weight", "mtp.pre_fc_norm_embedding.weight", "mtp.pre_fc_norm_hidden.weight",
        "mtp.layers.0.input_layernorm.weight"};
    const Checkpoint numeric = load_checkpoint(from.string());
    ASSERT_EQ(numeric.mtp_source, "sidecar");
    for (const auto& n : mtp_norms) EXPECT_TRUE(numeric.norms_already_shifted.count(n)) << n;

    config["mtplx_mtp_norm_encoding"] = "delta";
    const fs::path dir = linked_folder(from, "mlx-4bit-delta", config, {"mtp.safetensors"});
    const Checkpoint declared = load_checkpoint(dir.string());
    ASSERT_EQ(declared.mtp_source, "sidecar");
    for (const auto& n : mtp_norms) EXPECT_FALSE(declared.norms_already_shifted.count(n)) << n;
    EXPECT_TRUE(declared.norms_already_shifted.count(
        "layers.0.input_layernorm.weight"));  // trunk unchanged
}

TEST(FormatsMlx, HfQuantizationConfigNamesItsMethodAndMlxsDoesNot) {
    // The HF fixture directory holds HF names (model.language_model.*): only the config decides.
    const std::string hf_dir = test::data_dir() + "/qwen35-dense-tiny";
    EXPECT_FALSE(is_mlx_checkpoint(nlohmann::json::object(), hf_dir));
    EXPECT_FALSE(is_mlx_checkpoint({{"quantization_config", {{"quant_method", "fp8"}}}}, hf_dir));
    EXPECT_TRUE(
        is_mlx_checkpoint({{"quantization_config", {{"group_size", 64}, {"bits", 4}}}}, hf_dir));
    EXPECT_TRUE(is_mlx_checkpoint({{"quantization", {{"group_size", 64}, {"bits", 4}}}}, hf_dir));
    EXPECT_TRUE(
        is_mlx_checkpoint({{"mlx_lm_extra_tensors", {{"mtp_file", "mtp.safetensors"}}}}, hf_dir));
}

TEST(FormatsMlx, CanonicalNames) {
    EXPECT_EQ(mlx_canonical_name("language_model.model.layers.3.mlp.gate.weight"), "layers.3.mlp.gate.weight");
    EXPECT_EQ(mlx_canonical_name("language_model.lm_head.weight"), "lm_head.weight");
    EXPECT_EQ(mlx_canonical_name("language_model.mtp.fc.weight"), "mtp.fc.weight");
    EXPECT_EQ(mlx_canonical_name("mtp.norm.weight"), "mtp.norm.weight");
    EXPECT_EQ(mlx_canonical_name("model.norm.weight"), "norm.weight");
    EXPECT_EQ(mlx_canonical_name("vision_tower.blocks.0.attn.qkv.weight"), "");
}

// ---- MLX weight helpers on tensors built here (mlx_weights.h) ----

using test::error_of;

std::string quant_error(const std::string& config) {
    return error_of([&] { parse_mlx_quant_config(nlohmann::json::parse(config), "config.json"); });
}

// The section may be under "quantization_config" (as transformers writes it); bits are 2..8, a
// group size a power of two, the mode affine, for the default and for every override.
TEST(FormatsMlxWeights, QuantConfigIsCheckedWhereverItIs) {
    const MlxQuantConfig q = parse_mlx_quant_config(
        nlohmann::json::parse(R"({"quantization_config": {"bits": 4, "group_size": 64}})"),
        "config.json");
    EXPECT_TRUE(q.present);
    EXPECT_EQ(q.bits, 4);
    EXPECT_EQ(q.group_size, 64);
    EXPECT_NE(quant_error(R"({"quantization": {"bits": 1, "group_size": 64}})")
                  .find("unsupported bits 1"),
              std::string::npos);
    EXPECT_NE(quant_error(R"({"quantization": {"bits": 4, "group_size": 48}})")
                  .find("unsupported group_size 48"),
              std::string::npos);
    EXPECT_NE(quant_error(R"({"quantization": {"bits": 4, "group_size": 32, "mode": "mxfp4"}})")
                  .find("unsupported MLX quantization mode 'mxfp4'"),
              std::string::npos);
    EXPECT_NE(
        quant_error(
            R"({"quantization": {"bits": 4, "group_size": 32, "m.q": {"bits": 4, "mode": "nvfp4"}}})")
            .find("unsupported mode 'nvfp4'"),
        std::string::npos);
    // Anything but an object (or null) would read as "not quantized", and packed codes as weights.
    EXPECT_NE(quant_error(R"({"quantization": 4})").find("must be a JSON object"),
              std::string::npos);
    // A module marked `true` is quantized with the defaults.
    const MlxQuantConfig d = parse_mlx_quant_config(
        nlohmann::json::parse(R"({"quantization": {"bits": 6, "group_size": 128, "m.q": true}})"),
        "config.json");
    ASSERT_EQ(d.overrides.count("m.q"), 1u);
    EXPECT_EQ(d.overrides.at("m.q").bits, 6);
    EXPECT_EQ(d.overrides.at("m.q").group_size, 128);
}

// The mean of every stored value of the norms, not of the per-tensor sums: [1, 1, 1, 1] and
// [0, 0] average 4/6.
TEST(FormatsMlxWeights, MeanNormValueIsOverValues) {
    const std::vector<float> a = {1, 1, 1, 1}, b = {0, 0};
    RawTensor ta, tb;
    ta.dtype = tb.dtype = DType::F32;
    ta.shape = {4};
    tb.shape = {2};
    ta.data = reinterpret_cast<const uint8_t*>(a.data());
    tb.data = reinterpret_cast<const uint8_t*>(b.data());
    ta.nbytes = 16;
    tb.nbytes = 8;
    EXPECT_DOUBLE_EQ(mean_norm_value({&ta, &tb}), 4.0 / 6.0);
}

// One packed MLX linear as a file holds it: "m.weight" U32 [rows, words], "m.scales" and
// "m.biases" [rows, groups] of `scale_type`, over caller-owned bytes.
struct PackedLinear {
    std::vector<uint8_t> words, scales, biases;
    std::map<std::string, RawTensor> file;
    PackedLinear(int64_t rows, int64_t words_per_row, int64_t groups, DType scale_type,
                 DType bias_type) {
        const size_t es = scale_type == DType::F32 ? 4 : 2, eb = bias_type == DType::F32 ? 4 : 2;
        words.assign(size_t(rows * words_per_row) * 4, 0x11);  // every 4-bit code 1
        scales.assign(size_t(rows * groups) * es, 0);
        biases.assign(size_t(rows * groups) * eb, 0);
        add("m.weight", DType::U32, {rows, words_per_row}, words);
        add("m.scales", scale_type, {rows, groups}, scales);
        add("m.biases", bias_type, {rows, groups}, biases);
    }
    void add(const std::string& name, DType t, std::vector<int64_t> shape,
             const std::vector<uint8_t>& bytes) {
        RawTensor r;
        r.name = name;
        r.file = "m.safetensors";
        r.dtype = t;
        r.shape = std::move(shape);
        r.data = bytes.data();
        r.nbytes = bytes.size();
        file[name] = r;
    }
};

MlxQuantConfig quant4_g32() {
    return parse_mlx_quant_config(
        nlohmann::json::parse(R"({"quantization": {"bits": 4, "group_size": 32}})"), "c");
}

// F16 scales are read as halves: scale 0.5 (0x3800) and bias -1 (0xBC00) on codes of 1 give
// -0.5 (read as bf16 bits they would be other values).
TEST(FormatsMlxWeights, AssembledTensorKeepsItsScaleType) {
    PackedLinear p(2, 4, 1, DType::F16, DType::F16);  // [2, 32] at 4 bits: 4 words a row
    for (size_t g = 0; g < 2; ++g) {
        const uint16_t s = 0x3800, b = 0xBC00;
        std::memcpy(p.scales.data() + 2 * g, &s, 2);
        std::memcpy(p.biases.data() + 2 * g, &b, 2);
    }
    const std::map<std::string, RawTensor> out = assemble_mlx_tensors(p.file, quant4_g32(), "c");
    const RawTensor& w = out.at("m.weight");
    EXPECT_EQ(w.dtype, DType::MLX_AFFINE);
    EXPECT_EQ(w.scale_dtype, DType::F16);
    EXPECT_EQ(w.shape, (std::vector<int64_t>{2, 32}));
    for (float v : tensor_to_f32(w)) ASSERT_EQ(v, -0.5f);
}

// Scales of a type that is not a float, biases of another type than the scales, and packed words
// that do not hold the groups' codes (8 words of 4-bit codes are 64 values, not the 32 one group
// of 32 holds), and packed codes for a module the config excludes are all refused.
TEST(FormatsMlxWeights, MismatchedPackingIsRefused) {
    EXPECT_NE(error_of([] {
                  PackedLinear p(2, 4, 1, DType::U32, DType::U32);
                  assemble_mlx_tensors(p.file, quant4_g32(), "c");
              }).find("expected BF16, F16 or F32"),
              std::string::npos);
    EXPECT_NE(error_of([] {
                  PackedLinear p(2, 4, 1, DType::BF16, DType::F16);
                  assemble_mlx_tensors(p.file, quant4_g32(), "c");
              }).find("do not match scales"),
              std::string::npos);
    EXPECT_NE(error_of([] {
                  PackedLinear p(2, 8, 1, DType::BF16, DType::BF16);
                  assemble_mlx_tensors(p.file, quant4_g32(), "c");
              }).find("packs 8 words per row"),
              std::string::npos);
    // Packed codes for a module the config excludes ("m": false): the files and the config
    // disagree.
    EXPECT_NE(error_of([] {
                  PackedLinear p(2, 4, 1, DType::BF16, DType::BF16);
                  assemble_mlx_tensors(
                      p.file,
                      parse_mlx_quant_config(nlohmann::json::parse(R"({"quantization":
                                           {"bits": 4, "group_size": 32, "m": false}})"),
                                             "c"),
                      "c");
              }).find("marks 'm' as not quantized"),
              std::string::npos);
    // Packed tensors in a checkpoint whose config has no quantization section.
    EXPECT_NE(error_of([] {
                  PackedLinear p(2, 4, 1, DType::BF16, DType::BF16);
                  assemble_mlx_tensors(p.file, MlxQuantConfig{}, "c");
              }).find("config.json has no 'quantization'"),
              std::string::npos);
}

// Expert e of a stacked MLX tensor takes the e-th slice of the codes and of the scales and
// biases; with F32 scales a slice of scales is 4 bytes a group. Every row's code-1 value
// (scale + bias) differs, so expert 1 reading expert 0's rows shows.
TEST(FormatsMlxWeights, ExpertViewSlicesF32ScalesByTheirSize) {
    PackedLinear p(2 * 3, 4, 1, DType::F32, DType::F32);  // 2 experts of [3, 32] at 4 bits
    std::vector<float> scale(6), bias(6);
    for (int i = 0; i < 6; ++i) {
        scale[size_t(i)] = float(i + 1);
        bias[size_t(i)] = 0.5f * float(i);
    }
    std::memcpy(p.scales.data(), scale.data(), 24);
    std::memcpy(p.biases.data(), bias.data(), 24);
    p.file["m.weight"].shape = {2, 3, 4};
    p.file["m.scales"].shape = {2, 3, 1};
    p.file["m.biases"].shape = {2, 3, 1};
    const RawTensor stacked = assemble_mlx_tensors(p.file, quant4_g32(), "c").at("m.weight");
    ASSERT_EQ(stacked.shape, (std::vector<int64_t>{2, 3, 32}));
    for (int e = 0; e < 2; ++e) {
        const std::vector<float> v = tensor_to_f32(expert_view(stacked, e));
        ASSERT_EQ(v.size(), 96u);
        for (int r = 0; r < 3; ++r)  // code 1: scale + bias of row 3e + r
            EXPECT_EQ(v[size_t(r * 32)], scale[size_t(3 * e + r)] + bias[size_t(3 * e + r)])
                << e << " " << r;
    }
    EXPECT_THROW(expert_view(stacked, 2), Error);
}

}  // namespace
}  // namespace nextn
