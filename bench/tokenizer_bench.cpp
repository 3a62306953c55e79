// Encode throughput of the Qwen3 tokenizer (from the shared fixtures) on a multi-MB document
// assembled at run time from files on the machine: Python standard-library sources (code) and
// the license texts under /usr/share/common-licenses (prose). Reports bytes/s as "MB/s".
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "core/mapped_file.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace {

namespace fs = std::filesystem;

std::string fixtures_tokenizer_dir() {
    if (const char* env = std::getenv("NEXTN_FIXTURES"); env && *env) return std::string(env) + "/tokenizer";
    return std::string(NEXTN_SOURCE_DIR) + "/../shared/fixtures/tokenizer";
}

// Concatenates regular files under `root` with the given extension (sorted, so runs are
// comparable) until `limit` bytes.
std::string gather(const std::string& root, const std::string& ext, std::size_t limit) {
    std::vector<fs::path> files;
    std::error_code ec;
    if (!fs::is_directory(root, ec)) return {};
    for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied, ec);
         it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (ec) break;
        if (it->is_regular_file(ec) && (ext.empty() || it->path().extension() == ext)) files.push_back(it->path());
    }
    std::sort(files.begin(), files.end());
    std::string out;
    for (const auto& f : files) {
        if (out.size() >= limit) break;
        std::string text = nextn::read_text_file(f.string());
        if (nextn::utf8::is_valid(text)) out += text;
    }
    return out;
}

struct Corpus {
    std::unique_ptr<nextn::Tokenizer> tok;
    std::string code, prose;
};

Corpus& corpus() {
    static Corpus c = [] {
        Corpus c;
        std::string dir = fixtures_tokenizer_dir();
        if (!nextn::file_exists(dir + "/tokenizer.json")) return c;
        c.tok = std::make_unique<nextn::Tokenizer>(nextn::Tokenizer::load(dir));
        c.code = gather("/usr/lib/python3.11", ".py", 4u << 20);
        std::string licenses = gather("/usr/share/common-licenses", "", 1u << 20);
        while (!licenses.empty() && c.prose.size() < (2u << 20)) c.prose += licenses;
        return c;
    }();
    return c;
}

void run(benchmark::State& state, const std::string& text, bool fresh_cache) {
    Corpus& c = corpus();
    if (!c.tok) {
        state.SkipWithError("SKIPPED: Qwen3 tokenizer.json not found (set NEXTN_FIXTURES)");
        return;
    }
    if (text.empty()) {
        state.SkipWithError("SKIPPED: no input text found on this machine");
        return;
    }
    std::size_t tokens = 0;
    for (auto _ : state) {
        if (fresh_cache) {
            state.PauseTiming();
            c.tok = std::make_unique<nextn::Tokenizer>(nextn::Tokenizer::load(fixtures_tokenizer_dir()));
            state.ResumeTiming();
        }
        auto ids = c.tok->encode(text);
        tokens = ids.size();
        benchmark::DoNotOptimize(ids.data());
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
    state.counters["doc_MB"] = static_cast<double>(text.size()) / 1e6;
    state.counters["tokens"] = static_cast<double>(tokens);
}

void BM_EncodeCode(benchmark::State& s) { run(s, corpus().code, false); }
void BM_EncodeProse(benchmark::State& s) { run(s, corpus().prose, false); }
// First pass over the text with an empty piece cache (the tokenizer is reloaded untimed).
void BM_EncodeCodeColdCache(benchmark::State& s) { run(s, corpus().code, true); }

}  // namespace

BENCHMARK(BM_EncodeCode)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_EncodeProse)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_EncodeCodeColdCache)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_MAIN();
