// GGUF: the reader on files built here (every metadata type, alignment, truncation and
// corruption: each must give a clear nextn::Error, never a crash), the qwen35 name mapping on a
// tiny synthetic model, and the llama.cpp-made fixture GGUFs against the bf16 HF checkpoint
// after the converter's documented rules (fixture README sections 4, 8, 11.2, 12).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "core/error.h"
#include "core/half.h"
#include "error_of.h"
#include "formats/checkpoint.h"
#include "formats/ggml_types.h"
#include "formats/gguf.h"
#include "formats/gguf_checkpoint.h"
#include "formats/gguf_tokenizer.h"
#include "formats/safetensors.h"
#include "kernels/weight.h"
#include "quant_steps.h"
#include "test_paths.h"

namespace nextn {
namespace {

namespace fs = std::filesystem;

// ---- a minimal GGUF writer, following the GGUF v3 layout (ggml docs/gguf.md) ----
class GgufBuilder {
public:
    uint32_t version = 3;
    uint64_t alignment = 32;

    void u32(const std::string& key, uint32_t v) { scalar(key, 4, &v, 4); }
    void i32(const std::string& key, int32_t v) { scalar(key, 5, &v, 4); }
    void f32(const std::string& key, float v) { scalar(key, 6, &v, 4); }
    void boolean(const std::string& key, bool v) {
        uint8_t b = v;
        scalar(key, 7, &b, 1);
    }
    void u8(const std::string& key, uint8_t v) { scalar(key, 0, &v, 1); }
    void i16(const std::string& key, int16_t v) { scalar(key, 3, &v, 2); }
    void u64(const std::string& key, uint64_t v) { scalar(key, 10, &v, 8); }
    void f64(const std::string& key, double v) { scalar(key, 12, &v, 8); }
    void str(const std::string& key, const std::string& v) {
        key_type(key, 8);
        put_string(kv_, v);
    }
    void strings(const std::string& key, const std::vector<std::string>& v) {
        key_type(key, 9);
        put(kv_, uint32_t(8));
        put(kv_, uint64_t(v.size()));
        for (const auto& s : v) put_string(kv_, s);
    }
    void i32s(const std::string& key, const std::vector<int32_t>& v) {
        key_type(key, 9);
        put(kv_, uint32_t(5));
        put(kv_, uint64_t(v.size()));
        for (int32_t x : v) put(kv_, x);
    }
    // [[1, 2], [3]] as an array of arrays of u8.
    void nested(const std::string& key) {
        key_type(key, 9);
        put(kv_, uint32_t(9));
        put(kv_, uint64_t(2));
        put(kv_, uint32_t(0));
        put(kv_, uint64_t(2));
        kv_.push_back(1);
        kv_.push_back(2);
        put(kv_, uint32_t(0));
        put(kv_, uint64_t(1));
        kv_.push_back(3);
    }
    void i8(const std::string& key, int8_t v) { scalar(key, 1, &v, 1); }
    // A value of any type written byte for byte after its key and type id: for what the typed
    // helpers do not write (element types without a helper, deep nesting, corrupt counts).
    void raw(const std::string& key, uint32_t type, const std::vector<uint8_t>& value) {
        key_type(key, type);
        kv_.insert(kv_.end(), value.begin(), value.end());
    }
    void tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type,
                std::vector<uint8_t> data) {
        tensors_.push_back({name, std::move(ne), type, std::move(data)});
    }
    void tensor_f32(const std::string& name, std::vector<uint64_t> ne, const std::vector<float>& v) {
        std::vector<uint8_t> b(v.size() * 4);
        if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());  // (no null pointer to memcpy)
        tensor(name, std::move(ne), 0, std::move(b));
    }

    std::vector<uint8_t> build(size_t* header_end = nullptr) const {
        std::vector<uint8_t> out = {'G', 'G', 'U', 'F'};
        put(out, version);
        put(out, uint64_t(tensors_.size()));
        put(out, n_kv_);
        out.insert(out.end(), kv_.begin(), kv_.end());
        uint64_t offset = 0;
        std::vector<uint64_t> offsets;
        for (const auto& t : tensors_) {
            put_string(out, t.name);
            put(out, uint32_t(t.ne.size()));
            for (uint64_t d : t.ne) put(out, d);
            put(out, t.type);
            put(out, offset);
            offsets.push_back(offset);
            offset = (offset + t.data.size() + alignment - 1) / alignment * alignment;
        }
        if (header_end) *header_end = out.size();
        out.resize((out.size() + alignment - 1) / alignment * alignment, 0);
        const size_t data_start = out.size();
        for (size_t i = 0; i < tensors_.size(); ++i) {
            out.resize(data_start + offsets[i], 0);
            out.insert(out.end(), tensors_[i].data.begin(), tensors_[i].data.end());
        }
        return out;
    }

private:
    struct T {
        std::string name;
        std::vector<uint64_t> ne;
        uint32_t type;
        std::vector<uint8_t> data;
    };
    template <class V>
    static void put(std::vector<uint8_t>& b, V v) {
        const auto* p = reinterpret_cast<const uint8_t*>(&v);
        b.insert(b.end(), p, p + sizeof(V));
    }
    static void put_string(std::vector<uint8_t>& b, const std::string& s) {
        put(b, uint64_t(s.size()));
        b.insert(b.end(), s.begin(), s.end());
    }
    void key_type(const std::string& key, uint32_t type) {
        put_string(kv_, key);
        put(kv_, type);
        ++n_kv_;
    }
    void scalar(const std::string& key, uint32_t type, const void* v, size_t n) {
        key_type(key, type);
        const auto* p = static_cast<const uint8_t*>(v);
        kv_.insert(kv_.end(), p, p + n);
    }
    std::vector<uint8_t> kv_;
    uint64_t n_kv_ = 0;
    std::vector<T> tensors_;
};

std::string temp_path(const std::string& name) {
    return (fs::path(test::scratch_dir()) / name).string();
}

std::string write_file(const std::string& name, const std::vector<uint8_t>& bytes) {
    std::string path = temp_path(name);
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                std::streamsize(bytes.size()));
    return path;
}

using test::error_of;

std::vector<uint8_t> q8_0_block(float d, const std::vector<int8_t>& q) {
    std::vector<uint8_t> b(34);
    uint16_t h = 0;
    // d values used here are small integers: exact in f16.
    const uint16_t ones[] = {0x3C00, 0x4000, 0x4200, 0x4400};  // 1, 2, 3, 4
    h = ones[int(d) - 1];
    std::memcpy(b.data(), &h, 2);
    for (int j = 0; j < 32; ++j) b[2 + j] = uint8_t(q[size_t(j)]);
    return b;
}

