// Nothing un-durable is visible: with the log's disk stalled, a write that has committed in memory but
// whose record is not durable must not show in any answer — not in a Range, a read-only Txn, the
// store's revision, a Compact, nor in the answer of a write that changed nothing (which must wait for
// the log instead). Once the disk moves again, everything shows.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>

#include "runtime/heap/heap.h"
#include "runtime/safepoint/safepoint.h"
#include "server/store/errors.h"
#include "server/store/store.h"
#include "server/wal/fault_injecting_file_system.h"
#include "server/wal/wal.h"
#include "tests/server/store/logged_store_test_base.h"

namespace revkv::server {
namespace {

class ReadVisibilityTest : public LoggedStoreTestBase {
 protected:
  void SetUp() override {
    WalOptions wo;
    wo.file_system = &fs_;
    wo.fsync_mode = FsyncMode::kAlways;
    OpenStore("visibility-test", wo);
  }
  void TearDown() override {
    fs_.ResumeWrites();
    if (writer_.joinable()) writer_.join();  // a failed assertion may have left it waiting
    CloseStore();
  }

  // A Put that waits for its record, as the server acknowledges it; returns its revision.
  int64_t DurablePut(const std::string& k, const std::string& v) {
    etcdserverpb::PutRequest r;
    r.set_key(k);
    r.set_value(v);
    auto res = store_->Put(r);
    EXPECT_TRUE(res.ok()) << res.status();
    if (!res.ok()) return 0;
    EXPECT_TRUE(store_->WaitDurable(res->lsn).ok());
    return res->response.header().revision();
  }
  etcdserverpb::RangeResponse Get(const std::string& k, int64_t rev = 0) {
    etcdserverpb::RangeRequest r;
    r.set_key(k);
    r.set_revision(rev);
    auto res = store_->Range(r);
    EXPECT_TRUE(res.ok()) << res.status();
    return res.ok() ? *res : etcdserverpb::RangeResponse();
  }

