// Token-bucket pacing: the rate holds, an idle bucket banks at most `burst` tokens.
#include "clients/bench/token_bucket.h"

#include <gtest/gtest.h>

namespace revkv::client {
namespace {

using Clock = TokenBucket::Clock;
using std::chrono::milliseconds;

TEST(TokenBucket, StartsEmptyAndSpacesTokensByTheRate) {
  const Clock::time_point start = Clock::now();
  TokenBucket bucket(1000, 10, start);  // one token per millisecond
  EXPECT_EQ(bucket.Reserve(start), start);
  EXPECT_EQ(bucket.Reserve(start), start + milliseconds(1));
  EXPECT_EQ(bucket.Reserve(start), start + milliseconds(2));
}

TEST(TokenBucket, ReservationsFarInTheFutureKeepTheAverageRate) {
  const Clock::time_point start = Clock::now();
  TokenBucket bucket(2000, 16, start);
  Clock::time_point last;
  for (int i = 0; i < 4000; ++i) last = bucket.Reserve(start);
  // 4000 tokens at 2000/s: the last one is due 1999.5 ms after the first.
  EXPECT_NEAR(std::chrono::duration<double>(last - start).count(), 1.9995, 1e-6);
}

TEST(TokenBucket, AnIdleBucketBanksAtMostBurstTokens) {
  const Clock::time_point start = Clock::now();
  TokenBucket bucket(1000, 5, start);
  const Clock::time_point later = start + milliseconds(100);  // idle for 100 tokens' worth
  int immediate = 0;
  while (bucket.Reserve(later) <= later) ++immediate;
  EXPECT_EQ(immediate, 5);
}

}  // namespace
}  // namespace revkv::client
