// Zipfian-distributed integers in [0, n), by Gray et al.'s method ("Quickly generating billion-record
// synthetic databases", SIGMOD 1994), as YCSB draws them.
//
// Item i (0-based) has probability proportional to 1 / (i + 1)^theta, so item 0 is the hottest. Building
// the generator sums n terms once (about 10 ms per million items); drawing costs one pow().
#ifndef REVKV_CLIENTS_BENCH_ZIPFIAN_H_
#define REVKV_CLIENTS_BENCH_ZIPFIAN_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "clients/bench/random.h"

namespace revkv::client {

// An immutable Zipfian distribution. Const-safe only (Next mutates only the caller's Rng).
class ZipfianDistribution {
 public:
  // INVALID_ARGUMENT unless n >= 1 and 0 < theta < 1 (the method needs theta != 1; YCSB's default is 0.99).
  static absl::StatusOr<ZipfianDistribution> Create(uint64_t n, double theta);

  uint64_t Next(Rng& rng) const;
  uint64_t n() const { return n_; }
  double theta() const { return theta_; }

 private:
  ZipfianDistribution() = default;

  uint64_t n_ = 1;
  double theta_ = 0.99;
  double alpha_ = 0;   // 1 / (1 - theta)
  double zeta_n_ = 0;  // sum over i = 1..n of 1 / i^theta
  double eta_ = 0;
  double half_pow_theta_ = 0;  // 1 + 0.5^theta
};

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_BENCH_ZIPFIAN_H_
