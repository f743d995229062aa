// Bad input against a real revkv-server: every etcd error case answers etcd's code and exact message
// (each checked against a real etcd 3.4 too, skipped if absent unless REVKV_REQUIRE_TOOLS=1); requests
// over the request limits are refused; garbage bytes and broken HTTP/2 on the gRPC port disturb no other
// client and do not bring the server down.
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "tests/integration/etcd_calls.h"
#include "tests/integration/server_process.h"
#include "tests/support/external_tools.h"

namespace revkv::integration {
namespace {

using etcdserverpb::KV;
using etcdserverpb::TxnRequest;

constexpr size_t kMaxRequestBytes = 1572864;  // --max-request-bytes' default, etcd's 1.5 MiB

const std::string kEmptyKey = "etcdserver: key is not provided";
const std::string kTooManyOps = "etcdserver: too many operations in txn request";
const std::string kDuplicateKey = "etcdserver: duplicate key given in txn request";
const std::string kTooLarge = "etcdserver: request is too large";
const std::string kCompacted = "etcdserver: mvcc: required revision has been compacted";
const std::string kFuture = "etcdserver: mvcc: required revision is a future revision";

// ----- etcd's error cases, on revkv and on etcd -----

class EtcdErrors : public ::testing::TestWithParam<Flavor> {
 protected:
  void SetUp() override {
    if (!FlavorAvailable(GetParam())) REVKV_MISSING_TOOL() << FlavorName(GetParam()) << " is not installed";
    ServerOptions options;
    options.flavor = GetParam();
    server_ = std::make_unique<ServerProcess>(options);
    ASSERT_TRUE(server_->Start());
    kv_ = KV::NewStub(server_->NewChannel());
  }

