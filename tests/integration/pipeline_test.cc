// revkv.v1.KV/Pipeline against a real revkv-server: thousands of Txns sent on one stream without
// waiting are answered in order, each write one revision after the previous one, each read seeing every
// earlier write; a failing request ends the stream with its etcd status after the earlier answers.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "revkv/v1/kv.grpc.pb.h"
#include "tests/integration/etcd_calls.h"
#include "tests/integration/server_process.h"

namespace revkv::integration {
namespace {

using etcdserverpb::Compare;
using etcdserverpb::TxnRequest;
using etcdserverpb::TxnResponse;

// What the answer to one pipelined request must be.
struct Expected {
  int64_t revision = 0;
  bool succeeded = true;
  std::optional<std::string> read;  // the value the request's Range must return ("" = no key)
};

using StreamResult = ::revkv::integration::StreamResult<TxnResponse>;

// Sends every request on one Pipeline stream from a writer thread while this thread reads the answers.
StreamResult RunPipeline(::revkv::v1::KV::Stub* stub, const std::vector<TxnRequest>& requests) {
  return RunStream<TxnResponse>([stub](grpc::ClientContext* c) { return stub->Pipeline(c); }, requests);
}

class Pipeline : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start());
    channel_ = server_.NewChannel();
    pipeline_ = ::revkv::v1::KV::NewStub(channel_);
    kv_ = etcdserverpb::KV::NewStub(channel_);
  }

  ServerProcess server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<::revkv::v1::KV::Stub> pipeline_;
  std::unique_ptr<etcdserverpb::KV::Stub> kv_;
};

TEST_F(Pipeline, TwoThousandTxnsAreAnsweredInOrderWithConsecutiveRevisions) {
  constexpr int kRequests = 2000;
  constexpr int kKeys = 50;
  std::map<std::string, std::string> model;
  int64_t revision = 1;  // a fresh store
  std::vector<TxnRequest> requests;
  std::vector<Expected> expected;
  for (int i = 0; i < kRequests; ++i) {
    const std::string key = "p/" + std::to_string(i / 4 % kKeys);
    TxnRequest t;
    Expected e;
    switch (i % 4) {
      case 0: {  // a blind put
        const std::string value = "v" + std::to_string(i);
        t = PutTxn(key, value);
        model[key] = value;
        e.revision = ++revision;
        break;
      }
      case 1: {  // a read of the key just written
        *t.add_success() = OpOf(RangeOf(key));
        e.revision = revision;
        e.read = model[key];
        break;
      }
      case 2: {  // a compare-and-swap on that value, which holds
        const std::string value = "cas" + std::to_string(i);
        *t.add_compare() = CompareValue(key, Compare::EQUAL, model[key]);
        *t.add_success() = OpOf(PutOf(key, value));
        *t.add_success() = OpOf(RangeOf(key));
        *t.add_failure() = OpOf(PutOf("never", "x"));
        model[key] = value;
        e.revision = ++revision;
        e.read = value;
        break;
      }
      case 3: {  // a compare that fails, whose failure branch only reads
        *t.add_compare() = CompareVersion(key, Compare::EQUAL, 999);
        *t.add_success() = OpOf(PutOf("never", "x"));
        *t.add_failure() = OpOf(RangeOf(key));
        e.revision = revision;
        e.succeeded = false;
        e.read = model[key];
        break;
      }
    }
    requests.push_back(t);
    expected.push_back(e);
  }

  const StreamResult result = RunPipeline(pipeline_.get(), requests);
  ASSERT_TRUE(IsOk(result.status));
  ASSERT_EQ(result.responses.size(), expected.size());
  int mismatches = 0;
  for (size_t i = 0; i < expected.size() && mismatches < 10; ++i) {
    const TxnResponse& r = result.responses[i];
    const Expected& e = expected[i];
    std::optional<std::string> read;
    for (const auto& op : r.responses()) {
      if (op.has_response_range()) {
        read = op.response_range().kvs_size() == 0 ? "" : op.response_range().kvs(0).value();
      }
    }
    const bool ok = HeaderAt(r.header(), e.revision) && r.succeeded() == e.succeeded && read == e.read;
    if (!ok) {
      ++mismatches;
      ADD_FAILURE() << "response " << i << ": " << r.ShortDebugString() << "\nexpected revision "
                    << e.revision << ", succeeded " << e.succeeded << ", read " << e.read.value_or("(none)");
    }
  }

  // The store agrees: every key holds its last value, and the revision is the last write's.
  auto all = Call(kv_.get(), &etcdserverpb::KV::Stub::Range, RangeOf("p/", PrefixEnd("p/")));
  ASSERT_TRUE(IsOk(all.status));
  EXPECT_EQ(all.response.header().revision(), revision);
  ASSERT_EQ(all.response.kvs_size(), kKeys);
  for (const auto& kv : all.response.kvs()) EXPECT_EQ(kv.value(), model[kv.key()]) << kv.key();
  EXPECT_EQ(Call(kv_.get(), &etcdserverpb::KV::Stub::Range, RangeOf("never")).response.kvs_size(), 0);
}

