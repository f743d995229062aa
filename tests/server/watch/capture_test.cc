// Event capture in the store: every committed write revision publishes its key changes, in apply order,
// with committed revisions and previous key-values, exactly once (retried attempts leave nothing).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "runtime/heap/heap.h"
#include "runtime/safepoint/safepoint.h"
#include "runtime/stm/stm.h"
#include "server/store/store.h"

namespace revkv::server {
namespace {

using watch::RevisionEvents;

class CaptureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    runtime::HeapOptions o;
    o.max_heap_bytes = size_t{1} << 30;
    runtime::InitializeRuntime(o);
    registration_.emplace("capture-test");
    // The whole history stays until compacted: RetriedAttemptsLeaveNoEvents reads back every revision of
    // up to 20 batches of 1,200, more than the default window of 10,000 revisions.
    StoreOptions options;
    options.history_revisions = 0;
    auto s = Store::Create(options, nullptr);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
  }
  void TearDown() override {
    store_.reset();
    registration_.reset();
  }

  int64_t Put(const std::string& k, const std::string& v) {
    etcdserverpb::PutRequest r;
    r.set_key(k);
    r.set_value(v);
    auto res = store_->Put(r);
    EXPECT_TRUE(res.ok()) << res.status();
    return res.ok() ? res->revision : 0;
  }
  std::shared_ptr<const RevisionEvents> At(int64_t revision) {
    std::vector<std::shared_ptr<const RevisionEvents>> out;
    EXPECT_TRUE(store_->events().Read(revision, revision, &out));
    EXPECT_EQ(out.size(), 1u);
    return out.empty() ? nullptr : out[0];
  }

  std::optional<runtime::ThreadRegistration> registration_;
  std::unique_ptr<Store> store_;
};

TEST_F(CaptureTest, PutRecordsTheNewKeyValueAndThePreviousOne) {
  const int64_t r1 = Put("a", "1");
  const int64_t r2 = Put("a", "2");
  ASSERT_EQ(store_->events().contiguous(), r2);
  auto first = At(r1);
  ASSERT_EQ(first->events.size(), 1u);
  const auto& e1 = first->events[0];
  EXPECT_FALSE(e1.is_delete);
  EXPECT_FALSE(e1.has_prev);
  EXPECT_EQ(e1.kv.key, "a");
  EXPECT_EQ(e1.kv.value, "1");
  EXPECT_EQ(e1.kv.create_revision, r1);
  EXPECT_EQ(e1.kv.mod_revision, r1);
  EXPECT_EQ(e1.kv.version, 1);
  auto second = At(r2);
  ASSERT_EQ(second->events.size(), 1u);
  const auto& e2 = second->events[0];
  EXPECT_EQ(e2.kv.value, "2");
  EXPECT_EQ(e2.kv.create_revision, r1);
  EXPECT_EQ(e2.kv.mod_revision, r2);
  EXPECT_EQ(e2.kv.version, 2);
  ASSERT_TRUE(e2.has_prev);
  EXPECT_EQ(e2.prev.value, "1");
  EXPECT_EQ(e2.prev.mod_revision, r1);
}

TEST_F(CaptureTest, IgnoreValueKeepsTheOldValueInTheEvent) {
  Put("a", "old");
  etcdserverpb::PutRequest r;
  r.set_key("a");
  r.set_ignore_value(true);
  auto res = store_->Put(r);
  ASSERT_TRUE(res.ok());
  auto b = At(res->revision);
  ASSERT_EQ(b->events.size(), 1u);
  EXPECT_EQ(b->events[0].kv.value, "old");
  EXPECT_EQ(b->events[0].kv.version, 2);
}

TEST_F(CaptureTest, DeleteRangeRecordsEveryErasedKeyWithItsValue) {
  Put("p/1", "x");
  Put("p/2", "y");
  Put("q", "z");
  etcdserverpb::DeleteRangeRequest d;
  d.set_key("p/");
  d.set_range_end("p0");
  auto res = store_->DeleteRange(d);  // without prev_kv: the history keeps the values anyway
  ASSERT_TRUE(res.ok());
  auto b = At(res->revision);
  ASSERT_EQ(b->events.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(b->events[i].is_delete);
    EXPECT_EQ(b->events[i].kv.mod_revision, res->revision);
    EXPECT_EQ(b->events[i].kv.create_revision, 0);
    ASSERT_TRUE(b->events[i].has_prev);
  }
  EXPECT_EQ(b->events[0].kv.key, "p/1");
  EXPECT_EQ(b->events[0].prev.value, "x");
  EXPECT_EQ(b->events[1].kv.key, "p/2");
  EXPECT_EQ(b->events[1].prev.value, "y");
}

