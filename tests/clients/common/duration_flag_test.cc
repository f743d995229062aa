// Duration flags: Go-style durations and bare seconds.
#include "clients/common/duration_flag.h"

#include <gtest/gtest.h>

namespace revkv::client {
namespace {

TEST(ParseDurationFlag, AcceptsUnitsAndBareSeconds) {
  EXPECT_EQ(*ParseDurationFlag("10s"), absl::Seconds(10));
  EXPECT_EQ(*ParseDurationFlag("250ms"), absl::Milliseconds(250));
  EXPECT_EQ(*ParseDurationFlag("1m30s"), absl::Seconds(90));
  EXPECT_EQ(*ParseDurationFlag("2.5"), absl::Milliseconds(2500));
  EXPECT_EQ(*ParseDurationFlag("0"), absl::ZeroDuration());
}

TEST(ParseDurationFlag, RejectsNegativeInfiniteAndGarbage) {
  for (const char* bad : {"-1s", "-2", "inf", "ten seconds", "", "10 s"}) {
    EXPECT_FALSE(ParseDurationFlag(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace revkv::client
