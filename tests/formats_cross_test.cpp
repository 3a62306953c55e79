// One model, every file format: the HF safetensors checkpoint, llama.cpp's f32 GGUF of it, its
// Q8_0 / Q4_0 / Q4_K_M GGUFs and mlx_lm's 8-bit and 4-bit MLX forms (../shared/fixtures), with
// f32 activations and through the int8 kernels. What must hold, and why:
//  - f32 forms hold the same numbers, so their greedy continuations are identical;
//  - quantized forms round every weight. These fixture models have random weights and nearly
//    flat next-token distributions, so rounding moves logits by 2-10 (max |diff| over 64
//    positions; the goldens in formats_golden_test pin each quantized form to its own
//    dequantized reference within 5e-4) and free-running greedy output leaves f32's within a
//    few tokens. Stated tolerance, teacher-forced over prompt + the f32 continuation: the
//    8-bit forms choose f32's next token at >= 40% of 64 positions (measured 44-92%; a wrong
//    layout gives ~1/V), 4-bit forms are checked only for MTP == plain;
//  - whatever the format and wherever its MTP head comes from (inline, GGUF nextn block, MLX
//    sidecar, separate drafter), greedy MTP decoding equals plain decoding token for token;
//  - so do rounds whose drafts are accepted, with the f32 and the f16 KV cache: these heads'
//    drafts are almost never accepted on random weights, so a scripted drafter proposes the
//    plain continuation (every third draft corrupted) and the verify keeps several columns.
#include <gtest/gtest.h>

#include "decode_helpers.h"
#include "golden.h"
#include "kernels/kernels.h"
#include "model/qwen35.h"
#include "spec/mtp_drafter.h"
#include "spec/speculative_decoder.h"

