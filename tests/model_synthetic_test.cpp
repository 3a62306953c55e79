// Synthetic models (src/model/synthetic.h): the release shapes against the published sizes, the
// size estimate against what is really allocated, the row-by-row encoder against
// make_weight_f32, reproducibility across thread counts, the value scales, a finite forward on
// small builds, and the perfect / random draft variants on a model of real width.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "core/error.h"
#include "core/mapped_file.h"
#include "core/memory_info.h"
#include "core/thread_pool.h"
#include "decode_helpers.h"
#include "error_of.h"
#include "formats/model_config.h"
#include "kernel_test_helpers.h"
#include "kernels/kernels.h"
#include "model/synthetic.h"
#include "spec/mtp_drafter.h"
#include "spec/speculative_decoder.h"
#include "test_paths.h"

namespace nextn {
namespace {

// A small config with the fixtures' geometry (dense or MoE), for builds that take milliseconds.
ModelConfig tiny_config(bool moe) {
    ModelConfig c = synthetic_config(moe ? "qwen3.5-35b-a3b" : "qwen3.5-0.8b");
    c.vocab_size = 1024;
    c.hidden_size = 128;
    c.n_layers = 4;
    c.is_linear = {true, true, true, false};
    c.n_q_heads = 4;
    c.n_kv_heads = 2;
    c.head_dim = 64;
    c.rotary_dims = 16;
    c.gdn_k_heads = 2;
    c.gdn_v_heads = 4;
    c.gdn_k_dim = 32;
    c.gdn_v_dim = 32;
    c.ffn_size = 256;
    if (moe) {
        c.n_experts = 8;
        c.n_experts_used = 2;
        c.expert_ffn_size = 64;
        c.shared_expert_ffn_size = 64;
    }
    c.validate("tiny synthetic");
    return c;
}

// Qwen3.5-0.8B's real widths (H 1024, GDN 16x128 heads, attention 8/2 x 256, FFN 3584) with 4
// layers and a 16k vocabulary: the head geometry of the release at a test's cost.
ModelConfig narrow_0_8b(bool tied) {
    ModelConfig c = synthetic_config("qwen3.5-0.8b");
    c.n_layers = 4;
    c.is_linear = {true, true, true, false};
    c.vocab_size = 16384;
    c.tied_embeddings = tied;
    return c;
}

bool all_finite(const std::vector<float>& v) {
    return std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); });
}

// Every matrix of the weights, for byte comparisons and size sums.
std::vector<const WeightMatrix*> matrices(const ModelWeights& w) {
    std::vector<const WeightMatrix*> out = {&w.embed};
    if (w.lm_head.data != w.embed.data) out.push_back(&w.lm_head);
    auto layer = [&](const LayerWeights& l) {
        for (const WeightMatrix* m : {&l.in_qkv, &l.in_z, &l.in_b, &l.in_a, &l.out_proj, &l.q_proj,
                                      &l.k_proj, &l.v_proj, &l.o_proj, &l.ffn.gate, &l.ffn.up,
                                      &l.ffn.down, &l.ffn.router, &l.ffn.shared_gate,
                                      &l.ffn.shared_up, &l.ffn.shared_down,
                                      &l.ffn.shared_expert_gate})
            if (!m->empty()) out.push_back(m);
        for (const ExpertWeights& e : l.ffn.experts)
            for (const WeightMatrix* m : {&e.gate, &e.up, &e.down}) out.push_back(m);
    };
    for (const LayerWeights& l : w.layers) layer(l);
    if (w.mtp.present) {
        out.push_back(&w.mtp.fc);
        layer(w.mtp.layer);
    }
    return out;
}

size_t vector_bytes(const ModelWeights& w) {
    size_t n = w.final_norm.size();
    auto layer = [&](const LayerWeights& l) {
        for (const auto* v : {&l.input_norm, &l.post_norm, &l.conv, &l.neg_exp_a, &l.dt_bias,
                              &l.gdn_norm, &l.q_norm, &l.k_norm})
            n += v->size();
    };
    for (const LayerWeights& l : w.layers) layer(l);
    if (w.mtp.present) {
        n += w.mtp.pre_fc_norm_embedding.size() + w.mtp.pre_fc_norm_hidden.size() + w.mtp.norm.size();
        layer(w.mtp.layer);
    }
    return n * sizeof(float);
}

TEST(SyntheticConfig, ReleaseShapesMatchThePublishedSizes) {
    // The names carry the published parameter counts; a wrong width, layer count, head count or
    // expert size would move the count far more than the 5% allowed. Counted: every text-model
    // weight (embedding once when tied) plus the one-layer MTP head, which the checkpoints ship.
    struct Release {
        const char* name;
        double billions;
    };
    for (const Release& r : {Release{"qwen3.5-0.8b", 0.8}, Release{"qwen3.5-2b", 2.0},
                             Release{"qwen3.5-9b", 9.0}, Release{"qwen3.5-35b-a3b", 35.0}}) {
        ModelConfig c = synthetic_config(r.name);
        EXPECT_EQ(c.vocab_size, 248320) << r.name;
        EXPECT_EQ(c.mtp_layers, 1) << r.name;
        for (int i = 0; i < c.n_layers; ++i)  // full attention every 4th layer
            EXPECT_EQ(c.is_linear[size_t(i)], (i + 1) % 4 != 0) << r.name << " layer " << i;
        const SyntheticSize s = synthetic_size(c, WType::F32, true);
        EXPECT_NEAR(double(s.params) / 1e9, r.billions, 0.05 * r.billions) << r.name;
        EXPECT_EQ(s.routed_expert_params > 0, c.moe) << r.name;
    }
    // "A3B": about 3B parameters active per token (8 of 256 routed experts).
    ModelConfig moe = synthetic_config("qwen3.5-35b-a3b");
    const SyntheticSize s = synthetic_size(moe, WType::F32, false);
    const double active = double(s.params) - double(s.routed_expert_params) *
                                                 (1.0 - double(moe.n_experts_used) / moe.n_experts);
    EXPECT_GT(active / 1e9, 2.5);
    EXPECT_LT(active / 1e9, 3.6);
}

