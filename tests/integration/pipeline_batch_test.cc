// revkv.v1.KV/PipelineBatch against a real revkv-server:
//
// - batches are answered in order, one result per request in request order, each write one revision
//   after the previous one and each read seeing every earlier write of the stream, the empty batch with
//   no results;
// - each request keeps its own Txn semantics: a failing compare takes its failure branch and leaves the
//   other requests of the batch alone;
// - a bad request (a read of a compacted revision, a request over --max-request-bytes, an empty key) is
//   answered with the status a unary Txn gets, takes no revision and changes nothing, and the others
//   of its batch are applied;
// - a batch over the size limit ends the stream with INVALID_ARGUMENT after the earlier answers, and
//   none of it (nor anything sent after it) is executed;
// - a batch's writes are coalesced: the log's flusher is woken once per batch, not once per write, and
//   so the batch's records share their write and fsync (metrics);
// - a client that goes away while its batches' writes wait for the log leaves the server running, with
//   nothing left in flight, and every write it executed durable and visible, across a SIGKILL.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "revkv/v1/kv.grpc.pb.h"
#include "tests/integration/etcd_calls.h"
#include "tests/integration/prometheus_scrape.h"
#include "tests/integration/server_process.h"

namespace revkv::integration {
namespace {

using etcdserverpb::Compare;
using etcdserverpb::TxnRequest;
using etcdserverpb::TxnResponse;
using revkv::v1::TxnBatch;
using revkv::v1::TxnBatchResponse;
using revkv::v1::TxnResult;

constexpr int kMaxBatchRequests = 1024;  // server/rpc/pipeline.h
constexpr int kMaxRequestBytes = 4096;   // the servers here run with --max-request-bytes=4096

using StreamResult = ::revkv::integration::StreamResult<TxnBatchResponse>;

// Sends every batch on one PipelineBatch stream from a writer thread while this thread reads answers.
StreamResult RunBatches(::revkv::v1::KV::Stub* stub, const std::vector<TxnBatch>& batches) {
  return RunStream<TxnBatchResponse>([stub](grpc::ClientContext* c) { return stub->PipelineBatch(c); },
                                     batches);
}

TxnRequest RangeTxn(const std::string& key, int64_t revision = 0) {
  TxnRequest t;
  *t.add_success() = OpOf(RangeOf(key, "", revision));
  return t;
}

TxnBatch BatchOf(std::vector<TxnRequest> requests) {
  TxnBatch b;
  for (TxnRequest& r : requests) *b.add_requests() = std::move(r);
  return b;
}

// The value the result's first Range read ("" for no key), or nullopt if it holds no Range answer.
std::optional<std::string> ReadOf(const TxnResult& r) {
  for (const auto& op : r.response().responses()) {
    if (op.has_response_range()) {
      return op.response_range().kvs_size() == 0 ? "" : op.response_range().kvs(0).value();
    }
  }
  return std::nullopt;
}

::testing::AssertionResult IsError(const TxnResult& r, grpc::StatusCode code, const std::string& message) {
  if (!r.has_error()) return ::testing::AssertionFailure() << "a response: " << r.ShortDebugString();
  return HasStatus(grpc::Status(static_cast<grpc::StatusCode>(r.error().code()), r.error().message()), code,
                   message);
}

class PipelineBatch : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start());
    channel_ = server_.NewChannel();
    pipeline_ = ::revkv::v1::KV::NewStub(channel_);
    kv_ = etcdserverpb::KV::NewStub(channel_);
  }

  int64_t CurrentRevision() {
    return Call(kv_.get(), &etcdserverpb::KV::Stub::Range, RangeOf("any")).response.header().revision();
  }

  ServerProcess server_{
      ServerOptions{.extra_flags = {"--max-request-bytes=" + std::to_string(kMaxRequestBytes), "--workers=1",
                                    "--fsync=always"}}};
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<::revkv::v1::KV::Stub> pipeline_;
  std::unique_ptr<etcdserverpb::KV::Stub> kv_;
};