// Metadata variations of tiny_model().
struct TinyMetadata {
    bool per_block_head_counts = false;  // head counts as per-block arrays, 0 for recurrent blocks
    int32_t eot_token_id = -1;           // tokenizer.ggml.eot_token_id, when >= 0
};

// A tiny qwen35moe model: one trunk GDN layer (blk.0) and the MTP block (blk.1); block_count
// other than 2 makes its metadata disagree with its tensors.
GgufBuilder tiny_model(bool with_trunk = true, uint32_t block_count = 2,
                       const TinyMetadata& meta = {}) {
    GgufBuilder g;
    g.str("general.architecture", "qwen35moe");
    const std::string k = "qwen35moe.";
    g.u32(k + "block_count", block_count);
    g.u32(k + "nextn_predict_layers", 1);
    g.u32(k + "context_length", 64);
    g.u32(k + "embedding_length", 32);
    if (meta.per_block_head_counts) {
        g.i32s(k + "attention.head_count", {0, 2});
        g.i32s(k + "attention.head_count_kv", {0, 1});
    } else {
        g.u32(k + "attention.head_count", 2);
        g.u32(k + "attention.head_count_kv", 1);
    }
    g.u32(k + "attention.key_length", 16);
    g.u32(k + "attention.value_length", 16);
    g.u32(k + "rope.dimension_count", 4);
    g.f32(k + "rope.freq_base", 1e6f);
    g.f32(k + "attention.layer_norm_rms_epsilon", 1e-5f);
    g.u32(k + "ssm.conv_kernel", 4);
    g.u32(k + "ssm.state_size", 8);
    g.u32(k + "ssm.group_count", 1);
    g.u32(k + "ssm.time_step_rank", 2);
    g.u32(k + "ssm.inner_size", 16);
    g.u32(k + "full_attention_interval", 4);
    g.u32(k + "expert_count", 2);
    g.u32(k + "expert_used_count", 1);
    g.u32(k + "expert_feed_forward_length", 4);
    g.u32(k + "expert_shared_feed_forward_length", 4);
    g.str("tokenizer.ggml.model", "gpt2");
    g.str("tokenizer.ggml.pre", "qwen35");
    g.strings("tokenizer.ggml.tokens", {"a", "b", "c", "ab", "<|x|>", "d", "e", "f"});
    g.strings("tokenizer.ggml.merges", {"a b"});
    g.i32s("tokenizer.ggml.token_type", {1, 1, 1, 1, 3, 1, 1, 1});
    g.u32("tokenizer.ggml.eos_token_id", 4);
    if (meta.eot_token_id >= 0) g.i32("tokenizer.ggml.eot_token_id", meta.eot_token_id);
    g.boolean("tokenizer.ggml.add_bos_token", false);
    g.str("tokenizer.chat_template", "{{ messages }}");

    std::vector<float> embed(32 * 8);
    for (size_t i = 0; i < embed.size(); ++i) embed[i] = float(i) * 0.5f;
    g.tensor_f32("token_embd.weight", {32, 8}, embed);
    g.tensor_f32("output_norm.weight", {32}, std::vector<float>(32, 1.25f));
    if (with_trunk) {
        g.tensor_f32("blk.0.attn_norm.weight", {32}, std::vector<float>(32, 0.75f));
        g.tensor_f32("blk.0.ssm_a", {2}, {-1.0f, -2.0f});
        g.tensor_f32("blk.0.ssm_norm.weight", {8}, std::vector<float>(8, 1.0f));
        // Stacked experts: ne {H=32, I=4, E=2}; expert e, row r holds code r with scale e+1.
        std::vector<uint8_t> exps;
        for (int e = 0; e < 2; ++e)
            for (int r = 0; r < 4; ++r) {
                auto blk = q8_0_block(float(e + 1), std::vector<int8_t>(32, int8_t(r)));
                exps.insert(exps.end(), blk.begin(), blk.end());
            }
        g.tensor("blk.0.ffn_gate_exps.weight", {32, 4, 2}, 8, exps);
        g.tensor_f32("blk.0.ffn_gate_inp_shexp.weight", {32}, std::vector<float>(32, 0.0f));
    }
    g.tensor_f32("blk.1.nextn.eh_proj.weight", {64, 32}, std::vector<float>(64 * 32, 0.01f));
    g.tensor_f32("blk.1.nextn.enorm.weight", {32}, std::vector<float>(32, 1.0f));
    g.tensor_f32("blk.1.attn_q.weight", {32, 64}, std::vector<float>(32 * 64, 0.02f));
    g.tensor_f32("rope_freqs.weight", {2}, {1.0f, 2.0f});
    return g;
}

TEST(FormatsGguf, ReadsEveryMetadataTypeAndAlignment) {
    GgufBuilder g;
    g.alignment = 64;
    g.u32("general.alignment", 64);
    g.u8("a.u8", 200);
    g.i16("a.i16", -5);
    g.i32("a.i32", -70000);
    g.u64("a.u64", 1ull << 40);
    g.f32("a.f32", 0.5f);
    g.f64("a.f64", -2.25);
    g.boolean("a.bool", true);
    g.str("a.str", "héllo");
    g.strings("a.strs", {"x", "", "yz"});
    g.i32s("a.ints", {3, -1});
    g.nested("a.nested");
    g.tensor_f32("t0", {3}, {1, 2, 3});
    g.tensor_f32("t1", {2, 2}, {4, 5, 6, 7});
    GgufFile f = read_gguf(write_file("types.gguf", g.build()));
    EXPECT_EQ(f.version, 3u);
    EXPECT_EQ(f.alignment, 64u);
    EXPECT_EQ(f.get_int("a.u8"), 200);
    EXPECT_EQ(f.get_int("a.i16"), -5);
    EXPECT_EQ(f.get_int("a.i32"), -70000);
    EXPECT_EQ(f.get_int("a.u64"), int64_t(1) << 40);
    EXPECT_EQ(f.get_float("a.f32"), 0.5);
    EXPECT_EQ(f.get_float("a.f64"), -2.25);
    EXPECT_TRUE(f.get_bool("a.bool", false));
    EXPECT_EQ(f.get_string("a.str"), "héllo");
    EXPECT_EQ(f.find("a.strs")->strings, (std::vector<std::string>{"x", "", "yz"}));
    EXPECT_EQ(f.find("a.ints")->integers, (std::vector<int64_t>{3, -1}));
    EXPECT_EQ(f.find("a.nested")->count, 2u);
    EXPECT_EQ(f.get_int("missing", 9), 9);
    EXPECT_NE(error_of([&] { f.get_int("a.str"); }).find("a.str"), std::string::npos);
    EXPECT_NE(error_of([&] { f.get_int("missing"); }).find("missing"), std::string::npos);
    ASSERT_EQ(f.tensors.size(), 2u);
    const GgufTensorInfo* t1 = f.find_tensor("t1");
    ASSERT_TRUE(t1);
    EXPECT_EQ(t1->offset, 64u);  // t0's 12 bytes padded to the 64-byte alignment
    EXPECT_EQ(t1->ne, (std::vector<int64_t>{2, 2}));
    float v[4];
    std::memcpy(v, t1->data, 16);
    EXPECT_EQ(v[3], 7.0f);
}

