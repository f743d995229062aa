// External tools that some tests need: etcd and etcdctl (to hold revkv against the real thing), promtool,
// openssl. scripts/setup installs all of them. On a developer's machine a test whose tool is missing
// skips; with REVKV_REQUIRE_TOOLS=1 in the environment (.ci/run sets it) the same test fails instead, so
// a CI image that lost a package cannot go green by skipping what it was meant to check.
//
// Every test that depends on an external tool goes through REVKV_MISSING_TOOL or REVKV_NEED_TOOL, never a
// bare GTEST_SKIP. The shell and Python tests in tests/deploy follow the same rule with `need_tool`
// (tests/deploy/lib.sh and tests/deploy/deploytest.py).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace revkv::test_support {

// True when REVKV_REQUIRE_TOOLS=1: a missing tool fails the test instead of skipping it.
inline bool ToolsRequired() {
  const char* value =
      std::getenv("REVKV_REQUIRE_TOOLS");  // NOLINT(concurrency-mt-unsafe): no setenv in tests
  return value != nullptr && std::strcmp(value, "1") == 0;
}

// True if `path` is an executable file.
inline bool ToolAvailable(const char* path) { return access(path, X_OK) == 0; }

// What a missing tool does to the current test: a skip, or a fatal failure under REVKV_REQUIRE_TOOLS=1.
inline ::testing::TestPartResult::Type MissingToolResult() {
  return ToolsRequired() ? ::testing::TestPartResult::kFatalFailure : ::testing::TestPartResult::kSkip;
}
inline const char* MissingToolPrefix() {
  return ToolsRequired() ? "a required tool is missing (REVKV_REQUIRE_TOOLS=1 makes that a failure): " : "";
}

}  // namespace revkv::test_support

// Skips the current test, or fails it under REVKV_REQUIRE_TOOLS=1, with the message streamed into it:
//   if (!FlavorAvailable(flavor)) REVKV_MISSING_TOOL() << "etcd is not installed";
// Like GTEST_SKIP it returns from the enclosing void function (a TEST body or SetUp; gtest runs no test
// body after a skip or a fatal failure in SetUp).
#define REVKV_MISSING_TOOL()                                                               \
  return GTEST_MESSAGE_AT_(__FILE__, __LINE__, ::revkv::test_support::MissingToolPrefix(), \
                           ::revkv::test_support::MissingToolResult())

// REVKV_MISSING_TOOL unless `path` is an executable; `package` is the Debian package that ships it.
#define REVKV_NEED_TOOL(path, package)                                                  \
  GTEST_AMBIGUOUS_ELSE_BLOCKER_                                                         \
  if (::revkv::test_support::ToolAvailable(path)) {                                     \
  } else                                                                                \
    REVKV_MISSING_TOOL() << (path) << " is not installed (Debian package " << (package) \
                         << "; scripts/setup installs it)"
