// The benchmark's keys: how key i is spelled, and how the next key is chosen.
//
// Key i is `prefix` followed by i in decimal, zero-padded so that every key is exactly `key_size` bytes:
// with prefix "bench/" and size 16, key 42 is "bench/0000000042". Zero padding makes byte order equal
// number order, so keys [i, i + n) are one etcd range, [Key(i), Key(i + n)).
#ifndef REVKV_CLIENTS_BENCH_KEY_SPACE_H_
#define REVKV_CLIENTS_BENCH_KEY_SPACE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "clients/bench/random.h"
#include "clients/bench/zipfian.h"

namespace revkv::client {

// A key space of `size` keys. Const-safe only.
class KeySpace {
 public:
  // INVALID_ARGUMENT when `size` is 0 or when `key_size` leaves too few digits after `prefix` to spell
  // every index up to and including `size` (the end bound of the last range).
  static absl::StatusOr<KeySpace> Create(std::string prefix, int key_size, uint64_t size);

  uint64_t size() const { return size_; }
  int key_size() const { return key_size_; }
  const std::string& prefix() const { return prefix_; }

  // Writes key `index` (0 <= index <= size()) into `*out`, reusing its storage: no allocation once `*out`
  // has held a key.
  void Format(uint64_t index, std::string* out) const;
  std::string Key(uint64_t index) const;

  // The range end that covers every key with the prefix (etcd's prefix end: last byte plus one).
  std::string PrefixEnd() const;

 private:
  KeySpace() = default;

  std::string prefix_;
  int key_size_ = 0;
  uint64_t size_ = 0;
};

enum class KeyDistribution { kUniform, kZipfian };

// Chooses key indexes in [0, n): uniform, or Zipfian with index 0 the hottest. Const-safe only.
class KeyChooser {
 public:
  static KeyChooser Uniform(uint64_t n) { return KeyChooser(n, std::nullopt); }
  static KeyChooser Zipfian(const ZipfianDistribution& zipfian) { return KeyChooser(zipfian.n(), zipfian); }

  uint64_t Next(Rng& rng) const { return zipfian_ ? zipfian_->Next(rng) : rng.Uniform(n_); }
  uint64_t n() const { return n_; }

 private:
  KeyChooser(uint64_t n, std::optional<ZipfianDistribution> zipfian) : n_(n), zipfian_(zipfian) {}

  uint64_t n_;
  std::optional<ZipfianDistribution> zipfian_;
};

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_BENCH_KEY_SPACE_H_