TEST(FormatsGguf, TinyModelMapsToCanonicalNames) {
    const std::string path = write_file("tiny.gguf", tiny_model().build());
    Checkpoint ck = load_checkpoint(path);
    const ModelConfig& c = ck.config;
    EXPECT_EQ(ck.format, "gguf");
    EXPECT_EQ(c.architecture, "qwen3_5_moe");
    EXPECT_EQ(c.n_layers, 1);  // block_count 2 includes the MTP block
    EXPECT_EQ(c.mtp_layers, 1);
    EXPECT_EQ(c.hidden_size, 32);
    EXPECT_EQ(c.vocab_size, 8);  // from token_embd
    EXPECT_EQ(c.n_q_heads, 2);
    EXPECT_EQ(c.n_kv_heads, 1);
    EXPECT_EQ(c.head_dim, 16);
    EXPECT_EQ(c.rotary_dims, 4);
    EXPECT_EQ(c.rope_theta, 1e6);
    EXPECT_FLOAT_EQ(c.rms_eps, 1e-5f);
    EXPECT_EQ(c.gdn_k_heads, 1);
    EXPECT_EQ(c.gdn_v_heads, 2);
    EXPECT_EQ(c.gdn_k_dim, 8);
    EXPECT_EQ(c.gdn_v_dim, 8);
    EXPECT_EQ(c.n_experts, 2);
    EXPECT_EQ(c.expert_ffn_size, 4);
    EXPECT_EQ(c.is_linear, std::vector<bool>{true});
    EXPECT_EQ(c.eos_token_ids, std::vector<int>{4});
    EXPECT_TRUE(c.tied_embeddings);  // no output.weight
    EXPECT_TRUE(ck.gdn_tiled_heads);
    EXPECT_EQ(ck.mtp_source, "inline");

    EXPECT_EQ(ck.require("embed_tokens.weight").shape, (std::vector<int64_t>{8, 32}));
    EXPECT_EQ(tensor_to_f32(ck.require("embed_tokens.weight"))[33], 16.5f);
    EXPECT_EQ(ck.require("layers.0.linear_attn.A").shape, (std::vector<int64_t>{2}));
    EXPECT_EQ(ck.require("layers.0.mlp.shared_expert_gate.weight").shape, (std::vector<int64_t>{1, 32}));
    EXPECT_EQ(ck.require("mtp.fc.weight").shape, (std::vector<int64_t>{32, 64}));
    EXPECT_EQ(ck.require("mtp.layers.0.self_attn.q_proj.weight").shape, (std::vector<int64_t>{64, 32}));
    EXPECT_TRUE(ck.find("mtp.pre_fc_norm_embedding.weight"));
    EXPECT_TRUE(ck.find("rope_freqs.weight"));  // unknown tensors stay under their file name
    // Stacked [E, I, H] experts become per-expert [I, H] views: expert e, row r = r * (e + 1).
    for (int e = 0; e < 2; ++e) {
        const RawTensor& x = ck.require("layers.0.mlp.experts." + std::to_string(e) + ".gate_proj.weight");
        EXPECT_EQ(x.dtype, DType::Q8_0);
        EXPECT_EQ(x.shape, (std::vector<int64_t>{4, 32}));
        auto v = tensor_to_f32(x);
        for (int r = 0; r < 4; ++r) EXPECT_EQ(v[size_t(r * 32 + 5)], float(r * (e + 1)));
    }
    // (1+w) norms are stored shifted; the GDN output norm and A are not norms of that kind.
    EXPECT_TRUE(ck.norms_already_shifted.count("layers.0.input_layernorm.weight"));
    EXPECT_TRUE(ck.norms_already_shifted.count("norm.weight"));
    EXPECT_TRUE(ck.norms_already_shifted.count("mtp.pre_fc_norm_embedding.weight"));
    EXPECT_FALSE(ck.norms_already_shifted.count("layers.0.linear_attn.norm.weight"));
    EXPECT_EQ(ck.file_tensor_names.size(), 11u);

    LoadOptions no_mtp;
    no_mtp.load_mtp = false;
    Checkpoint trunk = load_checkpoint(path, no_mtp);
    EXPECT_EQ(trunk.mtp_source, "none");
    for (const auto& [name, t] : trunk.tensors) EXPECT_NE(name.rfind("mtp.", 0), 0u) << name;

    GgufTokenizerData tok = read_gguf_tokenizer(path);
    EXPECT_EQ(tok.model, "gpt2");
    EXPECT_EQ(tok.pre, "qwen35");
    EXPECT_EQ(tok.tokens.size(), 8u);
    EXPECT_EQ(tok.tokens[3], "ab");
    EXPECT_EQ(tok.merges, std::vector<std::string>{"a b"});
    EXPECT_EQ(tok.token_types[4], 3);
    EXPECT_EQ(tok.eos_id, 4);
    EXPECT_EQ(tok.bos_id, -1);
    EXPECT_FALSE(tok.add_bos);
    EXPECT_EQ(tok.chat_template, "{{ messages }}");
}

TEST(FormatsGguf, PerBlockHeadCountsAreReadAtTheFirstAttentionBlock) {
    // blk.0 is recurrent (interval 4), so the first full-attention block is the MTP block blk.1.
    TinyMetadata meta;
    meta.per_block_head_counts = true;
    const ModelConfig c =
        load_checkpoint(write_file("heads.gguf", tiny_model(true, 2, meta).build())).config;
    EXPECT_EQ(c.n_q_heads, 2);
    EXPECT_EQ(c.n_kv_heads, 1);
}

TEST(FormatsGguf, EndOfTurnJoinsEndOfTextOnlyWhereItDiffers) {
    TinyMetadata meta;
    meta.eot_token_id = 6;
    EXPECT_EQ(load_checkpoint(write_file("eot.gguf", tiny_model(true, 2, meta).build()))
                  .config.eos_token_ids,
              (std::vector<int>{4, 6}));
    meta.eot_token_id = 4;
    EXPECT_EQ(load_checkpoint(write_file("eot_same.gguf", tiny_model(true, 2, meta).build()))
                  .config.eos_token_ids,
              (std::vector<int>{4}));
}

TEST(FormatsGguf, VersionTwoIsAccepted) {
    GgufBuilder g = tiny_model();
    g.version = 2;
    EXPECT_NO_THROW(load_checkpoint(write_file("v2.gguf", g.build())));
}