  int64_t Revision() {
    return Call(kv_.get(), &KV::Stub::Range, RangeOf("any")).response.header().revision();
  }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<KV::Stub> kv_;
};

TEST_P(EtcdErrors, AnEmptyKeyIsRefusedByEveryMethod) {
  const auto invalid = grpc::StatusCode::INVALID_ARGUMENT;
  EXPECT_TRUE(HasStatus(Call(kv_.get(), &KV::Stub::Put, PutOf("", "v")).status, invalid, kEmptyKey));
  EXPECT_TRUE(HasStatus(Call(kv_.get(), &KV::Stub::Range, RangeOf("")).status, invalid, kEmptyKey));
  EXPECT_TRUE(HasStatus(Call(kv_.get(), &KV::Stub::Range, RangeOf("", "z")).status, invalid, kEmptyKey));
  EXPECT_TRUE(HasStatus(Call(kv_.get(), &KV::Stub::DeleteRange, DeleteOf("")).status, invalid, kEmptyKey));
  TxnRequest compare;
  *compare.add_compare() = CompareVersion("", etcdserverpb::Compare::EQUAL, 0);
  EXPECT_TRUE(HasStatus(Call(kv_.get(), &KV::Stub::Txn, compare).status, invalid, kEmptyKey));
  TxnRequest put;
  *put.add_success() = OpOf(PutOf("ok", "v"));
  *put.add_failure() = OpOf(PutOf("", "v"));  // checked even in the branch not taken
  EXPECT_TRUE(HasStatus(Call(kv_.get(), &KV::Stub::Txn, put).status, invalid, kEmptyKey));
  TxnRequest nested;
  TxnRequest inner;
  *inner.add_success() = OpOf(DeleteOf(""));
  *nested.add_success() = OpOf(inner);
  EXPECT_TRUE(HasStatus(Call(kv_.get(), &KV::Stub::Txn, nested).status, invalid, kEmptyKey));
  TxnRequest empty_op;
  empty_op.add_success();  // a RequestOp with no request: etcd's "key not found"
  EXPECT_TRUE(
      HasStatus(Call(kv_.get(), &KV::Stub::Txn, empty_op).status, invalid, "etcdserver: key not found"));
  EXPECT_EQ(Revision(), 1);  // nothing was written
}

TEST_P(EtcdErrors, ATxnOfMoreThan128OperationsIsRefused) {
  TxnRequest at_limit;
  for (int i = 0; i < 128; ++i) *at_limit.add_success() = OpOf(PutOf("k" + std::to_string(i), "v"));
  auto ok = Call(kv_.get(), &KV::Stub::Txn, at_limit);
  ASSERT_TRUE(IsOk(ok.status));
  EXPECT_TRUE(HeaderAt(ok.response.header(), 2));

  TxnRequest puts = at_limit;
  *puts.add_success() = OpOf(PutOf("k128", "v"));
  EXPECT_TRUE(HasStatus(Call(kv_.get(), &KV::Stub::Txn, puts).status, grpc::StatusCode::INVALID_ARGUMENT,
                        kTooManyOps));
  TxnRequest compares;
  for (int i = 0; i < 129; ++i)
    *compares.add_compare() = CompareVersion("k", etcdserverpb::Compare::EQUAL, 0);
  EXPECT_TRUE(HasStatus(Call(kv_.get(), &KV::Stub::Txn, compares).status, grpc::StatusCode::INVALID_ARGUMENT,
                        kTooManyOps));
  TxnRequest failures;
  for (int i = 0; i < 129; ++i) *failures.add_failure() = OpOf(RangeOf("k"));
  EXPECT_TRUE(HasStatus(Call(kv_.get(), &KV::Stub::Txn, failures).status, grpc::StatusCode::INVALID_ARGUMENT,
                        kTooManyOps));
  EXPECT_EQ(Revision(), 2);
}

TEST_P(EtcdErrors, ATxnThatWritesAKeyTwiceIsRefused) {
  TxnRequest two_puts;
  *two_puts.add_success() = OpOf(PutOf("k", "1"));
  *two_puts.add_success() = OpOf(PutOf("k", "2"));
  TxnRequest put_and_delete;
  *put_and_delete.add_success() = OpOf(DeleteOf("a", "z"));
  *put_and_delete.add_success() = OpOf(PutOf("k", "1"));
  TxnRequest nested;
  TxnRequest inner;
  *inner.add_success() = OpOf(PutOf("k", "inner"));
  *nested.add_success() = OpOf(PutOf("k", "outer"));
  *nested.add_success() = OpOf(inner);
  for (const TxnRequest& t : {two_puts, put_and_delete, nested}) {
    EXPECT_TRUE(HasStatus(Call(kv_.get(), &KV::Stub::Txn, t).status, grpc::StatusCode::INVALID_ARGUMENT,
                          kDuplicateKey))
        << t.ShortDebugString();
  }
  // The same key in the two branches is fine: only one runs.
  TxnRequest branches;
  *branches.add_success() = OpOf(PutOf("k", "then"));
  *branches.add_failure() = OpOf(PutOf("k", "else"));
  EXPECT_TRUE(IsOk(Call(kv_.get(), &KV::Stub::Txn, branches).status));
  EXPECT_EQ(Revision(), 2);
}

TEST_P(EtcdErrors, ARequestOverTheRequestSizeLimitIsRefused) {
  const std::string value(1600 * 1000, 'x');  // ~1.6 MB, over 1.5 MiB
  EXPECT_TRUE(HasStatus(Call(kv_.get(), &KV::Stub::Put, PutOf("big", value)).status,
                        grpc::StatusCode::INVALID_ARGUMENT, kTooLarge));
  TxnRequest txn;
  *txn.add_success() = OpOf(PutOf("big", value));
  EXPECT_TRUE(
      HasStatus(Call(kv_.get(), &KV::Stub::Txn, txn).status, grpc::StatusCode::INVALID_ARGUMENT, kTooLarge));
  EXPECT_EQ(Call(kv_.get(), &KV::Stub::Range, RangeOf("big")).response.kvs_size(), 0);
  EXPECT_EQ(Revision(), 1);
  // A large value under the limit is fine.
  const std::string under(1400 * 1000, 'y');
  EXPECT_TRUE(IsOk(Call(kv_.get(), &KV::Stub::Put, PutOf("big", under)).status));
  auto r = Call(kv_.get(), &KV::Stub::Range, RangeOf("big"));
  ASSERT_EQ(r.response.kvs_size(), 1);
  EXPECT_EQ(r.response.kvs(0).value(), under);
}

TEST_P(EtcdErrors, AMessageOverGrpcsOwnLimitIsRefusedByGrpc) {
  const std::string value(3 * 1000 * 1000, 'x');  // 3 MB: over max-request-bytes + 512 KiB
  const grpc::Status s = Call(kv_.get(), &KV::Stub::Put, PutOf("huge", value)).status;
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << StatusText(s);
  // The connection and the server carry on.
  EXPECT_TRUE(IsOk(Call(kv_.get(), &KV::Stub::Put, PutOf("small", "v")).status));
  EXPECT_EQ(Call(kv_.get(), &KV::Stub::Range, RangeOf("huge")).response.kvs_size(), 0);
}

TEST_P(EtcdErrors, ReadsOfCompactedAndFutureRevisionsAreRefused) {
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(IsOk(Call(kv_.get(), &KV::Stub::Put, PutOf("k", std::to_string(i))).status));
  etcdserverpb::CompactionRequest compact;
  compact.set_revision(4);
  ASSERT_TRUE(IsOk(Call(kv_.get(), &KV::Stub::Compact, compact).status));
  EXPECT_TRUE(HasStatus(Call(kv_.get(), &KV::Stub::Range, RangeOf("k", "", 3)).status,
                        grpc::StatusCode::OUT_OF_RANGE, kCompacted));
  EXPECT_TRUE(HasStatus(Call(kv_.get(), &KV::Stub::Range, RangeOf("k", "", 7)).status,
                        grpc::StatusCode::OUT_OF_RANGE, kFuture));
  EXPECT_TRUE(HasStatus(Call(kv_.get(), &KV::Stub::Range, RangeOf("k", "", 1000000)).status,
                        grpc::StatusCode::OUT_OF_RANGE, kFuture));
  EXPECT_TRUE(IsOk(Call(kv_.get(), &KV::Stub::Range, RangeOf("k", "", 6)).status));
  compact.set_revision(7);
  EXPECT_TRUE(HasStatus(Call(kv_.get(), &KV::Stub::Compact, compact).status, grpc::StatusCode::OUT_OF_RANGE,
                        kFuture));
}

INSTANTIATE_TEST_SUITE_P(Servers, EtcdErrors, ::testing::Values(Flavor::kRevkv, Flavor::kEtcd),
                         [](const ::testing::TestParamInfo<Flavor>& p) { return FlavorName(p.param); });

// ----- revkv only -----

// The limit counts the serialized request: a Put of exactly --max-request-bytes is accepted, one byte
// more is not.
TEST(RequestLimit, APutOfExactlyMaxRequestBytesIsAcceptedAndOneByteMoreIsNot) {
  ServerProcess server;
  ASSERT_TRUE(server.Start());
  auto kv = KV::NewStub(server.NewChannel());
  etcdserverpb::PutRequest put = PutOf("k", "");
  std::string value(kMaxRequestBytes - 10, 'v');
  put.set_value(value);
  while (put.ByteSizeLong() < kMaxRequestBytes) {
    value.push_back('v');
    put.set_value(value);
  }
  ASSERT_EQ(put.ByteSizeLong(), kMaxRequestBytes);
  EXPECT_TRUE(IsOk(Call(kv.get(), &KV::Stub::Put, put).status));
  value.push_back('v');
  put.set_value(value);
  ASSERT_EQ(put.ByteSizeLong(), kMaxRequestBytes + 1);
  EXPECT_TRUE(
      HasStatus(Call(kv.get(), &KV::Stub::Put, put).status, grpc::StatusCode::INVALID_ARGUMENT, kTooLarge));
}

// A raw TCP connection to the gRPC port. Writes ignore errors: the server may close on us at any time.
class RawConnection {
 public:
  explicit RawConnection(int port) : fd_(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<uint16_t>(port));
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
    timeval timeout{0, 200 * 1000};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  }
  ~RawConnection() { close(fd_); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool connected() const { return connected_; }
  void Send(const std::string& bytes) { (void)send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL); }
  // Reads what the server sends within 200 ms (a GOAWAY, an HTTP error...), and throws it away.
  void Drain() {
    char buffer[4096];
    while (recv(fd_, buffer, sizeof(buffer), 0) > 0) {
    }
  }
  // Closes with a TCP reset instead of a FIN.
  void Reset() {
    linger l{1, 0};
    setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
  }

