// REVKV_NEED_TOOL and REVKV_MISSING_TOOL: a missing tool skips the test, or fails it when
// REVKV_REQUIRE_TOOLS=1; a present tool does neither.
#include "tests/support/external_tools.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

namespace revkv::test_support {
namespace {

constexpr char kMissing[] = "/nonexistent/revkv-no-such-tool";

// Sets REVKV_REQUIRE_TOOLS for one scope and restores what it was.
class ScopedRequireTools {
 public:
  explicit ScopedRequireTools(const char* value) {
    const char* old = std::getenv("REVKV_REQUIRE_TOOLS");  // NOLINT(concurrency-mt-unsafe): one thread
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value == nullptr) {
      unsetenv("REVKV_REQUIRE_TOOLS");
    } else {
      setenv("REVKV_REQUIRE_TOOLS", value, 1);
    }
  }
  ~ScopedRequireTools() {
    if (had_) {
      setenv("REVKV_REQUIRE_TOOLS", old_.c_str(), 1);
    } else {
      unsetenv("REVKV_REQUIRE_TOOLS");
    }
  }

 private:
  bool had_ = false;
  std::string old_;
};

void NeedMissingTool(bool* reached_end) {
  REVKV_NEED_TOOL(kMissing, "revkv-test");
  *reached_end = true;
}

void NeedPresentTool(bool* reached_end) {
  REVKV_NEED_TOOL("/bin/sh", "dash");
  *reached_end = true;
}

// The results `function` reports, caught before they reach the running test.
std::vector<::testing::TestPartResult> Intercept(void (*function)(bool*), bool* reached_end) {
  ::testing::TestPartResultArray caught;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &caught);
    function(reached_end);
  }
  std::vector<::testing::TestPartResult> results;
  for (int i = 0; i < caught.size(); ++i) results.push_back(caught.GetTestPartResult(i));
  return results;
}

TEST(ExternalTools, AMissingToolSkipsByDefault) {
  const ScopedRequireTools unset(nullptr);
  bool reached_end = false;
  const std::vector<::testing::TestPartResult> results = Intercept(NeedMissingTool, &reached_end);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].skipped());
  EXPECT_NE(std::string(results[0].message()).find(kMissing), std::string::npos);
  EXPECT_FALSE(reached_end);
}

TEST(ExternalTools, AMissingToolFailsUnderRevkvRequireTools) {
  const ScopedRequireTools required("1");
  bool reached_end = false;
  const std::vector<::testing::TestPartResult> results = Intercept(NeedMissingTool, &reached_end);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].fatally_failed());
  const std::string message = results[0].message();
  EXPECT_NE(message.find(kMissing), std::string::npos) << message;
  EXPECT_NE(message.find("REVKV_REQUIRE_TOOLS=1"), std::string::npos) << message;
  EXPECT_FALSE(reached_end);
}

TEST(ExternalTools, OnlyTheValueOneRequiresTools) {
  const ScopedRequireTools zero("0");
  bool reached_end = false;
  const std::vector<::testing::TestPartResult> results = Intercept(NeedMissingTool, &reached_end);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].skipped());
}

TEST(ExternalTools, APresentToolNeitherSkipsNorFails) {
  const ScopedRequireTools required("1");
  bool reached_end = false;
  const std::vector<::testing::TestPartResult> results = Intercept(NeedPresentTool, &reached_end);
  EXPECT_TRUE(results.empty());
  EXPECT_TRUE(reached_end);
}

}  // namespace
}  // namespace revkv::test_support