TEST(FormatsGguf, ModelLevelErrors) {
    GgufBuilder bad_arch;
    bad_arch.str("general.architecture", "llama");
    bad_arch.tensor_f32("token_embd.weight", {4, 2}, std::vector<float>(8));
    EXPECT_NE(error_of([&] { load_checkpoint(write_file("arch.gguf", bad_arch.build())); })
                  .find("unsupported architecture 'llama' (supported: qwen35, qwen35moe)"),
              std::string::npos);

    GgufBuilder iq2 = tiny_model();
    iq2.tensor("blk.0.ffn_down.weight", {256, 1}, 16, std::vector<uint8_t>(66));  // IQ2_XXS
    EXPECT_NE(error_of([&] {
                  load_checkpoint(write_file("iq2.gguf", iq2.build()));
              }).find("unsupported GGUF tensor type IQ2_XXS in blk.0.ffn_down.weight"),
              std::string::npos);

    // Metadata that counts one more trunk layer than the tensors hold: the MTP block would be
    // read as trunk layer 1 with no head.
    EXPECT_NE(
        error_of([&] { load_checkpoint(write_file("blocks.gguf", tiny_model(true, 3).build())); })
            .find("blk.1.nextn.eh_proj.weight is an MTP (nextn) tensor, but qwen35moe.block_count "
                  "3 and "
                  "qwen35moe.nextn_predict_layers 1 put the MTP block at blk.2"),
        std::string::npos);

    // A tensor the file lacks is named as the file would name it.
    const Checkpoint tiny = load_checkpoint(write_file("tiny.gguf", tiny_model().build()));
    for (const auto& [canonical, in_file] : std::vector<std::pair<std::string, std::string>>{
             {"layers.0.mlp.experts.1.up_proj.weight", "blk.0.ffn_up_exps.weight"},
             {"layers.0.linear_attn.in_proj_qkv.weight", "blk.0.attn_qkv.weight"},
             {"mtp.layers.0.self_attn.k_proj.weight", "blk.1.attn_k.weight"},
             {"mtp.pre_fc_norm_hidden.weight", "blk.1.nextn.hnorm.weight"},
             {"lm_head.weight", "output.weight"}})
        // (name = canonical: clang 14 cannot capture a structured binding.)
        EXPECT_NE(error_of([&, name = canonical] {
                      tiny.require(name);
                  }).find("missing tensor '" + in_file + "' (" + canonical + ")"),
                  std::string::npos)
            << canonical;

    std::string mtp_only = error_of([&] { load_checkpoint(write_file("mtp.gguf", tiny_model(false).build())); });
    EXPECT_NE(mtp_only.find("MTP-only"), std::string::npos) << mtp_only;
    EXPECT_NE(mtp_only.find("--draft-model"), std::string::npos) << mtp_only;
    EXPECT_EQ(load_gguf_drafter(temp_path("mtp.gguf")).find("mtp.fc.weight")->shape,
              (std::vector<int64_t>{32, 64}));
}

// Overwrites bytes [at, at + n) of a copy of `base`.
std::vector<uint8_t> patched(std::vector<uint8_t> base, size_t at, const void* v, size_t n) {
    std::memcpy(base.data() + at, v, n);
    return base;
}

void expect_error(const std::vector<uint8_t>& bytes, const std::string& needle) {
    const std::string path = write_file("corrupt.gguf", bytes);
    const std::string msg = error_of([&] { gguf_to_checkpoint(read_gguf(path), true, true); });
    EXPECT_NE(msg.find(needle), std::string::npos) << "message: " << msg;
    EXPECT_NE(msg.find(path), std::string::npos) << "message does not name the file: " << msg;
}

TEST(FormatsGguf, CorruptHeadersGiveClearErrors) {
    size_t header_end = 0;
    const std::vector<uint8_t> good = tiny_model().build(&header_end);
    expect_error(patched(good, 0, "GGUX", 4), "bad magic");
    const uint32_t v4 = 4, v_be = 0x03000000;
    expect_error(patched(good, 4, &v4, 4), "unsupported GGUF version 4");
    expect_error(patched(good, 4, &v_be, 4), "big-endian");
    const uint64_t huge = uint64_t(1) << 60;
    expect_error(patched(good, 8, &huge, 8), "tensor count");
    expect_error(patched(good, 16, &huge, 8), "metadata count");
    expect_error(patched(good, 24, &huge, 8), "implausible length");  // first key's length
    // Tensor data past the end of the file.
    expect_error(std::vector<uint8_t>(good.begin(), good.end() - 64), "runs past the end");
    // Metadata array claiming more elements than the file holds.
    GgufBuilder arr;
    arr.i32s("x", {1, 2, 3});
    std::vector<uint8_t> a = arr.build();
    const size_t count_at = 24 + 8 + 1 + 4 + 4;  // key len, "x", type, element type
    expect_error(patched(a, count_at, &huge, 8), "claims");
}

TEST(FormatsGguf, TensorInfoErrors) {
    auto one_tensor = [](uint32_t n_dims_override, uint32_t type, uint64_t offset, uint64_t ne0) {
        GgufBuilder g;
        g.tensor("w", {ne0}, type, std::vector<uint8_t>(64));
        auto b = g.build();
        const size_t at = 24 + 8 + 1;  // after header and name "w"
        if (n_dims_override) std::memcpy(b.data() + at, &n_dims_override, 4);
        std::memcpy(b.data() + at + 4 + 8 + 4, &offset, 8);
        std::memcpy(b.data() + at + 4 + 8, &type, 4);
        return b;
    };
    expect_error(one_tensor(7, 0, 0, 16), "dimensions");
    expect_error(one_tensor(0, 99, 0, 16), "unknown GGUF tensor type id 99");
    expect_error(one_tensor(0, 0, 3, 16), "not a multiple of the alignment");
    expect_error(one_tensor(0, 8, 0, 16), "not a multiple of its block size");  // Q8_0 rows of 16
    expect_error(one_tensor(0, 0, 1ull << 40, 16), "runs past the end");
    GgufBuilder dup;
    dup.tensor_f32("w", {2}, {1, 2});
    dup.tensor_f32("w", {2}, {1, 2});
    expect_error(dup.build(), "appears twice");
    GgufBuilder zero;
    zero.tensor_f32("w", {0}, {});
    expect_error(zero.build(), "invalid dimension 0");
    GgufBuilder align;
    align.u32("general.alignment", 48);
    expect_error(align.build(), "power of two");
}

// Little-endian bytes of v appended to b, for values written with GgufBuilder::raw.
template <class V>
void append(std::vector<uint8_t>& b, V v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    b.insert(b.end(), p, p + sizeof(V));
}