  // Starts a Put of k=v on another thread that commits and then waits for its record (the disk is
  // stalled, so it waits until ResumeWrites); returns once the write has committed in memory.
  void StartUndurablePut(const std::string& k, const std::string& v) {
    const WalLsn before = wal_->appended_lsn();
    writer_ = std::thread([this, k, v] {
      runtime::ThreadRegistration reg("visibility-writer");
      etcdserverpb::PutRequest r;
      r.set_key(k);
      r.set_value(v);
      auto res = store_->Put(r);
      ASSERT_TRUE(res.ok()) << res.status();
      writer_revision_.store(res->response.header().revision());
      EXPECT_TRUE(store_->WaitDurable(res->lsn).ok());
    });
    // The record is appended inside the commit: once its LSN shows, the write is committed (or is
    // within a few instructions of it; wait for the writer's own answer to be sure).
    while (wal_->appended_lsn() == before || writer_revision_.load() == 0) {
      runtime::SafeRegion idle;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  void FinishUndurablePut() {
    fs_.ResumeWrites();
    writer_.join();
  }

  FaultInjectingFileSystem fs_{DefaultFileSystem()};
  std::thread writer_;
  std::atomic<int64_t> writer_revision_{0};
};

TEST_F(ReadVisibilityTest, ARangeDoesNotSeeAWriteWhoseRecordIsNotDurable) {
  const int64_t r1 = DurablePut("k", "v1");
  fs_.PauseWrites(dir_);
  StartUndurablePut("k", "v2");
  EXPECT_EQ(writer_revision_.load(), r1 + 1);

  const etcdserverpb::RangeResponse seen = Get("k");
  ASSERT_EQ(seen.kvs_size(), 1);
  EXPECT_EQ(seen.kvs(0).value(), "v1") << "a Range showed a value whose record is not durable";
  EXPECT_EQ(seen.header().revision(), r1) << "a Range's header named a revision that is not durable";
  EXPECT_EQ(store_->VisibleRevision(), r1);
  EXPECT_EQ(store_->Revision(), r1 + 1);  // checkpoints and recovery still know the newest commit
  // The not-yet-durable revision is "future" to a reader, as it would be after a crash.
  etcdserverpb::RangeRequest at;
  at.set_key("k");
  at.set_revision(r1 + 1);
  EXPECT_EQ(store_->Range(at).status().code(), errors::FutureRevision().code());

  FinishUndurablePut();
  const etcdserverpb::RangeResponse after = Get("k");
  ASSERT_EQ(after.kvs_size(), 1);
  EXPECT_EQ(after.kvs(0).value(), "v2");
  EXPECT_EQ(after.header().revision(), r1 + 1);
}

TEST_F(ReadVisibilityTest, AReadOnlyTxnDoesNotSeeAWriteWhoseRecordIsNotDurable) {
  const int64_t r1 = DurablePut("k", "v1");
  fs_.PauseWrites(dir_);
  StartUndurablePut("k", "v2");

  etcdserverpb::TxnRequest txn;
  etcdserverpb::Compare* c = txn.add_compare();
  c->set_key("k");
  c->set_target(etcdserverpb::Compare::VALUE);
  c->set_result(etcdserverpb::Compare::EQUAL);
  c->set_value("v2");
  txn.add_success()->mutable_request_range()->set_key("k");
  txn.add_failure()->mutable_request_range()->set_key("k");
  auto res = store_->Txn(txn);
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_FALSE(res->response.succeeded()) << "a compare saw a value whose record is not durable";
  ASSERT_EQ(res->response.responses_size(), 1);
  const etcdserverpb::RangeResponse& range = res->response.responses(0).response_range();
  ASSERT_EQ(range.kvs_size(), 1);
  EXPECT_EQ(range.kvs(0).value(), "v1");
  EXPECT_EQ(res->response.header().revision(), r1);
  EXPECT_EQ(res->wait_lsn, 0u);  // answered from a durable state: nothing to wait for

  FinishUndurablePut();
}

// A Pipeline stream reads its own earlier writes, so it reads the newest state; then its answer waits.
TEST_F(ReadVisibilityTest, AReadOnlyTxnOfTheNewestStateWaitsForItsRecords) {
  const int64_t r1 = DurablePut("k", "v1");
  fs_.PauseWrites(dir_);
  StartUndurablePut("k", "v2");

  etcdserverpb::TxnRequest txn;
  txn.add_success()->mutable_request_range()->set_key("k");
  auto res = store_->Txn(txn, TxnReads::kNewest);
  ASSERT_TRUE(res.ok()) << res.status();
  const etcdserverpb::RangeResponse& range = res->response.responses(0).response_range();
  ASSERT_EQ(range.kvs_size(), 1);
  EXPECT_EQ(range.kvs(0).value(), "v2");
  EXPECT_EQ(res->response.header().revision(), r1 + 1);
  EXPECT_EQ(res->lsn, 0u);  // it wrote nothing
  ASSERT_NE(res->wait_lsn, 0u) << "an answer from a state that is not durable does not wait for it";
  EXPECT_LT(wal_->durable_lsn(), res->wait_lsn);

  FinishUndurablePut();
  EXPECT_TRUE(store_->WaitDurable(res->wait_lsn).ok());
  EXPECT_GE(wal_->durable_revision(), r1 + 1);
}

TEST_F(ReadVisibilityTest, AWriteThatChangedNothingWaitsForTheRevisionItRead) {
  const int64_t r1 = DurablePut("k", "v1");
  fs_.PauseWrites(dir_);
  StartUndurablePut("k", "v2");

  // Deletes nothing, but reads the newest state (revision r1 + 1): its answer must wait for that
  // revision's record, like the write that made it.
  etcdserverpb::DeleteRangeRequest del;
  del.set_key("missing");
  auto res = store_->DeleteRange(del);
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_EQ(res->response.deleted(), 0);
  EXPECT_EQ(res->revision, r1 + 1);
  EXPECT_EQ(res->lsn, 0u);  // it wrote nothing: no record of its own
  ASSERT_NE(res->wait_lsn, 0u) << "a write that changed nothing answers at once from a revision not durable";
  EXPECT_LT(wal_->durable_lsn(), res->wait_lsn);

  // The same for a Txn that may write but whose taken branch only reads.
  etcdserverpb::TxnRequest txn;
  etcdserverpb::Compare* c = txn.add_compare();
  c->set_key("k");
  c->set_target(etcdserverpb::Compare::VALUE);
  c->set_result(etcdserverpb::Compare::EQUAL);
  c->set_value("v2");
  txn.add_success()->mutable_request_range()->set_key("k");
  etcdserverpb::PutRequest* put = txn.add_failure()->mutable_request_put();
  put->set_key("other");
  put->set_value("x");
  auto t = store_->Txn(txn);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(t->response.succeeded());
  EXPECT_EQ(t->revision, r1 + 1);
  EXPECT_EQ(t->lsn, 0u);
  ASSERT_NE(t->wait_lsn, 0u)
      << "a Txn whose taken branch only read answers at once from a revision not durable";

  FinishUndurablePut();
  EXPECT_TRUE(store_->WaitDurable(res->wait_lsn).ok());
  EXPECT_TRUE(store_->WaitDurable(t->wait_lsn).ok());
  EXPECT_GE(wal_->durable_revision(), r1 + 1);
}

TEST_F(ReadVisibilityTest, ACompactCannotNameARevisionThatIsNotDurable) {
  const int64_t r1 = DurablePut("k", "v1");
  fs_.PauseWrites(dir_);
  StartUndurablePut("k", "v2");

  etcdserverpb::CompactionRequest compact;
  compact.set_revision(r1 + 1);
  EXPECT_EQ(store_->Compact(compact).status().code(), errors::FutureRevision().code());
  compact.set_revision(r1);
  auto done = store_->Compact(compact);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->header().revision(), r1);
  EXPECT_EQ(Get("k").kvs(0).value(), "v1");  // the durable revision stays readable after the compaction

  FinishUndurablePut();
  EXPECT_EQ(Get("k").kvs(0).value(), "v2");
}

TEST_F(ReadVisibilityTest, AnIdleLogAddsNoWait) {
  DurablePut("k", "v1");
  etcdserverpb::DeleteRangeRequest del;
  del.set_key("missing");
  auto res = store_->DeleteRange(del);
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_EQ(res->wait_lsn, 0u) << "every revision is durable: a write that changed nothing answers at once";
  EXPECT_EQ(Get("k").header().revision(), store_->VisibleRevision());
}

}  // namespace
}  // namespace revkv::server
