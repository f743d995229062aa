// The lock-based baselines of the STM benchmark, doing the same work as StmTable: a global std::mutex
// over a std::map, and a std::shared_mutex (shared for reads) over a std::unordered_map. Both hold
// keys [0, keys) with value 0. A multi-key read holds the lock across all its keys, like a
// transaction. Thread-safe; no heap registration needed.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace revkv::bench::stm {

class MutexMap {
 public:
  static constexpr bool kNeedsRegistration = false;

  explicit MutexMap(uint64_t keys) {
    for (uint64_t k = 0; k < keys; ++k) map_.emplace(k, 0);
  }
  int64_t Get(uint32_t key) {
    std::lock_guard<std::mutex> lock(mu_);
    return map_.find(key)->second;
  }
  int64_t GetMany(const uint32_t* keys, int n) {
    std::lock_guard<std::mutex> lock(mu_);
    int64_t sum = 0;
    for (int i = 0; i < n; ++i) sum += map_.find(keys[i])->second;
    return sum;
  }
  void Add(uint32_t key, int64_t delta) {
    std::lock_guard<std::mutex> lock(mu_);
    map_.find(key)->second += delta;
  }

 private:
  std::mutex mu_;
  std::map<uint64_t, int64_t> map_;  // guarded by mu_
};

class SharedMutexHashMap {
 public:
  static constexpr bool kNeedsRegistration = false;

  explicit SharedMutexHashMap(uint64_t keys) {
    map_.reserve(keys);
    for (uint64_t k = 0; k < keys; ++k) map_.emplace(k, 0);
  }
  int64_t Get(uint32_t key) {
    std::shared_lock<std::shared_mutex> lock(mu_);
    return map_.find(key)->second;
  }
  int64_t GetMany(const uint32_t* keys, int n) {
    std::shared_lock<std::shared_mutex> lock(mu_);
    int64_t sum = 0;
    for (int i = 0; i < n; ++i) sum += map_.find(keys[i])->second;
    return sum;
  }
  void Add(uint32_t key, int64_t delta) {
    std::unique_lock<std::shared_mutex> lock(mu_);
    map_.find(key)->second += delta;
  }

 private:
  std::shared_mutex mu_;
  std::unordered_map<uint64_t, int64_t> map_;  // guarded by mu_
};

}  // namespace revkv::bench::stm