// An array value (element type, count) holding `elements` as they are on disk.
std::vector<uint8_t> array_value(uint32_t elem_type, uint64_t count,
                                 const std::vector<uint8_t>& elements) {
    std::vector<uint8_t> v;
    append(v, elem_type);
    append(v, count);
    v.insert(v.end(), elements.begin(), elements.end());
    return v;
}

// Values and accessors the test above leaves out: a signed byte keeps its sign; any nonzero
// bool byte is true; a u64 past INT64_MAX is out of range for get_int, and its number is
// positive; an integer is a number for get_float; an array or a string is not an integer or a
// bool; f64 array elements keep their double precision (0.1 is not a float); u64 elements past
// INT64_MAX are clamped to INT64_MAX, never wrapped negative (gguf.h).
TEST(FormatsGguf, ScalarKindsAndAccessorsKeepTheirMeaning) {
    GgufBuilder g;
    g.i8("a.i8", -7);
    g.raw("a.bool2", 7, {2});
    const uint64_t past = (uint64_t(1) << 63) + 5;
    g.u64("a.big", past);
    g.i32("a.i32", -70000);
    g.str("a.str", "x");
    g.i32s("a.ints", {3, -1});
    std::vector<uint8_t> f64s, u64s;
    append(f64s, 0.1);
    append(f64s, -1e300);
    append(u64s, uint64_t(9));
    append(u64s, past);
    g.raw("a.f64s", 9, array_value(12, 2, f64s));
    g.raw("a.u64s", 9, array_value(10, 2, u64s));
    GgufFile f = read_gguf(write_file("kinds.gguf", g.build()));
    EXPECT_EQ(f.get_int("a.i8"), -7);
    EXPECT_TRUE(f.get_bool("a.bool2", false));
    EXPECT_NE(error_of([&] { f.get_int("a.big"); }).find("out of range"), std::string::npos);
    EXPECT_GT(f.get_float("a.big"), 9e18);
    EXPECT_EQ(f.get_float("a.i32"), -70000.0);
    EXPECT_NE(error_of([&] { f.get_int("a.ints"); }).find("expected an integer"),
              std::string::npos);
    EXPECT_NE(error_of([&] { f.get_bool("a.str", false); }).find("expected a bool"),
              std::string::npos);
    EXPECT_EQ(f.find("a.f64s")->numbers, (std::vector<double>{0.1, -1e300}));
    EXPECT_EQ(f.find("a.u64s")->integers,
              (std::vector<int64_t>{9, std::numeric_limits<int64_t>::max()}));
}

// Arrays nest at most 4 deep (kMaxArrayDepth): 4 levels of arrays parse, 5 are refused.
TEST(FormatsGguf, ArraysNestAtMostFourDeep) {
    auto nested = [](int levels) {  // `levels` arrays, each holding one, the innermost one u8
        std::vector<uint8_t> v = array_value(0, 1, {42});
        for (int l = 1; l < levels; ++l) v = array_value(9, 1, v);
        GgufBuilder g;
        g.raw("deep", 9, v);
        return g.build();
    };
    EXPECT_NO_THROW(read_gguf(write_file("deep4.gguf", nested(4))));
    EXPECT_NE(error_of([&] {
                  read_gguf(write_file("deep5.gguf", nested(5)));
              }).find("nests arrays too deeply"),
              std::string::npos);
}

// An array's count is checked, before anything is read, against the smallest size of its
// element: 8 bytes for a string (its length), 12 for an array (type and count), 4 for an i32.
// Each count here fits the bytes at 1 byte an element but not at the element's least size.
TEST(FormatsGguf, ArrayCountsAreCheckedAgainstTheSmallestElement) {
    for (const auto& [elem_type, name] :
         std::vector<std::pair<uint32_t, std::string>>{{8, "string"}, {9, "array"}, {5, "i32"}}) {
        GgufBuilder g;
        g.raw("x", 9, array_value(elem_type, 40, std::vector<uint8_t>(60, 0)));
        const std::string msg = error_of([&] { read_gguf(write_file("count.gguf", g.build())); });
        EXPECT_NE(msg.find("claims 40 elements"), std::string::npos) << name << ": " << msg;
    }
}

// The count bound assumes 13 bytes an entry at least (an 8-byte key length, a 4-byte type, a
// 1-byte value): it must never refuse a file of small real entries, here 40 one-letter-keyed u8
// values of 14 bytes each.
TEST(FormatsGguf, ManySmallMetadataEntriesAreAccepted) {
    GgufBuilder g;
    for (int i = 0; i < 40; ++i)
        g.u8(std::string(1, char(i < 26 ? 'a' + i : 'A' + i - 26)), uint8_t(i));
    GgufFile f = read_gguf(write_file("small.gguf", g.build()));
    EXPECT_EQ(f.metadata.size(), 40u);
    EXPECT_EQ(f.get_int("N"), 39);
}

TEST(FormatsGguf, RepeatedMetadataKeyIsAnError) {
    GgufBuilder g;
    g.u32("k", 1);
    g.u32("k", 2);
    EXPECT_NE(error_of([&] {
                  read_gguf(write_file("dupkey.gguf", g.build()));
              }).find("'k' appears twice"),
              std::string::npos);
}

// The data section starts at the header's end rounded up to the alignment; a header that ends
// exactly on the boundary is not moved a whole alignment further. The string's length is chosen
// so that the header ends on a multiple of 32, and the tensor must read back its own values.
TEST(FormatsGguf, DataStartsAtAnAlignedHeaderEnd) {
    for (size_t pad = 0; pad < 32; ++pad) {
        GgufBuilder g;
        g.str("pad", std::string(pad, 'p'));
        g.tensor_f32("w", {4}, {1.5f, -2.0f, 3.25f, 4.0f});
        size_t header_end = 0;
        const std::vector<uint8_t> bytes = g.build(&header_end);
        if (header_end % 32 != 0) continue;
        GgufFile f = read_gguf(write_file("aligned.gguf", bytes));
        float v[4];
        std::memcpy(v, f.find_tensor("w")->data, 16);
        EXPECT_EQ(std::vector<float>(v, v + 4), (std::vector<float>{1.5f, -2.0f, 3.25f, 4.0f}));
        return;
    }
    FAIL() << "no padding put the header end on the alignment";
}

// Each dimension may be up to 2^40, but their product is bounded (2^50) as it is formed: 2^40 x
// 2^40 x 2^40 x 16 is 2^124 values, which in 64 bits wraps to 0, a tensor of no bytes that every
// later size check would pass.
TEST(FormatsGguf, ElementCountsThatWrapAreAnError) {
    GgufBuilder g;
    const uint64_t big = uint64_t(1) << 40;
    g.tensor("w", {big, big, big, 16}, 0, {});
    expect_error(g.build(), "absurd element count");
}

