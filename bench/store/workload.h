// What every sub-benchmark of revkv-bench-store shares: the configuration, the keys and values written
// (the same bytes for revkv and for Redis), a per-thread random generator, the clock, /proc readers and
// medians.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace revkv::bench::store {

inline constexpr size_t kKeyBytes = 16;
inline constexpr size_t kValueBytes = 100;

struct Config {
  uint64_t ops_keys = 100'000;     // ops and wal: the key space, uniform
  uint64_t load_keys = 1'000'000;  // memory and recovery: keys written
  double seconds = 2.0;            // ops and wal: duration of one case in one run
  int runs = 3;                    // ops, wal, recovery: runs of each case (interleaved), medians reported
  std::string dir;                 // made by main: data directories of wal and recovery go under it
  size_t max_heap_bytes = 0;       // revkv's heap limit in every child; 0: the runtime's default
  bool redis = true;               // memory: also measure redis-server when it is on PATH
  bool quick = false;
};

// Key i (i < 10^12): "key/" and i in 12 decimal digits, kKeyBytes bytes written to `out`.
void FormatKey(uint64_t i, char* out);
std::string Key(uint64_t i);
// Value of key i: kValueBytes bytes, different for every key.
std::string Value(uint64_t i);

// splitmix64: small, fast and good enough to pick keys uniformly. Owner thread only.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n), by multiply-shift (no division, bias below 2^-64 * n).
  uint64_t Below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
  }

 private:
  uint64_t state_;
};

// The seed of one thread of one case: its parts (run, case, thread, ...) each below 2^16.
inline uint64_t MakeSeed(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  return a << 48 | b << 32 | c << 16 | d;
}

// CLOCK_MONOTONIC in nanoseconds.
uint64_t NowNanos();
inline double SecondsSince(uint64_t start_nanos) {
  return static_cast<double>(NowNanos() - start_nanos) / 1e9;
}

// The calling process's resident set (VmRSS of /proc/self/status) in bytes; 0 if unreadable.
uint64_t RssBytes();

// "<fstype> <device> mounted on <mount point>" of the file system holding `path`, from /proc/self/mounts;
// "unknown file system" if it cannot be found.
std::string FileSystemOf(const std::string& path);

// The median of `v` (the mean of the middle two for an even count); 0 when empty.
double Median(std::vector<double> v);
// The value at quantile q in [0, 1] of `v` (nearest rank); 0 when empty. Sorts `v`.
uint64_t Quantile(std::vector<uint64_t>& v, double q);

}  // namespace revkv::bench::store