TEST_F(PipelineBatch, BatchesAreAnsweredInOrderOneResultPerRequestWithConsecutiveRevisions) {
  // Batches of 1, 0, 16, 64 and 300 requests: a put of a key, then a read of it, alternately; a read
  // sees the put just before it, in the same batch or the previous one.
  std::vector<TxnBatch> batches;
  std::vector<int> sizes = {1, 0, 16, 64, 300};
  int n = 0;
  for (int size : sizes) {
    TxnBatch b;
    for (int i = 0; i < size; ++i, ++n) {
      const std::string key = "k/" + std::to_string(n / 2 % 20);
      *b.add_requests() = n % 2 == 0 ? PutTxn(key, "v" + std::to_string(n)) : RangeTxn(key);
    }
    batches.push_back(std::move(b));
  }
  const int64_t start = CurrentRevision();

  const StreamResult result = RunBatches(pipeline_.get(), batches);
  ASSERT_TRUE(IsOk(result.status));
  ASSERT_EQ(result.responses.size(), sizes.size());
  int64_t revision = start;
  n = 0;
  for (size_t b = 0; b < sizes.size(); ++b) {
    const TxnBatchResponse& response = result.responses[b];
    ASSERT_EQ(response.results_size(), sizes[b]) << "batch " << b;
    for (int i = 0; i < sizes[b]; ++i, ++n) {
      const TxnResult& r = response.results(i);
      ASSERT_TRUE(r.has_response()) << "batch " << b << " request " << i << ": " << r.ShortDebugString();
      EXPECT_TRUE(r.response().succeeded());
      if (n % 2 == 0) {
        EXPECT_TRUE(HeaderAt(r.response().header(), ++revision)) << "batch " << b << " request " << i;
      } else {
        EXPECT_TRUE(HeaderAt(r.response().header(), revision)) << "batch " << b << " request " << i;
        EXPECT_EQ(ReadOf(r), "v" + std::to_string(n - 1)) << "batch " << b << " request " << i;
      }
    }
  }
  EXPECT_EQ(CurrentRevision(), revision);
}

TEST_F(PipelineBatch, AFailingCompareTakesItsFailureBranchAndLeavesTheOthersAlone) {
  ASSERT_TRUE(IsOk(Call(kv_.get(), &etcdserverpb::KV::Stub::Put, PutOf("cas", "old")).status));
  const int64_t start = CurrentRevision();
  TxnRequest failing;  // compares a value the key does not hold
  *failing.add_compare() = CompareValue("cas", Compare::EQUAL, "not-this");
  *failing.add_success() = OpOf(PutOf("cas", "swapped"));
  *failing.add_failure() = OpOf(RangeOf("cas"));
  TxnRequest holding;  // compares the value it holds
  *holding.add_compare() = CompareValue("cas", Compare::EQUAL, "old");
  *holding.add_success() = OpOf(PutOf("cas", "new"));

  const StreamResult result =
      RunBatches(pipeline_.get(), {BatchOf({PutTxn("a", "1"), failing, PutTxn("b", "2"), holding})});
  ASSERT_TRUE(IsOk(result.status));
  ASSERT_EQ(result.responses.size(), 1u);
  const TxnBatchResponse& r = result.responses[0];
  ASSERT_EQ(r.results_size(), 4);
  EXPECT_TRUE(HeaderAt(r.results(0).response().header(), start + 1));
  EXPECT_FALSE(r.results(1).response().succeeded());
  EXPECT_TRUE(HeaderAt(r.results(1).response().header(), start + 1));
  EXPECT_EQ(ReadOf(r.results(1)), "old");
  EXPECT_TRUE(HeaderAt(r.results(2).response().header(), start + 2));
  EXPECT_TRUE(r.results(3).response().succeeded());
  EXPECT_TRUE(HeaderAt(r.results(3).response().header(), start + 3));
  auto cas = Call(kv_.get(), &etcdserverpb::KV::Stub::Range, RangeOf("cas"));
  ASSERT_EQ(cas.response.kvs_size(), 1);
  EXPECT_EQ(cas.response.kvs(0).value(), "new");
  EXPECT_EQ(Call(kv_.get(), &etcdserverpb::KV::Stub::Range, RangeOf("a")).response.kvs_size(), 1);
  EXPECT_EQ(Call(kv_.get(), &etcdserverpb::KV::Stub::Range, RangeOf("b")).response.kvs_size(), 1);
}