TEST(SyntheticConfig, UnknownNameListsTheValidOnes) {
    try {
        synthetic_config("qwen3.5-1b");
        FAIL() << "no error";
    } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("qwen3.5-1b"), std::string::npos) << m;
        for (const std::string& n : synthetic_model_names()) EXPECT_NE(m.find(n), std::string::npos) << m;
    }
}

TEST(SyntheticConfig, MemoryCheckNamesTheShortfall) {
    EXPECT_NO_THROW(require_memory(10, 20, "x"));
    EXPECT_NO_THROW(require_memory(10, 0, "x"));  // unknown: no check
    try {
        require_memory(size_t(30e9), size_t(20e9), "synthetic qwen3.5-9b with f32 weights", "try q4");
        FAIL() << "no error";
    } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("qwen3.5-9b"), std::string::npos) << m;
        EXPECT_NE(m.find("30.0 GB"), std::string::npos) << m;
        EXPECT_NE(m.find("20.0 GB"), std::string::npos) << m;
        EXPECT_NE(m.find("try q4"), std::string::npos) << m;
    }
}

TEST(SyntheticBuild, SizeEstimateIsTheAllocation) {
    for (bool moe : {false, true}) {
        for (WType t : {WType::F32, WType::Q8_0, WType::Q4_0, WType::Q4_0R, WType::Q8_0R}) {
            ModelConfig c = tiny_config(moe);
            ThreadPool pool(2);
            SyntheticOptions o;
            o.matrix_type = t;
            ModelWeights w = synthetic_weights(c, o, pool);
            size_t bytes = vector_bytes(w);
            int64_t params = 0;
            for (const WeightMatrix* m : matrices(w)) {
                bytes += m->nbytes();
                params += m->rows * m->cols;
                EXPECT_EQ(m->type, t);
            }
            params += int64_t(vector_bytes(w) / sizeof(float));
            const SyntheticSize s = synthetic_size(c, t, true);
            EXPECT_EQ(s.bytes, bytes) << wtype_name(t) << (moe ? " moe" : " dense");
            EXPECT_EQ(s.params, params);
        }
    }
}

TEST(SyntheticBuild, SameWeightsForAnyThreadCount) {
    ModelConfig c = tiny_config(true);
    ThreadPool one(1), two(2);
    SyntheticOptions o;
    ModelWeights a = synthetic_weights(c, o, one), b = synthetic_weights(c, o, two);
    auto ma = matrices(a), mb = matrices(b);
    ASSERT_EQ(ma.size(), mb.size());
    for (size_t i = 0; i < ma.size(); ++i)
        ASSERT_EQ(0, std::memcmp(ma[i]->data, mb[i]->data, ma[i]->nbytes())) << "matrix " << i;
    EXPECT_EQ(a.layers[0].dt_bias, b.layers[0].dt_bias);
    // A different seed gives different weights.
    o.seed = 7;
    ModelWeights d = synthetic_weights(c, o, two);
    EXPECT_NE(0, std::memcmp(a.layers[0].in_qkv.data, d.layers[0].in_qkv.data, a.layers[0].in_qkv.nbytes()));
}

TEST(SyntheticBuild, ValuesAreScaledLikeAnInitialisedNetwork) {
    ModelConfig c = tiny_config(false);
    ThreadPool pool(2);
    SyntheticOptions o;
    o.matrix_type = WType::F32;
    ModelWeights w = synthetic_weights(c, o, pool);
    auto std_of = [](const WeightMatrix& m) {
        double s2 = 0, s = 0;
        std::vector<float> row(static_cast<size_t>(m.cols));
        for (int64_t r = 0; r < m.rows; ++r) {
            weight_row_f32(m, r, row.data());
            for (float x : row) s += x, s2 += double(x) * x;
        }
        const double n = double(m.rows * m.cols);
        return std::sqrt(s2 / n - (s / n) * (s / n));
    };
    const LayerWeights& l = w.layers[0];
    for (const WeightMatrix* m : {&l.in_qkv, &l.out_proj, &l.ffn.gate, &l.ffn.down})
        EXPECT_NEAR(std_of(*m) * std::sqrt(double(m->cols)), 1.0, 0.05) << m->rows << "x" << m->cols;
    for (float x : l.input_norm) EXPECT_TRUE(x >= 0.9f && x <= 1.1f);
    for (float a : l.neg_exp_a) EXPECT_TRUE(a <= -1.0f && a >= -16.0f);
    for (float b : l.dt_bias) {
        const float dt = std::log1p(std::exp(b));  // softplus
        EXPECT_TRUE(dt > 0.99e-3f && dt < 1.01e-1f) << dt;
    }
}

// The draft variants' names both ways (synthetic.h), and an unknown one refused naming it and
// the supported ones.
TEST(SyntheticConfig, DraftVariantNamesRoundTrip) {
    for (SyntheticDraft d : {SyntheticDraft::None, SyntheticDraft::Random, SyntheticDraft::Perfect})
        EXPECT_EQ(parse_synthetic_draft(synthetic_draft_name(d)), d);
    EXPECT_STREQ(synthetic_draft_name(SyntheticDraft::Perfect), "perfect");
    EXPECT_EQ(test::error_of([] { parse_synthetic_draft("ideal"); }),
              "unknown draft variant 'ideal' (supported: random, perfect, none)");
}

