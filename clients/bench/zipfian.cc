// Gray et al.'s Zipfian generator.
#include "clients/bench/zipfian.h"

#include <algorithm>
#include <cmath>

namespace revkv::client {

absl::StatusOr<ZipfianDistribution> ZipfianDistribution::Create(uint64_t n, double theta) {
  if (n < 1) return absl::InvalidArgumentError("a Zipfian distribution needs at least one item");
  if (!(theta > 0 && theta < 1)) {
    return absl::InvalidArgumentError("the Zipfian exponent must be in (0, 1), e.g. 0.99");
  }
  ZipfianDistribution z;
  z.n_ = n;
  z.theta_ = theta;
  z.alpha_ = 1.0 / (1.0 - theta);
  for (uint64_t i = 1; i <= n; ++i) z.zeta_n_ += 1.0 / std::pow(static_cast<double>(i), theta);
  const double zeta_2 = 1.0 + 1.0 / std::pow(2.0, theta);
  z.eta_ =
      n == 1 ? 0 : (1.0 - std::pow(2.0 / static_cast<double>(n), 1.0 - theta)) / (1.0 - zeta_2 / z.zeta_n_);
  z.half_pow_theta_ = 1.0 + std::pow(0.5, theta);
  return z;
}

uint64_t ZipfianDistribution::Next(Rng& rng) const {
  const double u = rng.NextDouble();
  const double uz = u * zeta_n_;
  if (uz < 1.0 || n_ == 1) return 0;
  if (uz < half_pow_theta_) return 1;
  const auto item = static_cast<uint64_t>(static_cast<double>(n_) * std::pow(eta_ * u - eta_ + 1.0, alpha_));
  return std::min(item, n_ - 1);
}

}  // namespace revkv::client
