// Tests of the lexical rules of the text format: names, escaping, UTF-8 repair, number formatting.
#include "server/ops/prometheus_text.h"

#include <cmath>
#include <limits>
#include <string>

#include "gtest/gtest.h"

namespace revkv::server::prometheus {
namespace {

std::string Value(double v) {
  std::string out;
  AppendValue(&out, v);
  return out;
}

std::string LabelValue(std::string_view v) {
  std::string out;
  AppendLabelValue(&out, v);
  return out;
}

std::string Help(std::string_view v) {
  std::string out;
  AppendHelp(&out, v);
  return out;
}

TEST(PrometheusText, MetricNames) {
  EXPECT_TRUE(IsValidMetricName("revkv_requests_total"));
  EXPECT_TRUE(IsValidMetricName("_x"));
  EXPECT_TRUE(IsValidMetricName("job:rate5m"));
  EXPECT_FALSE(IsValidMetricName(""));
  EXPECT_FALSE(IsValidMetricName("1abc"));
  EXPECT_FALSE(IsValidMetricName("a-b"));
  EXPECT_FALSE(IsValidMetricName("a b"));
  EXPECT_FALSE(IsValidMetricName("caf\xC3\xA9"));
}

TEST(PrometheusText, LabelNames) {
  EXPECT_TRUE(IsValidLabelName("method"));
  EXPECT_TRUE(IsValidLabelName("_m2"));
  EXPECT_FALSE(IsValidLabelName("__name__"));  // reserved
  EXPECT_FALSE(IsValidLabelName("a:b"));       // colons are for metric names only
  EXPECT_FALSE(IsValidLabelName("2a"));
  EXPECT_FALSE(IsValidLabelName(""));
}

TEST(PrometheusText, LabelValueEscapesBackslashQuoteAndNewline) {
  EXPECT_EQ(LabelValue("plain"), "plain");
  EXPECT_EQ(LabelValue("a\\b"), "a\\\\b");
  EXPECT_EQ(LabelValue("a\"b"), "a\\\"b");
  EXPECT_EQ(LabelValue("a\nb"), "a\\nb");
  EXPECT_EQ(LabelValue("tab\tand\rcr"), "tab\tand\rcr");  // only the three escapes exist
}

TEST(PrometheusText, HelpEscapesBackslashAndNewlineButNotQuotes) {
  EXPECT_EQ(Help("say \"hi\"\\\n"), "say \"hi\"\\\\\\n");
}

TEST(PrometheusText, InvalidUtf8IsReplaced) {
  EXPECT_EQ(LabelValue("\xC3\xA9"), "\xC3\xA9");                                  // valid two-byte sequence
  EXPECT_EQ(LabelValue("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");                  // valid four-byte sequence
  EXPECT_EQ(LabelValue("a\xFFz"), "a\xEF\xBF\xBDz");                              // invalid byte
  EXPECT_EQ(LabelValue("\xC3"), "\xEF\xBF\xBD");                                  // truncated sequence
  EXPECT_EQ(LabelValue("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // overlong form
  EXPECT_EQ(LabelValue("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
}

TEST(PrometheusText, Values) {
  EXPECT_EQ(Value(0), "0");
  EXPECT_EQ(Value(-0.0), "0");
  EXPECT_EQ(Value(42), "42");
  EXPECT_EQ(Value(-7), "-7");
  EXPECT_EQ(Value(0.1), "0.1");
  EXPECT_EQ(Value(2.5e-7), "2.5e-07");
  EXPECT_EQ(Value(18446744073709551615.0), "18446744073709551616");  // 2^64: shortest exact form
  EXPECT_EQ(Value(1.5e300), "1.5e+300");
  EXPECT_EQ(Value(std::nan("")), "NaN");
  EXPECT_EQ(Value(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(Value(-std::numeric_limits<double>::infinity()), "-Inf");
}

}  // namespace
}  // namespace revkv::server::prometheus