namespace nextn {
namespace {

constexpr int kTokens = 64;
constexpr double kMinAgreement8Bit = 0.40;

std::vector<int32_t> greedy(const Qwen35Model& m, const std::vector<int32_t>& prompt, int depth) {
    return test::greedy_decode(m, prompt, depth, kTokens);
}

LoadedModel open(const std::string& path, const std::string& draft = "", bool int8 = false) {
    ModelOptions o;
    o.threads = 2;
    o.draft_model = draft;
    o.int8_activations = int8;
    return load_model(path, o);
}

// Greedy decoding with mostly right scripted drafts equals plain decoding, with each KV cache
// type, and accepts drafts (else only the verify's first column would have been compared).
void expect_accepted_drafts_equal_plain(Qwen35Model& model, const std::vector<int32_t>& prompt) {
    for (KvCacheType kv : {KvCacheType::F32, KvCacheType::F16, KvCacheType::Q8_0}) {
        model.set_kv_cache_type(kv);
        const std::vector<int32_t> plain = greedy(model, prompt, 0);
        for (int depth : {2, 5}) {
            test::ScriptedDrafter drafter(prompt, plain, 3, model.config().vocab_size);
            DecodeStats stats;
            EXPECT_EQ(plain,
                      test::decode_with_drafter(model, prompt, drafter, depth, kTokens, &stats))
                << kv_cache_type_name(kv) << " KV, scripted depth " << depth;
            EXPECT_GT(stats.accepted[0], stats.rounds / 2)
                << kv_cache_type_name(kv) << " KV, depth " << depth;
        }
    }
    model.set_kv_cache_type(KvCacheType::F32);
}

struct Form {
    std::string name, path, draft;
    bool quantized;
    int bits = 32;
    // Q8_0 / Q4_0 / Q4_1 through the int8-dot kernels (where the CPU has them; the library's
    // default, but the comparisons here start from f32 activations).
    bool int8_activations = false;
};

void check_model(const std::string& fx, const std::string& model, std::vector<Form> forms) {
    test::GoldenModel g = test::golden_model(model);
    LoadedModel hf = open(g.model_dir);
    for (const char* p : {"p7", "p128"}) {
        std::vector<int32_t> prompt = test::json_ids(g.index["prompts"][p]["tokens"]);
        std::vector<int32_t> want = greedy(*hf.model, prompt, 0);
        for (const Form& f : forms) {
            SCOPED_TRACE(model + " " + f.name + " " + p);
            LoadedModel lm = open(fx + "/" + model + "/" + f.path,
                                  f.draft.empty() ? "" : fx + "/" + model + "/" + f.draft,
                                  f.int8_activations);
            ASSERT_TRUE(lm.model->has_mtp());
            std::vector<int32_t> plain = greedy(*lm.model, prompt, 0);
            if (!f.quantized) {
                EXPECT_EQ(want, plain);
            } else {
                const double agree =
                    test::teacher_forced_agreement(*hf.model, *lm.model, prompt, want);
                if (f.bits == 8) {
                    EXPECT_GE(agree, kMinAgreement8Bit);
                }
            }
            for (int depth : {1, 3}) EXPECT_EQ(plain, greedy(*lm.model, prompt, depth)) << "depth " << depth;
            expect_accepted_drafts_equal_plain(*lm.model, prompt);
        }
    }
}

TEST(FormatsCross, DenseSameGreedyInEveryFormatAndMtpEqualsPlain) {
    NEXTN_REQUIRE_FIXTURES(fx);
    check_model(
        fx, "qwen35-dense-tiny",
        {{"safetensors", "", "", false},
         {"gguf-f32", "model-f32.gguf", "", false},
         {"gguf-f32+mtp-gguf", "model-f32.gguf", "mtp-model-bf16.gguf", false},
         {"gguf-q8_0", "model-Q8_0.gguf", "", true, 8},
         {"gguf-q8_0-int8-activations", "model-Q8_0.gguf", "", true, 8, true},
         {"gguf-q4_0", "model-Q4_0.gguf", "", true, 4},
         {"gguf-q4_0-int8-activations", "model-Q4_0.gguf", "", true, 4, true},
         {"gguf-q4_k_m", "model-Q4_K_M.gguf", "", true, 4},
         {"gguf-q4_k_m-int8-activations", "model-Q4_K_M.gguf", "", true, 4, true},
         {"mlx-8bit-inline", "mlx-8bit", "", true, 8},
         {"mlx-8bit-inline-int8-activations", "mlx-8bit", "", true, 8, true},
         {"mlx-6bit+mlx-drafter-int8-activations", "mlx-6bit", "mlx-mtp-drafter", true, 6, true},
         {"mlx-4bit-sidecar", "mlx-4bit", "", true, 4},
         {"mlx-4bit-sidecar-int8-activations", "mlx-4bit", "", true, 4, true},
         {"hf+mlx-drafter", "", "mlx-mtp-drafter", false}});
}

TEST(FormatsCross, MoeSameGreedyInEveryFormatAndMtpEqualsPlain) {
    NEXTN_REQUIRE_FIXTURES(fx);
    check_model(fx, "qwen35-moe-tiny",
                {{"gguf-f32", "model-f32.gguf", "", false},
                 {"gguf-q8_0", "model-Q8_0.gguf", "", true, 8},
                 {"gguf-q8_0-int8-activations", "model-Q8_0.gguf", "", true, 8, true},
                 {"mlx-8bit-inline", "mlx-8bit", "", true, 8},
                 {"mlx-4bit-sidecar", "mlx-4bit", "", true, 4},
                 {"mlx-4bit-sidecar-int8-activations", "mlx-4bit", "", true, 4, true}});
}

// Q4_K tensors stay 4-bit for the int8 kernels (Q4_KR in 16-row groups where the table reads
// them, else Q4_1FX; the same values either way) and Q6_K tensors keep their 6-bit codes (Q6_KR,
// else Q6_KX) instead of widening to f32; with f32 activations they are widened,
// as no f32-activation kernel reads them. Q5_0 tensors are Q8_0 either way.
TEST(FormatsCross, AffineTensorsKeepTheirCodesForTheInt8Kernels) {
    NEXTN_REQUIRE_FIXTURES(fx);
    const std::string path = fx + "/qwen35-dense-tiny/model-Q4_K_M.gguf";
    auto count = [](const LoadedModel& lm, WType type) {
        int n = 0;
        for_each_matrix(lm.model->weights(), [&](const WeightMatrix& w) { n += w.type == type; });
        return n;
    };
    LoadedModel f32_acts = open(path, "", false);
    EXPECT_EQ(0, count(f32_acts, WType::Q4_1FX));
    EXPECT_EQ(0, count(f32_acts, WType::Q4_KR));
    EXPECT_EQ(0, count(f32_acts, WType::Q6_KX));
    EXPECT_EQ(0, count(f32_acts, WType::Q6_KR));
    EXPECT_EQ(8 + 5, count(f32_acts, WType::F32)) << "the 8 Q4_K and 5 Q6_K matrices, widened";
    EXPECT_EQ(53 + 6, count(f32_acts, WType::Q8_0)) << "the file holds 53 Q5_0 and 6 Q8_0 matrices";
    LoadedModel int8_acts = open(path, "", true);
    // MLX 6-bit (no MTP head in this fixture): 8-bit codes with f32 scales, the same logits.
    const std::string mlx6 = fx + "/qwen35-dense-tiny/mlx-6bit";
    LoadedModel mlx6_f32 = open(mlx6, "", false), mlx6_int8 = open(mlx6, "", true);
    EXPECT_EQ(0, count(mlx6_f32, WType::Q8_1FX));
    if (kernels().int8_dot_fast) {
        const bool rows = kernels().row_groups.q4_k;
        EXPECT_EQ(rows ? 8 : 0, count(int8_acts, WType::Q4_KR)) << "the file holds 8 Q4_K matrices";
        EXPECT_EQ(rows ? 0 : 8, count(int8_acts, WType::Q4_1FX)) << "the file holds 8 Q4_K matrices";
        const bool q6_rows = kernels().row_groups.q6_k;
        EXPECT_EQ(q6_rows ? 5 : 0, count(int8_acts, WType::Q6_KR)) << "the file holds 5 Q6_K matrices";
        EXPECT_EQ(q6_rows ? 0 : 5, count(int8_acts, WType::Q6_KX)) << "the file holds 5 Q6_K matrices";
        EXPECT_EQ(0, count(int8_acts, WType::F32));
        EXPECT_GT(count(mlx6_int8, WType::Q8_1FX), 0);
        // Same values, int8 activations: the next-token choices mostly agree.
        test::GoldenModel g = test::golden_model("qwen35-dense-tiny");
        std::vector<int32_t> prompt = test::json_ids(g.index["prompts"]["p128"]["tokens"]);
        std::vector<int32_t> cont = greedy(*mlx6_f32.model, prompt, 0);
        EXPECT_GE(test::teacher_forced_agreement(*mlx6_f32.model, *mlx6_int8.model, prompt, cont),
                  kMinAgreement8Bit);
    } else {
        EXPECT_EQ(0, count(int8_acts, WType::Q4_1FX));
        EXPECT_EQ(0, count(int8_acts, WType::Q4_KR));
        EXPECT_EQ(0, count(int8_acts, WType::Q6_KR));
    }
}

}  // namespace
}  // namespace nextn
