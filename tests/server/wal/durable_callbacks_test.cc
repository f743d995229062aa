// DurableCallbacks: many producers, one consumer; every callback runs once, in LSN order.
#include "server/wal/durable_callbacks.h"

#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/server/wal/test_util.h"

namespace revkv::server {
namespace {

TEST(DurableCallbacks, ConcurrentProducersAreRunOnceInLsnOrder) {
  const uint64_t seed = testing::TestSeed();
  DurableCallbacks callbacks;
  constexpr int kProducers = 4;
  constexpr int kPerProducer = 5000;
  constexpr WalLsn kMaxLsn = 1000;
  std::vector<WalLsn> ran;  // consumer only
  std::atomic<int> done_producers{0};
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      std::mt19937_64 rng(seed + static_cast<uint64_t>(p));
      for (int i = 0; i < kPerProducer; ++i) {
        auto* node = new DurableCallbackNode;
        node->lsn = 1 + rng() % kMaxLsn;
        node->callback = [&ran, lsn = node->lsn](absl::Status s) {
          EXPECT_TRUE(s.ok());
          ran.push_back(lsn);
        };
        callbacks.Push(node);
      }
      done_producers.fetch_add(1);
    });
  }
  // The consumer advances the durable LSN in steps while producers push.
  WalLsn durable = 0;
  size_t checked = 0;
  while (done_producers.load() < kProducers || !callbacks.QueueEmpty()) {
    callbacks.Collect();
    durable = std::min<WalLsn>(durable + 7, kMaxLsn);
    callbacks.Run(durable, absl::OkStatus());
    for (; checked < ran.size(); ++checked) ASSERT_LE(ran[checked], durable);
  }
  for (std::thread& t : producers) t.join();
  callbacks.Collect();
  callbacks.Run(kMaxLsn, absl::OkStatus());
  EXPECT_EQ(ran.size(), static_cast<size_t>(kProducers * kPerProducer));
  EXPECT_TRUE(callbacks.QueueEmpty());
}

TEST(DurableCallbacks, CallbacksPushedBeforeARunAreOrderedEvenWhenPushedOutOfOrder) {
  DurableCallbacks callbacks;
  std::vector<WalLsn> ran;
  for (WalLsn lsn : {5, 3, 9, 1, 3, 7}) {
    auto* node = new DurableCallbackNode;
    node->lsn = lsn;
    node->callback = [&ran, lsn](absl::Status) { ran.push_back(lsn); };
    callbacks.Push(node);
  }
  callbacks.Collect();
  EXPECT_EQ(callbacks.Run(4, absl::OkStatus()), 3u);
  EXPECT_EQ(ran, (std::vector<WalLsn>{1, 3, 3}));
  std::vector<absl::Status> statuses;
  EXPECT_EQ(callbacks.Run(5, absl::UnavailableError("gone")), 3u);  // 5 is durable, 7 and 9 fail
  EXPECT_EQ(ran, (std::vector<WalLsn>{1, 3, 3, 5, 7, 9}));
}

}  // namespace
}  // namespace revkv::server