// q4_k_m_type's rule for the embedding (synthetic.h): Q6_K is for the output, which a tied
// embedding is; an untied embedding (Qwen3.5-9B) is "the rest", Q4_K, while its lm_head is Q6_K.
TEST(SyntheticBuild, Q4KMixGivesAnUntiedEmbeddingQ4K) {
    SyntheticOptions o;
    o.q4_k_m = true;
    o.q4_k_type = WType::Q4_1FX;
    o.q6_k_type = WType::Q6_KX;
    const ModelConfig c = synthetic_config("qwen3.5-9b");
    ASSERT_FALSE(c.tied_embeddings);
    EXPECT_EQ(WType::Q4_1FX, q4_k_m_type(c, o, "embed_tokens.weight"));
    EXPECT_EQ(WType::Q6_KX, q4_k_m_type(c, o, "lm_head.weight"));
}

// use_more_bits(i, n) counts the MTP layer in n only when the model has one (synthetic.h). With
// 23 trunk layers the two counts differ where it matters: n = 24 (with the head) gives the first
// eighth as layers 0-2 (i < 24 / 8 = 3), n = 23 (without) layers 0-1 (i < 2), and layer 2 is not
// one of the every-third ones for n = 23 ((2 - 2) % 3 = 0). So layer 2's FFN down is Q6_K with
// the head and Q4_K without. (At the releases' 24, 32 and 40 layers both counts choose the same.)
TEST(SyntheticBuild, Q4KMixCountsTheMtpLayerOnlyWhenPresent) {
    ModelConfig c = synthetic_config("qwen3.5-0.8b");
    c.n_layers = 23;
    c.is_linear.resize(23);
    SyntheticOptions o;
    o.q4_k_m = true;
    o.q4_k_type = WType::Q4_1FX;
    o.q6_k_type = WType::Q6_KX;
    o.draft = SyntheticDraft::Random;
    EXPECT_EQ(WType::Q6_KX, q4_k_m_type(c, o, "layers.2.mlp.down_proj.weight"));
    o.draft = SyntheticDraft::None;
    EXPECT_EQ(WType::Q4_1FX, q4_k_m_type(c, o, "layers.2.mlp.down_proj.weight"));
}

// The seeded values fill every element, an odd count too (the uniforms are drawn two per
// random word, so an odd-length vector has a last value drawn alone): with 3 value heads each
// A is in [1, 16] (stored -A) and each dt in [1e-3, 1e-1]. The depthwise conv weights are uniform
// with std 1/sqrt(fan_in), fan_in the kernel width (4): inside +-sqrt(3)/2 with std 0.5.
TEST(SyntheticBuild, OddLengthVectorsAndConvWeightsAreScaled) {
    ModelConfig c = tiny_config(false);
    c.gdn_k_heads = 1;
    c.gdn_v_heads = 3;
    c.validate("odd heads");
    ThreadPool pool(2);
    SyntheticOptions o;
    o.matrix_type = WType::F32;
    const ModelWeights w = synthetic_weights(c, o, pool);
    for (const LayerWeights& l : w.layers) {
        if (!l.linear) continue;
        ASSERT_EQ(l.neg_exp_a.size(), 3u);
        for (float a : l.neg_exp_a) EXPECT_TRUE(a <= -1.0f && a >= -16.0f) << a;
        for (float b : l.dt_bias) {
            const float dt = std::log1p(std::exp(b));
            EXPECT_TRUE(dt > 0.99e-3f && dt < 1.01e-1f) << dt;
        }
        ASSERT_EQ(int64_t(l.conv.size()), c.gdn_conv_dim() * c.conv_kernel);
        double s2 = 0;
        for (float x : l.conv) {
            EXPECT_LE(std::fabs(x), 0.8661f);
            s2 += double(x) * x;
        }
        EXPECT_NEAR(std::sqrt(s2 / double(l.conv.size())), 0.5, 0.03);
    }
}

// make_draft_perfect needs the head's fc to be [H, 2H] (its [I | 0] form is built at that shape)
// and says what it found.
TEST(SyntheticBuild, MakeDraftPerfectRefusesAnFcOfAnotherShape) {
    const ModelConfig c = tiny_config(false);
    ThreadPool pool(2);
    SyntheticOptions o;
    o.matrix_type = WType::F32;
    ModelWeights w = synthetic_weights(c, o, pool);
    const std::vector<float> square(size_t(c.hidden_size * c.hidden_size), 0.0f);
    w.mtp.fc = make_weight_f32(square.data(), c.hidden_size, c.hidden_size, WType::F32);
    EXPECT_EQ(test::error_of([&] { make_draft_perfect(w, c, &pool); }),
              "make_draft_perfect: mtp.fc is [128, 128], expected [128, 256]");
    const std::vector<float> tall(size_t(2 * c.hidden_size * 2 * c.hidden_size), 0.0f);
    w.mtp.fc = make_weight_f32(tall.data(), 2 * c.hidden_size, 2 * c.hidden_size, WType::F32);
    EXPECT_EQ(test::error_of([&] { make_draft_perfect(w, c, &pool); }),
              "make_draft_perfect: mtp.fc is [256, 256], expected [128, 256]");
}

// load_synthetic_model's checkpoint part (synthetic.h): format "synthetic", path
// "synthetic:<name>", the config it was given, and mtp_source the draft variant's name.
TEST(SyntheticBuild, LoadedModelDescribesItself) {
    const ModelConfig c = tiny_config(false);
    for (SyntheticDraft d : {SyntheticDraft::None, SyntheticDraft::Random}) {
        SyntheticOptions o;
        o.matrix_type = WType::F32;
        o.draft = d;
        const LoadedModel lm = load_synthetic_model(c, "tiny", o, 1);
        EXPECT_EQ(lm.checkpoint.format, "synthetic");
        EXPECT_EQ(lm.checkpoint.path, "synthetic:tiny");
        EXPECT_EQ(lm.checkpoint.mtp_source, synthetic_draft_name(d));
        EXPECT_EQ(lm.checkpoint.config.hidden_size, c.hidden_size);
        EXPECT_EQ(lm.model->has_mtp(), d != SyntheticDraft::None);
    }
}

