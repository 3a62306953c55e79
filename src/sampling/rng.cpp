#include "sampling/rng.h"

namespace nextn {
namespace {

uint64_t rotate_left(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// splitmix64 step: spreads a (possibly small, possibly zero) seed over the 256-bit state so
// that the state is never all zeros and nearby seeds give unrelated streams.
uint64_t splitmix64(uint64_t& x) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

}  // namespace

Rng::Rng(uint64_t seed) {
    for (uint64_t& word : state_) word = splitmix64(seed);
}

uint64_t Rng::next_u64() {
    const uint64_t result = rotate_left(state_[1] * 5, 7) * 9;
    const uint64_t shifted = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= shifted;
    state_[3] = rotate_left(state_[3], 45);
    return result;
}

double Rng::uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

}  // namespace nextn
