#pragma once
// The sampler's random source: xoshiro256** seeded through splitmix64. Small, fast, and fully
// determined by the seed, so the same seed and settings reproduce the same tokens on any
// platform. Each sampler owns one; there is no global generator.
#include <cstdint>

namespace nextn {

class Rng {
public:
    explicit Rng(uint64_t seed = 0);

    uint64_t next_u64();
    // Uniform in [0, 1) with 53 random bits (every value is an exact multiple of 2^-53).
    double uniform();

private:
    uint64_t state_[4];
};

}  // namespace nextn
