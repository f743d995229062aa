// The load generator's random numbers: xoshiro256**, seeded through splitmix64.
//
// Fast (a few instructions per number), small (32 bytes of state) and reproducible for a given seed,
// which is all a load generator needs; not for anything secret.
#ifndef REVKV_CLIENTS_BENCH_RANDOM_H_
#define REVKV_CLIENTS_BENCH_RANDOM_H_

#include <cstdint>

namespace revkv::client {

// A random number generator. Owner thread only.
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (uint64_t& word : state_) word = SplitMix64(&seed);
  }

  uint64_t Next() {
    const uint64_t result = RotateLeft(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = RotateLeft(state_[3], 45);
    return result;
  }

  // Uniform in [0, n) for n > 0 (Lemire's multiply-shift; the bias is below 2^-64 * n).
  uint64_t Uniform(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
  }

  // Uniform in [0, 1).
  double NextDouble() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  static uint64_t RotateLeft(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static uint64_t SplitMix64(uint64_t* x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
    z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
    return z ^ (z >> 31);
  }

  uint64_t state_[4] = {};
};

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_BENCH_RANDOM_H_
