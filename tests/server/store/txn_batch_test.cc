// Store::TxnBatch, the store side of revkv.v1.KV/PipelineBatch, over a real log:
//
// - The batch wakes the log's flusher once, after its last write, and names the newest record of the
//   batch as the one to wait for; its writes are one revision each, in order. (Fails if each write
//   wakes the flusher, or if the batch's wait_lsn is not its newest record.)
// - A batch whose records do not fit the log buffer does not stall: it wakes the flusher before its
//   un-flushed records fill an eighth of the buffer, so a Reserve never waits for space that only a
//   sleeping flusher could free. (Fails without that early wake-up: each full buffer then waits for the
//   flusher's one-second backstop.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "runtime/heap/heap.h"
#include "runtime/safepoint/safepoint.h"
#include "server/store/store.h"
#include "server/wal/wal.h"
#include "tests/server/store/logged_store_test_base.h"

namespace revkv::server {
namespace {

using Results = std::vector<absl::StatusOr<WriteResult<etcdserverpb::TxnResponse>>>;

class TxnBatchTest : public LoggedStoreTestBase {
 protected:
  void SetUp() override {
    WalOptions wo;
    wo.fsync_mode = FsyncMode::kAlways;
    wo.buffer_bytes = kBufferBytes;
    OpenStore("txn-batch-test", wo);
  }
  void TearDown() override { CloseStore(); }

  static constexpr size_t kBufferBytes = 64 * 1024;

  static google::protobuf::RepeatedPtrField<etcdserverpb::TxnRequest> Puts(int n, size_t value_bytes) {
    google::protobuf::RepeatedPtrField<etcdserverpb::TxnRequest> requests;
    for (int i = 0; i < n; ++i) {
      etcdserverpb::PutRequest* put = requests.Add()->add_success()->mutable_request_put();
      put->set_key("k/" + std::to_string(i));
      put->set_value(std::string(value_bytes, 'v'));
    }
    return requests;
  }
};

TEST_F(TxnBatchTest, ABatchWakesTheFlusherOnceAndWaitsForItsNewestRecord) {
  auto requests = Puts(16, 10);
  etcdserverpb::RangeRequest* read = requests.Add()->add_success()->mutable_request_range();
  read->set_key("k/3");
  const uint64_t wakeups_before = wal_->stats().notifies;
  const int64_t revision_before = store_->Revision();
  Results results;
  uint64_t wait_lsn = 0;
  store_->TxnBatch(requests, nullptr, &results, &wait_lsn);
  EXPECT_EQ(wal_->stats().notifies - wakeups_before, 1u) << "each write of the batch woke the flusher";
  ASSERT_EQ(results.size(), 17u);
  for (size_t i = 0; i < 16; ++i) {
    ASSERT_TRUE(results[i].ok()) << results[i].status();
    EXPECT_EQ(results[i]->revision, revision_before + 1 + static_cast<int64_t>(i));
  }
  ASSERT_TRUE(results[16].ok()) << results[16].status();
  ASSERT_EQ(results[16]->response.responses(0).response_range().kvs_size(), 1);  // sees the batch's write
  EXPECT_EQ(wait_lsn, wal_->appended_lsn());
  EXPECT_EQ(wait_lsn, results[15]->lsn);
  EXPECT_TRUE(store_->WaitDurable(wait_lsn).ok());
}

TEST_F(TxnBatchTest, ABatchLargerThanTheLogBufferDoesNotWaitForTheFlushersBackstop) {
  // 64 records of about 4 KiB: four times the buffer.
  const auto requests = Puts(64, 4096);
  Results results;
  uint64_t wait_lsn = 0;
  const auto start = std::chrono::steady_clock::now();
  store_->TxnBatch(requests, nullptr, &results, &wait_lsn);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(results.size(), 64u);
  for (const auto& r : results) ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(store_->WaitDurable(wait_lsn).ok());
  // With the early wake-ups it takes milliseconds; without, about a second per buffer's worth.
  EXPECT_LT(took, std::chrono::milliseconds(900))
      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
      << " ms: the batch waited for log buffer space the sleeping flusher did not free";
}

}  // namespace
}  // namespace revkv::server