TEST_F(PipelineBatch, ABadRequestGetsTheStatusAUnaryTxnGetsAndChangesNothing) {
  // History to compact: revisions 2..11, then compact to 8.
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(IsOk(Call(kv_.get(), &etcdserverpb::KV::Stub::Put, PutOf("h", std::to_string(i))).status));
  }
  etcdserverpb::CompactionRequest compact;
  compact.set_revision(8);
  ASSERT_TRUE(IsOk(Call(kv_.get(), &etcdserverpb::KV::Stub::Compact, compact).status));
  const int64_t start = CurrentRevision();

  TxnRequest compacted = RangeTxn("h", 3);
  *compacted.add_success() = OpOf(PutOf("compacted-put", "x"));  // a write in the same Txn: not applied
  const TxnRequest too_large = PutTxn("large", std::string(kMaxRequestBytes, 'x'));
  const TxnRequest empty_key = PutTxn("", "x");
  struct Case {
    std::string name;
    TxnRequest request;
    grpc::StatusCode code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"compacted revision", compacted, grpc::StatusCode::OUT_OF_RANGE,
       "etcdserver: mvcc: required revision has been compacted"},
      {"too large", too_large, grpc::StatusCode::INVALID_ARGUMENT, "etcdserver: request is too large"},
      {"empty key", empty_key, grpc::StatusCode::INVALID_ARGUMENT, "etcdserver: key is not provided"},
  };
  // A unary Txn gets exactly that status (the batch answers as etcd's Txn would).
  for (const Case& c : cases) {
    EXPECT_TRUE(HasStatus(Call(kv_.get(), &etcdserverpb::KV::Stub::Txn, c.request).status, c.code, c.message))
        << c.name;
  }
  ASSERT_EQ(CurrentRevision(), start);

  TxnBatch batch;
  *batch.add_requests() = PutTxn("before", "1");
  for (const Case& c : cases) *batch.add_requests() = c.request;
  *batch.add_requests() = PutTxn("after", "2");
  const StreamResult result = RunBatches(pipeline_.get(), {batch});
  ASSERT_TRUE(IsOk(result.status)) << "a bad request fails alone, not the stream";
  ASSERT_EQ(result.responses.size(), 1u);
  const TxnBatchResponse& r = result.responses[0];
  ASSERT_EQ(r.results_size(), static_cast<int>(cases.size()) + 2);
  EXPECT_TRUE(HeaderAt(r.results(0).response().header(), start + 1));
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_TRUE(IsError(r.results(static_cast<int>(i) + 1), cases[i].code, cases[i].message))
        << cases[i].name;
  }
  // The bad requests took no revision: the last write is the one right after the first.
  EXPECT_TRUE(HeaderAt(r.results(static_cast<int>(cases.size()) + 1).response().header(), start + 2));
  EXPECT_EQ(CurrentRevision(), start + 2);
  for (const char* key : {"compacted-put", "large"}) {
    EXPECT_EQ(Call(kv_.get(), &etcdserverpb::KV::Stub::Range, RangeOf(key)).response.kvs_size(), 0) << key;
  }
}

TEST_F(PipelineBatch, TheEmptyBatchIsAnsweredWithNoResultsInItsPlace) {
  const int64_t start = CurrentRevision();
  const StreamResult result = RunBatches(
      pipeline_.get(), {TxnBatch(), BatchOf({PutTxn("x", "1")}), TxnBatch(), BatchOf({RangeTxn("x")})});
  ASSERT_TRUE(IsOk(result.status));
  ASSERT_EQ(result.responses.size(), 4u);
  EXPECT_EQ(result.responses[0].results_size(), 0);
  ASSERT_EQ(result.responses[1].results_size(), 1);
  EXPECT_TRUE(HeaderAt(result.responses[1].results(0).response().header(), start + 1));
  EXPECT_EQ(result.responses[2].results_size(), 0);
  ASSERT_EQ(result.responses[3].results_size(), 1);
  EXPECT_EQ(ReadOf(result.responses[3].results(0)), "1");
}

