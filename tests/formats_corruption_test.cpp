// The file readers on thousands of deterministic corruptions of small valid files (the fuzzers'
// seeds in fuzz/corpus/): truncations at every length, random byte flips, and length / count /
// number fields overwritten with boundary values. Each input must either parse or throw
// nextn::Error; any other exception fails the test and a crash kills it. This is the part of
// the fuzzing (fuzz/, scripts/fuzz.sh) that runs everywhere, without clang.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <new>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/mapped_file.h"
#include "formats/gguf.h"
#include "formats/model_config.h"
#include "formats/safetensors.h"
#include "test_paths.h"

// Largest single allocation while `g_track_allocations` is set: the readers must not reserve
// memory from a count before checking it against the bytes that are there. Replacing the global
// operator new is the only way to see an allocation the reader makes internally; the two
// counters are test-only state.
static std::atomic<bool> g_track_allocations{false};
static std::atomic<size_t> g_largest_allocation{0};

void* operator new(size_t n) {
    if (g_track_allocations.load(std::memory_order_relaxed)) {
        size_t prev = g_largest_allocation.load(std::memory_order_relaxed);
        while (n > prev && !g_largest_allocation.compare_exchange_weak(prev, n)) {
        }
    }
    if (void* p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
// Not inlined: gcc would otherwise see free() on a pointer from a new-expression and warn.
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace nextn {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

std::vector<Bytes> seeds(const std::string& target) {
    std::vector<fs::path> paths;
    for (const auto& e : fs::directory_iterator(test::source_dir() + "/fuzz/corpus/" + target))
        paths.push_back(e.path());
    std::sort(paths.begin(), paths.end());
    std::vector<Bytes> out;
    for (const auto& p : paths) {
        std::ifstream in(p, std::ios::binary);
        out.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    return out;
}

// Runs one reader over mutated inputs and keeps score. Anything but success or nextn::Error is a
// failure that names the mutation.
struct Outcomes {
    int parsed = 0;
    int rejected = 0;
};

using Reader = std::function<void(const Bytes&)>;

void check(const Reader& read, const Bytes& input, const std::string& mutation, Outcomes& o) {
    try {
        read(input);
        ++o.parsed;
    } catch (const Error&) {
        ++o.rejected;
    } catch (const std::exception& e) {
        ADD_FAILURE() << mutation << ": threw " << typeid(e).name() << " (not nextn::Error): "
                      << e.what();
    }
}

// Boundary values for an integer field of any width.
const uint64_t kInteresting[] = {0,          1,          2,           7,
                                 0x7f,       0xff,       0x7fff,      0xffff,
                                 0x7fffffff, 0x80000000, 0xffffffff,  0x100000000ull,
                                 1ull << 40, 1ull << 62, 0x7fffffffffffffffull,
                                 0x8000000000000000ull,  0xffffffffffffffffull};

void put_le(Bytes& b, size_t at, uint64_t v, size_t width) {
    for (size_t i = 0; i < width && at + i < b.size(); ++i) b[at + i] = uint8_t(v >> (8 * i));
}

// Truncations at every length, random byte flips, and integer fields of 1-8 bytes at random
// offsets overwritten with boundary values.
Outcomes binary_mutations(const Reader& read, const Bytes& seed, uint32_t rng_seed, int trials) {
    Outcomes o;
    for (size_t n = 0; n < seed.size(); ++n)
        check(read, Bytes(seed.begin(), seed.begin() + ptrdiff_t(n)), "truncated to " + std::to_string(n), o);
    std::mt19937 rng(rng_seed);
    for (int i = 0; i < trials; ++i) {
        Bytes b = seed;
        const int flips = 1 + int(rng() % 4);
        std::string what = "flips";
        for (int f = 0; f < flips; ++f) {
            size_t at = rng() % b.size();
            b[at] = uint8_t(rng());
            what += " @" + std::to_string(at);
        }
        check(read, b, what, o);
    }
    for (int i = 0; i < trials; ++i) {
        Bytes b = seed;
        size_t at = rng() % b.size();
        uint64_t v = kInteresting[rng() % std::size(kInteresting)];
        size_t width = size_t(1) << (rng() % 4);
        put_le(b, at, v, width);
        check(read, b, "field @" + std::to_string(at) + " width " + std::to_string(width) + " = " + std::to_string(v), o);
    }
    return o;
}

// Every tensor a reader hands out must lie inside the input.
void expect_inside(const Bytes& in, const uint8_t* data, size_t nbytes, const std::string& name) {
    if (nbytes == 0) return;
    const uint8_t* end = in.data() + in.size();
    if (data < in.data() || data > end || nbytes > size_t(end - data))
        ADD_FAILURE() << "tensor '" << name << "' points outside the input";
}

void read_gguf_bytes(const Bytes& b) {
    GgufFile g = parse_gguf(b, "corrupt.gguf");
    for (const auto& t : g.tensors) expect_inside(b, t.data, t.nbytes, t.name);
}

void read_safetensors_bytes(const Bytes& b) {
    SafetensorsFile st = parse_safetensors(b, "corrupt.safetensors");
    for (const auto& [name, t] : st.tensors) expect_inside(b, t.data, t.nbytes, name);
}

void read_config_bytes(const Bytes& b) {
    parse_hf_config_text(std::string_view(reinterpret_cast<const char*>(b.data()), b.size()),
                         "corrupt/config.json");
}

TEST(FormatsCorruption, SeedsAreValid) {
    for (const auto& s : seeds("gguf")) EXPECT_NO_THROW(read_gguf_bytes(s));
    for (const auto& s : seeds("safetensors")) EXPECT_NO_THROW(read_safetensors_bytes(s));
    for (const auto& s : seeds("config")) EXPECT_NO_THROW(read_config_bytes(s));
    EXPECT_GE(seeds("gguf").size(), 1u);
    EXPECT_GE(seeds("safetensors").size(), 1u);
    EXPECT_GE(seeds("config").size(), 1u);
}

TEST(FormatsCorruption, GgufTruncationsFlipsAndFields) {
    uint32_t rng_seed = 1;
    for (const auto& s : seeds("gguf")) {
        Outcomes o = binary_mutations(read_gguf_bytes, s, rng_seed++, 3000);
        // Header counts (tensor count at 8, metadata count at 16) at every boundary value.
        for (size_t at : {size_t(8), size_t(16)})
            for (uint64_t v : kInteresting) {
                Bytes b = s;
                put_le(b, at, v, 8);
                check(read_gguf_bytes, b, "count @" + std::to_string(at) + " = " + std::to_string(v), o);
            }
        EXPECT_GT(o.rejected, 1000);
        EXPECT_GT(o.parsed, 10) << "mutations never parse: the checks reject valid files?";
    }
}

// The JSON header with every number replaced by each boundary value (header length kept right),
// so shapes and data_offsets take every extreme.
Bytes with_header(const std::string& header, const Bytes& data_part) {
    Bytes b(8);
    put_le(b, 0, header.size(), 8);
    b.insert(b.end(), header.begin(), header.end());
    b.insert(b.end(), data_part.begin(), data_part.end());
    return b;
}

// Replaces the k-th JSON number in `text` with `value`.
std::string replace_number(const std::string& text, size_t k, const std::string& value) {
    static const std::regex number(R"(-?\d+(\.\d+)?([eE][-+]?\d+)?)");
    auto it = std::sregex_iterator(text.begin(), text.end(), number);
    for (size_t i = 0; i < k && it != std::sregex_iterator(); ++i) ++it;
    if (it == std::sregex_iterator()) return text;
    return text.substr(0, size_t(it->position())) + value + text.substr(size_t(it->position() + it->length()));
}

size_t count_numbers(const std::string& text) {
    static const std::regex number(R"(-?\d+(\.\d+)?([eE][-+]?\d+)?)");
    return size_t(std::distance(std::sregex_iterator(text.begin(), text.end(), number), std::sregex_iterator()));
}

const std::vector<std::string> kNumberTexts = {
    "0", "-1", "1", "3", "1e308", "-1e308", "0.5", "2147483647", "2147483648", "-2147483649",
    "4294967297", "9223372036854775807", "-9223372036854775808", "9223372036854775808",
    "18446744073709551615", "18446744073709551616", "1.5", "null", "\"7\"", "[]"};

TEST(FormatsCorruption, SafetensorsTruncationsFlipsAndFields) {
    uint32_t rng_seed = 100;
    for (const auto& s : seeds("safetensors")) {
        Outcomes o = binary_mutations(read_safetensors_bytes, s, rng_seed++, 2000);
        for (uint64_t v : kInteresting) {
            Bytes b = s;
            put_le(b, 0, v, 8);
            check(read_safetensors_bytes, b, "header length = " + std::to_string(v), o);
        }
        uint64_t header_len = 0;
        std::memcpy(&header_len, s.data(), 8);
        const std::string header(s.begin() + 8, s.begin() + 8 + ptrdiff_t(header_len));
        const Bytes data_part(s.begin() + 8 + ptrdiff_t(header_len), s.end());
        const size_t numbers = count_numbers(header);
        ASSERT_GT(numbers, 4u);
        for (size_t k = 0; k < numbers; ++k)
            for (const auto& v : kNumberTexts)
                check(read_safetensors_bytes, with_header(replace_number(header, k, v), data_part),
                      "header number #" + std::to_string(k) + " = " + v, o);
        EXPECT_GT(o.rejected, 1000);
        EXPECT_GT(o.parsed, 10);
    }
}

TEST(FormatsCorruption, ConfigTruncationsFlipsAndFields) {
    uint32_t rng_seed = 200;
    for (const auto& s : seeds("config")) {
        Outcomes o = binary_mutations(read_config_bytes, s, rng_seed++, 1500);
        const std::string text(s.begin(), s.end());
        const size_t numbers = count_numbers(text);
        ASSERT_GT(numbers, 10u);
        // Every number alone, then pairs (a field and the one it is divided by, say) over a
        // smaller set of extremes.
        for (size_t k = 0; k < numbers; ++k)
            for (const auto& v : kNumberTexts) {
                std::string t = replace_number(text, k, v);
                check(read_config_bytes, Bytes(t.begin(), t.end()), "number #" + std::to_string(k) + " = " + v, o);
            }
        const std::vector<std::string> extremes = {"0", "-1", "4294967295", "-9223372036854775808",
                                                   "1e308", "18446744073709551615"};
        for (size_t a = 0; a < numbers; ++a)
            for (size_t b = a + 1; b < numbers; ++b)
                for (const auto& va : extremes)
                    for (const auto& vb : extremes) {
                        // Replace the later number first so the earlier one's position holds.
                        std::string t = replace_number(replace_number(text, b, vb), a, va);
                        check(read_config_bytes, Bytes(t.begin(), t.end()),
                              "numbers #" + std::to_string(a) + " = " + va + ", #" + std::to_string(b) + " = " + vb, o);
                    }
        EXPECT_GT(o.rejected, 1000);
        EXPECT_GT(o.parsed, 10);
    }
}

// ---- regressions: inputs that crashed or hung the readers before they were fixed ----

std::string dense_config_with(const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json root = nlohmann::json::parse(
        read_text_file(test::data_dir() + "/qwen35-dense-tiny/config.json"));
    edit(root["text_config"]);
    return root.dump();
}

void expect_config_error(const std::string& text, const std::string& needle) {
    try {
        parse_hf_config_text(text, "config.json");
        ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
}

TEST(FormatsCorruption, ConfigRegressions) {
    // Default head_dim = hidden_size / num_attention_heads with INT64_MIN / (int)4294967295 = -1:
    // SIGFPE.
    expect_config_error(dense_config_with([](nlohmann::json& t) {
                            t.erase("head_dim");
                            t["hidden_size"] = std::numeric_limits<int64_t>::min();
                            t["num_attention_heads"] = 4294967295u;
                        }),
                        "num_attention_heads");
    // head_dim * 1e308 converted to int: undefined behaviour (UBSan), garbage rotary_dims.
    expect_config_error(dense_config_with([](nlohmann::json& t) {
                            t["rope_parameters"]["partial_rotary_factor"] = 1e308;
                        }),
                        "partial_rotary_factor");
    // Two billion layers without layer_types: a two-billion-step loop before validation.
    expect_config_error(dense_config_with([](nlohmann::json& t) {
                            t.erase("layer_types");
                            t["num_hidden_layers"] = 2000000000;
                        }),
                        "num_hidden_layers");
    // 2^32 + 8 layers silently wrapped to 8 when stored in an int.
    expect_config_error(dense_config_with([](nlohmann::json& t) {
                            t["num_hidden_layers"] = 4294967304ll;
                        }),
                        "out of range");
    // rms_norm_eps beyond float's range: undefined double -> float conversion.
    expect_config_error(dense_config_with([](nlohmann::json& t) { t["rms_norm_eps"] = 1e300; }),
                        "rms_norm_eps");
}

TEST(FormatsCorruption, SafetensorsDeeplyNestedDtypeIsAnErrorNotAStackOverflow) {
    // The error message used to dump() the dtype, which recurses once per nesting level.
    const size_t depth = 1000000;
    const std::string header = "{\"t\":{\"dtype\":" + std::string(depth, '[') + std::string(depth, ']') +
                               ",\"shape\":[],\"data_offsets\":[0,0]}}";
    Bytes b = with_header(header, {});
    try {
        parse_safetensors(b, "deep.safetensors");
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("dtype"), std::string::npos) << e.what();
    }
}

// ---- corrupt counts in a large file: no allocation sized by the count before it is checked ----

// A GGUF prefix (header and one metadata key of `type`), then `fill` bytes of 0xff: a count that
// the file-size check lets through, because a big file has room, in front of garbage.
Bytes gguf_with_count(uint64_t n_tensors, uint64_t n_kv, const Bytes& kv, size_t fill) {
    Bytes b = {'G', 'G', 'U', 'F'};
    auto put = [&](uint64_t v, size_t width) {
        size_t at = b.size();
        b.resize(at + width);
        put_le(b, at, v, width);
    };
    put(3, 4);
    put(n_tensors, 8);
    put(n_kv, 8);
    b.insert(b.end(), kv.begin(), kv.end());
    b.resize(b.size() + fill, 0xff);
    return b;
}

Bytes array_kv(uint32_t elem_type, uint64_t count) {
    Bytes b(8 + 1 + 4 + 4 + 8);
    put_le(b, 0, 1, 8);  // key length 1
    b[8] = 'k';
    put_le(b, 9, 9, 4);  // ARRAY
    put_le(b, 13, elem_type, 4);
    put_le(b, 17, count, 8);
    return b;
}

size_t largest_allocation_while(const std::function<void()>& fn) {
    g_largest_allocation = 0;
    g_track_allocations = true;
    try {
        fn();
    } catch (const Error&) {
    }
    g_track_allocations = false;
    return g_largest_allocation;
}

TEST(FormatsCorruption, GgufCorruptCountsDoNotAllocateBeforeTheyAreChecked) {
    const size_t fill = size_t(32) << 20;  // a 32 MB file: room for big counts
    const size_t limit = size_t(16) << 20;
    struct Case {
        const char* what;
        Bytes file;
    };
    const Case cases[] = {
        // 4M strings fit 32 MB by the 8-bytes-each bound; the first length is garbage.
        {"string array count", gguf_with_count(0, 1, array_kv(8, fill / 8), fill)},
        // 32M one-byte integers would be 256 MB as int64.
        {"i8 array count", gguf_with_count(0, 1, array_kv(1, fill), fill)},
        // 1.2M tensor infos by the 28-bytes-each bound; the first name length is garbage.
        {"tensor count", gguf_with_count(fill / 28, 0, {}, fill)},
    };
    for (const auto& c : cases) {
        size_t largest = largest_allocation_while([&] { parse_gguf(c.file, "big.gguf"); });
        EXPECT_LT(largest, limit) << c.what << ": largest single allocation " << largest
                                  << " bytes from a corrupt count";
        EXPECT_THROW(parse_gguf(c.file, "big.gguf"), Error) << c.what;
    }
}

}  // namespace
}  // namespace nextn
