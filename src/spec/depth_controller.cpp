#include "spec/depth_controller.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

namespace nextn {

DepthController::DepthController(int max_depth, double ewma)
    : max_depth_(std::max(0, max_depth)),
      ewma_(ewma),
      accept_(size_t(std::max(0, max_depth)), 0.5),
      cost_(size_t(std::max(0, max_depth)) + 1, 0.0),
      accept_samples_(size_t(std::max(0, max_depth)), 1),
      cost_samples_(size_t(std::max(0, max_depth)) + 1, 0) {
    chosen_ = std::min(1, max_depth_);
}

DepthController DepthController::with_modelled_costs(int max_depth) {
    DepthController c(max_depth);
    for (size_t d = 0; d < c.cost_.size(); ++d) {
        c.cost_[d] = 1.0 + kModelledCostPerDraft * double(d);
        c.cost_samples_[d] = kMinLossSamples;  // settled: a probe is decided in its own round
    }
    c.modelled_costs_ = true;
    return c;
}

namespace {

// Running mean while there are fewer than 1/ewma samples, then the EWMA.
void update_average(double& avg, int& samples, double value, double ewma) {
    const double w = std::max(ewma, 1.0 / double(samples + 1));
    avg = samples == 0 ? value : (1 - w) * avg + w * value;
    ++samples;
}

}  // namespace

double DepthController::expected_tokens(int depth) const {
    double e = 1.0, chain = 1.0;
    for (int i = 1; i <= depth; ++i) {
        chain *= accept_[size_t(i - 1)];
        e += chain;
    }
    return e;
}

int DepthController::best_depth() const {
    int best = -1;
    double best_rate = 0;
    for (int d = 0; d <= max_depth_; ++d) {
        if (cost_[size_t(d)] <= 0) continue;
        const double rate = expected_tokens(d) / cost_[size_t(d)];
        if (best < 0 || rate > best_rate) {
            best = d;
            best_rate = rate;
        }
    }
    return best < 0 ? chosen_ : best;
}

int DepthController::choose() {
    if (max_depth_ == 0) return 0;
    if (probing_ >= 0) return probing_;  // a losing probe still being confirmed
    // Measure every depth up to the current choice once before trusting the model.
    for (int d = 0; d <= std::min(max_depth_, chosen_); ++d)
        if (cost_[size_t(d)] <= 0) return d;
    chosen_ = best_depth();
    if (++rounds_since_probe_ >= probe_interval_) {
        const bool can_go_down = chosen_ > 0, can_go_up = chosen_ < max_depth_;
        const bool down = can_go_down && (probe_down_next_ || !can_go_up);
        if (down || can_go_up) {
            rounds_since_probe_ = 0;
            probe_down_next_ = down;
            probing_ = down ? chosen_ - 1 : chosen_ + 1;
            rate_before_probe_ = expected_tokens(chosen_) / cost_[size_t(chosen_)];
            return probing_;
        }
    }
    return chosen_;
}

void DepthController::observe(int depth, int accepted, double seconds, bool timed) {
    if (depth < 0 || depth > max_depth_) return;
    // Position i was tested when drafts 1..i-1 were accepted.
    for (int i = 1; i <= std::min(depth, accepted + 1); ++i)
        update_average(accept_[size_t(i - 1)], accept_samples_[size_t(i - 1)],
                       i <= accepted ? 1.0 : 0.0, ewma_);
    int& samples = cost_samples_[size_t(depth)];
    if (!modelled_costs_) {
        // An untimed round leaves the costs, and a probe goes on to a timed round.
        if (!timed || seconds <= 0) return;
        // A round's time only ever grows with interference (other processes, a cold first
        // round: fresh pages, caches), so the first few samples keep their minimum before the
        // EWMA.
        double& cost = cost_[size_t(depth)];
        if (samples > 0 && samples < kMinCostSamples) {
            cost = std::min(cost, seconds);
            ++samples;
        } else {
            update_average(cost, samples, seconds, ewma_);
        }
    }
    if (probing_ == depth) {
        const double rate = expected_tokens(depth) / cost_[size_t(depth)];
        if (rate > rate_before_probe_) {
            // A win keeps the direction: the next probe goes one further the same way, in the
            // next round, so a cold start climbs to a deep optimum in a few rounds instead of
            // alternating (or waiting kMinProbeInterval rounds at each depth on the way: with
            // every draft right, simulated 24-round requests ran at 0.78x the best depth's rate,
            // now 0.83x).
            chosen_ = depth;
            probe_interval_ = kMinProbeInterval;
            const bool can_go_on = probe_down_next_ ? depth > 0 : depth < max_depth_;
            rounds_since_probe_ = can_go_on ? probe_interval_ - 1 : 0;
            probing_ = -1;
        } else if (samples >= kMinLossSamples) {
            // A loss turns around, so the other neighbour gets measured too.
            probe_down_next_ = !probe_down_next_;
            probe_interval_ = std::min(kMaxProbeInterval, probe_interval_ * 2);
            probing_ = -1;
        }
        // Otherwise the probe goes on: a loss counts only once the depth's cost is the minimum
        // of two rounds, since a cold round only ever looks slow. The first round at a depth in
        // each request is cold (its wider buffers are new), and such single samples used to
        // decide probes: with every draft right, auto stayed at depth 2-3 while depth 4 ran
        // 1.5x faster.
    }
}

void DepthController::load(const std::string& path) {
    if (path.empty()) return;
    std::ifstream in(path);
    if (!in) return;
    try {
        nlohmann::json j = nlohmann::json::parse(in);
        if (j.value("max_depth", -1) != max_depth_) return;
        auto a = j.at("acceptance").get<std::vector<double>>();
        auto c = j.at("cost").get<std::vector<double>>();
        if (a.size() != accept_.size() || c.size() != cost_.size()) return;
        accept_ = a;
        cost_ = c;
        // Saved averages are settled: continue them as EWMAs.
        const int settled = int(1.0 / ewma_) + 1;
        for (size_t i = 0; i < accept_.size(); ++i) accept_samples_[i] = settled;
        for (size_t i = 0; i < cost_.size(); ++i) cost_samples_[i] = cost_[i] > 0 ? settled : 0;
        chosen_ = std::clamp(j.value("depth", chosen_), 0, max_depth_);
        probe_interval_ = std::clamp(j.value("probe_interval", probe_interval_), kMinProbeInterval,
                                     kMaxProbeInterval);
    } catch (const std::exception&) {
        // A corrupt cache file means a cold start.
    }
}

void DepthController::save(const std::string& path) const {
    if (path.empty()) return;
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    nlohmann::json j = {{"max_depth", max_depth_}, {"acceptance", accept_}, {"cost", cost_},
                        {"depth", chosen_}, {"probe_interval", probe_interval_}};
    // Written beside the file under a name of this process's own, then renamed over it: two
    // runs of the same model finishing together each replace the file whole, never mix bytes.
    const std::string tmp = path + ".tmp." + std::to_string(getpid());
    std::ofstream out(tmp);
    if (!out) return;
    out << j.dump() << "\n";
    out.close();
    if (!out) {
        std::filesystem::remove(tmp, ec);
        return;
    }
    std::filesystem::rename(tmp, path, ec);
    if (ec) std::filesystem::remove(tmp, ec);
}

std::string DepthController::default_path(const std::string& model_key) {
    std::string base;
    if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) {
        base = x;
    } else if (const char* h = std::getenv("HOME"); h && *h) {
        base = std::string(h) + "/.cache";
    } else {
        return "";
    }
    std::string key;
    for (char ch : model_key) key += (std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_');
    return base + "/nextn/depth-" + key + ".json";
}

}  // namespace nextn
