// FUZZ_CHECK for the fuzz targets: a broken invariant prints what was expected and aborts, which
// libFuzzer reports as a crash and saves the input (docs/durability.md, "Fuzzing").
#ifndef REVKV_TESTS_FUZZ_FUZZ_CHECK_H_
#define REVKV_TESTS_FUZZ_FUZZ_CHECK_H_

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(condition, ...)                                                             \
  do {                                                                                         \
    if (!(condition)) {                                                                        \
      std::fprintf(stderr, "%s:%d: invariant broken: %s\n  ", __FILE__, __LINE__, #condition); \
      std::fprintf(stderr, __VA_ARGS__);                                                       \
      std::fprintf(stderr, "\n");                                                              \
      std::abort();                                                                            \
    }                                                                                          \
  } while (false)

#endif  // REVKV_TESTS_FUZZ_FUZZ_CHECK_H_