// A file of metadata alone whose last value ends the file (its header a whole number of
// alignments, so nothing is padded after it): reading up to the last byte is not a truncation.
TEST(FormatsGguf, MetadataThatEndsTheFileIsRead) {
    for (size_t pad = 0; pad < 32; ++pad) {
        GgufBuilder g;
        g.str("pad", std::string(pad, 'p'));
        const std::vector<uint8_t> bytes = g.build();
        if (bytes.size() != 24 + 8 + 3 + 4 + 8 + pad) continue;  // padding was added
        EXPECT_EQ(read_gguf(write_file("end.gguf", bytes)).get_string("pad"),
                  std::string(pad, 'p'));
        return;
    }
    FAIL() << "no padding put the header end on the alignment";
}

// general.alignment is at most 2^24 (a larger one would pad each tensor by more than that).
TEST(FormatsGguf, AlignmentAboveTwoToTheTwentyFourIsAnError) {
    GgufBuilder g;
    g.u32("general.alignment", uint32_t(1) << 25);
    expect_error(g.build(), "power of two");
}

// Two tensors whose data ranges overlap: the second's offset patched to the first's.
TEST(FormatsGguf, OverlappingTensorDataIsAnError) {
    GgufBuilder g;
    g.tensor_f32("t0", {8}, std::vector<float>(8, 1.0f));
    g.tensor_f32("t1", {8}, std::vector<float>(8, 2.0f));
    std::vector<uint8_t> b = g.build();
    // t1's info: name length (8), "t1", n_dims (4), ne (8), type (4), then its offset.
    const std::vector<uint8_t> name = {2, 0, 0, 0, 0, 0, 0, 0, 't', '1'};
    const auto at = std::search(b.begin(), b.end(), name.begin(), name.end());
    ASSERT_NE(at, b.end());
    const size_t offset_at = size_t(at - b.begin()) + name.size() + 4 + 8 + 4;
    uint64_t offset;
    std::memcpy(&offset, b.data() + offset_at, 8);
    ASSERT_EQ(offset, 32u);  // the control: t0's 32 bytes, then t1
    const uint64_t inside_t0 = 0;
    expect_error(patched(b, offset_at, &inside_t0, 8), "overlap");
}

TEST(FormatsGguf, EveryTruncationIsAnError) {
    size_t header_end = 0;
    const std::vector<uint8_t> good = tiny_model().build(&header_end);
    for (size_t n = 0; n < good.size(); n += (n < header_end ? 1 : 97)) {
        const std::string path = write_file("trunc.gguf", {good.begin(), good.begin() + long(n)});
        EXPECT_THROW(load_checkpoint(path), Error) << "prefix of " << n << " bytes";
    }
}

// Random byte corruption of the header: the loader must either succeed (and then every tensor
// must dequantize inside its bounds) or throw nextn::Error.
TEST(FormatsGguf, RandomCorruptionNeverCrashes) {
    size_t header_end = 0;
    const std::vector<uint8_t> good = tiny_model().build(&header_end);
    std::mt19937 rng(12345);
    int loaded = 0, rejected = 0;
    for (int iter = 0; iter < 1500; ++iter) {
        std::vector<uint8_t> b = good;
        const int flips = 1 + int(rng() % 3);
        for (int i = 0; i < flips; ++i) b[rng() % header_end] = uint8_t(rng());
        const std::string path = write_file("fuzz.gguf", b);
        try {
            Checkpoint ck = load_checkpoint(path);
            for (const auto& [name, t] : ck.tensors) tensor_to_f32(t);
            ++loaded;
        } catch (const Error&) {
            ++rejected;
        }
    }
    EXPECT_EQ(loaded + rejected, 1500);
    EXPECT_GT(rejected, 0);
}

// ---------------------------------------------------------------------------------------------
// Fixture GGUFs (llama.cpp converter output) against the bf16 HF checkpoint.

struct Hf {
    SafetensorsFile file;
    explicit Hf(const std::string& dir) : file(read_safetensors(dir + "/model.safetensors")) {}
    std::vector<float> operator()(const std::string& name) const {
        auto it = file.tensors.find(name);
        if (it == file.tensors.end()) throw Error("HF fixture lacks " + name);
        return tensor_to_f32(it->second);
    }
};

std::vector<float> f32(const Checkpoint& ck, const std::string& name) { return tensor_to_f32(ck.require(name)); }

std::vector<float> plus_one(std::vector<float> v) {
    for (float& x : v) x = x + 1.0f;  // the converter adds 1 in f32 to the widened bf16 value
    return v;
}

// GGUF value head j' holds HF value head perm[j'] (tiled vs grouped order, README section 4).
std::vector<int> tiled_to_grouped(int hk, int hv) {
    const int r_count = hv / hk;
    std::vector<int> perm(static_cast<size_t>(hv));
    for (int r = 0; r < r_count; ++r)
        for (int g = 0; g < hk; ++g) perm[size_t(r * hk + g)] = g * r_count + r;
    return perm;
}

int ulp_distance(float a, float b) {
    int32_t ia, ib;
    std::memcpy(&ia, &a, 4);
    std::memcpy(&ib, &b, 4);
    return std::abs(ia - ib);
}

