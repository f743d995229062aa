// Keys, key choice (uniform and Zipfian) and balance values.
#include "clients/bench/key_space.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "clients/bench/balance.h"

namespace revkv::client {
namespace {

TEST(KeySpace, KeysAreFixedSizeAndSortLikeTheirIndexes) {
  absl::StatusOr<KeySpace> keys = KeySpace::Create("bench/", 16, 10000);
  ASSERT_TRUE(keys.ok()) << keys.status();
  EXPECT_EQ(keys->Key(42), "bench/0000000042");
  EXPECT_EQ(keys->Key(10000), "bench/0000010000");
  std::string reused = "something much longer than a key";
  keys->Format(7, &reused);
  EXPECT_EQ(reused, "bench/0000000007");
  EXPECT_LT(keys->Key(9), keys->Key(10));
  EXPECT_EQ(keys->PrefixEnd(), "bench0");
  EXPECT_LT(keys->Key(9999), keys->PrefixEnd());
}

TEST(KeySpace, RejectsKeysTooShortForTheirIndexes) {
  EXPECT_FALSE(KeySpace::Create("bench/", 9, 10000).ok());  // "bench/" + 5 digits for the end bound
  EXPECT_TRUE(KeySpace::Create("bench/", 11, 10000).ok());
  EXPECT_FALSE(KeySpace::Create("k", 16, 0).ok());
}

TEST(KeyChooser, UniformCoversTheSpaceEvenly) {
  KeyChooser chooser = KeyChooser::Uniform(10);
  Rng rng(1);
  std::vector<int> hits(10, 0);
  for (int i = 0; i < 100000; ++i) ++hits[chooser.Next(rng)];
  for (int h : hits) EXPECT_NEAR(h, 10000, 600);
}

TEST(KeyChooser, ZipfianFavoursLowIndexesByTheExponent) {
  absl::StatusOr<ZipfianDistribution> zipf = ZipfianDistribution::Create(1000, 0.99);
  ASSERT_TRUE(zipf.ok());
  KeyChooser chooser = KeyChooser::Zipfian(*zipf);
  Rng rng(3);
  std::vector<int> hits(1000, 0);
  const int draws = 200000;
  for (int i = 0; i < draws; ++i) {
    const uint64_t index = chooser.Next(rng);
    ASSERT_LT(index, 1000u);
    ++hits[index];
  }
  // P(0) = 1 / zeta(1000, 0.99), about 0.13; P(1) / P(0) = 2^-0.99.
  double zeta = 0;
  for (int i = 1; i <= 1000; ++i) zeta += std::pow(i, -0.99);
  EXPECT_NEAR(hits[0] / static_cast<double>(draws), 1 / zeta, 0.005);
  EXPECT_NEAR(hits[1] / static_cast<double>(hits[0]), 0.503, 0.03);
  EXPECT_GT(hits[0], 50 * hits[999] + 1);
}

TEST(ZipfianDistribution, RejectsExponentsOutsideZeroToOne) {
  EXPECT_FALSE(ZipfianDistribution::Create(10, 1.0).ok());
  EXPECT_FALSE(ZipfianDistribution::Create(10, 0.0).ok());
  EXPECT_FALSE(ZipfianDistribution::Create(0, 0.5).ok());
  absl::StatusOr<ZipfianDistribution> one = ZipfianDistribution::Create(1, 0.5);
  ASSERT_TRUE(one.ok());
  Rng rng(1);
  EXPECT_EQ(one->Next(rng), 0u);
}

TEST(Balance, RoundTripsPaddedToTheValueSize) {
  std::string value;
  for (int64_t balance : {int64_t{0}, int64_t{1000}, int64_t{-17}, INT64_MAX, INT64_MIN}) {
    EncodeBalance(balance, 100, &value);
    EXPECT_EQ(value.size(), 100u);
    EXPECT_EQ(DecodeBalance(value), balance);
  }
  EncodeBalance(123456, 3, &value);
  EXPECT_EQ(value, "123456");
  EXPECT_EQ(DecodeBalance(""), 0);
  EXPECT_EQ(DecodeBalance("garbage"), 0);
}

}  // namespace
}  // namespace revkv::client