TEST_F(PipelineBatch, ABatchOverTheLimitEndsTheStreamAfterTheEarlierAnswersAndNothingOfItIsExecuted) {
  const int64_t start = CurrentRevision();
  TxnBatch too_many;
  for (int i = 0; i <= kMaxBatchRequests; ++i)
    *too_many.add_requests() = PutTxn("over/" + std::to_string(i), "x");
  TxnBatch at_limit;
  for (int i = 0; i < kMaxBatchRequests; ++i)
    *at_limit.add_requests() = PutTxn("at/" + std::to_string(i), "x");

  const StreamResult result =
      RunBatches(pipeline_.get(), {at_limit, too_many, BatchOf({PutTxn("later", "x")})});
  EXPECT_TRUE(HasStatus(result.status, grpc::StatusCode::INVALID_ARGUMENT,
                        "revkv: a batch holds at most 1024 requests; this one holds 1025"));
  ASSERT_EQ(result.responses.size(), 1u) << "the batch at the limit is answered, then the stream ends";
  EXPECT_EQ(result.responses[0].results_size(), kMaxBatchRequests);
  auto over = Call(kv_.get(), &etcdserverpb::KV::Stub::Range, RangeOf("over/", PrefixEnd("over/")));
  ASSERT_TRUE(IsOk(over.status));
  EXPECT_EQ(over.response.count(), 0) << "requests of the refused batch were executed";
  EXPECT_EQ(Call(kv_.get(), &etcdserverpb::KV::Stub::Range, RangeOf("later")).response.kvs_size(), 0);
  EXPECT_EQ(CurrentRevision(), start + kMaxBatchRequests);
}

// One worker, --fsync=always: each batch of 64 Puts is appended whole before the log's flusher is woken,
// once (revkv_wal_flusher_wakeups_total, which fails if each write wakes it), so the batch's records
// are written and synced together: one fsync per batch, two when the flusher, still finishing the
// previous batch, catches the first records of the next one before they are all appended.
TEST_F(PipelineBatch, TheWritesOfABatchWakeTheLogOnceAndShareTheirFsync) {
  constexpr int kBatches = 8;
  constexpr int kPerBatch = 64;
  ASSERT_TRUE(IsOk(Call(kv_.get(), &etcdserverpb::KV::Stub::Put, PutOf("warm-up", "v")).status));
  const double wakeups_before = ScrapeValue(server_.metrics_port(), "revkv_wal_flusher_wakeups_total");
  const double fsyncs_before = ScrapeValue(server_.metrics_port(), "revkv_wal_fsyncs_total");
  const double records_before = ScrapeValue(server_.metrics_port(), "revkv_wal_records_total");
  int64_t revision = CurrentRevision();
  for (int b = 0; b < kBatches; ++b) {
    TxnBatch batch;
    for (int i = 0; i < kPerBatch; ++i) {
      *batch.add_requests() = PutTxn("k/" + std::to_string(i), std::to_string(b));
    }
    const StreamResult result = RunBatches(pipeline_.get(), {batch});
    ASSERT_TRUE(IsOk(result.status));
    ASSERT_EQ(result.responses.size(), 1u);
    ASSERT_EQ(result.responses[0].results_size(), kPerBatch);
    for (const TxnResult& r : result.responses[0].results()) {
      EXPECT_TRUE(HeaderAt(r.response().header(), ++revision));
    }
  }
  const double records = ScrapeValue(server_.metrics_port(), "revkv_wal_records_total") - records_before;
  const double wakeups =
      ScrapeValue(server_.metrics_port(), "revkv_wal_flusher_wakeups_total") - wakeups_before;
  const double fsyncs = ScrapeValue(server_.metrics_port(), "revkv_wal_fsyncs_total") - fsyncs_before;
  std::printf("%d batches of %d Puts: %.0f log records, %.0f flusher wake-ups, %.0f fsyncs\n", kBatches,
              kPerBatch, records, wakeups, fsyncs);
  EXPECT_EQ(records, kBatches * kPerBatch);
  EXPECT_EQ(wakeups, kBatches) << "the writes of a batch woke the log's flusher one by one";
  EXPECT_GE(fsyncs, kBatches);
  EXPECT_LE(fsyncs, 2 * kBatches) << "the writes of a batch did not share their fsync";
}