// A synthetic model that does not fit is refused before anything is built, naming the model and
// weight type, and listing the --quant types that would fit (each: its weights plus the 512 MiB
// a bench run needs beside them, synthetic.cpp). Qwen3.5-35B-A3B in f32 needs about 140 GB. The
// progress callback stops a build that was wrongly started after its first tensor (the 2 GB
// embedding).
TEST(SyntheticBuild, AModelThatDoesNotFitIsRefusedNamingTheTypesThatFit) {
    const ModelConfig c = synthetic_config("qwen3.5-35b-a3b");
    SyntheticOptions o;
    o.matrix_type = WType::F32;
    o.progress = [](size_t done, size_t) {
        if (done > (size_t(1) << 30)) throw std::runtime_error("the build started");
    };
    const size_t working = size_t(512) << 20;
    const size_t available = read_memory_info().available;
    if (available == 0 || synthetic_size(c, o).bytes + working <= available)
        GTEST_SKIP() << "this machine has the memory for it (or no MemAvailable)";
    const std::string msg = test::error_of([&] { load_synthetic_model(c, "big", o, 1); });
    EXPECT_EQ(msg.rfind("synthetic big with f32 weights needs ", 0), 0u) << msg;
    EXPECT_NE(msg.find(" is available (MemAvailable in /proc/meminfo); "), std::string::npos)
        << msg;
    for (WType t : {WType::BF16, WType::Q8_0, WType::Q4_0}) {
        const double need = double(synthetic_size(c, t, true).bytes + working);
        if (std::fabs(need / double(available) - 1.0) < 0.05) continue;  // too close to call
        const std::string named = std::string(wtype_name(t)) + " (" + gigabytes(size_t(need)) + ")";
        EXPECT_EQ(msg.find(named) != std::string::npos, need <= double(available))
            << named << ": " << msg;
    }
}

// The refusal names the weights being built: with q4_k_m set, the Q4_K_M mix ("q4_k_m"), not
// matrix_type, which the mix ignores (nextn bench --quant q4_k_m leaves it at its default).
// Qwen3.5-35B-A3B with its 40 layers doubled: about 40 GB in the mix.
TEST(SyntheticBuild, ARefusedQ4KMModelIsNamedQ4KM) {
    ModelConfig c = synthetic_config("qwen3.5-35b-a3b");
    c.n_layers = 80;
    c.is_linear.clear();
    for (int i = 0; i < c.n_layers; ++i) c.is_linear.push_back((i + 1) % 4 != 0);
    c.validate("doubled 35B");
    SyntheticOptions o;
    o.q4_k_m = true;
    o.q4_k_type = WType::Q4_KR;
    o.q6_k_type = WType::Q6_KR;
    o.progress = [](size_t done, size_t) {
        if (done > (size_t(1) << 30)) throw std::runtime_error("the build started");
    };
    const size_t available = read_memory_info().available;
    if (available == 0 || synthetic_size(c, o).bytes + (size_t(512) << 20) <= available)
        GTEST_SKIP() << "this machine has the memory for it (or no MemAvailable)";
    const std::string msg = test::error_of([&] { load_synthetic_model(c, "big", o, 1); });
    EXPECT_EQ(msg.rfind("synthetic big with q4_k_m weights needs ", 0), 0u) << msg;
}

std::vector<int32_t> decode(const Qwen35Model& model, const std::vector<int32_t>& prompt, int depth,
                            int64_t n, DecodeStats* stats) {
    return test::greedy_decode(model, prompt, depth, n, stats);
}

TEST(SyntheticForward, FiniteLogitsAndHiddenOverALongRun) {
    // 200 positions through the recurrence: a decaying state stays finite, the logits vary.
    for (bool moe : {false, true}) {
        ModelConfig c = tiny_config(moe);
        SyntheticOptions o;
        o.matrix_type = WType::Q8_0;
        LoadedModel lm = load_synthetic_model(c, "tiny", o, 2);
        const Qwen35Model& m = *lm.model;
        const int64_t T = 200, V = c.vocab_size, H = c.hidden_size;
        std::vector<int32_t> tokens(static_cast<size_t>(T));
        for (int64_t t = 0; t < T; ++t) tokens[size_t(t)] = int32_t((t * 7919) % V);
        SequenceState s = m.new_state(T + 1, 1);
        std::vector<float> logits(size_t(T * V)), hidden(size_t(T * H));
        m.forward(s, tokens.data(), T, {hidden.data(), logits.data(), T});
        EXPECT_TRUE(all_finite(logits));
        EXPECT_TRUE(all_finite(hidden));
        const auto [lo, hi] = std::minmax_element(logits.end() - V, logits.end());
        EXPECT_GT(*hi - *lo, 0.1f) << "logits of the last position are flat";
        std::vector<float> mtp_logits(static_cast<size_t>(V));
        m.mtp_forward(s, hidden.data() + (T - 1) * H, &tokens[0], 1, T - 1, {nullptr, mtp_logits.data(), 1});
        EXPECT_TRUE(all_finite(mtp_logits));
    }
}

