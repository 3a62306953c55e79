// GGUF Q2_K, Q3_K, IQ4_NL, IQ4_XS and MXFP4: decoding, the exact forms the kernels hold them in,
// and whole models in these types. Golden data from ggml itself (tests/data/ggml-types/README.md):
// blocks its quantizer made (and random blocks) with its own dequantized values, and GGUFs of the
// tiny fixture models quantized by it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <vector>

#include "core/half.h"
#include "core/mapped_file.h"
#include "decode_helpers.h"
#include "formats/checkpoint.h"
#include "formats/dequant.h"
#include "formats/ggml_types.h"
#include "golden.h"
#include "kernels/kernels.h"
#include "kernels/weight.h"
#include "model/qwen35.h"
#include "quant_steps.h"
#include "test_paths.h"

namespace nextn {
namespace {

constexpr int64_t kRows = 8, kCols = 512;  // each .blocks file: [8, 512] values

std::string types_dir() { return test::data_dir() + "/ggml-types"; }

std::vector<uint8_t> read_bytes(const std::string& path) {
    const std::string text = read_text_file(path);
    return std::vector<uint8_t>(text.begin(), text.end());
}

struct Golden {
    DType type;
    std::vector<uint8_t> blocks;  // [kRows, kCols] in the file's blocks
    std::vector<float> values;    // [kRows, kCols], ggml's to_float of them
    RawTensor tensor() const {
        RawTensor t;
        t.name = dtype_name(type);
        t.file = types_dir();
        t.dtype = type;
        t.shape = {kRows, kCols};
        t.data = blocks.data();
        t.nbytes = blocks.size();
        return t;
    }
    size_t block_bytes() const {
        int64_t n = 0;
        size_t bytes = 0;
        dtype_block_layout(type, &n, &bytes);
        return bytes;
    }
};

Golden golden(DType type, const std::string& stem) {
    Golden g{type, read_bytes(types_dir() + "/" + stem + ".blocks"), {}};
    const std::vector<uint8_t> f = read_bytes(types_dir() + "/" + stem + ".f32");
    g.values.resize(f.size() / 4);
    std::memcpy(g.values.data(), f.data(), f.size());
    return g;
}

std::vector<Golden> all_goldens() {
    return {golden(DType::Q2_K, "q2_K"), golden(DType::Q3_K, "q3_K"),
            golden(DType::IQ4_NL, "iq4_nl"), golden(DType::IQ4_XS, "iq4_xs"),
            golden(DType::MXFP4, "mxfp4")};
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, 4) == 0; }

TEST(GgmlTypes, DecodeAsGgmlBitForBit) {
    for (const Golden& g : all_goldens()) {
        ASSERT_EQ(g.values.size(), size_t(kRows * kCols)) << dtype_name(g.type);
        ASSERT_EQ(g.blocks.size(),
                  size_t(kRows * kCols) /
                      (g.type == DType::IQ4_NL || g.type == DType::MXFP4 ? 32 : 256) *
                      g.block_bytes())
            << dtype_name(g.type);
        std::vector<float> y(g.values.size());
        dequantize_to_f32(g.tensor(), y.data());
        int differ = 0;
        for (size_t i = 0; i < y.size(); ++i) differ += !same_bits(y[i], g.values[i]);
        EXPECT_EQ(differ, 0) << dtype_name(g.type);
        // Rows through TensorRows, as make_weight streams them.
        std::vector<float> row(kCols);
        dequantize_rows_to_f32(g.tensor(), 5, 1, row.data());
        EXPECT_EQ(0, std::memcmp(row.data(), g.values.data() + 5 * kCols, kCols * 4))
            << dtype_name(g.type);
    }
}

TEST(GgmlTypes, Q3_KAsQ6_KKeepsEveryValue) {
    const Golden g = golden(DType::Q3_K, "q3_K");
    std::vector<uint8_t> q6(g.blocks.size() / 110 * 210);
    for (size_t b = 0; b < g.blocks.size() / 110; ++b)
        q3_k_block_as_q6_k(g.blocks.data() + b * 110, q6.data() + b * 210);
    RawTensor t = g.tensor();
    t.dtype = DType::Q6_K;
    t.data = q6.data();
    t.nbytes = q6.size();
    std::vector<float> y(g.values.size());
    dequantize_to_f32(t, y.data());
    for (size_t i = 0; i < y.size(); ++i)
        ASSERT_TRUE(same_bits(y[i], g.values[i])) << i << ": " << y[i] << " vs " << g.values[i];
}

// IQ4_NL and MXFP4 blocks as Q8_0 blocks: exactly ggml's values, but for MXFP4 blocks whose scale
// is below the smallest f16 (rounded to multiples of 2^-24), and none for a tensor with a scale
// above 2^15.
TEST(GgmlTypes, Q8_0FormsKeepEveryValue) {
    for (const Golden& g : {golden(DType::IQ4_NL, "iq4_nl"), golden(DType::MXFP4, "mxfp4")}) {
        const size_t bytes = g.block_bytes();
        int rounded = 0;
        for (size_t b = 0; b < g.blocks.size() / bytes; ++b) {
            const uint8_t* block = g.blocks.data() + b * bytes;
            const bool mx = g.type == DType::MXFP4;
            if (mx && block[0] > kMxfp4LargestQ8_0Exponent) continue;
            int8_t codes[32];
            uint16_t d;
            q8_0_block_form(g.type, block, codes, &d);
            const bool exact = !mx || block[0] >= kMxfp4SmallestQ8_0Exponent;
            rounded += !exact;
            for (int j = 0; j < 32; ++j) {
                const float want = g.values[b * 32 + size_t(j)],
                            got = float(codes[j]) * f16_to_f32(d);
                if (exact) {
                    ASSERT_TRUE(same_bits(got, want))
                        << dtype_name(g.type) << " block " << b << " value " << j;
                } else {
                    ASSERT_LE(std::fabs(got - want), std::ldexp(1.0f, -25))
                        << "block " << b << " value " << j;
                }
            }
        }
        RawTensor t = g.tensor();
        if (g.type == DType::MXFP4) {
            EXPECT_EQ(rounded, 1) << "the file's one block with a scale below 2^-24";
            EXPECT_FALSE(has_q8_0_block_form(t)) << "its one block with scale 2^126";
            t.shape = {kRows - 2, kCols};  // the rows before the two with the extreme scales
            t.nbytes = size_t((kRows - 2) * kCols / 32) * bytes;
        }
        EXPECT_TRUE(has_q8_0_block_form(t)) << dtype_name(g.type);
        // make_weight holds such a tensor as Q8_0 (the f32-activation kernels' type) with those
        // values.
        const WeightMatrix w = make_weight(t, t.shape[0], kCols, WType::Native, {});
        EXPECT_EQ(w.type, WType::Q8_0) << dtype_name(g.type);
        std::vector<float> row(kCols);
        for (int64_t r = 0; r < t.shape[0]; ++r) {
            weight_row_f32(w, r, row.data());
            EXPECT_EQ(0, std::memcmp(row.data(), g.values.data() + r * kCols, kCols * 4))
                << dtype_name(g.type) << " row " << r;
        }
    }
}

// The committed GGUFs: which type each matrix is held in, and its values.
int count(const LoadedModel& lm, WType type) {
    int n = 0;
    for_each_matrix(lm.model->weights(), [&](const WeightMatrix& w) { n += w.type == type; });
    return n;
}

LoadedModel open(const std::string& path, bool int8) {
    ModelOptions o;
    o.threads = 2;
    o.int8_activations = int8;
    return load_model(path, o);
}

// Every row of w against the file's decoded values, bitwise.
void expect_holds_values(const WeightMatrix& w, const RawTensor& t) {
    std::vector<float> want(size_t(w.cols)), got(size_t(w.cols));
    for (int64_t r = 0; r < w.rows; ++r) {
        dequantize_rows_to_f32(t, r, 1, want.data());
        weight_row_f32(w, r, got.data());
        ASSERT_EQ(0, std::memcmp(want.data(), got.data(), size_t(w.cols) * 4))
            << t.name << " row " << r;
    }
}

TEST(GgmlTypes, DenseMixedGgufHoldsEveryTypeForTheKernels) {
    const std::string path = types_dir() + "/dense-mixed.gguf";
    LoadedModel f32 = open(path, false), int8 = open(path, true);
    std::map<DType, int> in_file;
    for (const auto& [name, t] : f32.checkpoint.tensors) in_file[t.dtype]++;
    EXPECT_EQ(in_file, (std::map<DType, int>{{DType::F32, 52},
                                             {DType::Q2_K, 5},
                                             {DType::Q3_K, 4},
                                             {DType::IQ4_NL, 30},
                                             {DType::IQ4_XS, 4},
                                             {DType::MXFP4, 29}}));
    // f32 activations: IQ4_NL and MXFP4 as Q8_0 (the same values), the rest widened.
    EXPECT_EQ(count(f32, WType::Q8_0), 30 + 29);
    EXPECT_EQ(count(f32, WType::F32), 5 + 4 + 4);
    if (kernels().int8_dot_fast) {
        const bool q6_rows = kernels().row_groups.q6_k;
        EXPECT_EQ(count(int8, WType::IQ4_NLR), 30);
        EXPECT_EQ(count(int8, WType::MXFP4R), 29);
        EXPECT_EQ(count(int8, WType::Q2_KR), 5);
        EXPECT_EQ(count(int8, q6_rows ? WType::Q3_KR : WType::Q6_KX), 4)
            << "Q3_K (chunked K-quants: as Q6_K)";
        EXPECT_EQ(count(int8, WType::IQ4_XSR), 4);
        EXPECT_EQ(count(int8, WType::F32), 0);
    }
    // Every FFN matrix (the file's 256-column ffn_down rows are Q2_K, Q3_K and IQ4_XS in turn, the
    // 128-column gate and up IQ4_NL and MXFP4) holds the file's values, both ways.
    std::map<DType, int> checked;
    for (const LoadedModel* lm : {&f32, &int8}) {
        const ModelWeights& w = lm->model->weights();
        for (size_t i = 0; i < w.layers.size(); ++i) {
            const std::string p = "layers." + std::to_string(i) + ".mlp.";
            const FfnWeights& f = w.layers[i].ffn;
            for (const auto& [name, m] :
                 {std::pair{"gate_proj", &f.gate}, {"up_proj", &f.up}, {"down_proj", &f.down}}) {
                const RawTensor& t = lm->checkpoint.require(p + name + ".weight");
                expect_holds_values(*m, t);
                checked[t.dtype]++;
            }
        }
    }
    for (DType t : {DType::Q2_K, DType::Q3_K, DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4})
        EXPECT_GT(checked[t], 0) << dtype_name(t) << " among the FFN matrices";

    // The same weights with int8 activations mostly choose the same next tokens (the bound of the
    // 8-bit forms in formats_cross_test), and greedy MTP decoding is plain decoding.
    test::GoldenModel g = test::golden_model("qwen35-dense-tiny");
    const std::vector<int32_t> prompt = test::json_ids(g.index["prompts"]["p7"]["tokens"]);
    const std::vector<int32_t> cont = test::greedy_decode(*f32.model, prompt, 0, 64);
    EXPECT_GE(test::teacher_forced_agreement(*f32.model, *int8.model, prompt, cont), 0.40);
    for (const LoadedModel* lm : {&f32, &int8}) {
        const std::vector<int32_t> plain = test::greedy_decode(*lm->model, prompt, 0, 32);
        EXPECT_EQ(plain, test::greedy_decode(*lm->model, prompt, 3, 32));
    }
}

// MXFP4 experts (llama.cpp's MXFP4_MOE mix): MXFP4R for the int8 kernels, else Q8_0.
TEST(GgmlTypes, MoeMxfp4ExpertsKeepTheirValues) {
    const std::string path = types_dir() + "/moe-mxfp4.gguf";
    LoadedModel int8 = open(path, true);
    int experts = 0;
    const WType held = kernels().int8_dot_fast ? WType::MXFP4R : WType::Q8_0;
    const ModelWeights& w = int8.model->weights();
    for (size_t i = 0; i < w.layers.size(); ++i)
        for (size_t e = 0; e < w.layers[i].ffn.experts.size(); ++e) {
            const std::string p =
                "layers." + std::to_string(i) + ".mlp.experts." + std::to_string(e) + ".";
            const ExpertWeights& x = w.layers[i].ffn.experts[e];
            for (const auto& [name, m] :
                 {std::pair{"gate_proj", &x.gate}, {"up_proj", &x.up}, {"down_proj", &x.down}}) {
                const RawTensor& t = int8.checkpoint.require(p + name + ".weight");
                ASSERT_EQ(t.dtype, DType::MXFP4) << t.name;
                EXPECT_EQ(m->type, held) << t.name;
                expect_holds_values(*m, t);
                ++experts;
            }
        }
    EXPECT_GT(experts, 0);
    test::GoldenModel g = test::golden_model("qwen35-moe-tiny");
    const std::vector<int32_t> prompt = test::json_ids(g.index["prompts"]["p7"]["tokens"]);
    const std::vector<int32_t> plain = test::greedy_decode(*int8.model, prompt, 0, 32);
    EXPECT_EQ(plain, test::greedy_decode(*int8.model, prompt, 3, 32));
}

// Against the f32 weights the files were quantized from (the full fixture set): every value within
// its format's step (quant_steps.h), so the types' layouts are read as ggml wrote them.
TEST(GgmlTypesFixtures, ValuesWithinTheirStepsOfTheF32Weights) {
    NEXTN_REQUIRE_FIXTURES(fx);
    test::expect_within_quant_steps(load_checkpoint(types_dir() + "/dense-mixed.gguf"),
                                    load_checkpoint(fx + "/qwen35-dense-tiny/model-f32.gguf"));
    test::expect_within_quant_steps(load_checkpoint(types_dir() + "/moe-mxfp4.gguf"),
                                    load_checkpoint(fx + "/qwen35-moe-tiny/model-f32.gguf"));
}

}  // namespace
}  // namespace nextn
