// Issue 5: "no allocation in the decode loop". Once a sequence has run one round at each width,
// the trunk forward, commit (with and without rollback), the MTP head and the whole generate()
// loop must not touch the heap: a fresh buffer costs page faults on first touch, and on the
// benchmark VM a round that grew its buffers ran up to 2x slow.
//
// The test binary replaces the global operator new / delete with counting versions (the only way
// to see allocations made anywhere: kernels, thread-pool workers, the sampler). The counter is
// process-wide state by necessity; it only counts between arm() and disarm().
#include <gtest/gtest.h>

// The replacements below pair operator new with malloc and delete with free, which GCC flags
// once it inlines them into a new/delete pair; the pairing is right.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

#include <atomic>
#include <cstdlib>
#include <new>

#include "golden.h"
#include "model/qwen35.h"
#include "spec/mtp_drafter.h"
#include "spec/speculative_decoder.h"

namespace {

std::atomic<bool> g_counting{false};
std::atomic<int64_t> g_allocations{0};

void* counted_alloc(std::size_t n, std::size_t align) {
    if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
    if (n == 0) n = 1;
    void* p = align > alignof(std::max_align_t) ? std::aligned_alloc(align, (n + align - 1) / align * align)
                                                : std::malloc(n);
    return p;
}

}  // namespace

