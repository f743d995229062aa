// Key sequences of the STM benchmark (see key_sequence.h). The zipfian generator is the one of Gray et
// al., "Quickly generating billion-record synthetic databases" (as used by YCSB): rank r in [0, n)
// with probability proportional to 1 / (r + 1)^theta, then mapped through a fixed permutation.
#include "bench/stm/key_sequence.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <numeric>
#include <random>

namespace revkv::bench::stm {

namespace {

class Zipfian {
 public:
  Zipfian(uint64_t n, double theta) : n_(n), theta_(theta) {
    for (uint64_t i = 1; i <= n; ++i) zetan_ += 1.0 / std::pow(static_cast<double>(i), theta);
    const double zeta2 = 1.0 + 1.0 / std::pow(2.0, theta);
    alpha_ = 1.0 / (1.0 - theta);
    eta_ = (1.0 - std::pow(2.0 / static_cast<double>(n), 1.0 - theta)) / (1.0 - zeta2 / zetan_);
  }
  // A rank in [0, n) for a uniform `u` in [0, 1).
  uint64_t Rank(double u) const {
    const double uz = u * zetan_;
    if (uz < 1.0) return 0;
    if (uz < 1.0 + std::pow(0.5, theta_)) return 1;
    const auto r = static_cast<uint64_t>(static_cast<double>(n_) * std::pow(eta_ * u - eta_ + 1.0, alpha_));
    return std::min(r, n_ - 1);
  }

 private:
  uint64_t n_;
  double theta_;
  double zetan_ = 0;
  double alpha_ = 0;
  double eta_ = 0;
};

}  // namespace

const char* DistributionName(Distribution d) { return d == Distribution::kUniform ? "uniform" : "zipfian"; }

KeySequence::KeySequence(Distribution d, uint64_t keys, uint64_t seed) : keys_(kLength), writes_(kLength, 0) {
  std::mt19937_64 rng(seed);
  if (d == Distribution::kUniform) {
    std::uniform_int_distribution<uint64_t> pick(0, keys - 1);
    for (uint32_t& k : keys_) k = static_cast<uint32_t>(pick(rng));
  } else {
    std::vector<uint32_t> permutation(keys);
    std::iota(permutation.begin(), permutation.end(), 0u);
    std::shuffle(permutation.begin(), permutation.end(), rng);
    const Zipfian zipf(keys, kTheta);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (uint32_t& k : keys_) k = permutation[zipf.Rank(u(rng))];
  }
  std::fill(writes_.begin(), writes_.begin() + kLength / 10, 1);
  std::shuffle(writes_.begin(), writes_.end(), rng);
}

const KeySequence& Sequence(Distribution d, uint64_t keys) {
  static std::mutex mu;
  static std::map<std::pair<int, uint64_t>, KeySequence>* sequences =
      new std::map<std::pair<int, uint64_t>, KeySequence>();
  std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_pair(static_cast<int>(d), keys);
  auto it = sequences->find(key);
  if (it == sequences->end())
    it = sequences->emplace(key, KeySequence(d, keys, 20240601 + static_cast<uint64_t>(d))).first;
  return it->second;
}

}  // namespace revkv::bench::stm