 private:
  int fd_;
  bool connected_ = false;
};

uint64_t TestSeed() {
  if (const char* s = std::getenv("REVKV_TEST_SEED"); s != nullptr) return std::strtoull(s, nullptr, 10);
  return std::random_device()();
}

TEST(HostileClients, GarbageOnTheGrpcPortDoesNotDisturbOtherClients) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed) + " (rerun with REVKV_TEST_SEED=" + std::to_string(seed) + ")");
  std::mt19937_64 random(seed);
  auto garbage = [&](size_t n) {
    std::string bytes(n, '\0');
    for (char& c : bytes) c = static_cast<char>(random() & 0xff);
    return bytes;
  };

  ServerProcess server;
  ASSERT_TRUE(server.Start());
  auto channel = server.NewChannel();
  auto kv = KV::NewStub(channel);

  // A well-behaved client writes and reads back its own keys throughout.
  std::atomic<bool> stop{false};
  std::atomic<int> operations{0};
  std::atomic<int> failures{0};
  std::string first_failure;
  std::thread client([&] {
    for (int i = 0; !stop.load(); ++i) {
      const std::string key = "good/" + std::to_string(i % 100);
      const std::string value = "value-" + std::to_string(i);
      auto put = Call(kv.get(), &KV::Stub::Put, PutOf(key, value));
      auto get = Call(kv.get(), &KV::Stub::Range, RangeOf(key));
      const bool ok = put.status.ok() && get.status.ok() && get.response.kvs_size() == 1 &&
                      get.response.kvs(0).value() == value &&
                      get.response.kvs(0).mod_revision() == put.response.header().revision();
      if (!ok && failures.fetch_add(1) == 0) {
        first_failure = "put " + StatusText(put.status) + ", get " + StatusText(get.status) + " " +
                        get.response.ShortDebugString();
      }
      operations.fetch_add(1);
    }
  });
  auto wait_for_progress = [&](int more) {
    const int target = operations.load() + more;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (operations.load() < target && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return operations.load() >= target;
  };
  ASSERT_TRUE(wait_for_progress(5));

  const std::string preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  // Connections left open, half-way through something, for the rest of the test.
  std::vector<std::unique_ptr<RawConnection>> held;
  held.push_back(std::make_unique<RawConnection>(server.port()));
  held.back()->Send(preface.substr(0, 10));  // half a preface
  held.push_back(std::make_unique<RawConnection>(server.port()));
  held.back()->Send(preface +
                    std::string("\x00\x00\x06\x04\x00\x00\x00\x00\x00", 9));  // a SETTINGS frame cut short
  for (int i = 0; i < 20; ++i) held.push_back(std::make_unique<RawConnection>(server.port()));  // idle

  // Connections that send garbage and go away.
  for (int round = 0; round < 20; ++round) {
    {
      RawConnection c(server.port());
      ASSERT_TRUE(c.connected());
      c.Send(garbage(64 * 1024));
      c.Drain();
    }
    {
      RawConnection c(server.port());
      c.Send(preface + garbage(4096));  // a valid preface, then garbage frames
      c.Drain();
    }
    {
      RawConnection c(server.port());
      // A valid preface, then a HEADERS frame header announcing 16 MiB - 1 bytes that never come.
      c.Send(preface + std::string("\xff\xff\xff\x01\x04\x00\x00\x00\x01", 9) + garbage(100));
      c.Reset();
    }
    {
      RawConnection c(server.port());
      c.Send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
      c.Drain();
    }
    {
      RawConnection c(server.port());
      c.Send(garbage(1 + random() % 100));
      c.Reset();
    }
  }
  EXPECT_TRUE(wait_for_progress(20)) << "the good client stalled";
  stop.store(true);
  client.join();
  EXPECT_EQ(failures.load(), 0) << "of " << operations.load() << " operations; the first: " << first_failure;

  // The server is up and answers new clients too, with the half-open connections still there.
  ASSERT_TRUE(server.Running());
  auto health = grpc::health::v1::Health::NewStub(server.NewChannel());
  auto h = Call(health.get(), &grpc::health::v1::Health::Stub::Check, grpc::health::v1::HealthCheckRequest());
  ASSERT_TRUE(IsOk(h.status));
  EXPECT_EQ(h.response.status(), grpc::health::v1::HealthCheckResponse::SERVING);
  auto fresh = KV::NewStub(server.NewChannel());
  auto count = Call(fresh.get(), &KV::Stub::Range, RangeOf("good/", PrefixEnd("good/")));
  ASSERT_TRUE(IsOk(count.status));
  EXPECT_EQ(count.response.count(), std::min(operations.load(), 100));
  // And still shuts down cleanly.
  EXPECT_TRUE(server.Stop());
}