void* operator new(std::size_t n) {
    if (void* p = counted_alloc(n, 0)) return p;
    throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void* operator new(std::size_t n, std::align_val_t a) {
    if (void* p = counted_alloc(n, std::size_t(a))) return p;
    throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t a) { return operator new(n, a); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n, 0); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n, 0); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace nextn {
namespace {

// Counts the heap allocations made while it is alive.
class AllocationCount {
public:
    AllocationCount() {
        g_allocations.store(0);
        g_counting.store(true);
    }
    ~AllocationCount() { g_counting.store(false); }
    int64_t stop() {
        g_counting.store(false);
        return g_allocations.load();
    }
};

TEST(AllocationCounter, SeesAllocations) {
    // The counter itself: a vector's buffer is one allocation (else a zero below proves nothing).
    AllocationCount count;
    std::vector<float>* v = new std::vector<float>(1000);
    const int64_t n = count.stop();
    delete v;
    EXPECT_EQ(n, 2);
}

struct Case {
    const char* name;
    std::string dir;
    WType type;
    bool bf16_activations = false;  // the bf16-dot kernels (where the CPU has them)
};
// What ctest's listing shows for a case (gtest would print its bytes).
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> cases() {
    const std::string tiny = test::tiny_model_dir();
    const std::string dense = test::data_dir() + "/qwen35-dense-tiny";
    const std::string moe = test::data_dir() + "/qwen35-moe-tiny";
    return {{"tiny_native", tiny, WType::Native},  {"tiny_q4", tiny, WType::Q4_0},
            {"dense_f32", dense, WType::F32},      {"dense_q8_0", dense, WType::Q8_0},
            {"moe_f32", moe, WType::F32},          {"moe_q8_0", moe, WType::Q8_0},
            {"dense_bf16_activations", dense, WType::Native, true},
            {"moe_bf16_activations", moe, WType::Native, true}};
}

LoadedModel open(const Case& c) {
    ModelOptions o;
    o.threads = 2;
    o.matrix_type = c.type;
    o.bf16_activations = c.bf16_activations;
    return load_model(c.dir, o);
}

class NoAllocation : public ::testing::TestWithParam<Case> {};

// 20 tokens: longer than the widest forward the decode loop runs (a verify of 5, an MTP flush
// of at most MtpDrafter::kMaxPending = 16 rows), so the prefill has sized the scratch for all
// of them. (A shorter prompt grows it once, the first time the loop runs a wider forward.)
std::vector<int32_t> prompt_for(const Qwen35Model& m) {
    std::vector<int32_t> p;
    for (int i = 0; i < 20; ++i) p.push_back(int32_t((37 * i + 11) % m.config().vocab_size));
    return p;
}

TEST_P(NoAllocation, TrunkForwardAndCommit) {
    LoadedModel lm = open(GetParam());
    const Qwen35Model& m = *lm.model;
    const int64_t V = m.config().vocab_size, H = m.config().hidden_size;
    constexpr int kMaxWidth = 5;
    SequenceState s = m.new_state(256, kMaxWidth);
    std::vector<int32_t> prompt = prompt_for(m);
    const int64_t P = int64_t(prompt.size());
    std::vector<float> logits(size_t(kMaxWidth * V)), hidden(size_t(std::max<int64_t>(P, kMaxWidth) * H));
    m.forward(s, prompt.data(), P, {hidden.data(), logits.data(), 1});
    // One verify round: width w, keep n of it (0: drop it all; w: keep it all; else roll back).
    auto round = [&](int w, int keep) {
        int32_t tokens[kMaxWidth];
        for (int i = 0; i < w; ++i) tokens[i] = int32_t((s.n_past * 7 + i) % V);
        m.forward(s, tokens, w, {hidden.data(), logits.data(), w}, /*keep_open=*/true);
        m.commit(s, keep);
    };
    // Every (width, kept) pair twice: the first pass may size the scratch, the second must not.
    int64_t allocations = -1;
    for (int pass = 0; pass < 2; ++pass) {
        std::optional<AllocationCount> count;
        int32_t one[1];
        if (pass == 1) count.emplace();
        for (int w = 1; w <= kMaxWidth; ++w)
            for (int keep = 0; keep <= w; ++keep) round(w, keep);
        for (int i = 0; i < 8; ++i) {  // plain committed decode steps
            one[0] = int32_t((s.n_past * 5) % V);
            m.forward(s, one, 1, {nullptr, logits.data(), 1});
        }
        if (pass == 1) allocations = count->stop();
    }
    EXPECT_EQ(allocations, 0) << "heap allocations in forward/commit after warm-up";
}

TEST_P(NoAllocation, GenerateLoop) {
    LoadedModel lm = open(GetParam());
    const Qwen35Model& m = *lm.model;
    // Each branch of the sampling pipeline: greedy; top-k with top-p, min-p and penalties; dense
    // (temperature only); top-p without top-k (the nucleus histogram); a whole-history penalty
    // window with a top-k past the heap scan's (a full selection where the vocabulary allows).
    std::vector<std::pair<const char*, SamplerParams>> samplers(5);
    samplers[0] = {"greedy", DecodeOptions::greedy_params()};
    samplers[1].first = "top-k, top-p, min-p, penalties";
    samplers[1].second.temperature = 0.8f;
    samplers[1].second.top_k = 40;
    samplers[1].second.top_p = 0.9f;
    samplers[1].second.min_p = 0.01f;
    samplers[1].second.repeat_penalty = 1.1f;
    samplers[2].first = "temperature only";
    samplers[2].second.temperature = 0.8f;
    samplers[3].first = "top-p only";
    samplers[3].second.top_p = 0.95f;
    samplers[4].first = "penalties over the whole history, top-k above the heap scan";
    samplers[4].second.temperature = 0.8f;
    samplers[4].second.top_k = 5000;
    samplers[4].second.frequency_penalty = 0.2f;
    samplers[4].second.penalty_last_n = -1;
    for (auto& [sampler_name, params] : samplers) {
        SCOPED_TRACE(sampler_name);
        params.seed = 7;
        // Each with and without --logprobs (a report of the top 5 for every emitted token).
        for (const auto& [depth, logprobs] : {std::pair{0, 0}, std::pair{3, 0}, std::pair{-4, 0},
                                              std::pair{0, 5}, std::pair{3, 5}}) {
            if (depth != 0 && !m.has_mtp()) continue;  // -4: adaptive depth up to 4
            SCOPED_TRACE("depth " + std::to_string(depth) + ", logprobs " +
                         std::to_string(logprobs));
            const int max_depth = std::abs(depth);
            DepthController controller(max_depth);
            std::vector<int32_t> prompt = prompt_for(m);
            constexpr int64_t kTokens = 48, kWarmTokens = 16;
            SequenceState s = m.new_state(int64_t(prompt.size()) + kTokens + 8, max_depth + 1);
            std::unique_ptr<Drafter> d;
            if (max_depth > 0) d = std::make_unique<MtpDrafter>(m, s);
            DecodeOptions o;
            o.max_new_tokens = kTokens;
            o.draft_depth = max_depth;
            if (depth < 0) o.controller = &controller;
            o.sampler = params;
            o.logprobs = logprobs;
            std::optional<AllocationCount> count;
            int64_t emitted = 0, allocations = -1;
            generate(m, s, d.get(), prompt, o, [&](const EmittedToken&) {
                if (++emitted == kWarmTokens) count.emplace();
                if (emitted == kTokens) allocations = count->stop();
                return true;
            });
            ASSERT_EQ(emitted, kTokens);
            EXPECT_EQ(allocations, 0) << "heap allocations in generate() after " << kWarmTokens
                                      << " tokens";
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Models, NoAllocation, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace nextn