// MoE routing (spec section 7): top-k of the router's softmax, ties to the lower expert index.
// With every router row zero all E probabilities are equal, so each token takes experts 0 and 1
// (k = 2) in every layer, the MTP layer too: the other experts' weights cannot change a logit,
// and expert 1's must.
TEST(SyntheticForward, RouterTiesGoToTheLowerExpertIndex) {
    const ModelConfig c = tiny_config(true);
    ASSERT_EQ(c.n_experts_used, 2);
    const int64_t H = c.hidden_size, I = c.expert_ffn_size, V = c.vocab_size, T = 5;
    const std::vector<float> zeros(size_t(std::max<int64_t>(c.n_experts, H) * std::max(H, I)),
                                   0.0f);
    // Logits and MTP logits of the model whose routers are zero and whose experts in `zeroed`
    // have zero down projections.
    auto run = [&](const std::vector<int>& zeroed) {
        ThreadPool pool(2);
        SyntheticOptions o;
        o.matrix_type = WType::F32;
        ModelWeights w = synthetic_weights(c, o, pool);
        auto edit = [&](LayerWeights& l) {
            l.ffn.router = make_weight_f32(zeros.data(), c.n_experts, H, WType::F32);
            for (int e : zeroed)
                l.ffn.experts[size_t(e)].down = make_weight_f32(zeros.data(), H, I, WType::F32);
        };
        for (LayerWeights& l : w.layers) edit(l);
        edit(w.mtp.layer);
        Qwen35Model m(c, std::move(w), pool);
        std::vector<int32_t> tokens = {3, 700, 41, 3, 999};
        SequenceState s = m.new_state(T + 1, 1);
        std::vector<float> out(size_t((T + 1) * V)), hidden(size_t(T * H));
        m.forward(s, tokens.data(), T, {hidden.data(), out.data(), T});
        m.mtp_forward(s, hidden.data() + (T - 1) * H, &tokens[0], 1, T - 1,
                      {nullptr, out.data() + T * V, 1});
        return out;
    };
    const std::vector<float> base = run({});
    EXPECT_TRUE(base == run({2, 3, 4, 5, 6, 7}));
    EXPECT_FALSE(base == run({1}));
}

// The synthetic tiny model with f32 matrices, on one thread.
LoadedModel tiny_f32_model(const ModelConfig& c) {
    SyntheticOptions o;
    o.matrix_type = WType::F32;
    return load_synthetic_model(c, "tiny", o, 1);
}

TEST(SyntheticForward, TokenIdsOutsideTheVocabularyAreRefused) {
    const ModelConfig c = tiny_config(false);
    LoadedModel lm = tiny_f32_model(c);
    const Qwen35Model& m = *lm.model;
    const int64_t V = c.vocab_size, H = c.hidden_size;
    std::vector<float> hidden(static_cast<size_t>(H)), logits(static_cast<size_t>(V));
    for (int32_t bad : {int32_t(V), -1}) {
        SequenceState s = m.new_state(4, 1);
        const std::string want = "token id " + std::to_string(bad) +
                                 " is outside the vocabulary [0, " + std::to_string(V) + ")";
        EXPECT_NE(test::error_of([&] {
                      m.forward(s, &bad, 1, {hidden.data(), logits.data(), 1});
                  }).find(want),
                  std::string::npos);
        EXPECT_NE(test::error_of([&] {
                      m.mtp_forward(s, hidden.data(), &bad, 1, 0, {nullptr, logits.data(), 1});
                  }).find(want),
                  std::string::npos);
    }
    // The last id is inside.
    const int32_t last = int32_t(V - 1);
    SequenceState s = m.new_state(4, 1);
    EXPECT_NO_THROW(m.forward(s, &last, 1, {hidden.data(), logits.data(), 1}));
    EXPECT_NO_THROW(m.mtp_forward(s, hidden.data(), &last, 1, 0, {nullptr, logits.data(), 1}));
}

// ModelOptions' draft-head rules (model/qwen35.h): a draft vocabulary of 0 or above V is the whole
// vocabulary, a smaller one the first rows of the LM head itself; auto (-1, nullopt) takes the
// whole of a vocabulary below kAutoDraftVocab and Q8_0 for a float head, Native for a block one.
TEST(SyntheticForward, DraftHeadVocabularyAndTypeRules) {
    const ModelConfig c = tiny_config(false);
    ASSERT_LT(c.vocab_size, kAutoDraftVocab);
    const int64_t V = c.vocab_size;
    for (WType t : {WType::F32, WType::Q8_0}) {
        SyntheticOptions o;
        o.matrix_type = t;
        LoadedModel lm = load_synthetic_model(c, "tiny", o, 1);
        Qwen35Model& m = *lm.model;
        const WeightMatrix& head = m.weights().lm_head;
        for (int64_t vocab : {int64_t(0), V, V + 100}) {
            m.set_draft_head(vocab, WType::Native);
            EXPECT_EQ(m.draft_vocab(), V) << vocab;
        }
        m.set_draft_head(10, WType::Native);
        EXPECT_EQ(m.draft_vocab(), 10);
        EXPECT_EQ(m.draft_lm_head().data, head.data);
        EXPECT_NE(test::error_of([&] { m.set_draft_head(-1, WType::Native); }).find("negative"),
                  std::string::npos);

        ModelOptions auto_head;
        auto_head.draft_vocab = -1;
        auto_head.draft_head_type = std::nullopt;
        apply_model_options(m, auto_head);
        EXPECT_EQ(m.draft_vocab(), V);
        const WType want = t == WType::F32
                               ? kernel_storage_type(WType::Q8_0, auto_head.int8_activations,
                                                     auto_head.bf16_activations)
                               : head.type;
        EXPECT_EQ(m.draft_lm_head().type, want) << wtype_name(t);
        // The rule itself, not only the storage mapping: a float head is drafted in Q8_0 (in
        // whichever layout the kernels read it).
        if (t == WType::F32) {
            EXPECT_EQ(std::string(wtype_name(m.draft_lm_head().type)).rfind("q8_0", 0), 0u)
                << wtype_name(m.draft_lm_head().type);
        }
    }
}

// commit(state, 0) drops the whole verify forward (model/qwen35.h): the Gated DeltaNet state,
// conv window and position are those before it, so what follows computes as on a state that
// never saw it. (A decode round always keeps at least one position, so generate() never does this.)
TEST(SyntheticForward, CommittingNoPositionsLeavesTheStateAsBefore) {
    const ModelConfig c = tiny_config(false);
    LoadedModel lm = tiny_f32_model(c);
    const Qwen35Model& m = *lm.model;
    const int64_t V = c.vocab_size;
    const std::vector<int32_t> prompt = {5, 17, 300}, dropped = {9, 9, 40}, next = {77, 2};
    auto run = [&](bool with_dropped) {
        SequenceState s = m.new_state(16, 4);
        m.forward(s, prompt.data(), 3, {});
        if (with_dropped) {
            m.forward(s, dropped.data(), 3, {}, /*keep_open=*/true);
            m.commit(s, 0);
        }
        EXPECT_EQ(s.n_past, 3);
        std::vector<float> logits(static_cast<size_t>(2 * V));
        m.forward(s, next.data(), 2, {nullptr, logits.data(), 2});
        return logits;
    };
    EXPECT_TRUE(run(true) == run(false));
}