TEST(FormatsGgufFixtures, DenseF32MatchesHfAfterConverterRules) {
    NEXTN_REQUIRE_FIXTURES(fx);
    const std::string dir = fx + "/qwen35-dense-tiny";
    Checkpoint ck = load_checkpoint(dir + "/model-f32.gguf");
    Hf hf(dir);
    const ModelConfig& c = ck.config;
    EXPECT_EQ(c.architecture, "qwen3_5");
    EXPECT_EQ(c.hidden_size, 128);
    EXPECT_EQ(c.vocab_size, 1024);
    EXPECT_EQ(c.n_layers, 8);
    EXPECT_EQ(c.mtp_layers, 1);
    EXPECT_EQ(c.is_linear, (std::vector<bool>{true, true, true, false, true, true, true, false}));
    EXPECT_EQ(c.n_q_heads, 4);
    EXPECT_EQ(c.n_kv_heads, 2);
    EXPECT_EQ(c.head_dim, 64);
    EXPECT_EQ(c.rotary_dims, 16);
    EXPECT_EQ(c.rope_theta, 1e7);
    EXPECT_EQ(c.gdn_k_heads, 2);
    EXPECT_EQ(c.gdn_v_heads, 4);
    EXPECT_EQ(c.gdn_k_dim, 32);
    EXPECT_EQ(c.gdn_v_dim, 32);
    EXPECT_EQ(c.conv_kernel, 4);
    EXPECT_EQ(c.ffn_size, 256);
    EXPECT_FALSE(c.moe);
    EXPECT_FLOAT_EQ(c.rms_eps, 1e-6f);
    EXPECT_FALSE(c.tied_embeddings);
    EXPECT_EQ(ck.mtp_source, "inline");
    EXPECT_EQ(ck.file_tensor_names.size(), 124u);
    EXPECT_EQ(ck.tensors.size(), 124u);

    const std::string L = "model.language_model.";
    EXPECT_EQ(f32(ck, "embed_tokens.weight"), hf(L + "embed_tokens.weight"));
    EXPECT_EQ(f32(ck, "lm_head.weight"), hf("lm_head.weight"));
    EXPECT_EQ(f32(ck, "norm.weight"), plus_one(hf(L + "norm.weight")));
    EXPECT_EQ(f32(ck, "layers.3.self_attn.q_proj.weight"), hf(L + "layers.3.self_attn.q_proj.weight"));
    EXPECT_EQ(f32(ck, "layers.3.self_attn.q_norm.weight"), plus_one(hf(L + "layers.3.self_attn.q_norm.weight")));
    EXPECT_EQ(f32(ck, "layers.1.mlp.down_proj.weight"), hf(L + "layers.1.mlp.down_proj.weight"));
    EXPECT_EQ(f32(ck, "layers.2.input_layernorm.weight"), plus_one(hf(L + "layers.2.input_layernorm.weight")));
    EXPECT_TRUE(ck.norms_already_shifted.count("layers.2.input_layernorm.weight"));
    EXPECT_TRUE(ck.norms_already_shifted.count("layers.7.self_attn.k_norm.weight"));
    EXPECT_TRUE(ck.norms_already_shifted.count("mtp.layers.0.post_attention_layernorm.weight"));
    EXPECT_FALSE(ck.norms_already_shifted.count("layers.0.linear_attn.norm.weight"));
    EXPECT_TRUE(ck.gdn_tiled_heads);

    const std::vector<int> perm = tiled_to_grouped(2, 4);
    EXPECT_EQ(perm, (std::vector<int>{0, 2, 1, 3}));
    const int dv = 32, key_dim = 2 * 2 * 32;  // q and k channels precede v in qkv / conv
    const std::string G = L + "layers.0.linear_attn.";
    // ssm_a = -exp(A_log), reordered (2 ulp: the converter's torch.exp vs libm).
    auto a = f32(ck, "layers.0.linear_attn.A");
    auto a_log = hf(G + "A_log");
    ASSERT_EQ(a.size(), 4u);
    for (int j = 0; j < 4; ++j) EXPECT_LE(ulp_distance(a[j], -std::exp(a_log[perm[j]])), 2) << j;
    EXPECT_FALSE(ck.find("layers.0.linear_attn.A_log"));
    auto dt = f32(ck, "layers.0.linear_attn.dt_bias");
    auto hdt = hf(G + "dt_bias");
    for (int j = 0; j < 4; ++j) EXPECT_EQ(dt[j], hdt[perm[j]]);
    // conv1d: [C, K] vs HF [C, 1, K]; v channels reordered by head.
    EXPECT_EQ(ck.require("layers.0.linear_attn.conv1d.weight").shape, (std::vector<int64_t>{256, 4}));
    auto conv = f32(ck, "layers.0.linear_attn.conv1d.weight");
    auto hconv = hf(G + "conv1d.weight");
    auto grouped_channel = [&](int ch) {
        return ch < key_dim ? ch : key_dim + perm[(ch - key_dim) / dv] * dv + (ch - key_dim) % dv;
    };
    for (int ch = 0; ch < 256; ++ch)
        for (int k = 0; k < 4; ++k) ASSERT_EQ(conv[ch * 4 + k], hconv[grouped_channel(ch) * 4 + k]) << ch;
    // in_proj_qkv rows, in_proj_z rows, in_proj_b rows, out_proj columns.
    auto qkv = f32(ck, "layers.0.linear_attn.in_proj_qkv.weight");
    auto hqkv = hf(G + "in_proj_qkv.weight");
    for (int row = 0; row < 256; ++row)
        for (int col = 0; col < 128; col += 17) ASSERT_EQ(qkv[row * 128 + col], hqkv[grouped_channel(row) * 128 + col]);
    auto z = f32(ck, "layers.0.linear_attn.in_proj_z.weight");
    auto hz = hf(G + "in_proj_z.weight");
    for (int row = 0; row < 128; ++row)
        ASSERT_EQ(z[row * 128 + 3], hz[(perm[row / dv] * dv + row % dv) * 128 + 3]);
    auto b = f32(ck, "layers.0.linear_attn.in_proj_b.weight");
    auto hb = hf(G + "in_proj_b.weight");
    for (int j = 0; j < 4; ++j) ASSERT_EQ(b[j * 128 + 9], hb[perm[j] * 128 + 9]);
    auto out = f32(ck, "layers.0.linear_attn.out_proj.weight");
    auto hout = hf(G + "out_proj.weight");
    for (int col = 0; col < 128; ++col)
        ASSERT_EQ(out[5 * 128 + col], hout[5 * 128 + perm[col / dv] * dv + col % dv]);
    EXPECT_EQ(f32(ck, "layers.0.linear_attn.norm.weight"), hf(G + "norm.weight"));

    EXPECT_EQ(f32(ck, "mtp.fc.weight"), hf("mtp.fc.weight"));
    EXPECT_EQ(f32(ck, "mtp.norm.weight"), plus_one(hf("mtp.norm.weight")));
    EXPECT_EQ(f32(ck, "mtp.pre_fc_norm_hidden.weight"), plus_one(hf("mtp.pre_fc_norm_hidden.weight")));
    EXPECT_EQ(f32(ck, "mtp.layers.0.self_attn.o_proj.weight"), hf("mtp.layers.0.self_attn.o_proj.weight"));
    EXPECT_EQ(f32(ck, "mtp.layers.0.mlp.up_proj.weight"), hf("mtp.layers.0.mlp.up_proj.weight"));
}

