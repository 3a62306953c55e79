// Every checkpoint format runs the model to the independent goldens of ../shared/fixtures
// (llama.cpp, f32; README §5, §10-12): GGUF f32 and quantized (dequantized-f32 reference), MLX
// 4/6/8-bit with inline or sidecar MTP heads, and separate MTP drafters (qwen3_5_mtp directory,
// MTP-only GGUF). Tolerances are the fixture README's suggestions for an f32 engine.
#include <gtest/gtest.h>

#include <cmath>

#include "golden.h"
#include "model/qwen35.h"

namespace nextn {
namespace {

constexpr float kLogitTol = 5e-4f;
constexpr float kHiddenTol = 2e-4f;

struct PromptRun {
    std::vector<float> logits, hidden, mtp_logits;  // [T, V], [T, H], [T, V]
    std::vector<int32_t> greedy;
};

// Prompt forward, the MTP pass with the vLLM pairing, and `n_greedy` greedy tokens.
PromptRun run_prompt(const Qwen35Model& m, const std::vector<int32_t>& tokens, int n_greedy) {
    const int64_t T = int64_t(tokens.size()), V = m.config().vocab_size, H = m.config().hidden_size;
    PromptRun r;
    r.logits.resize(size_t(T * V));
    r.hidden.resize(size_t(T * H));
    SequenceState s = m.new_state(T + n_greedy + 4, 1);
    m.forward(s, tokens.data(), T, {r.hidden.data(), r.logits.data(), T});
    int32_t next = test::argmax(r.logits.data() + (T - 1) * V, V);
    if (m.has_mtp()) {
        std::vector<int32_t> pairs(tokens.begin() + 1, tokens.end());
        pairs.push_back(next);
        r.mtp_logits.resize(size_t(T * V));
        m.mtp_forward(s, r.hidden.data(), pairs.data(), T, 0, {nullptr, r.mtp_logits.data(), T});
    }
    std::vector<float> l(static_cast<size_t>(V));
    for (int i = 0; i < n_greedy; ++i) {
        r.greedy.push_back(next);
        m.forward(s, &next, 1, {nullptr, l.data(), 1});
        next = test::argmax(l.data(), V);
    }
    return r;
}

LoadedModel open(const std::string& path, const std::string& draft = "") {
    ModelOptions o;
    o.threads = 2;
    // The quantized goldens are f32 arithmetic on dequantized weights: keep the default f32
    // activations (int8 ones, kernels_int8_test bounds their rounding, add their own error).
    o.int8_activations = false;
    o.draft_model = draft;
    return load_model(path, o);
}

// Folders with golden/index.json in the §5 / §10.5 layout.
void check_full_goldens(const std::string& model_path, const std::string& golden_dir,
                        const std::string& draft = "") {
    nlohmann::json index = nlohmann::json::parse(read_text_file(golden_dir + "/index.json"));
    LoadedModel lm = open(model_path, draft);
    const Qwen35Model& m = *lm.model;
    const int64_t V = m.config().vocab_size, H = m.config().hidden_size;
    for (const char* p : {"p7", "p40"}) {
        SCOPED_TRACE(std::string(model_path) + " " + p);
        const auto& pr = index["prompts"][p];
        std::vector<int32_t> tokens = test::json_ids(pr["tokens"]);
        const int64_t T = int64_t(tokens.size());
        int reliable = pr.contains("greedy_reliable_prefix") ? pr["greedy_reliable_prefix"].get<int>()
                                                               : 64;
        PromptRun r = run_prompt(m, tokens, reliable);
        const auto& files = pr["files"];
        auto file = [&](const char* key) {
            return test::read_f32(golden_dir + "/" + files[key]["file"].get<std::string>());
        };
        if (files.contains("logits")) {
            EXPECT_LT(test::max_abs_diff(r.logits.data(), file("logits").data(), T * V), kLogitTol);
            EXPECT_LT(test::max_abs_diff(r.hidden.data(), file("hidden").data(), T * H), kHiddenTol);
        }
        if (files.contains("mtp_logits")) {
            ASSERT_TRUE(m.has_mtp());
            EXPECT_LT(test::max_abs_diff(r.mtp_logits.data(), file("mtp_logits").data(), T * V), kLogitTol);
            EXPECT_EQ(test::argmax(r.mtp_logits.data() + (T - 1) * V, V),
                      pr["mtp"]["draft_tokens"][0].get<int>());
        }
        if (pr.contains("greedy_tokens")) {
            std::vector<int32_t> want = test::json_ids(pr["greedy_tokens"]);
            want.resize(size_t(reliable));
            EXPECT_EQ(want, r.greedy);
        }
    }
}

TEST(FormatsGolden, GgufF32MatchesGoldens) {
    NEXTN_REQUIRE_FIXTURES(fx);
    for (const char* model : {"qwen35-dense-tiny", "qwen35-moe-tiny"})
        check_full_goldens(fx + "/" + model + "/model-f32.gguf", fx + "/" + model + "/golden");
}

TEST(FormatsGolden, MlxMatchesGoldens) {
    NEXTN_REQUIRE_FIXTURES(fx);
    for (const char* folder : {"qwen35-dense-tiny/mlx-4bit", "qwen35-dense-tiny/mlx-6bit",
                               "qwen35-dense-tiny/mlx-8bit", "qwen35-moe-tiny/mlx-4bit",
                               "qwen35-moe-tiny/mlx-8bit"})
        check_full_goldens(fx + "/" + folder, fx + "/" + folder + "/golden");
}

TEST(FormatsGolden, MlxDrafterAttachedToBf16Target) {
    NEXTN_REQUIRE_FIXTURES(fx);
    const std::string d = fx + "/qwen35-dense-tiny";
    check_full_goldens(d, d + "/mlx-mtp-drafter/golden", d + "/mlx-mtp-drafter");
}

TEST(FormatsGolden, MtpOnlyGgufDrafterAttachedToTarget) {
    NEXTN_REQUIRE_FIXTURES(fx);
    const std::string d = fx + "/qwen35-dense-tiny";
    check_full_goldens(d + "/model-f32.gguf", d + "/golden", d + "/mtp-model-bf16.gguf");
}

TEST(FormatsGolden, QuantizedGgufMatchesDequantizedReference) {
    NEXTN_REQUIRE_FIXTURES(fx);
    for (const char* model : {"qwen35-dense-tiny", "qwen35-moe-tiny"}) {
        const std::string dir = fx + "/" + model;
        nlohmann::json q = nlohmann::json::parse(read_text_file(dir + "/golden-quant/index.json"));
        for (const char* type : {"Q8_0", "Q4_0", "Q4_K_M"}) {
            SCOPED_TRACE(std::string(model) + " " + type);
            LoadedModel lm = open(dir + "/model-" + type + ".gguf");
            const Qwen35Model& m = *lm.model;
            const int64_t V = m.config().vocab_size;
            const auto& t = q["types"][type];
            std::vector<float> want = test::read_f32(dir + "/golden-quant/" + type + "/dequant_last_logits.f32");
            std::vector<float> want_mtp = test::read_f32(dir + "/golden-quant/" + type + "/dequant_last_mtp_logits.f32");
            int row = 0;
            for (const auto& pname : q["prompt_order"]) {
                const std::string p = pname.get<std::string>();
                const auto& ref = t["prompts"][p]["dequantized_f32"];
                std::vector<int32_t> tokens = test::json_ids(q["prompt_tokens"][p]);
                const int64_t T = int64_t(tokens.size());
                const int reliable = ref["greedy_reliable_prefix"].get<int>();
                PromptRun r = run_prompt(m, tokens, reliable);
                const auto& observed = t["prompts"][p]["observed"];
                const bool trusted = !observed.contains("dequant_last_logits_reliable") ||
                                     observed["dequant_last_logits_reliable"].get<bool>();
                if (trusted && reliable > 0) {
                    EXPECT_LT(test::max_abs_diff(r.logits.data() + (T - 1) * V, want.data() + row * V, V),
                              kLogitTol) << p;
                    EXPECT_LT(test::max_abs_diff(r.mtp_logits.data() + (T - 1) * V,
                                           want_mtp.data() + row * V, V), kLogitTol) << p;
                }
                std::vector<int32_t> greedy = test::json_ids(ref["greedy_tokens"]);
                greedy.resize(size_t(reliable));
                EXPECT_EQ(greedy, r.greedy) << p;
                ++row;
            }
        }
    }
}

}  // namespace
}  // namespace nextn