TEST(SyntheticForward, RealWidthModelRunsAndRandomHeadIsRarelyAccepted) {
    SyntheticOptions o;
    o.matrix_type = WType::Q4_0;
    o.draft = SyntheticDraft::Random;
    LoadedModel lm = load_synthetic_model(narrow_0_8b(true), "narrow-0.8b", o, 2);
    std::vector<int32_t> prompt = {11, 2024, 7, 999, 16000};
    DecodeStats plain, spec;
    std::vector<int32_t> a = decode(*lm.model, prompt, 0, 33, &plain);
    std::vector<int32_t> b = decode(*lm.model, prompt, 2, 33, &spec);
    EXPECT_EQ(a, b);  // speculation is exact whatever the head
    ASSERT_GT(spec.drafted[0], 0);
    EXPECT_LT(double(spec.accepted[0]) / double(spec.drafted[0]), 0.2);
}

// Greedy MTP output of a perfect-draft model equals plain decoding at depths 1..3 and every
// draft is accepted, with every KV cache type: an f16 or q8_0 cache is rounded once, when
// written, so it too must give a verify's columns the bits of decode steps.
void expect_perfect_drafts_equal_plain(Qwen35Model& model, const std::string& label) {
    const std::vector<int32_t> prompt = {11, 2024, 7, 999, 16000};
    for (KvCacheType kv : {KvCacheType::F32, KvCacheType::F16, KvCacheType::Q8_0}) {
        model.set_kv_cache_type(kv);
        const std::vector<int32_t> plain = decode(model, prompt, 0, 33, nullptr);
        for (int depth = 1; depth <= 3; ++depth) {
            DecodeStats spec;
            EXPECT_EQ(plain, decode(model, prompt, depth, 33, &spec))
                << label << " " << kv_cache_type_name(kv) << " KV depth " << depth;
            ASSERT_GT(spec.drafted[0], 0);
            EXPECT_EQ(spec.drafted[0], spec.accepted[0])
                << "a perfect head's drafts are all accepted";
        }
    }
    model.set_kv_cache_type(KvCacheType::F32);
}

// A model held in Q4_0R or Q8_0R (16-row groups, on whatever table runs: the AVX-512 or 256-bit
// kernel, or the reference) speculates exactly: greedy MTP output equals plain decoding at depths 1..3, with
// its draft head's LM head rows a view of the trunk's whose row count ends inside a group; that
// view's products are the full head's first rows, bit for bit.
TEST(SyntheticForward, RowGroupModelsSpeculateExactly) {
    for (WType type : {WType::Q4_0R, WType::Q8_0R}) {
        SyntheticOptions o;
        o.matrix_type = type;
        o.draft = SyntheticDraft::Perfect;
        LoadedModel lm = load_synthetic_model(narrow_0_8b(true), "narrow-0.8b", o, 2);
        const WeightMatrix& head = lm.model->weights().lm_head;
        EXPECT_EQ(type, head.type);
        const int64_t draft_rows = head.rows - 5;  // 16379: the view ends inside its last group
        lm.model->set_draft_head(draft_rows, WType::Native);
        ASSERT_EQ(draft_rows, lm.model->draft_vocab());
        {
            const std::vector<float> x = test::random_normal(size_t(3 * head.cols), 21);
            ThreadPool pool(2);
            std::vector<float> full(size_t(3 * head.rows)), view(size_t(3 * draft_rows));
            matmul(head, x.data(), 3, full.data(), pool);
            matmul(lm.model->draft_lm_head(), x.data(), 3, view.data(), pool);
            for (int64_t j = 0; j < 3; ++j)
                ASSERT_EQ(0, std::memcmp(&view[size_t(j * draft_rows)], &full[size_t(j * head.rows)],
                                         size_t(draft_rows) * sizeof(float)))
                    << wtype_name(type) << " column " << j;
        }
        expect_perfect_drafts_equal_plain(*lm.model, wtype_name(type));
    }
}

