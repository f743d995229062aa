// etcdserverpb.Lease against a real revkv-server: etcdctl's lease commands (grant, put --lease,
// timetolive --keys, list, keep-alive and --once, revoke), expiry deleting keys, a keep-alive stream
// keeping a lease alive, etcd's answers to bad requests (also against etcd 3.4), leases across SIGKILL
// and restart (TTL refreshed), shutdown with an open keep-alive stream, and python3-etcd3.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "etcdserverpb/rpc.grpc.pb.h"
#include "revkv/v1/admin.grpc.pb.h"
#include "tests/integration/etcd_calls.h"
#include "tests/integration/etcdctl_support.h"
#include "tests/integration/server_process.h"
#include "tests/support/external_tools.h"

namespace revkv::integration {
namespace {

using etcdserverpb::KV;
using etcdserverpb::Lease;
using Clock = std::chrono::steady_clock;

// The bound on the delay between a lease's deadline and the deletion of its keys that these tests
// allow (docs/benchmarks.md measures it; a lone lease is revoked within milliseconds).
constexpr std::chrono::milliseconds kExpiryBound{1000};

etcdserverpb::LeaseGrantRequest GrantOf(int64_t ttl, int64_t id = 0) {
  etcdserverpb::LeaseGrantRequest r;
  r.set_ttl(ttl);
  r.set_id(id);
  return r;
}

class Leases : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start());
    kv_ = KV::NewStub(server_.NewChannel());
    lease_ = Lease::NewStub(server_.NewChannel());
  }
  std::string Run(const std::vector<std::string>& args) {
    const CommandResult r = Etcdctl(server_, args);
    EXPECT_EQ(r.exit_code, 0) << "etcdctl " << ::testing::PrintToString(args) << ": " << r.Describe();
    return r.out;
  }
  bool Has(const std::string& key) {
    etcdserverpb::RangeRequest r;
    r.set_key(key);
    auto reply = Call(kv_.get(), &KV::Stub::Range, r);
    EXPECT_TRUE(IsOk(reply.status));
    return reply.response.kvs_size() == 1;
  }
  int64_t Grant(int64_t ttl) {
    auto reply = Call(lease_.get(), &Lease::Stub::LeaseGrant, GrantOf(ttl));
    EXPECT_TRUE(IsOk(reply.status));
    return reply.response.id();
  }
  void PutWithLease(const std::string& key, int64_t lease) {
    etcdserverpb::PutRequest p = PutOf(key, "v");
    p.set_lease(lease);
    ASSERT_TRUE(IsOk(Call(kv_.get(), &KV::Stub::Put, p).status));
  }
  etcdserverpb::LeaseTimeToLiveResponse TimeToLive(int64_t id, bool keys = true) {
    etcdserverpb::LeaseTimeToLiveRequest r;
    r.set_id(id);
    r.set_keys(keys);
    auto reply = Call(lease_.get(), &Lease::Stub::LeaseTimeToLive, r);
    EXPECT_TRUE(IsOk(reply.status));
    return reply.response;
  }

  ServerProcess server_;
  std::unique_ptr<KV::Stub> kv_;
  std::unique_ptr<Lease::Stub> lease_;
};

TEST_F(Leases, EtcdctlGrantPutTimeToLiveListKeepAliveOnceRevoke) {
  REVKV_NEED_TOOL(kEtcdctl, "etcd-client");
  const std::string granted = Run({"lease", "grant", "60"});
  ASSERT_TRUE(absl::StartsWith(granted, "lease ")) << granted;
  EXPECT_TRUE(absl::StrContains(granted, "granted with TTL(60s)")) << granted;
  const std::string id = granted.substr(6, granted.find(' ', 6) - 6);
  EXPECT_EQ(Run({"put", "--lease=" + id, "a", "1"}), "OK\n");
  EXPECT_EQ(Run({"put", "--lease=" + id, "b", "2"}), "OK\n");
  EXPECT_EQ(Run({"put", "c", "3"}), "OK\n");
  const std::string ttl = Run({"lease", "timetolive", "--keys", id});
  EXPECT_TRUE(absl::StrContains(ttl, "granted with TTL(60s)")) << ttl;
  EXPECT_TRUE(absl::StrContains(ttl, "attached keys([a b])")) << ttl;
  EXPECT_EQ(Run({"lease", "list"}), "found 1 leases\n" + id + "\n");
  EXPECT_EQ(Run({"lease", "keep-alive", "--once", id}), "lease " + id + " keepalived with TTL(60)\n");
  EXPECT_EQ(Run({"lease", "revoke", id}), "lease " + id + " revoked\n");
  EXPECT_EQ(Run({"get", "--prefix", ""}), "c\n3\n");
  EXPECT_EQ(Run({"lease", "list"}), "found 0 leases\n");
  EXPECT_EQ(Run({"lease", "timetolive", id}), "lease " + id + " already expired\n");
}