TEST_F(Pipeline, ConcurrentStreamsGetDistinctRevisions) {
  constexpr int kStreams = 4;
  constexpr int kPerStream = 300;
  std::vector<StreamResult> results(kStreams);
  std::vector<std::thread> threads;
  for (int s = 0; s < kStreams; ++s) {
    threads.emplace_back([&, s] {
      std::vector<TxnRequest> requests;
      for (int i = 0; i < kPerStream; ++i) {
        requests.push_back(PutTxn("s" + std::to_string(s) + "/" + std::to_string(i), std::to_string(i)));
      }
      results[s] = RunPipeline(pipeline_.get(), requests);
    });
  }
  for (auto& t : threads) t.join();

  std::set<int64_t> revisions;
  for (int s = 0; s < kStreams; ++s) {
    ASSERT_TRUE(IsOk(results[s].status)) << "stream " << s;
    ASSERT_EQ(results[s].responses.size(), static_cast<size_t>(kPerStream)) << "stream " << s;
    int64_t previous = 0;
    for (const TxnResponse& r : results[s].responses) {
      EXPECT_GT(r.header().revision(), previous) << "stream " << s << ": answers out of order";
      previous = r.header().revision();
      revisions.insert(r.header().revision());
    }
  }
  // One revision per write, no two writes sharing one, none lost: exactly 2 .. 1 + all writes.
  EXPECT_EQ(revisions.size(), static_cast<size_t>(kStreams * kPerStream));
  EXPECT_EQ(*revisions.begin(), 2);
  EXPECT_EQ(*revisions.rbegin(), 1 + kStreams * kPerStream);
}

TEST_F(Pipeline, AFailingRequestEndsTheStreamWithItsStatusAfterTheEarlierAnswers) {
  constexpr int kBefore = 100;
  constexpr int kAfter = 100;
  TxnRequest empty_key = PutTxn("", "x");
  TxnRequest duplicate_key;
  *duplicate_key.add_success() = OpOf(PutOf("dup", "1"));
  *duplicate_key.add_success() = OpOf(PutOf("dup", "2"));
  struct Case {
    std::string name;
    TxnRequest failing;
    std::string message;
  };
  for (const Case& c :
       {Case{"empty key", empty_key, "etcdserver: key is not provided"},
        Case{"duplicate key", duplicate_key, "etcdserver: duplicate key given in txn request"}}) {
    SCOPED_TRACE(c.name);
    const int64_t start =
        Call(kv_.get(), &etcdserverpb::KV::Stub::Range, RangeOf("any")).response.header().revision();
    std::vector<TxnRequest> requests;
    for (int i = 0; i < kBefore; ++i) requests.push_back(PutTxn("before/" + std::to_string(i), c.name));
    requests.push_back(c.failing);
    for (int i = 0; i < kAfter; ++i) requests.push_back(PutTxn("after/" + std::to_string(i), c.name));

    const StreamResult result = RunPipeline(pipeline_.get(), requests);
    EXPECT_TRUE(HasStatus(result.status, grpc::StatusCode::INVALID_ARGUMENT, c.message));
    ASSERT_EQ(result.responses.size(), static_cast<size_t>(kBefore))
        << "the failing request is the one after "
           "the last answer";
    for (int i = 0; i < kBefore; ++i) EXPECT_TRUE(HeaderAt(result.responses[i].header(), start + 1 + i));
    auto before = Call(kv_.get(), &etcdserverpb::KV::Stub::Range, RangeOf("before/", PrefixEnd("before/")));
    EXPECT_EQ(before.response.count(), kBefore);
  }
}

// The stream ends at the failing request, so the requests the client sent after it get no answer; the
// server must not execute them either, or a client cannot know their outcome (and one that resends
// them on a new stream applies them twice).
TEST_F(Pipeline, RequestsAfterAFailingOneAreNotExecuted) {
  constexpr int kAfter = 100;
  std::vector<TxnRequest> requests = {PutTxn("first", "1"), PutTxn("", "fails")};
  for (int i = 0; i < kAfter; ++i) requests.push_back(PutTxn("after/" + std::to_string(i), "x"));

  const StreamResult result = RunPipeline(pipeline_.get(), requests);
  EXPECT_TRUE(
      HasStatus(result.status, grpc::StatusCode::INVALID_ARGUMENT, "etcdserver: key is not provided"));
  EXPECT_EQ(result.responses.size(), 1u);
  auto after = Call(kv_.get(), &etcdserverpb::KV::Stub::Range, RangeOf("after/", PrefixEnd("after/")));
  ASSERT_TRUE(IsOk(after.status));
  EXPECT_EQ(after.response.count(), 0)
      << "of the " << result.written - 2 << " requests the client sent after the "
      << "failing one, " << after.response.count() << " were executed (store revision "
      << after.response.header().revision() << ") although the stream answered none of them";
}

}  // namespace
}  // namespace revkv::integration