// --quant q4_k_m: llama.cpp's Q4_K_M mix at the commit 34af94cd9. Two independent
// records of which matrices it gives Q6_K: llama-quantize's own 0.8B Q4_K_M (run in session 38 on
// a tools/synthetic_gguf Q8_0 file, `llama-quantize --allow-requantize ... Q4_K_M`: Q6_K for the
// tied embedding, attn_qkv of blocks 0-2, 5, 8, 14, 17 and 20-22, attn_v of 11, 23 and the MTP
// block 24, ffn_down of 0-2, 5, 8, 11, 14, 17 and 20-24, the other 168 matrices Q4_K), and the
// tiny dense fixture (../shared/fixtures/README.md section 12: the Q6_K choices are ffn_down of
// blocks 0/3/6/7/8, attn_qkv of 0/6 and attn_v of 3/7/8, stored as Q8_0 where a row is not a
// multiple of 256). A layer's Gated DeltaNet QKV and attention V share one count.
TEST(SyntheticBuild, Q4KMixFollowsLlamaCppsRule) {
    SyntheticOptions o;
    o.q4_k_m = true;
    o.q4_k_type = WType::Q4_1FX;  // any two distinct types
    o.q6_k_type = WType::Q6_KX;
    // The blocks whose FFN down and whose QKV / V are Q6_K, by q4_k_m_type.
    auto more_bits = [&o](const ModelConfig& c, std::vector<int>& down, std::vector<int>& v_like) {
        for (int i = 0; i <= c.n_layers; ++i) {
            const std::string p =
                i < c.n_layers ? "layers." + std::to_string(i) + "." : "mtp.layers.0.";
            if (q4_k_m_type(c, o, p + "mlp.down_proj.weight") == WType::Q6_KX) down.push_back(i);
            const bool linear = i < c.n_layers && c.is_linear[size_t(i)];
            const std::string v =
                linear ? "linear_attn.in_proj_qkv.weight" : "self_attn.v_proj.weight";
            if (q4_k_m_type(c, o, p + v) == WType::Q6_KX) v_like.push_back(i);
            for (const char* rest :
                 {"mlp.gate_proj.weight", "mlp.up_proj.weight", "linear_attn.out_proj.weight",
                  "linear_attn.in_proj_z.weight", "linear_attn.in_proj_a.weight",
                  "self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.o_proj.weight"})
                EXPECT_EQ(WType::Q4_1FX, q4_k_m_type(c, o, p + rest)) << p << rest;
        }
    };
    const ModelConfig c = synthetic_config("qwen3.5-0.8b");
    std::vector<int> down, v_like;
    more_bits(c, down, v_like);
    EXPECT_EQ((std::vector<int>{0, 1, 2, 5, 8, 11, 14, 17, 20, 21, 22, 23, 24}), down);
    EXPECT_EQ((std::vector<int>{0, 1, 2, 5, 8, 11, 14, 17, 20, 21, 22, 23, 24}), v_like);
    for (int attention : {3, 7, 15, 19})
        EXPECT_TRUE(std::count(v_like.begin(), v_like.end(), attention) == 0);
    ASSERT_TRUE(c.tied_embeddings);
    EXPECT_EQ(WType::Q6_KX, q4_k_m_type(c, o, "embed_tokens.weight"));

    const ModelConfig tiny = parse_hf_config_text(
        read_text_file(test::data_dir() + "/qwen35-dense-tiny/config.json"), "tiny");
    ASSERT_EQ(8, tiny.n_layers);
    std::vector<int> tiny_down, tiny_v;
    more_bits(tiny, tiny_down, tiny_v);
    EXPECT_EQ((std::vector<int>{0, 3, 6, 7, 8}), tiny_down);
    EXPECT_EQ((std::vector<int>{0, 3, 6, 7, 8}), tiny_v);
    ASSERT_TRUE(tiny.is_linear[0] && !tiny.is_linear[3] && tiny.is_linear[6] && !tiny.is_linear[7]);

    const ModelConfig moe = synthetic_config("qwen3.5-35b-a3b");
    EXPECT_EQ(WType::F32, q4_k_m_type(moe, o, "layers.0.mlp.gate.weight"));
    EXPECT_EQ(WType::F32, q4_k_m_type(moe, o, "layers.0.mlp.shared_expert_gate.weight"));
    EXPECT_EQ(WType::Q4_1FX, q4_k_m_type(moe, o, "layers.0.mlp.experts.5.gate_proj.weight"));
    EXPECT_EQ(WType::Q6_KX, q4_k_m_type(moe, o, "layers.0.mlp.experts.5.down_proj.weight"));
    EXPECT_EQ(WType::Q6_KX, q4_k_m_type(moe, o, "layers.0.mlp.shared_expert.down_proj.weight"));
    // Without an MTP head the counts shrink by one.
    o.draft = SyntheticDraft::None;
    EXPECT_EQ(WType::Q6_KX, q4_k_m_type(c, o, "layers.23.mlp.down_proj.weight"));
    EXPECT_EQ(WType::Q4_1FX, q4_k_m_type(c, o, "layers.4.mlp.down_proj.weight"));
    EXPECT_EQ(WType::Q6_KX, q4_k_m_type(c, o, "layers.21.linear_attn.in_proj_qkv.weight"));
}

// A Q4_K_M synthetic model, in either layout a table holds such a file's tensors in, is what the
// size estimate says and speculates exactly with a perfect draft head.
TEST(SyntheticForward, Q4KMModelsSpeculateExactly) {
    for (bool rows : {true, false}) {
        SyntheticOptions o;
        o.q4_k_m = true;
        o.q4_k_type = rows ? WType::Q4_KR : WType::Q4_1FX;
        o.q6_k_type = rows ? WType::Q6_KR : WType::Q6_KX;
        o.draft = SyntheticDraft::Perfect;
        const ModelConfig c = narrow_0_8b(true);
        LoadedModel lm = load_synthetic_model(c, "narrow-0.8b", o, 2);
        const ModelWeights& w = lm.model->weights();
        EXPECT_EQ(o.q6_k_type, w.lm_head.type);
        EXPECT_EQ(o.q4_k_type, w.layers[0].in_qkv.type);
        EXPECT_EQ(o.q4_k_type, w.layers[0].in_z.type);
        // use_more_bits over 4 layers and the MTP one: layer 2's and the MTP layer's FFN down,
        // and the QKV / V of the same two.
        EXPECT_EQ(o.q6_k_type, w.layers[2].in_qkv.type);
        EXPECT_EQ(o.q6_k_type, w.mtp.layer.v_proj.type);
        EXPECT_EQ(o.q4_k_type, w.layers[0].ffn.down.type);
        EXPECT_EQ(o.q6_k_type, w.layers[2].ffn.down.type);
        EXPECT_EQ(o.q6_k_type, w.mtp.layer.ffn.down.type);
        size_t bytes = vector_bytes(w);
        for (const WeightMatrix* m : matrices(w)) bytes += m->nbytes();
        EXPECT_EQ(synthetic_size(c, o).bytes, bytes);
        expect_perfect_drafts_equal_plain(*lm.model, rows ? "rows" : "chunked");
    }
}