// `etcdctl lease keep-alive` holds one stream and renews every TTL/3: with TTL 3, about once a second.
TEST_F(Leases, EtcdctlKeepAliveRenewsOverOneStream) {
  REVKV_NEED_TOOL(kEtcdctl, "etcd-client");
  const int64_t id = Grant(3);
  PutWithLease("k", id);
  const CommandResult r =
      Etcdctl(server_, {"lease", "keep-alive", absl::StrCat(absl::Hex(id))}, "", std::chrono::seconds(5));
  EXPECT_TRUE(r.timed_out) << r.Describe();  // it keeps going until stopped
  int renewals = 0;
  for (size_t at = r.out.find("keepalived with TTL(3)"); at != std::string::npos;
       at = r.out.find("keepalived with TTL(3)", at + 1)) {
    ++renewals;
  }
  EXPECT_GE(renewals, 3) << r.out;
  EXPECT_TRUE(Has("k"));  // 5 s after a 3 s grant: kept alive
}

TEST_F(Leases, AnExpiredLeaseTakesItsKeysWithinTheBound) {
  const auto granted = Clock::now();
  const int64_t id = Grant(2);
  PutWithLease("x", id);
  PutWithLease("y", id);
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  EXPECT_TRUE(Has("x"));
  while (Has("x") && Clock::now() < granted + std::chrono::seconds(10)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const auto gone = Clock::now();
  EXPECT_FALSE(Has("x"));
  EXPECT_FALSE(Has("y"));
  EXPECT_LE(gone - granted, std::chrono::seconds(2) + kExpiryBound);
  EXPECT_EQ(TimeToLive(id).ttl(), -1);
}

// A keep-alive stream keeps a lease alive well past its TTL; once it stops, the lease expires.
TEST_F(Leases, AKeepAliveStreamKeepsTheLeaseAlive) {
  const int64_t id = Grant(2);
  PutWithLease("k", id);
  {
    grpc::ClientContext context;
    auto stream = lease_->LeaseKeepAlive(&context);
    for (int i = 0; i < 8; ++i) {  // 4 s, twice the TTL
      etcdserverpb::LeaseKeepAliveRequest req;
      req.set_id(id);
      ASSERT_TRUE(stream->Write(req));
      etcdserverpb::LeaseKeepAliveResponse resp;
      ASSERT_TRUE(stream->Read(&resp));
      EXPECT_EQ(resp.id(), id);
      EXPECT_EQ(resp.ttl(), 2);
      EXPECT_NE(resp.header().revision(), 0);
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    // An unknown lease answers TTL 0 on the same stream, as etcd does.
    etcdserverpb::LeaseKeepAliveRequest unknown;
    unknown.set_id(id + 1);
    ASSERT_TRUE(stream->Write(unknown));
    etcdserverpb::LeaseKeepAliveResponse resp;
    ASSERT_TRUE(stream->Read(&resp));
    EXPECT_EQ(resp.id(), id + 1);
    EXPECT_EQ(resp.ttl(), 0);
    stream->WritesDone();
    EXPECT_TRUE(IsOk(stream->Finish()));
  }
  EXPECT_TRUE(Has("k"));
  const auto stopped = Clock::now();
  while (Has("k") && Clock::now() < stopped + std::chrono::seconds(10)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(Has("k"));
  EXPECT_LE(Clock::now() - stopped, std::chrono::seconds(2) + kExpiryBound);
}

TEST_F(Leases, LeasesAndTheirKeysSurviveAKillAndComeBackWithTheirFullTtl) {
  const int64_t id = Grant(20);
  PutWithLease("a", id);
  PutWithLease("b", id);
  const int64_t revoked = Grant(20);
  PutWithLease("gone", revoked);
  etcdserverpb::LeaseRevokeRequest r;
  r.set_id(revoked);
  ASSERT_TRUE(IsOk(Call(lease_.get(), &Lease::Stub::LeaseRevoke, r).status));
  std::this_thread::sleep_for(std::chrono::milliseconds(3000));
  EXPECT_LE(TimeToLive(id).ttl(), 17);
  ASSERT_TRUE(server_.Kill());
  ASSERT_TRUE(server_.Start());
  const etcdserverpb::LeaseTimeToLiveResponse t = TimeToLive(id);
  EXPECT_EQ(t.grantedttl(), 20);
  EXPECT_GE(t.ttl(), 19);  // refreshed: deadlines are not persisted (etcd 3.4)
  ASSERT_EQ(t.keys_size(), 2);
  EXPECT_EQ(t.keys(0), "a");
  EXPECT_EQ(t.keys(1), "b");
  EXPECT_TRUE(Has("a"));
  EXPECT_FALSE(Has("gone"));
  EXPECT_EQ(TimeToLive(revoked).ttl(), -1);
  // The recovered lease still revokes its keys.
  etcdserverpb::LeaseRevokeRequest again;
  again.set_id(id);
  ASSERT_TRUE(IsOk(Call(lease_.get(), &Lease::Stub::LeaseRevoke, again).status));
  EXPECT_FALSE(Has("a"));
  EXPECT_FALSE(Has("b"));
}

// Recovery from a checkpoint plus the log after it: leases granted before the checkpoint come back
// from it (with their keys), a revoke and a grant after it from the log, every lease with its full TTL.
TEST_F(Leases, LeasesComeBackFromACheckpointAndTheLogAfterIt) {
  const int64_t kept = Grant(20);
  PutWithLease("cp/a", kept);
  PutWithLease("cp/b", kept);
  const int64_t revoked = Grant(20);
  PutWithLease("cp/c", revoked);
  auto admin = ::revkv::v1::Admin::NewStub(server_.NewChannel());
  auto checkpoint =
      Call(admin.get(), &::revkv::v1::Admin::Stub::Checkpoint, ::revkv::v1::CheckpointRequest());
  ASSERT_TRUE(IsOk(checkpoint.status));
  etcdserverpb::LeaseRevokeRequest r;
  r.set_id(revoked);
  ASSERT_TRUE(IsOk(Call(lease_.get(), &Lease::Stub::LeaseRevoke, r).status));
  const int64_t later = Grant(20);
  PutWithLease("cp/d", later);
  EXPECT_GT(TimeToLive(later).header().revision(), checkpoint.response.revision());
  std::this_thread::sleep_for(std::chrono::milliseconds(3000));
  EXPECT_LE(TimeToLive(kept).ttl(), 17);
  PutWithLease("cp/e", Grant(3));
  ASSERT_TRUE(server_.Kill());
  ASSERT_TRUE(server_.Start());
  const auto restarted = Clock::now();
  const etcdserverpb::LeaseTimeToLiveResponse k = TimeToLive(kept);
  EXPECT_EQ(k.grantedttl(), 20);
  EXPECT_GE(k.ttl(), 19);  // refreshed on recovery
  EXPECT_EQ(std::vector<std::string>(k.keys().begin(), k.keys().end()),
            (std::vector<std::string>{"cp/a", "cp/b"}));
  EXPECT_EQ(TimeToLive(revoked).ttl(), -1);
  EXPECT_FALSE(Has("cp/c"));
  const etcdserverpb::LeaseTimeToLiveResponse l = TimeToLive(later);
  EXPECT_GE(l.ttl(), 19);
  EXPECT_EQ(std::vector<std::string>(l.keys().begin(), l.keys().end()), (std::vector<std::string>{"cp/d"}));
  // A recovered lease still expires, its full TTL after the restart, and takes its keys.
  EXPECT_TRUE(Has("cp/e"));
  while (Has("cp/e") && Clock::now() < restarted + std::chrono::seconds(10)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(Has("cp/e"));
  EXPECT_GE(Clock::now() - restarted, std::chrono::milliseconds(1500));
  EXPECT_LE(Clock::now() - restarted, std::chrono::seconds(3) + kExpiryBound);
}

TEST_F(Leases, ShutdownEndsAnOpenKeepAliveStreamPromptly) {
  const int64_t id = Grant(30);
  grpc::ClientContext context;
  auto stream = lease_->LeaseKeepAlive(&context);
  etcdserverpb::LeaseKeepAliveRequest req;
  req.set_id(id);
  ASSERT_TRUE(stream->Write(req));
  etcdserverpb::LeaseKeepAliveResponse resp;
  ASSERT_TRUE(stream->Read(&resp));
  const auto start = Clock::now();
  ASSERT_TRUE(server_.Stop());
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
  EXPECT_FALSE(stream->Read(&resp));
}

// python3-etcd3: grant, put with the lease, refresh, read the TTL, revoke.
TEST_F(Leases, Python3Etcd3GrantsRefreshesAndRevokes) {
  REVKV_NEED_TOOL("/usr/bin/python3", "python3");
  const std::string script = absl::StrCat(R"(
import sys
try:
    import etcd3
except ImportError:
    print("no etcd3"); sys.exit(77)
c = etcd3.client(host="127.0.0.1", port=)",
                                          server_.port(), R"()
lease = c.lease(30)
c.put("py/a", "1", lease=lease)
c.put("py/b", "2", lease=lease)
r = list(lease.refresh())
assert r[0].TTL == 30, r
assert lease.granted_ttl == 30
assert sorted(k.decode() for k in lease.keys) == ["py/a", "py/b"], lease.keys
assert c.get("py/a")[1].lease_id == lease.id
lease.revoke()
assert c.get("py/a")[0] is None and c.get("py/b")[0] is None
print("ok")
)");
  const CommandResult r = RunCommand({"/usr/bin/python3", "-c", script}, "", {}, std::chrono::seconds(60));
  if (r.exit_code == 77) REVKV_MISSING_TOOL() << "python3-etcd3 is not installed";
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, "ok\n");
}

// ----- etcd's answers to bad requests, on revkv and on etcd -----

class LeaseErrors : public ::testing::TestWithParam<Flavor> {
 protected:
  void SetUp() override {
    if (!FlavorAvailable(GetParam())) REVKV_MISSING_TOOL() << FlavorName(GetParam()) << " is not installed";
    ServerOptions options;
    options.flavor = GetParam();
    server_ = std::make_unique<ServerProcess>(options);
    ASSERT_TRUE(server_->Start());
    kv_ = KV::NewStub(server_->NewChannel());
    lease_ = Lease::NewStub(server_->NewChannel());
  }
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<KV::Stub> kv_;
  std::unique_ptr<Lease::Stub> lease_;
};

TEST_P(LeaseErrors, BadRequestsGetEtcdsStatuses) {
  const std::string kNotFound = "etcdserver: requested lease not found";
  etcdserverpb::PutRequest put = PutOf("k", "v");
  put.set_lease(0x1234);
  EXPECT_TRUE(HasStatus(Call(kv_.get(), &KV::Stub::Put, put).status, grpc::StatusCode::NOT_FOUND, kNotFound));
  etcdserverpb::LeaseRevokeRequest revoke;
  revoke.set_id(0x1234);
  EXPECT_TRUE(HasStatus(Call(lease_.get(), &Lease::Stub::LeaseRevoke, revoke).status,
                        grpc::StatusCode::NOT_FOUND, kNotFound));
  EXPECT_TRUE(HasStatus(Call(lease_.get(), &Lease::Stub::LeaseGrant, GrantOf(9000000001)).status,
                        grpc::StatusCode::OUT_OF_RANGE, "etcdserver: too large lease TTL"));
  auto first = Call(lease_.get(), &Lease::Stub::LeaseGrant, GrantOf(60, 0x77));
  ASSERT_TRUE(IsOk(first.status));
  EXPECT_EQ(first.response.id(), 0x77);
  EXPECT_EQ(first.response.ttl(), 60);
  EXPECT_TRUE(HasStatus(Call(lease_.get(), &Lease::Stub::LeaseGrant, GrantOf(60, 0x77)).status,
                        grpc::StatusCode::FAILED_PRECONDITION, "etcdserver: lease already exists"));
  // A TTL below the minimum is raised to it (2 s with etcd's default election timeout).
  auto small = Call(lease_.get(), &Lease::Stub::LeaseGrant, GrantOf(1));
  ASSERT_TRUE(IsOk(small.status));
  EXPECT_EQ(small.response.ttl(), 2);
  // An unknown lease's TimeToLive is TTL -1, not an error.
  etcdserverpb::LeaseTimeToLiveRequest ttl;
  ttl.set_id(0x1234);
  auto unknown = Call(lease_.get(), &Lease::Stub::LeaseTimeToLive, ttl);
  ASSERT_TRUE(IsOk(unknown.status));
  EXPECT_EQ(unknown.response.ttl(), -1);
  EXPECT_EQ(unknown.response.id(), 0x1234);
  // A Txn put with an unknown lease fails the Txn.
  etcdserverpb::TxnRequest txn;
  *txn.add_success()->mutable_request_put() = put;
  EXPECT_TRUE(HasStatus(Call(kv_.get(), &KV::Stub::Txn, txn).status, grpc::StatusCode::NOT_FOUND, kNotFound));
  // ignore_lease: not with a lease, and not on a missing key.
  etcdserverpb::PutRequest both = PutOf("k", "v");
  both.set_lease(0x77);
  both.set_ignore_lease(true);
  EXPECT_TRUE(HasStatus(Call(kv_.get(), &KV::Stub::Put, both).status, grpc::StatusCode::INVALID_ARGUMENT,
                        "etcdserver: lease is provided"));
  etcdserverpb::PutRequest missing = PutOf("missing", "v");
  missing.set_ignore_lease(true);
  EXPECT_TRUE(HasStatus(Call(kv_.get(), &KV::Stub::Put, missing).status, grpc::StatusCode::INVALID_ARGUMENT,
                        "etcdserver: key not found"));
  // A revoked lease: revoke, keep-alive (TTL 0 on the stream), TimeToLive (TTL -1), Put.
  etcdserverpb::LeaseRevokeRequest gone;
  gone.set_id(0x77);
  ASSERT_TRUE(IsOk(Call(lease_.get(), &Lease::Stub::LeaseRevoke, gone).status));
  EXPECT_TRUE(HasStatus(Call(lease_.get(), &Lease::Stub::LeaseRevoke, gone).status,
                        grpc::StatusCode::NOT_FOUND, kNotFound));
  etcdserverpb::PutRequest late = PutOf("k", "v");
  late.set_lease(0x77);
  EXPECT_TRUE(
      HasStatus(Call(kv_.get(), &KV::Stub::Put, late).status, grpc::StatusCode::NOT_FOUND, kNotFound));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kCallTimeout);
  auto stream = lease_->LeaseKeepAlive(&context);
  etcdserverpb::LeaseKeepAliveRequest keep;
  keep.set_id(0x77);
  ASSERT_TRUE(stream->Write(keep));
  etcdserverpb::LeaseKeepAliveResponse kept;
  ASSERT_TRUE(stream->Read(&kept));
  EXPECT_EQ(kept.id(), 0x77);
  EXPECT_EQ(kept.ttl(), 0);
  stream->WritesDone();
  EXPECT_TRUE(IsOk(stream->Finish()));
}

// LeaseTimeToLive with keys, LeaseLeases, Put with ignore_lease and a Txn comparing on LEASE give the same
// answers as etcd 3.4's.
TEST_P(LeaseErrors, TimeToLiveLeasesIgnoreLeaseAndCompareOnLeaseAsEtcd) {
  auto granted = Call(lease_.get(), &Lease::Stub::LeaseGrant, GrantOf(60, 0x51));
  ASSERT_TRUE(IsOk(granted.status));
  ASSERT_TRUE(IsOk(Call(lease_.get(), &Lease::Stub::LeaseGrant, GrantOf(30, 0x52)).status));
  for (const char* k : {"t/b", "t/a", "t/c"}) {
    etcdserverpb::PutRequest p = PutOf(k, "1");
    p.set_lease(std::string(k) == "t/c" ? 0 : 0x51);
    ASSERT_TRUE(IsOk(Call(kv_.get(), &KV::Stub::Put, p).status));
  }
  etcdserverpb::LeaseTimeToLiveRequest q;
  q.set_id(0x51);
  q.set_keys(true);
  auto t = Call(lease_.get(), &Lease::Stub::LeaseTimeToLive, q);
  ASSERT_TRUE(IsOk(t.status));
  EXPECT_EQ(t.response.id(), 0x51);
  EXPECT_EQ(t.response.grantedttl(), 60);
  EXPECT_GE(t.response.ttl(), 58);
  EXPECT_LE(t.response.ttl(), 60);
  // etcd lists them in its map's order (any); revkv in key order.
  std::vector<std::string> keys(t.response.keys().begin(), t.response.keys().end());
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys, (std::vector<std::string>{"t/a", "t/b"}));
  q.set_keys(false);
  t = Call(lease_.get(), &Lease::Stub::LeaseTimeToLive, q);
  ASSERT_TRUE(IsOk(t.status));
  EXPECT_EQ(t.response.keys_size(), 0);
  q.set_id(0x52);
  q.set_keys(true);
  t = Call(lease_.get(), &Lease::Stub::LeaseTimeToLive, q);
  ASSERT_TRUE(IsOk(t.status));
  EXPECT_EQ(t.response.grantedttl(), 30);
  EXPECT_EQ(t.response.keys_size(), 0);

  auto leases = Call(lease_.get(), &Lease::Stub::LeaseLeases, etcdserverpb::LeaseLeasesRequest());
  ASSERT_TRUE(IsOk(leases.status));
  std::vector<int64_t> ids;
  for (const auto& l : leases.response.leases()) ids.push_back(l.id());
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<int64_t>{0x51, 0x52}));

  // ignore_lease keeps the key's lease and takes the new value.
  etcdserverpb::PutRequest keep = PutOf("t/a", "2");
  keep.set_ignore_lease(true);
  keep.set_prev_kv(true);
  auto kept = Call(kv_.get(), &KV::Stub::Put, keep);
  ASSERT_TRUE(IsOk(kept.status));
  EXPECT_EQ(kept.response.prev_kv().lease(), 0x51);
  auto a = Call(kv_.get(), &KV::Stub::Range, RangeOf("t/a"));
  ASSERT_TRUE(IsOk(a.status));
  ASSERT_EQ(a.response.kvs_size(), 1);
  EXPECT_EQ(a.response.kvs(0).lease(), 0x51);
  EXPECT_EQ(a.response.kvs(0).value(), "2");

  // Compare on LEASE: equal, not equal, greater, on a key without a lease (0) and a missing key.
  auto compare = [&](const std::string& key, etcdserverpb::Compare::CompareResult result, int64_t lease) {
    etcdserverpb::TxnRequest txn;
    etcdserverpb::Compare* c = txn.add_compare();
    c->set_key(key);
    c->set_target(etcdserverpb::Compare::LEASE);
    c->set_result(result);
    c->set_lease(lease);
    auto r = Call(kv_.get(), &KV::Stub::Txn, txn);
    EXPECT_TRUE(IsOk(r.status));
    return r.response.succeeded();
  };
  EXPECT_TRUE(compare("t/a", etcdserverpb::Compare::EQUAL, 0x51));
  EXPECT_FALSE(compare("t/a", etcdserverpb::Compare::EQUAL, 0x52));
  EXPECT_TRUE(compare("t/a", etcdserverpb::Compare::NOT_EQUAL, 0x52));
  EXPECT_TRUE(compare("t/a", etcdserverpb::Compare::GREATER, 0x50));
  EXPECT_TRUE(compare("t/a", etcdserverpb::Compare::LESS, 0x52));
  EXPECT_TRUE(compare("t/c", etcdserverpb::Compare::EQUAL, 0));
  // A missing key compares as a key-value of zeros (etcd's applyCompare): its lease is 0.
  EXPECT_TRUE(compare("t/missing", etcdserverpb::Compare::EQUAL, 0));
  EXPECT_FALSE(compare("t/missing", etcdserverpb::Compare::EQUAL, 0x51));
}

INSTANTIATE_TEST_SUITE_P(Servers, LeaseErrors, ::testing::Values(Flavor::kRevkv, Flavor::kEtcd),
                         [](const ::testing::TestParamInfo<Flavor>& p) { return FlavorName(p.param); });

}  // namespace
}  // namespace revkv::integration
