// The security table: with authentication enabled, every RPC of revkv-server aimed at data or
// administration the caller may not touch is tried with no credentials, an expired token, a forged
// token, a token whose user's permission was revoked, and a token of a user of another prefix. Each must
// be refused with etcd's error (or, for a Watch, canceled with etcd's reason) and leave the store exactly
// as it was: the whole store's hash (Maintenance/Hash: keys, leases, alarms, users and roles) and the
// revision are compared before and after every attempt.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "revkv/v1/admin.grpc.pb.h"
#include "revkv/v1/kv.grpc.pb.h"
#include "tests/integration/etcd_calls.h"
#include "tests/integration/server_process.h"
#include "v3electionpb/v3election.grpc.pb.h"
#include "v3lockpb/v3lock.grpc.pb.h"

namespace revkv::integration {
namespace {

using etcdserverpb::Auth;
using etcdserverpb::KV;
using etcdserverpb::Lease;
using etcdserverpb::Maintenance;
using etcdserverpb::Watch;

constexpr int kTokenTtlSeconds = 2;

// The outcome of one attempt: the status, or for a Watch the cancel reason of its answer.
struct Outcome {
  grpc::Status status;
  bool watch_refused = false;
  std::string cancel_reason;
};

class Security : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.extra_flags = {"--bcrypt-cost=4", "--auth-token-ttl=" + std::to_string(kTokenTtlSeconds),
                           "--history-revisions=0"};
    server_ = std::make_unique<ServerProcess>(options);
    ASSERT_TRUE(server_->Start());
    channel_ = server_->NewChannel();
    // Users: root; alice (read-write on a/); bob (on b/); carol (on c/, revoked later).
    for (const char* user : {"root", "alice", "bob", "carol"}) {
      etcdserverpb::AuthUserAddRequest add;
      add.set_name(user);
      add.set_password(std::string(user) + "pw");
      ASSERT_TRUE(Ok(AuthCall(&Auth::Stub::UserAdd, add, "")));
    }
    for (const char* role : {"root", "a", "b", "c"}) {
      etcdserverpb::AuthRoleAddRequest add;
      add.set_name(role);
      ASSERT_TRUE(Ok(AuthCall(&Auth::Stub::RoleAdd, add, "")));
    }
    for (const auto& [role, prefix] :
         std::vector<std::pair<std::string, std::string>>{{"a", "a/"}, {"b", "b/"}, {"c", "c/"}}) {
      etcdserverpb::AuthRoleGrantPermissionRequest grant;
      grant.set_name(role);
      grant.mutable_perm()->set_permtype(authpb::Permission::READWRITE);
      grant.mutable_perm()->set_key(prefix);
      grant.mutable_perm()->set_range_end(PrefixEnd(prefix));
      ASSERT_TRUE(Ok(AuthCall(&Auth::Stub::RoleGrantPermission, grant, "")));
    }
    for (const auto& [user, role] : std::vector<std::pair<std::string, std::string>>{
             {"root", "root"}, {"alice", "a"}, {"bob", "b"}, {"carol", "c"}}) {
      etcdserverpb::AuthUserGrantRoleRequest grant;
      grant.set_user(user);
      grant.set_role(role);
      ASSERT_TRUE(Ok(AuthCall(&Auth::Stub::UserGrantRole, grant, "")));
    }
    // Data: keys under each prefix, and a lease of alice's with a key.
    auto kv = KV::NewStub(channel_);
    for (const char* key : {"a/1", "a/2", "b/1", "c/1", "c/2"}) {
      ASSERT_TRUE(IsOk(Call(kv.get(), &KV::Stub::Put, PutOf(key, "v")).status));
    }
    etcdserverpb::LeaseGrantRequest grant;
    grant.set_id(777);
    grant.set_ttl(3600);
    ASSERT_TRUE(IsOk(Call(Lease::NewStub(channel_).get(), &Lease::Stub::LeaseGrant, grant).status));
    etcdserverpb::PutRequest leased = PutOf("a/leased", "v");
    leased.set_lease(777);
    ASSERT_TRUE(IsOk(Call(kv.get(), &KV::Stub::Put, leased).status));
    etcdserverpb::LeaseGrantRequest carol_lease;
    carol_lease.set_id(888);
    carol_lease.set_ttl(3600);
    ASSERT_TRUE(IsOk(Call(Lease::NewStub(channel_).get(), &Lease::Stub::LeaseGrant, carol_lease).status));
    etcdserverpb::PutRequest carol_leased = PutOf("c/leased", "v");
    carol_leased.set_lease(888);
    ASSERT_TRUE(IsOk(Call(kv.get(), &KV::Stub::Put, carol_leased).status));
    ASSERT_TRUE(Ok(AuthCall(&Auth::Stub::AuthEnable, etcdserverpb::AuthEnableRequest(), "")));
    root_ = Token("root");
  }