TEST(FormatsGgufFixtures, MoeF32SplitsExperts) {
    NEXTN_REQUIRE_FIXTURES(fx);
    const std::string dir = fx + "/qwen35-moe-tiny";
    Checkpoint ck = load_checkpoint(dir + "/model-f32.gguf");
    Hf hf(dir);
    const ModelConfig& c = ck.config;
    EXPECT_TRUE(c.moe);
    EXPECT_EQ(c.architecture, "qwen3_5_moe");
    EXPECT_EQ(c.n_experts, 8);
    EXPECT_EQ(c.n_experts_used, 2);
    EXPECT_EQ(c.expert_ffn_size, 64);
    EXPECT_EQ(c.shared_expert_ffn_size, 64);
    EXPECT_EQ(ck.file_tensor_names.size(), 169u);
    const std::string L = "model.language_model.layers.";
    auto gate_up = hf(L + "4.mlp.experts.gate_up_proj");  // [8, 128, 128]: gate rows first
    auto down = hf(L + "4.mlp.experts.down_proj");        // [8, 128, 64]
    for (int e : {0, 3, 7}) {
        const std::string p = "layers.4.mlp.experts." + std::to_string(e) + ".";
        auto g = f32(ck, p + "gate_proj.weight"), u = f32(ck, p + "up_proj.weight"), d = f32(ck, p + "down_proj.weight");
        ASSERT_EQ(ck.require(p + "gate_proj.weight").shape, (std::vector<int64_t>{64, 128}));
        ASSERT_EQ(ck.require(p + "down_proj.weight").shape, (std::vector<int64_t>{128, 64}));
        const size_t base = size_t(e) * 128 * 128;
        EXPECT_TRUE(std::equal(g.begin(), g.end(), gate_up.begin() + long(base)));
        EXPECT_TRUE(std::equal(u.begin(), u.end(), gate_up.begin() + long(base + 64 * 128)));
        EXPECT_TRUE(std::equal(d.begin(), d.end(), down.begin() + long(size_t(e) * 128 * 64)));
    }
    EXPECT_EQ(f32(ck, "layers.4.mlp.gate.weight"), hf(L + "4.mlp.gate.weight"));
    EXPECT_EQ(ck.require("layers.4.mlp.shared_expert_gate.weight").shape, (std::vector<int64_t>{1, 128}));
    EXPECT_EQ(f32(ck, "layers.4.mlp.shared_expert_gate.weight"), hf(L + "4.mlp.shared_expert_gate.weight"));
    EXPECT_EQ(f32(ck, "layers.4.mlp.shared_expert.down_proj.weight"), hf(L + "4.mlp.shared_expert.down_proj.weight"));
    EXPECT_EQ(f32(ck, "mtp.layers.0.mlp.experts.5.up_proj.weight"), hf("mtp.layers.0.mlp.experts.5.up_proj.weight"));
    EXPECT_EQ(f32(ck, "mtp.layers.0.mlp.experts.2.down_proj.weight"), hf("mtp.layers.0.mlp.experts.2.down_proj.weight"));
    EXPECT_EQ(f32(ck, "mtp.layers.0.mlp.gate.weight"), hf("mtp.layers.0.mlp.gate.weight"));
}

TEST(FormatsGgufFixtures, TokenizerMetadataMatchesTokenizerJson) {
    NEXTN_REQUIRE_FIXTURES(fx);
    const std::string dir = fx + "/qwen35-dense-tiny";
    GgufTokenizerData t = read_gguf_tokenizer(dir + "/model-f32.gguf");
    auto tj = nlohmann::json::parse(read_text_file(dir + "/tokenizer.json"));
    EXPECT_EQ(t.model, "gpt2");
    EXPECT_EQ(t.pre, "qwen35");
    ASSERT_EQ(t.tokens.size(), 1024u);
    for (auto& [text, id] : tj["model"]["vocab"].items()) EXPECT_EQ(t.tokens[id.get<size_t>()], text);
    for (auto& added : tj["added_tokens"]) EXPECT_EQ(t.tokens[added["id"].get<size_t>()], added["content"].get<std::string>());
    ASSERT_EQ(t.merges.size(), tj["model"]["merges"].size());
    for (size_t i = 0; i < t.merges.size(); ++i) {
        const auto& m = tj["model"]["merges"][i];
        EXPECT_EQ(t.merges[i], m.is_string() ? m.get<std::string>() : m[0].get<std::string>() + " " + m[1].get<std::string>());
    }
    EXPECT_EQ(t.eos_id, 1023);  // <|im_end|>, from tokenizer_config.json's eos_token
    EXPECT_EQ(t.pad_id, 1021);
    EXPECT_EQ(t.bos_id, -1);
    EXPECT_FALSE(t.add_bos);
    EXPECT_EQ(t.token_types.size(), 1024u);
    auto cfg = nlohmann::json::parse(read_text_file(dir + "/tokenizer_config.json"));
    EXPECT_EQ(t.chat_template, cfg["chat_template"].get<std::string>());
}

TEST(FormatsGgufFixtures, MtpOnlyGgufIsRefusedAsAModel) {
    NEXTN_REQUIRE_FIXTURES(fx);
    const std::string msg = error_of([&] { load_checkpoint(fx + "/qwen35-dense-tiny/mtp-model-bf16.gguf"); });
    EXPECT_NE(msg.find("--draft-model"), std::string::npos) << msg;
}

// Quantized GGUFs: tensor types as README section 12 lists them; F32 tensors identical to
// model-f32.gguf; every dequantized weight within its format's quantization step of the f32
// weight (quant_steps.h).
void check_quantized(const std::string& model, const std::string& type, std::map<std::string, int> expected) {
    const std::string dir = test::fixtures_dir() + "/" + model;
    const std::string path = dir + "/model-" + type + ".gguf";
    GgufFile raw = read_gguf(path);
    std::map<std::string, int> counts;
    for (const auto& t : raw.tensors) counts[ggml_type_name(t.ggml_type)]++;
    EXPECT_EQ(counts, expected) << path;
    test::expect_within_quant_steps(load_checkpoint(path),
                                    load_checkpoint(dir + "/model-f32.gguf"));
}

TEST(FormatsGgufFixtures, QuantizedDense) {
    NEXTN_REQUIRE_FIXTURES(fx);
    check_quantized("qwen35-dense-tiny", "Q8_0", {{"Q8_0", 72}, {"F32", 52}});
    check_quantized("qwen35-dense-tiny", "Q4_0", {{"Q4_0", 71}, {"Q8_0", 1}, {"F32", 52}});
    check_quantized("qwen35-dense-tiny", "Q4_K_M",
                    {{"Q4_K", 8}, {"Q6_K", 5}, {"Q8_0", 6}, {"Q5_0", 53}, {"F32", 52}});
}

TEST(FormatsGgufFixtures, QuantizedMoe) {
    NEXTN_REQUIRE_FIXTURES(fx);
    check_quantized("qwen35-moe-tiny", "Q8_0", {{"Q8_0", 99}, {"F32", 70}});
    check_quantized("qwen35-moe-tiny", "Q4_0", {{"Q4_0", 86}, {"Q8_0", 13}, {"F32", 70}});
    check_quantized("qwen35-moe-tiny", "Q4_K_M",
                    {{"Q5_0", 72}, {"Q8_0", 23}, {"Q5_K", 3}, {"Q4_K", 1}, {"F32", 70}});
}

}  // namespace
}  // namespace nextn
