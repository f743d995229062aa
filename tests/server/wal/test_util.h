// Helpers for the WAL and checkpoint tests: a scratch directory per test and a reproducible seed.
#ifndef REVKV_TESTS_SERVER_WAL_TEST_UTIL_H_
#define REVKV_TESTS_SERVER_WAL_TEST_UTIL_H_

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <string>

#include "gtest/gtest.h"

namespace revkv::server::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it at destruction.
class ScratchDir {
 public:
  ScratchDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/revkv-test-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// The seed of a randomized test: $REVKV_TEST_SEED if set, else a fresh one. Printed either way, so a
// failing run can be repeated exactly with REVKV_TEST_SEED=<seed>.
inline uint64_t TestSeed() {
  uint64_t seed;
  if (const char* env = std::getenv("REVKV_TEST_SEED"); env != nullptr && *env != '\0') {
    seed = std::strtoull(env, nullptr, 10);
  } else {
    seed = (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  }
  std::cout << "REVKV_TEST_SEED=" << seed << std::endl;
  ::testing::Test::RecordProperty("seed", std::to_string(seed));
  return seed;
}

// REVKV_TEST_SCALE (default 1; the sanitizer stages use 0.25): multiplies the rounds of long tests.
inline double Scale() {
  const char* s = std::getenv("REVKV_TEST_SCALE");
  return s != nullptr ? std::max(0.05, std::atof(s)) : 1.0;
}

inline std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void WriteWholeFile(const std::string& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
}

}  // namespace revkv::server::testing

#endif  // REVKV_TESTS_SERVER_WAL_TEST_UTIL_H_