// Requests over the limits, sent over and over from two connections, while a well-behaved client on its
// own connection writes and reads back its keys: every oversized request is refused (etcd's "request is
// too large" between --max-request-bytes and gRPC's limit, RESOURCE_EXHAUSTED above it), none changes
// the store, and the other client neither fails nor stalls.
TEST(HostileClients, OversizedRequestsDoNotDisturbAConcurrentClient) {
  ServerProcess server;
  ASSERT_TRUE(server.Start());
  auto good_kv = KV::NewStub(server.NewChannel());

  std::atomic<bool> stop{false};
  std::atomic<int> operations{0};
  std::atomic<int> failures{0};
  std::string first_failure;
  std::thread client([&] {
    for (int i = 0; !stop.load(); ++i) {
      const std::string key = "good/" + std::to_string(i % 50);
      const std::string value = "value-" + std::to_string(i);
      auto put = Call(good_kv.get(), &KV::Stub::Put, PutOf(key, value));
      auto get = Call(good_kv.get(), &KV::Stub::Range, RangeOf(key));
      const bool ok = put.status.ok() && get.status.ok() && get.response.kvs_size() == 1 &&
                      get.response.kvs(0).value() == value &&
                      get.response.kvs(0).mod_revision() == put.response.header().revision();
      if (!ok && failures.fetch_add(1) == 0) {
        first_failure = "put " + StatusText(put.status) + ", get " + StatusText(get.status);
      }
      operations.fetch_add(1);
    }
  });
  auto wait_for_progress = [&](int more) {
    const int target = operations.load() + more;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (operations.load() < target && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return operations.load() >= target;
  };
  ASSERT_TRUE(wait_for_progress(5));

  const std::string too_large(1600 * 1000, 'x');      // over --max-request-bytes (1.5 MiB), under gRPC's cap
  const std::string over_grpc(3 * 1000 * 1000, 'y');  // over --max-request-bytes + 512 KiB
  std::atomic<int> wrong_answers{0};
  std::string first_wrong_answer;
  const int before = operations.load();
  // At least 10 rounds each, and on until the good client has done 10 operations meanwhile (20 s at most).
  constexpr int kProgressDuring = 10;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  auto hostile = [&](int which) {
    auto kv = KV::NewStub(server.NewChannel());  // a connection of its own
    for (int round = 0; round < 10 || (operations.load() - before < kProgressDuring &&
                                       std::chrono::steady_clock::now() < give_up);
         ++round) {
      const std::string key = "big/" + std::to_string(which) + "/" + std::to_string(round);
      TxnRequest txn;
      *txn.add_success() = OpOf(PutOf(key, too_large));
      const grpc::Status statuses[] = {
          Call(kv.get(), &KV::Stub::Put, PutOf(key, too_large)).status,
          Call(kv.get(), &KV::Stub::Txn, txn).status,
          Call(kv.get(), &KV::Stub::Put, PutOf(key, over_grpc)).status,
      };
      const bool right = HasStatus(statuses[0], grpc::StatusCode::INVALID_ARGUMENT, kTooLarge) &&
                         HasStatus(statuses[1], grpc::StatusCode::INVALID_ARGUMENT, kTooLarge) &&
                         statuses[2].error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED;
      if (!right && wrong_answers.fetch_add(1) == 0) {
        first_wrong_answer =
            StatusText(statuses[0]) + ", " + StatusText(statuses[1]) + ", " + StatusText(statuses[2]);
      }
    }
  };
  std::thread hostile_a(hostile, 0);
  std::thread hostile_b(hostile, 1);
  hostile_a.join();
  hostile_b.join();
  const int during = operations.load() - before;
  EXPECT_TRUE(wait_for_progress(20)) << "the good client stalled";
  stop.store(true);
  client.join();

  EXPECT_EQ(wrong_answers.load(), 0) << "the first: " << first_wrong_answer;
  EXPECT_EQ(failures.load(), 0) << "of " << operations.load() << " operations; the first: " << first_failure;
  EXPECT_GE(during, kProgressDuring) << "the good client stalled while the oversized requests were sent";
  // Nothing oversized was stored; the good client's keys are all there.
  auto big = Call(good_kv.get(), &KV::Stub::Range, RangeOf("big/", PrefixEnd("big/")));
  ASSERT_TRUE(IsOk(big.status));
  EXPECT_EQ(big.response.count(), 0);
  auto good = Call(good_kv.get(), &KV::Stub::Range, RangeOf("good/", PrefixEnd("good/")));
  ASSERT_TRUE(IsOk(good.status));
  EXPECT_EQ(good.response.count(), std::min(operations.load(), 50));
  EXPECT_TRUE(server.Stop());
}

}  // namespace
}  // namespace revkv::integration
