// The event history: out-of-order publication, the contiguous prefix, trimming, range reads.
#include "server/watch/event_log.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <random>
#include <thread>

namespace revkv::server::watch {
namespace {

std::vector<WatchEvent> OnePut(const std::string& key, int64_t revision) {
  std::vector<WatchEvent> v(1);
  v[0].kv.key = key;
  v[0].kv.value = "v";
  v[0].kv.mod_revision = revision;
  v[0].kv.create_revision = revision;
  v[0].kv.version = 1;
  return v;
}

TEST(EventLog, OutOfOrderPublicationsWaitForTheGap) {
  EventLog log(1);
  int listened = 0;
  log.SetListener([&] { ++listened; });
  log.Publish(3, OnePut("c", 3));
  log.Publish(4, OnePut("d", 4));
  EXPECT_EQ(log.contiguous(), 1);  // revision 2 is missing: nothing after it is readable
  std::vector<std::shared_ptr<const RevisionEvents>> out;
  ASSERT_TRUE(log.Read(2, 4, &out));
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(listened, 0);
  log.Publish(2, OnePut("b", 2));
  EXPECT_EQ(log.contiguous(), 4);
  EXPECT_EQ(listened, 1);
  ASSERT_TRUE(log.Read(2, 4, &out));
  ASSERT_EQ(out.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(out[i]->revision, 2 + i);
}

TEST(EventLog, ConcurrentPublishersInAnyOrderGiveEveryRevisionOnce) {
  const uint32_t seed = std::random_device{}();
  std::printf("seed %u\n", seed);
  constexpr int kRevisions = 20000;
  constexpr int kThreads = 4;
  std::vector<int64_t> order(kRevisions);
  for (int i = 0; i < kRevisions; ++i) order[i] = i + 1;
  std::mt19937 rng(seed);
  // Local shuffles only: a writer publishes shortly after its commit.
  for (int i = 0; i + 8 < kRevisions; i += 8) std::shuffle(order.begin() + i, order.begin() + i + 8, rng);
  EventLog log(0);
  std::atomic<size_t> next{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (size_t i; (i = next.fetch_add(1)) < order.size();) log.Publish(order[i], OnePut("k", order[i]));
    });
  }
  int64_t last_seen = 0;
  while (last_seen < kRevisions) {
    const int64_t c = log.contiguous();
    ASSERT_GE(c, last_seen) << "seed " << seed;
    last_seen = c;
  }
  for (auto& th : threads) th.join();
  std::vector<std::shared_ptr<const RevisionEvents>> out;
  ASSERT_TRUE(log.Read(1, kRevisions, &out));
  ASSERT_EQ(out.size(), static_cast<size_t>(kRevisions));
  for (int i = 0; i < kRevisions; ++i) ASSERT_EQ(out[i]->revision, i + 1) << "seed " << seed;
}

TEST(EventLog, TrimDropsOlderRevisionsAndReadsBelowThemFail) {
  EventLog log(0);
  for (int r = 1; r <= 10; ++r) log.Publish(r, OnePut("k", r));
  const size_t full = log.bytes();
  log.Trim(6);
  EXPECT_EQ(log.first(), 6);
  EXPECT_LT(log.bytes(), full);
  EXPECT_EQ(log.revisions(), 5u);
  std::vector<std::shared_ptr<const RevisionEvents>> out;
  EXPECT_FALSE(log.Read(5, 10, &out));
  EXPECT_TRUE(out.empty());
  ASSERT_TRUE(log.Read(6, 10, &out));
  EXPECT_EQ(out.size(), 5u);
  // Never past the contiguous prefix.
  log.Trim(100);
  EXPECT_EQ(log.first(), 11);
  log.Publish(11, OnePut("k", 11));
  out.clear();
  ASSERT_TRUE(log.Read(11, 11, &out));
  EXPECT_EQ(out.size(), 1u);
}

TEST(EventLog, AHoldKeepsUndispatchedRevisionsUntilItMoves) {
  EventLog log(0);
  for (int r = 1; r <= 10; ++r) log.Publish(r, OnePut("k", r));
  log.SetHold(4);
  log.Trim(8);
  EXPECT_EQ(log.first(), 4);
  log.SetHold(7);  // the earlier Trim applies as far as the hold allows
  EXPECT_EQ(log.first(), 7);
  log.SetHold(0);
  EXPECT_EQ(log.first(), 8);
}

TEST(EventLog, ReadRangeReturnsOnlyKeysInTheRange) {
  EventLog log(0);
  log.Publish(1, OnePut("a", 1));
  log.Publish(2, OnePut("b/1", 2));
  log.Publish(3, OnePut("b/2", 3));
  log.Publish(4, OnePut("c", 4));
  store::KeyRange prefix;
  prefix.begin = "b/";
  prefix.end = "b0";
  std::vector<WatchEvent> out;
  ASSERT_TRUE(log.ReadRange(1, 4, prefix, &out));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].kv.key, "b/1");
  EXPECT_EQ(out[1].kv.key, "b/2");
  store::KeyRange from;
  from.begin = "b/2";
  out.clear();
  ASSERT_TRUE(log.ReadRange(1, 4, from, &out));
  EXPECT_EQ(out.size(), 2u);
}

}  // namespace
}  // namespace revkv::server::watch