// Clients that cancel their stream, and drop their connection, right after sending big batches, before
// reading any answer: the server is then executing those batches and holding their answers until the
// log has synced them. It must not crash; every request must leave the in-flight count (a stream whose
// held answers were never released would stay in it; revkv_rpc_requests_in_flight); every write it
// executed must be visible (each Put a distinct key, so the revision grows by the keys that exist) and
// durable (the same keys after a SIGKILL and a restart).
TEST_F(PipelineBatch, AClientThatVanishesWhileItsWritesAwaitTheLogLeavesThemDurableAndVisible) {
  constexpr int kClients = 6;
  constexpr int kBatches = 8;
  constexpr int kPerBatch = 512;
  const int64_t start = CurrentRevision();
  for (int c = 0; c < kClients; ++c) {
    auto channel = server_.NewChannel();  // its own connection, dropped with it
    auto stub = ::revkv::v1::KV::NewStub(channel);
    grpc::ClientContext context;
    auto stream = stub->PipelineBatch(&context);
    for (int b = 0; b < kBatches; ++b) {
      TxnBatch batch;
      for (int i = 0; i < kPerBatch; ++i) {
        *batch.add_requests() =
            PutTxn("gone/" + std::to_string(c) + "/" + std::to_string(b) + "/" + std::to_string(i), "v");
      }
      if (!stream->Write(batch)) break;
    }
    context.TryCancel();     // no WritesDone, no Read: the client is gone
    (void)stream->Finish();  // CANCELLED
  }
  // Everything the server read is executed and, once durable, dropped: nothing stays in flight. The
  // count is 0 also between two messages of a stream, and before the server reads a stream's first
  // (a worker executes one message at a time, and reads the next only then), so the server must be
  // quiet: no request in flight and the revision unchanged for half a second on end.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  auto quiet_since = std::chrono::steady_clock::now();
  double in_flight = 0;
  int64_t revision = CurrentRevision();
  while (std::chrono::steady_clock::now() < deadline) {
    in_flight = ScrapeValue(server_.metrics_port(), "revkv_rpc_requests_in_flight");
    const int64_t now_revision = CurrentRevision();
    if (in_flight > 0 || now_revision != revision) {
      quiet_since = std::chrono::steady_clock::now();
      revision = now_revision;
    } else if (std::chrono::steady_clock::now() - quiet_since >= std::chrono::milliseconds(500)) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(in_flight, 0) << "requests of the vanished clients stay";
  ASSERT_TRUE(server_.Running());
  // Visible: reads are served at the durable revision, so these are the durable writes.
  auto count = [&] {
    etcdserverpb::RangeRequest r = RangeOf("gone/", "gone0");
    r.set_count_only(true);
    return Call(kv_.get(), &etcdserverpb::KV::Stub::Range, r).response.count();
  };
  const int64_t written = count();
  std::printf("%d clients sent %d batches of %d Puts each and vanished: %lld Puts executed\n", kClients,
              kBatches, kPerBatch, static_cast<long long>(written));
  EXPECT_GT(written, 0) << "the server executed none of the batches: the test proves nothing";
  EXPECT_EQ(CurrentRevision(), start + written) << "a write that was executed is not visible";
  // Durable: the same after a crash.
  ASSERT_TRUE(server_.Kill());
  ASSERT_TRUE(server_.Start());
  channel_ = server_.NewChannel();
  kv_ = etcdserverpb::KV::NewStub(channel_);
  EXPECT_EQ(count(), written);
  EXPECT_EQ(CurrentRevision(), start + written);
}

}  // namespace
}  // namespace revkv::integration
