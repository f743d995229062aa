// The latency histogram: exact below 2048 us, within 0.1% above, percentiles by rank.
#include "clients/bench/histogram.h"

#include <gtest/gtest.h>

#include "clients/bench/random.h"

namespace revkv::client {
namespace {

TEST(LatencyHistogram, SmallValuesAreExact) {
  LatencyHistogram h;
  for (uint64_t v = 1; v <= 100; ++v) h.Record(v);
  EXPECT_EQ(h.count(), 100u);
  EXPECT_EQ(h.min(), 1u);
  EXPECT_EQ(h.max(), 100u);
  EXPECT_DOUBLE_EQ(h.mean(), 50.5);
  EXPECT_EQ(h.ValueAtPercentile(50), 50u);
  EXPECT_EQ(h.ValueAtPercentile(90), 90u);
  EXPECT_EQ(h.ValueAtPercentile(99), 99u);
  EXPECT_EQ(h.ValueAtPercentile(99.9), 100u);
  EXPECT_EQ(h.ValueAtPercentile(100), 100u);
  EXPECT_EQ(h.ValueAtPercentile(0), 1u);
}

TEST(LatencyHistogram, LargeValuesStayWithinATenthOfAPercent) {
  Rng rng(7);
  for (int i = 0; i < 10000; ++i) {
    const uint64_t value = 2048 + rng.Uniform(LatencyHistogram::kMaxValue - 2048);
    LatencyHistogram h;
    h.Record(value);
    h.Record(value + 1);  // so that the percentile is not simply capped at max()
    const uint64_t reported = h.ValueAtPercentile(50);
    ASSERT_GE(reported, value) << value;
    ASSERT_LE(static_cast<double>(reported - value), static_cast<double>(value) / 1000.0) << value;
  }
}

TEST(LatencyHistogram, PercentilesOfAMixFollowRanks) {
  LatencyHistogram h;
  for (int i = 0; i < 990; ++i) h.Record(100);
  for (int i = 0; i < 9; ++i) h.Record(10000);
  h.Record(1000000);
  EXPECT_EQ(h.ValueAtPercentile(50), 100u);
  EXPECT_EQ(h.ValueAtPercentile(99), 100u);
  const uint64_t p999 = h.ValueAtPercentile(99.9);
  EXPECT_GE(p999, 10000u);
  EXPECT_LE(p999, 10010u);
  EXPECT_EQ(h.max(), 1000000u);
  EXPECT_EQ(h.ValueAtPercentile(100), 1000000u);
}

TEST(LatencyHistogram, MergeAddsCountsAndExtremes) {
  LatencyHistogram a;
  LatencyHistogram b;
  a.Record(10);
  b.Record(5000);
  b.Record(3);
  a.Merge(b);
  EXPECT_EQ(a.count(), 3u);
  EXPECT_EQ(a.min(), 3u);
  EXPECT_EQ(a.max(), 5000u);
  EXPECT_EQ(a.ValueAtPercentile(50), 10u);
  a.Clear();
  EXPECT_EQ(a.count(), 0u);
  EXPECT_EQ(a.ValueAtPercentile(99), 0u);
}

TEST(LatencyHistogram, ValuesBeyondTheRangeAreClamped) {
  LatencyHistogram h;
  h.Record(UINT64_MAX);
  EXPECT_EQ(h.max(), LatencyHistogram::kMaxValue);
}

}  // namespace
}  // namespace revkv::client
