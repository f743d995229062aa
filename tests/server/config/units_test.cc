// Tests of how sizes, durations and counts are written: what is accepted, what is refused and why.
#include "server/config/units.h"

#include <string>

#include "gtest/gtest.h"

namespace revkv::server::config {
namespace {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = kKiB * 1024;
constexpr uint64_t kGiB = kMiB * 1024;

uint64_t Size(std::string_view text) {
  absl::StatusOr<uint64_t> size = ParseSize(text);
  EXPECT_TRUE(size.ok()) << text << ": " << size.status();
  return size.value_or(0);
}

std::string SizeError(std::string_view text) {
  absl::StatusOr<uint64_t> size = ParseSize(text);
  EXPECT_FALSE(size.ok()) << text << " parsed as " << size.value_or(0);
  EXPECT_EQ(size.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(size.status().message());
}

TEST(ParseSize, BinaryAndDecimalUnits) {
  EXPECT_EQ(Size("512MiB"), 512 * kMiB);
  EXPECT_EQ(Size("2GiB"), 2 * kGiB);
  EXPECT_EQ(Size("64KiB"), 64 * kKiB);
  EXPECT_EQ(Size("1TiB"), 1024 * kGiB);
  EXPECT_EQ(Size("1572864"), 1572864u);
  EXPECT_EQ(Size("0"), 0u);
  EXPECT_EQ(Size("17B"), 17u);
  EXPECT_EQ(Size("1.5MiB"), 1572864u);
  EXPECT_EQ(Size("10 MB"), 10000000u);
  EXPECT_EQ(Size("1kb"), 1000u);
  EXPECT_EQ(Size("4gib"), 4 * kGiB);  // units are case-insensitive
  EXPECT_EQ(Size(" 8KiB "), 8 * kKiB);
  EXPECT_EQ(Size("18446744073709551615"), UINT64_MAX);
}

TEST(ParseSize, Refusals) {
  EXPECT_NE(SizeError("-5MiB").find("must not be negative"), std::string::npos);
  EXPECT_NE(SizeError("abc").find("no number"), std::string::npos);
  EXPECT_NE(SizeError("5M").find("unknown unit 'M'"), std::string::npos);  // ambiguous: say MiB or MB
  EXPECT_NE(SizeError("5 XB").find("unknown unit"), std::string::npos);
  EXPECT_NE(SizeError("0.1KiB").find("not a whole number of bytes"), std::string::npos);
  EXPECT_NE(SizeError("").find("empty"), std::string::npos);
  EXPECT_NE(SizeError("17179869184TiB").find("too large"), std::string::npos);
  EXPECT_NE(SizeError("18446744073709551616").find("too large"), std::string::npos);
  EXPECT_NE(SizeError("1.2.3MiB").find("unknown unit"), std::string::npos);
  // Every message lists the accepted units and quotes the input.
  const std::string message = SizeError("12 parsecs");
  EXPECT_NE(message.find("'12 parsecs'"), std::string::npos);
  EXPECT_NE(message.find("KiB, MiB, GiB"), std::string::npos);
}

TEST(FormatSize, ExactAndReadableAndRoundTrips) {
  EXPECT_EQ(FormatSize(64 * kMiB), "64MiB");
  EXPECT_EQ(FormatSize(2 * kGiB), "2GiB");
  EXPECT_EQ(FormatSize(1572864), "1.5MiB");
  EXPECT_EQ(FormatSize(1000), "1000B");
  EXPECT_EQ(FormatSize(1536), "1.5KiB");
  EXPECT_EQ(FormatSize(0), "0B");
  for (uint64_t bytes : {uint64_t{0}, uint64_t{1}, uint64_t{1023}, uint64_t{1025}, 3 * kMiB + 512,
                         5 * kGiB / 4, uint64_t{123456789}, UINT64_MAX}) {
    EXPECT_EQ(Size(FormatSize(bytes)), bytes) << FormatSize(bytes);
  }
}

TEST(ParseDurationValue, UnitsAndCompounds) {
  EXPECT_EQ(*ParseDurationValue("100ms"), absl::Milliseconds(100));
  EXPECT_EQ(*ParseDurationValue("5s"), absl::Seconds(5));
  EXPECT_EQ(*ParseDurationValue("1m"), absl::Minutes(1));
  EXPECT_EQ(*ParseDurationValue("1m30s"), absl::Seconds(90));
  EXPECT_EQ(*ParseDurationValue("1.5s"), absl::Milliseconds(1500));
  EXPECT_EQ(*ParseDurationValue("250us"), absl::Microseconds(250));
  EXPECT_EQ(*ParseDurationValue("2h"), absl::Hours(2));
  EXPECT_EQ(*ParseDurationValue("0"), absl::ZeroDuration());
  EXPECT_EQ(FormatDurationValue(absl::Milliseconds(10)), "10ms");
  EXPECT_EQ(FormatDurationValue(absl::Seconds(90)), "1m30s");
  EXPECT_EQ(FormatDurationValue(absl::ZeroDuration()), "0");
}

TEST(ParseDurationValue, Refusals) {
  const auto message = [](std::string_view text) {
    absl::StatusOr<absl::Duration> d = ParseDurationValue(text);
    EXPECT_FALSE(d.ok()) << text;
    return std::string(d.status().message());
  };
  EXPECT_NE(message("5").find("a unit is required"), std::string::npos);
  EXPECT_NE(message("-1s").find("must not be negative"), std::string::npos);
  EXPECT_NE(message("inf").find("must be finite"), std::string::npos);
  EXPECT_NE(message("soon").find("not understood"), std::string::npos);
  EXPECT_NE(message("5 days").find("ms, s, m, h"), std::string::npos);
}

TEST(ParseCount, DigitsOnly) {
  EXPECT_EQ(*ParseCount("0"), 0u);
  EXPECT_EQ(*ParseCount("100000"), 100000u);
  EXPECT_EQ(*ParseCount("18446744073709551615"), UINT64_MAX);
  EXPECT_NE(std::string(ParseCount("-1").status().message()).find("must not be negative"), std::string::npos);
  EXPECT_FALSE(ParseCount("1e5").ok());
  EXPECT_FALSE(ParseCount("12k").ok());
  EXPECT_FALSE(ParseCount("").ok());
  EXPECT_FALSE(ParseCount("18446744073709551616").ok());
}

}  // namespace
}  // namespace revkv::server::config