TEST_F(CaptureTest, TxnRecordsNestedOperationsInApplyOrder) {
  Put("d", "gone");
  etcdserverpb::TxnRequest t;
  t.add_success()->mutable_request_put()->set_key("b");
  t.mutable_success(0)->mutable_request_put()->set_value("1");
  etcdserverpb::TxnRequest* inner = t.add_success()->mutable_request_txn();
  inner->add_success()->mutable_request_put()->set_key("a");
  inner->mutable_success(0)->mutable_request_put()->set_value("2");
  inner->add_success()->mutable_request_delete_range()->set_key("d");
  t.add_success()->mutable_request_put()->set_key("c");
  t.mutable_success(2)->mutable_request_put()->set_value("3");
  auto res = store_->Txn(t);
  ASSERT_TRUE(res.ok()) << res.status();
  auto b = At(res->revision);
  ASSERT_EQ(b->events.size(), 4u);
  EXPECT_EQ(b->events[0].kv.key, "b");
  EXPECT_EQ(b->events[1].kv.key, "a");
  EXPECT_EQ(b->events[2].kv.key, "d");
  EXPECT_TRUE(b->events[2].is_delete);
  EXPECT_EQ(b->events[3].kv.key, "c");
  for (const auto& e : b->events) EXPECT_EQ(e.kv.mod_revision, res->revision);
}

TEST_F(CaptureTest, AWriteThatChangesNothingPublishesNothing) {
  const int64_t r = Put("a", "1");
  etcdserverpb::DeleteRangeRequest d;
  d.set_key("missing");
  ASSERT_TRUE(store_->DeleteRange(d).ok());
  EXPECT_EQ(store_->events().contiguous(), r);
  EXPECT_EQ(store_->Revision(), r);
}

TEST_F(CaptureTest, ReplayPublishesTheHistoryAgain) {
  etcdserverpb::PutRequest p;
  p.set_key("k");
  p.set_value("v");
  std::string payload = "P" + p.SerializeAsString();
  ASSERT_TRUE(store_->Replay(2, payload).ok());
  auto b = At(2);
  ASSERT_EQ(b->events.size(), 1u);
  EXPECT_EQ(b->events[0].kv.key, "k");
}

// Writers conflict on one key, so attempts abort and rerun: every revision still holds exactly its
// own two events (a sink not cleared per attempt would hold the aborted attempts' events as well).
TEST_F(CaptureTest, RetriedAttemptsLeaveNoEvents) {
  const uint32_t seed = std::random_device{}();
  std::printf("seed %u\n", seed);
  const auto before = runtime::stm::GetStmStatistics();
  constexpr int kThreads = 4;
  constexpr int kPerThread = 300;
  // Conflicts need the writers to overlap; on a loaded machine one batch may run them one after the
  // other, so batches are repeated (up to 20) until some attempt was retried.
  int batches = 0;
  do {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        runtime::ThreadRegistration reg("writer");
        std::mt19937 rng(seed + t + 1000 * batches);
        for (int i = 0; i < kPerThread; ++i) {
          etcdserverpb::TxnRequest txn;
          // A key of this thread first (its event is captured), then the shared key, whose write
          // conflicts with the other writers and aborts the attempt after that capture.
          auto* own = txn.add_success()->mutable_request_put();
          own->set_key("t" + std::to_string(t));
          own->set_value(std::to_string(i));
          auto* shared = txn.add_success()->mutable_request_put();
          shared->set_key("shared");
          shared->set_value(std::to_string(rng()));
          auto r = store_->Txn(txn);
          ASSERT_TRUE(r.ok()) << r.status();
        }
      });
    }
    for (auto& th : threads) th.join();
    ++batches;
  } while (runtime::stm::GetStmStatistics().retries == before.retries && batches < 20);
  const auto after = runtime::stm::GetStmStatistics();
  ASSERT_GT(after.retries, before.retries)
      << "no attempt was retried in " << batches << " batches: the test proves nothing";
  const int64_t last = store_->Revision();
  ASSERT_EQ(store_->events().contiguous(), last);
  std::vector<std::shared_ptr<const RevisionEvents>> all;
  ASSERT_TRUE(store_->events().Read(2, last, &all));
  ASSERT_EQ(all.size(), static_cast<size_t>(batches * kThreads * kPerThread));
  for (const auto& b : all) {
    ASSERT_EQ(b->events.size(), 2u) << "revision " << b->revision << " (seed " << seed << ")";
    EXPECT_EQ(b->events[1].kv.key, "shared");
    EXPECT_EQ(b->events[0].kv.mod_revision, b->revision);
    EXPECT_EQ(b->events[1].kv.mod_revision, b->revision);
  }
}

TEST_F(CaptureTest, CompactionTrimsTheHistory) {
  for (int i = 0; i < 10; ++i) Put("k", std::to_string(i));
  etcdserverpb::CompactionRequest c;
  c.set_revision(6);
  ASSERT_TRUE(store_->Compact(c).ok());
  EXPECT_EQ(store_->events().first(), 6);
  std::vector<std::shared_ptr<const RevisionEvents>> out;
  EXPECT_FALSE(store_->events().Read(5, 6, &out));
  EXPECT_TRUE(store_->events().Read(6, 6, &out));
}

}  // namespace
}  // namespace revkv::server
