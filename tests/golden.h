#pragma once
// Reading the golden outputs of ../shared/fixtures/*/golden (raw little-endian f32 files plus an
// index.json that gives prompts, shapes and greedy tokens).
#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/mapped_file.h"
#include "test_paths.h"

namespace nextn::test {

struct GoldenModel {
    std::string model_dir;   // HF checkpoint directory
    std::string golden_dir;  // its golden/ directory
    nlohmann::json index;
};

// Full fixture set when present, else the committed subset in tests/data.
inline GoldenModel golden_model(const std::string& name) {
    GoldenModel g;
    std::string fixtures = fixtures_dir();
    g.model_dir = fixtures.empty() ? data_dir() + "/" + name : fixtures + "/" + name;
    g.golden_dir = g.model_dir + "/golden";
    g.index = nlohmann::json::parse(read_text_file(g.golden_dir + "/index.json"));
    return g;
}

// A gtest parameter name from fixture names ("qwen35-dense-tiny" -> "qwen35_dense_tiny").
inline std::string test_name(std::string s) {
    std::replace(s.begin(), s.end(), '-', '_');
    return s;
}

inline bool golden_has_prompt(const GoldenModel& g, const std::string& prompt) {
    return is_directory(g.golden_dir + "/" + prompt);
}

inline std::vector<float> read_f32(const std::string& path) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) fail("cannot open ", path);
    std::vector<float> v(size_t(in.tellg()) / 4);
    in.seekg(0);
    in.read(reinterpret_cast<char*>(v.data()), std::streamsize(v.size() * 4));
    return v;
}

inline std::vector<float> golden_tensor(const GoldenModel& g, const std::string& prompt,
                                        const std::string& key) {
    return read_f32(g.golden_dir + "/" + g.index["prompts"][prompt]["files"][key]["file"].get<std::string>());
}

inline std::vector<int32_t> json_ids(const nlohmann::json& j) {
    std::vector<int32_t> out;
    for (const auto& v : j) out.push_back(v.get<int32_t>());
    return out;
}

inline float max_abs_diff(const float* a, const float* b, int64_t n) {
    float m = 0.0f;
    for (int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(a[i] - b[i]));
    return m;
}

inline int argmax(const float* x, int64_t n) {
    int best = 0;
    for (int64_t i = 1; i < n; ++i)
        if (x[i] > x[best]) best = int(i);
    return best;
}

// Each position's largest logit distance from the golden one, and two summaries: the largest over
// positions, and the median, which the few positions an expert flip moves by whole units cannot
// raise as they raise the largest.
struct PositionDistances {
    std::vector<float> each;  // [positions]
    void add(const float* got, const float* want, int64_t vocab) {
        each.push_back(max_abs_diff(got, want, vocab));
    }
    float largest() const { return *std::max_element(each.begin(), each.end()); }
    float median() const {
        std::vector<float> sorted = each;
        std::nth_element(sorted.begin(), sorted.begin() + long(sorted.size() / 2), sorted.end());
        return sorted[sorted.size() / 2];
    }
};

// The embedded model (models/nextn-tiny: a trained MTP head, whose drafts are often accepted)
// and the reference outputs of the torch implementation it was trained with.
inline std::string tiny_model_dir() { return source_dir() + "/models/nextn-tiny"; }
inline std::string tiny_refs_dir() { return data_dir() + "/nextn-tiny-ref"; }
// Prompt `name` (p1, p9, p48, p200) of that reference, as token ids.
inline std::vector<int32_t> tiny_prompt(const std::string& name) {
    const nlohmann::json index =
        nlohmann::json::parse(read_text_file(tiny_refs_dir() + "/index.json"));
    return json_ids(index["prompts"][name]["tokens"]);
}

}  // namespace nextn::test