  // A call of `method` with `token` in the metadata ("" for none).
  template <class Stub, class Request, class Response>
  grpc::Status CallWith(Stub* stub,
                        grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&, Response*),
                        const Request& request, const std::string& token, Response* response = nullptr) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    if (!token.empty()) context.AddMetadata("token", token);
    Response ignored;
    return (stub->*method)(&context, request, response != nullptr ? response : &ignored);
  }
  template <class Request, class Response>
  grpc::Status AuthCall(grpc::Status (Auth::Stub::*method)(grpc::ClientContext*, const Request&, Response*),
                        const Request& request, const std::string& token) {
    auto stub = Auth::NewStub(channel_);
    return CallWith(stub.get(), method, request, token);
  }
  static ::testing::AssertionResult Ok(const grpc::Status& s) { return IsOk(s); }

  std::string Token(const std::string& user) {
    etcdserverpb::AuthenticateRequest r;
    r.set_name(user);
    r.set_password(user + "pw");
    etcdserverpb::AuthenticateResponse response;
    auto stub = Auth::NewStub(channel_);
    EXPECT_TRUE(IsOk(CallWith(stub.get(), &Auth::Stub::Authenticate, r, "", &response)));
    return response.token();
  }

  // The whole store's hash and the revision, as root sees them.
  std::pair<uint32_t, int64_t> StoreState() {
    auto stub = Maintenance::NewStub(channel_);
    etcdserverpb::HashResponse hash;
    EXPECT_TRUE(
        IsOk(CallWith(stub.get(), &Maintenance::Stub::Hash, etcdserverpb::HashRequest(), root_, &hash)));
    return {hash.hash(), hash.header().revision()};
  }

  // Every attempt at `target`'s prefix ("a" for alice's data, "c" for carol's) and at administration,
  // each returning its outcome.
  std::vector<std::pair<std::string, std::function<Outcome(const std::string& token)>>> Attempts(
      const std::string& target) {
    const std::string prefix = target + "/";
    const std::string key = prefix + "1";
    const int64_t lease = target == "a" ? 777 : 888;
    std::vector<std::pair<std::string, std::function<Outcome(const std::string& token)>>> out;
    auto unary = [&](const std::string& name, auto fn) { out.emplace_back(name, fn); };
    // KV
    unary("Range", [=, this](const std::string& t) {
      auto s = KV::NewStub(channel_);
      return Outcome{CallWith(s.get(), &KV::Stub::Range, RangeOf(key), t)};
    });
    unary("Range prefix", [=, this](const std::string& t) {
      auto s = KV::NewStub(channel_);
      return Outcome{CallWith(s.get(), &KV::Stub::Range, RangeOf(prefix, PrefixEnd(prefix)), t)};
    });
    unary("Range from key", [=, this](const std::string& t) {
      auto s = KV::NewStub(channel_);
      return Outcome{CallWith(s.get(), &KV::Stub::Range, RangeOf(key, std::string(1, '\0')), t)};
    });
    unary("Range at a past revision", [=, this](const std::string& t) {
      auto s = KV::NewStub(channel_);
      return Outcome{CallWith(s.get(), &KV::Stub::Range, RangeOf(key, "", 3), t)};
    });
    unary("Put", [=, this](const std::string& t) {
      auto s = KV::NewStub(channel_);
      return Outcome{CallWith(s.get(), &KV::Stub::Put, PutOf(key, "stolen"), t)};
    });
    unary("Put attaching to the lease", [=, this](const std::string& t) {
      auto s = KV::NewStub(channel_);
      etcdserverpb::PutRequest p = PutOf("b/mine", "v");
      p.set_lease(lease);
      return Outcome{CallWith(s.get(), &KV::Stub::Put, p, t)};
    });
    unary("DeleteRange", [=, this](const std::string& t) {
      auto s = KV::NewStub(channel_);
      return Outcome{CallWith(s.get(), &KV::Stub::DeleteRange, DeleteOf(prefix, PrefixEnd(prefix)), t)};
    });
    unary("Txn put", [=, this](const std::string& t) {
      auto s = KV::NewStub(channel_);
      etcdserverpb::TxnRequest txn;
      *txn.add_success() = OpOf(PutOf(key, "stolen"));
      return Outcome{CallWith(s.get(), &KV::Stub::Txn, txn, t)};
    });
    unary("Txn read", [=, this](const std::string& t) {
      auto s = KV::NewStub(channel_);
      etcdserverpb::TxnRequest txn;
      *txn.add_success() = OpOf(RangeOf(key));
      return Outcome{CallWith(s.get(), &KV::Stub::Txn, txn, t)};
    });
    unary("Txn compare", [=, this](const std::string& t) {
      auto s = KV::NewStub(channel_);
      etcdserverpb::TxnRequest txn;
      *txn.add_compare() = CompareValue(key, etcdserverpb::Compare::EQUAL, "v");
      *txn.add_success() = OpOf(PutOf("b/oracle", "v"));
      return Outcome{CallWith(s.get(), &KV::Stub::Txn, txn, t)};
    });
    unary("Txn nested", [=, this](const std::string& t) {
      auto s = KV::NewStub(channel_);
      etcdserverpb::TxnRequest inner;
      *inner.add_success() = OpOf(DeleteOf(key));
      etcdserverpb::TxnRequest txn;
      *txn.add_success() = OpOf(inner);
      return Outcome{CallWith(s.get(), &KV::Stub::Txn, txn, t)};
    });
    unary("Compact", [=, this](const std::string& t) {
      auto s = KV::NewStub(channel_);
      etcdserverpb::CompactionRequest c;
      c.set_revision(3);
      return Outcome{CallWith(s.get(), &KV::Stub::Compact, c, t)};
    });
    unary("Pipeline", [=, this](const std::string& t) {
      auto s = ::revkv::v1::KV::NewStub(channel_);
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
      if (!t.empty()) context.AddMetadata("token", t);
      auto stream = s->Pipeline(&context);
      etcdserverpb::TxnRequest txn;
      *txn.add_success() = OpOf(PutOf(key, "stolen"));
      stream->Write(txn);
      stream->WritesDone();
      etcdserverpb::TxnResponse r;
      while (stream->Read(&r)) {
      }
      return Outcome{stream->Finish()};
    });
    // A batch's refusal is its request's result (the stream itself goes on).
    unary("PipelineBatch", [=, this](const std::string& t) {
      auto s = ::revkv::v1::KV::NewStub(channel_);
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
      if (!t.empty()) context.AddMetadata("token", t);
      auto stream = s->PipelineBatch(&context);
      ::revkv::v1::TxnBatch batch;
      *batch.add_requests()->add_success() = OpOf(PutOf(key, "stolen"));
      stream->Write(batch);
      stream->WritesDone();
      ::revkv::v1::TxnBatchResponse r;
      grpc::Status refused;
      while (stream->Read(&r)) {
        if (r.results_size() > 0 && r.results(0).has_error()) {
          refused = grpc::Status(static_cast<grpc::StatusCode>(r.results(0).error().code()),
                                 r.results(0).error().message());
        }
      }
      const grpc::Status finished = stream->Finish();
      return Outcome{finished.ok() ? refused : finished};
    });
    // Watch
    unary("Watch", [=, this](const std::string& t) {
      auto s = Watch::NewStub(channel_);
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
      if (!t.empty()) context.AddMetadata("token", t);
      auto stream = s->Watch(&context);
      etcdserverpb::WatchRequest create;
      create.mutable_create_request()->set_key(prefix);
      create.mutable_create_request()->set_range_end(PrefixEnd(prefix));
      stream->Write(create);
      etcdserverpb::WatchResponse r;
      Outcome o;
      if (stream->Read(&r)) {
        o.watch_refused = r.created() && r.canceled() && r.watch_id() == -1;
        o.cancel_reason = r.cancel_reason();
      }
      context.TryCancel();
      (void)stream->Finish();
      return o;
    });
    // Lease
    unary("LeaseRevoke", [=, this](const std::string& t) {
      auto s = Lease::NewStub(channel_);
      etcdserverpb::LeaseRevokeRequest r;
      r.set_id(lease);
      return Outcome{CallWith(s.get(), &Lease::Stub::LeaseRevoke, r, t)};
    });
    unary("LeaseTimeToLive with keys", [=, this](const std::string& t) {
      auto s = Lease::NewStub(channel_);
      etcdserverpb::LeaseTimeToLiveRequest r;
      r.set_id(lease);
      r.set_keys(true);
      return Outcome{CallWith(s.get(), &Lease::Stub::LeaseTimeToLive, r, t)};
    });
    // Maintenance (the root role)
    unary("Hash", [=, this](const std::string& t) {
      auto s = Maintenance::NewStub(channel_);
      return Outcome{CallWith(s.get(), &Maintenance::Stub::Hash, etcdserverpb::HashRequest(), t)};
    });
    unary("HashKV", [=, this](const std::string& t) {
      auto s = Maintenance::NewStub(channel_);
      return Outcome{CallWith(s.get(), &Maintenance::Stub::HashKV, etcdserverpb::HashKVRequest(), t)};
    });
    unary("Defragment", [=, this](const std::string& t) {
      auto s = Maintenance::NewStub(channel_);
      return Outcome{CallWith(s.get(), &Maintenance::Stub::Defragment, etcdserverpb::DefragmentRequest(), t)};
    });
    unary("MoveLeader", [=, this](const std::string& t) {
      auto s = Maintenance::NewStub(channel_);
      return Outcome{CallWith(s.get(), &Maintenance::Stub::MoveLeader, etcdserverpb::MoveLeaderRequest(), t)};
    });
    unary("Alarm activate", [=, this](const std::string& t) {
      auto s = Maintenance::NewStub(channel_);
      etcdserverpb::AlarmRequest r;
      r.set_action(etcdserverpb::AlarmRequest::ACTIVATE);
      r.set_memberid(1);
      r.set_alarm(etcdserverpb::CORRUPT);
      return Outcome{CallWith(s.get(), &Maintenance::Stub::Alarm, r, t)};
    });
    unary("Snapshot", [=, this](const std::string& t) {
      auto s = Maintenance::NewStub(channel_);
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
      if (!t.empty()) context.AddMetadata("token", t);
      auto reader = s->Snapshot(&context, etcdserverpb::SnapshotRequest());
      etcdserverpb::SnapshotResponse r;
      while (reader->Read(&r)) {
      }
      return Outcome{reader->Finish()};
    });
    // Auth (the root role; UserGet of oneself and RoleGet of one's role aside)
    unary("UserAdd", [=, this](const std::string& t) {
      etcdserverpb::AuthUserAddRequest r;
      r.set_name("mallory");
      r.set_password("pw");
      return Outcome{AuthCall(&Auth::Stub::UserAdd, r, t)};
    });
    unary("UserDelete", [=, this](const std::string& t) {
      etcdserverpb::AuthUserDeleteRequest r;
      r.set_name("alice");
      return Outcome{AuthCall(&Auth::Stub::UserDelete, r, t)};
    });
    unary("UserChangePassword", [=, this](const std::string& t) {
      etcdserverpb::AuthUserChangePasswordRequest r;
      r.set_name("alice");
      r.set_password("owned");
      return Outcome{AuthCall(&Auth::Stub::UserChangePassword, r, t)};
    });
    unary("UserGrantRole", [=, this](const std::string& t) {
      etcdserverpb::AuthUserGrantRoleRequest r;
      r.set_user("bob");
      r.set_role("root");
      return Outcome{AuthCall(&Auth::Stub::UserGrantRole, r, t)};
    });
    unary("UserRevokeRole", [=, this](const std::string& t) {
      etcdserverpb::AuthUserRevokeRoleRequest r;
      r.set_name("alice");
      r.set_role("a");
      return Outcome{AuthCall(&Auth::Stub::UserRevokeRole, r, t)};
    });
    unary("UserGet", [=, this](const std::string& t) {
      etcdserverpb::AuthUserGetRequest r;
      r.set_name("root");
      return Outcome{AuthCall(&Auth::Stub::UserGet, r, t)};
    });
    unary("UserList", [=, this](const std::string& t) {
      return Outcome{AuthCall(&Auth::Stub::UserList, etcdserverpb::AuthUserListRequest(), t)};
    });
    unary("RoleAdd", [=, this](const std::string& t) {
      etcdserverpb::AuthRoleAddRequest r;
      r.set_name("evil");
      return Outcome{AuthCall(&Auth::Stub::RoleAdd, r, t)};
    });
    unary("RoleDelete", [=, this](const std::string& t) {
      etcdserverpb::AuthRoleDeleteRequest r;
      r.set_role("a");
      return Outcome{AuthCall(&Auth::Stub::RoleDelete, r, t)};
    });
    unary("RoleGet", [=, this](const std::string& t) {
      etcdserverpb::AuthRoleGetRequest r;
      r.set_role("root");
      return Outcome{AuthCall(&Auth::Stub::RoleGet, r, t)};
    });
    unary("RoleList", [=, this](const std::string& t) {
      return Outcome{AuthCall(&Auth::Stub::RoleList, etcdserverpb::AuthRoleListRequest(), t)};
    });
    unary("RoleGrantPermission", [=, this](const std::string& t) {
      etcdserverpb::AuthRoleGrantPermissionRequest r;
      r.set_name("b");
      r.mutable_perm()->set_permtype(authpb::Permission::READWRITE);
      r.mutable_perm()->set_key(prefix);
      r.mutable_perm()->set_range_end(PrefixEnd(prefix));
      return Outcome{AuthCall(&Auth::Stub::RoleGrantPermission, r, t)};
    });
    unary("RoleRevokePermission", [=, this](const std::string& t) {
      etcdserverpb::AuthRoleRevokePermissionRequest r;
      r.set_role("a");
      r.set_key("a/");
      r.set_range_end(PrefixEnd("a/"));
      return Outcome{AuthCall(&Auth::Stub::RoleRevokePermission, r, t)};
    });
    unary("AuthDisable", [=, this](const std::string& t) {
      return Outcome{AuthCall(&Auth::Stub::AuthDisable, etcdserverpb::AuthDisableRequest(), t)};
    });
    // Lock and Election under the prefix (etcd answers their errors as UNKNOWN with etcd's message)
    unary("Lock", [=, this](const std::string& t) {
      auto s = v3lockpb::Lock::NewStub(channel_);
      v3lockpb::LockRequest r;
      r.set_name(prefix + "lock");
      return Outcome{CallWith(s.get(), &v3lockpb::Lock::Stub::Lock, r, t)};
    });
    unary("Unlock", [=, this](const std::string& t) {
      auto s = v3lockpb::Lock::NewStub(channel_);
      v3lockpb::UnlockRequest r;
      r.set_key(key);
      return Outcome{CallWith(s.get(), &v3lockpb::Lock::Stub::Unlock, r, t)};
    });
    unary("Campaign", [=, this](const std::string& t) {
      auto s = v3electionpb::Election::NewStub(channel_);
      v3electionpb::CampaignRequest r;
      r.set_name(prefix + "election");
      r.set_value("me");
      return Outcome{CallWith(s.get(), &v3electionpb::Election::Stub::Campaign, r, t)};
    });
    unary("Leader", [=, this](const std::string& t) {
      auto s = v3electionpb::Election::NewStub(channel_);
      v3electionpb::LeaderRequest r;
      r.set_name(prefix + "election");
      return Outcome{CallWith(s.get(), &v3electionpb::Election::Stub::Leader, r, t)};
    });
    unary("Resign", [=, this](const std::string& t) {
      auto s = v3electionpb::Election::NewStub(channel_);
      v3electionpb::ResignRequest r;
      r.mutable_leader()->set_name(prefix + "election");
      r.mutable_leader()->set_key(key);
      return Outcome{CallWith(s.get(), &v3electionpb::Election::Stub::Resign, r, t)};
    });
    unary("Observe", [=, this](const std::string& t) {
      auto s = v3electionpb::Election::NewStub(channel_);
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
      if (!t.empty()) context.AddMetadata("token", t);
      v3electionpb::LeaderRequest r;
      r.set_name(prefix + "election");
      auto reader = s->Observe(&context, r);
      v3electionpb::LeaderResponse leader;
      while (reader->Read(&leader)) {
      }
      return Outcome{reader->Finish()};
    });
    // revkv.v1.Admin's operator actions
    unary("Admin Collect", [=, this](const std::string& t) {
      auto s = ::revkv::v1::Admin::NewStub(channel_);
      return Outcome{CallWith(s.get(), &::revkv::v1::Admin::Stub::Collect, ::revkv::v1::CollectRequest(), t)};
    });
    unary("Admin Checkpoint", [=, this](const std::string& t) {
      auto s = ::revkv::v1::Admin::NewStub(channel_);
      return Outcome{
          CallWith(s.get(), &::revkv::v1::Admin::Stub::Checkpoint, ::revkv::v1::CheckpointRequest(), t)};
    });
    return out;
  }

  // Runs every attempt with `token` and expects each refused with `message` and the store unchanged.
  void ExpectAllRefused(const std::string& variant, const std::string& target, const std::string& token,
                        const std::string& message) {
    const std::pair<uint32_t, int64_t> before = StoreState();
    int attempts = 0;
    for (auto& [name, attempt] : Attempts(target)) {
      ++attempts;
      const Outcome o = attempt(token);
      if (name == "Watch") {
        EXPECT_TRUE(o.watch_refused) << variant << ": " << name << " was not refused";
        EXPECT_NE(o.cancel_reason.find(message), std::string::npos)
            << variant << ": " << name << ": cancel reason \"" << o.cancel_reason << "\"";
      } else {
        EXPECT_FALSE(o.status.ok()) << variant << ": " << name << " succeeded";
        EXPECT_NE(o.status.error_message().find(message), std::string::npos)
            << variant << ": " << name << ": " << StatusText(o.status) << ", expected \"" << message << "\"";
      }
      const std::pair<uint32_t, int64_t> after = StoreState();
      EXPECT_EQ(after, before) << variant << ": " << name << " changed the store";
    }
    EXPECT_GE(attempts, 40);
  }

  std::unique_ptr<ServerProcess> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::string root_;
};