// At real widths the per-head GDN work, the recurrence and the matmuls split over the pool; the
// logits and hidden states of a prefill, a left-open verify and a decode step are the same bits
// with one thread as with two (each value is computed by the same code in the same order
// whichever thread runs it).
TEST(SyntheticForward, RealWidthForwardIsTheSameForAnyThreadCount) {
    const ModelConfig c = narrow_0_8b(true);
    SyntheticOptions o;
    o.matrix_type = WType::Q8_0;
    o.draft = SyntheticDraft::None;
    const int64_t V = c.vocab_size, H = c.hidden_size;
    auto run = [&](int threads) {
        LoadedModel lm = load_synthetic_model(c, "narrow-0.8b", o, threads);
        const Qwen35Model& m = *lm.model;
        SequenceState s = m.new_state(16, 4);
        const std::vector<int32_t> prompt = {11, 2024, 7, 999, 16000}, verify = {5, 6, 7, 8};
        std::vector<float> out(size_t(10 * (V + H)));
        float* logits = out.data();
        float* hidden = logits + 10 * V;
        m.forward(s, prompt.data(), 5, {hidden, logits, 5});
        m.forward(s, verify.data(), 4, {hidden + 5 * H, logits + 5 * V, 4}, true);
        m.commit(s, 2);
        const int32_t next = 42;
        m.forward(s, &next, 1, {hidden + 9 * H, logits + 9 * V, 1});
        return out;
    };
    const std::vector<float> one = run(1), two = run(2);
    EXPECT_TRUE(all_finite(one));
    EXPECT_EQ(0, std::memcmp(one.data(), two.data(), one.size() * sizeof(float)));
}

// A prefill long enough that its norms, residual adds and FFN activations run on the pool
// (Qwen35Model::over_positions: 600 x 128 values >= kMinElementwiseParallel) gives the same bits
// as the same prompt in chunks short enough to run them in the calling thread.
TEST(SyntheticForward, LongPrefillEqualsChunkedPrefillBitwise) {
    for (bool moe : {false, true}) {
        const ModelConfig c = tiny_config(moe);
        SyntheticOptions o;
        o.matrix_type = WType::Q8_0;
        LoadedModel lm = load_synthetic_model(c, "tiny", o, 2);
        const Qwen35Model& m = *lm.model;
        const int64_t T = 600, chunk = 40, V = c.vocab_size, H = c.hidden_size;
        ASSERT_GE(T * H, 64 * 1024) << "the whole prompt must take the pool's path";
        ASSERT_LT(chunk * c.ffn_size, 64 * 1024) << "a chunk must take the calling thread's path";
        std::vector<int32_t> tokens(static_cast<size_t>(T));
        for (int64_t t = 0; t < T; ++t) tokens[size_t(t)] = int32_t((t * 7919 + 13) % V);
        auto run = [&](int64_t step) {
            SequenceState s = m.new_state(T + 1, 1);
            std::vector<float> out(size_t(T * H + V));  // [T, H] hidden, then the last logits
            for (int64_t t0 = 0; t0 < T; t0 += step) {
                const int64_t n = std::min(step, T - t0);
                const bool last = t0 + n == T;
                m.forward(s, tokens.data() + t0, n,
                          {out.data() + t0 * H, last ? out.data() + T * H : nullptr, last ? 1 : 0});
            }
            return out;
        };
        const std::vector<float> whole = run(T), chunked = run(chunk);
        EXPECT_TRUE(all_finite(whole));
        EXPECT_EQ(0, std::memcmp(whole.data(), chunked.data(), whole.size() * sizeof(float)))
            << "moe " << moe;
    }
}

// The perfect variant at real width: every draft accepted, every generated token inside the
// perfect token range, with a margin that a differently quantized or vocabulary-limited draft
// head could not overturn.
TEST(SyntheticForward, PerfectDraftIsAlwaysAccepted) {
    for (bool tied : {true, false}) {
        ModelConfig c = narrow_0_8b(tied);
        SyntheticOptions o;
        o.matrix_type = WType::Q8_0;
        o.draft = SyntheticDraft::Perfect;
        LoadedModel lm = load_synthetic_model(c, "narrow-0.8b", o, 2);
        const Qwen35Model& m = *lm.model;
        const int64_t K = perfect_token_range(c), V = c.vocab_size;
        std::vector<int32_t> prompt = {11, 2024, 7, 999, 16000};
        DecodeStats plain, spec;
        // 25 tokens: 24 after the prefill's, a whole number of rounds of depth + 1 = 4.
        std::vector<int32_t> a = decode(m, prompt, 0, 25, &plain);
        std::vector<int32_t> b = decode(m, prompt, 3, 25, &spec);
        EXPECT_EQ(a, b);
        EXPECT_EQ(spec.rounds, 24 / 4);
        EXPECT_DOUBLE_EQ(spec.tokens_per_round(), 4.0);
        for (int d = 0; d < 3; ++d) EXPECT_EQ(spec.accepted[size_t(d)], spec.drafted[size_t(d)]);
        for (size_t i = 0; i < a.size(); ++i) {
            EXPECT_LT(a[i], K) << "token " << i;
            if (!tied && i > 0) {
                EXPECT_EQ(a[i], (a[i - 1] + 1) % K) << "the untied map cycles";
            }
        }
        // Margin of the trunk's choice at every generated position.
        SequenceState s = m.new_state(64, 1);
        std::vector<int32_t> seq = prompt;
        seq.insert(seq.end(), a.begin(), a.end() - 1);
        std::vector<float> logits(seq.size() * size_t(V));
        m.forward(s, seq.data(), int64_t(seq.size()), {nullptr, logits.data(), int64_t(seq.size())});
        for (size_t p = prompt.size(); p < seq.size(); ++p) {
            std::vector<float> row(logits.begin() + int64_t(p) * V, logits.begin() + int64_t(p + 1) * V);
            std::partial_sort(row.begin(), row.begin() + 2, row.end(), std::greater<float>());
            EXPECT_GT(row[0] - row[1], 0.03f * std::fabs(row[0])) << "position " << p;
        }
    }
}

}  // namespace
}  // namespace nextn
