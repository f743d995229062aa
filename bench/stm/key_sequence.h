// Precomputed key choices for the STM benchmark: a uniform and a zipfian (theta 0.99, scrambled so the
// hot keys are spread over the key space) sequence of key indexes, and the 10% of positions that are
// writes in the read/write mix. Computing them up front keeps the random-number cost out of the
// measured loop, and every store under test walks the same sequences.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace revkv::bench::stm {

enum class Distribution { kUniform, kZipfian };
const char* DistributionName(Distribution d);

// A fixed, shared sequence of keys in [0, keys). Immutable after construction: const-safe.
class KeySequence {
 public:
  static constexpr size_t kLength = size_t{1} << 20;  // a power of two
  static constexpr double kTheta = 0.99;

  KeySequence(Distribution d, uint64_t keys, uint64_t seed);

  // The key at position `i` (any value; wraps around).
  uint32_t At(uint64_t i) const { return keys_[i & (kLength - 1)]; }
  // True if position `i` of the 90/10 mix is a write (exactly 10% of the positions).
  bool IsWrite(uint64_t i) const { return writes_[i & (kLength - 1)] != 0; }
  // Where thread `thread` starts, so that threads do not walk the sequence in lockstep.
  static uint64_t StartOf(int thread) { return static_cast<uint64_t>(thread) * 7919 * 4099; }

 private:
  std::vector<uint32_t> keys_;
  std::vector<uint8_t> writes_;
};

// The sequences for `keys` keys, built on first use. Thread-safe.
const KeySequence& Sequence(Distribution d, uint64_t keys);

}  // namespace revkv::bench::stm