TEST_F(Security, EveryRpcWithoutCredentialsIsRefused) {
  ExpectAllRefused("unauthenticated", "a", "", "etcdserver: user name is empty");
}

TEST_F(Security, EveryRpcWithAnExpiredTokenIsRefused) {
  const std::string alice = Token("alice");
  ASSERT_FALSE(alice.empty());
  std::this_thread::sleep_for(std::chrono::seconds(kTokenTtlSeconds + 1));  // unused past its TTL
  root_ = Token("root");                                                    // root's expired too
  ExpectAllRefused("expired token", "a", alice, "etcdserver: invalid auth token");
}

TEST_F(Security, EveryRpcWithAForgedTokenIsRefused) {
  const std::string real = Token("alice");
  ASSERT_GT(real.size(), 17u);
  std::string forged = real;
  forged[0] = forged[0] == 'a' ? 'b' : 'a';  // a token never handed out
  ExpectAllRefused("forged token", "a", forged, "etcdserver: invalid auth token");
  ExpectAllRefused("made-up token", "a", "abcdefghijklmnop.3", "etcdserver: invalid auth token");
  std::string other_index = real.substr(0, 17) + "999999";  // a real prefix with another index
  ExpectAllRefused("token with another index", "a", other_index, "etcdserver: invalid auth token");
}

TEST_F(Security, EveryRpcAfterItsPermissionWasRevokedIsRefused) {
  const std::string carol = Token("carol");
  // With the permission, carol reads her key.
  auto kv = KV::NewStub(channel_);
  ASSERT_TRUE(IsOk(CallWith(kv.get(), &KV::Stub::Range, RangeOf("c/1"), carol)));
  etcdserverpb::AuthRoleRevokePermissionRequest revoke;
  revoke.set_role("c");
  revoke.set_key("c/");
  revoke.set_range_end(PrefixEnd("c/"));
  ASSERT_TRUE(Ok(AuthCall(&Auth::Stub::RoleRevokePermission, revoke, root_)));
  ExpectAllRefused("revoked permission", "c", carol, "etcdserver: permission denied");
}

TEST_F(Security, EveryRpcByAUserOfAnotherPrefixIsRefused) {
  const std::string bob = Token("bob");
  auto kv = KV::NewStub(channel_);
  ASSERT_TRUE(IsOk(CallWith(kv.get(), &KV::Stub::Range, RangeOf("b/1"), bob)));  // his own prefix: fine
  ExpectAllRefused("another prefix's user", "a", bob, "etcdserver: permission denied");
}

}  // namespace
}  // namespace revkv::integration
