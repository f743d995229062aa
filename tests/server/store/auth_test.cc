// Unit tests of the store's auth state (auth_state.h, auth_checks.h): etcd's auth store semantics and
// errors, etcd's permission intervals, each request's checks, and a write racing a revoked permission
// never committing after it.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "runtime/heap/heap.h"
#include "runtime/safepoint/safepoint.h"
#include "server/store/auth_state.h"
#include "server/store/errors.h"
#include "server/store/store.h"

namespace revkv::server {
namespace {

using revkv::v1::AuthChange;
using store::AuthView;

// ----- the view, without a store -----------------------------------------------------------------------

authpb::Permission Perm(authpb::Permission::Type type, const std::string& key, const std::string& end) {
  authpb::Permission p;
  p.set_permtype(type);
  p.set_key(key);
  p.set_range_end(end);
  return p;
}

std::shared_ptr<const AuthView> ViewWith(const std::vector<authpb::Permission>& perms, bool root = false) {
  revkv::v1::AuthState state = store::InitialAuthState();
  state.set_enabled(true);
  authpb::Role* role = state.add_roles();
  role->set_name("r");
  for (const auto& p : perms) *role->add_keypermission() = p;
  authpb::User* u = state.add_users();
  u->set_name("u");
  u->add_roles("r");
  if (root) u->add_roles("root");
  return AuthView::Of(state);
}

const std::string kAll(1, '\0');  // etcd's "to the end of the key space"

// etcd's range_perm_cache: a single key needs a permission holding it; a range needs the union of the
// permissions to cover it without a gap; "\0" reaches to the end of the key space.
TEST(AuthView, PermissionIntervalsAsEtcds) {
  const AuthInfo u{"u"};
  auto view =
      ViewWith({Perm(authpb::Permission::READ, "a", "c"), Perm(authpb::Permission::READ, "c", "e"),
                Perm(authpb::Permission::READWRITE, "k", ""), Perm(authpb::Permission::WRITE, "x", kAll)});
  EXPECT_TRUE(view->CheckRange(u, "a", "", false).ok());
  EXPECT_TRUE(view->CheckRange(u, "b", "", false).ok());
  EXPECT_TRUE(view->CheckRange(u, "a", "e", false).ok());  // two adjacent permissions cover it
  EXPECT_TRUE(view->CheckRange(u, "b", "d", false).ok());
  EXPECT_EQ(view->CheckRange(u, "a", "f", false), errors::PermissionDenied());  // past "e"
  EXPECT_EQ(view->CheckRange(u, "e", "", false), errors::PermissionDenied());   // "e" is outside [c, e)
  EXPECT_EQ(view->CheckRange(u, "a", "", true), errors::PermissionDenied());    // read only
  EXPECT_TRUE(view->CheckRange(u, "k", "", true).ok());
  EXPECT_EQ(view->CheckRange(u, "k0", "", false), errors::PermissionDenied());  // the key alone
  EXPECT_EQ(view->CheckRange(u, "k", "l", false), errors::PermissionDenied());  // more than the key
  EXPECT_TRUE(view->CheckRange(u, "x", kAll, true).ok());
  EXPECT_TRUE(view->CheckRange(u, "zzz", "", true).ok());
  EXPECT_EQ(view->CheckRange(u, "w", kAll, true), errors::PermissionDenied());
  EXPECT_EQ(view->CheckRange(u, "x", kAll, false), errors::PermissionDenied());
  EXPECT_EQ(view->CheckRange(AuthInfo{}, "a", "", false), errors::UserEmpty());
  EXPECT_EQ(view->CheckRange(AuthInfo{"nobody"}, "a", "", false), errors::PermissionDenied());
  EXPECT_TRUE(ViewWith({}, /*root=*/true)->CheckRange(u, "anything", kAll, true).ok());
  EXPECT_EQ(view->CheckAdmin(u), errors::PermissionDenied());
  EXPECT_EQ(view->CheckAdmin(AuthInfo{"nobody"}), errors::UserNotFound());
  EXPECT_TRUE(ViewWith({}, true)->CheckAdmin(u).ok());
}

// ----- the store ---------------------------------------------------------------------------------------

class AuthStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    runtime::HeapOptions o;
    o.max_heap_bytes = size_t{1} << 30;
    runtime::InitializeRuntime(o);
    registration_.emplace("auth-test");
    auto s = Store::Create(StoreOptions(), nullptr);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
  }
  void TearDown() override {
    store_.reset();
    registration_.reset();
  }

  absl::Status Change(const AuthChange& c, const AuthInfo* who = nullptr) {
    auto r = store_->AuthChange(c, who);
    if (r.ok()) store_->RefreshAuth();
    return r.status();
  }
  absl::Status UserAdd(const std::string& name, const AuthInfo* who = nullptr) {
    AuthChange c;
    c.mutable_user_add()->set_name(name);
    c.mutable_user_add()->set_password("$2b$04$hash");
    return Change(c, who);
  }
  absl::Status RoleAdd(const std::string& name) {
    AuthChange c;
    c.mutable_role_add()->set_name(name);
    return Change(c);
  }
  absl::Status Grant(const std::string& user, const std::string& role) {
    AuthChange c;
    c.mutable_user_grant_role()->set_user(user);
    c.mutable_user_grant_role()->set_role(role);
    return Change(c);
  }
  absl::Status Permit(const std::string& role, authpb::Permission::Type type, const std::string& key,
                      const std::string& end) {
    AuthChange c;
    c.mutable_role_grant_permission()->set_name(role);
    *c.mutable_role_grant_permission()->mutable_perm() = Perm(type, key, end);
    return Change(c);
  }
  absl::Status Unpermit(const std::string& role, const std::string& key, const std::string& end) {
    AuthChange c;
    c.mutable_role_revoke_permission()->set_role(role);
    c.mutable_role_revoke_permission()->set_key(key);
    c.mutable_role_revoke_permission()->set_range_end(end);
    return Change(c);
  }
  absl::Status Enable(const AuthInfo* who = nullptr) {
    AuthChange c;
    c.mutable_enable();
    return Change(c, who);
  }
  // root (root role), alice (read-write on prefix "a/"), bob (read on the key "b"); auth enabled.
  void SetUpUsers() {
    ASSERT_TRUE(UserAdd("root").ok());
    ASSERT_TRUE(Grant("root", "root").ok());
    ASSERT_TRUE(UserAdd("alice").ok());
    ASSERT_TRUE(RoleAdd("a").ok());
    ASSERT_TRUE(Permit("a", authpb::Permission::READWRITE, "a/", "a0").ok());
    ASSERT_TRUE(Grant("alice", "a").ok());
    ASSERT_TRUE(UserAdd("bob").ok());
    ASSERT_TRUE(RoleAdd("b").ok());
    ASSERT_TRUE(Permit("b", authpb::Permission::READ, "b", "").ok());
    ASSERT_TRUE(Grant("bob", "b").ok());
    ASSERT_TRUE(Enable().ok());
  }
  absl::Status Put(const std::string& k, const AuthInfo* who, int64_t lease = 0, bool prev_kv = false) {
    etcdserverpb::PutRequest r;
    r.set_key(k);
    r.set_value("v");
    r.set_lease(lease);
    r.set_prev_kv(prev_kv);
    return store_->Put(r, who).status();
  }
  absl::Status Get(const std::string& k, const std::string& end, const AuthInfo* who) {
    etcdserverpb::RangeRequest r;
    r.set_key(k);
    r.set_range_end(end);
    return store_->Range(r, who).status();
  }

  std::optional<runtime::ThreadRegistration> registration_;
  std::unique_ptr<Store> store_;
};

// etcd's auth store: names given and unique; AuthEnable needs root with the root role; the root user and
// role are protected while enabled; the revision advances with every change but AuthEnable.
TEST_F(AuthStoreTest, EtcdsAuthStoreSemanticsAndErrors) {
  EXPECT_EQ(UserAdd(""), errors::UserEmpty());
  EXPECT_EQ(RoleAdd(""), errors::RoleEmpty());
  EXPECT_EQ(Enable(), errors::RootUserNotExist());
  ASSERT_TRUE(UserAdd("root").ok());
  EXPECT_EQ(UserAdd("root"), errors::UserAlreadyExists());
  EXPECT_EQ(Enable(), errors::RootRoleNotExist());
  EXPECT_EQ(Grant("root", "nope"), errors::RoleNotFound());
  EXPECT_EQ(Grant("nobody", "root"), errors::UserNotFound());
  ASSERT_TRUE(Grant("root", "root").ok());  // the root role needs no RoleAdd
  const uint64_t before = store_->VisibleAuth()->revision();
  const int64_t kv_revision = store_->Revision();
  EXPECT_TRUE(Grant("root", "root").ok());  // granted twice: nothing changes
  EXPECT_EQ(store_->VisibleAuth()->revision(), before);
  EXPECT_EQ(store_->Revision(), kv_revision);
  ASSERT_TRUE(Enable().ok());
  EXPECT_TRUE(store_->VisibleAuth()->enabled());
  EXPECT_EQ(store_->VisibleAuth()->revision(), before);  // etcd: AuthEnable does not advance it
  EXPECT_TRUE(Enable().ok());                            // already enabled: ignored
  const AuthInfo root{"root"};
  AuthChange del;
  del.mutable_user_delete()->set_name("root");
  EXPECT_EQ(Change(del, &root), errors::InvalidAuthManagement());
  AuthChange revoke;
  revoke.mutable_user_revoke_role()->set_name("root");
  revoke.mutable_user_revoke_role()->set_role("root");
  EXPECT_EQ(Change(revoke, &root), errors::InvalidAuthManagement());
  AuthChange role_del;
  role_del.mutable_role_delete()->set_role("root");
  EXPECT_EQ(Change(role_del, &root), errors::InvalidAuthManagement());
  // Changes need the root role now.
  EXPECT_EQ(UserAdd("carol", nullptr), absl::OkStatus());  // the server itself is never checked
  const AuthInfo carol{"carol"};
  EXPECT_EQ(UserAdd("dave", &carol), errors::PermissionDenied());
  const AuthInfo none{};
  EXPECT_EQ(UserAdd("dave", &none), errors::UserEmpty());
  EXPECT_TRUE(UserAdd("dave", &root).ok());
  // Role and permission errors.
  ASSERT_TRUE(RoleAdd("r").ok());
  EXPECT_EQ(RoleAdd("r"), errors::RoleAlreadyExists());
  EXPECT_EQ(Unpermit("r", "k", ""), errors::PermissionNotGranted());
  EXPECT_EQ(Unpermit("nope", "k", ""), errors::RoleNotFound());
  ASSERT_TRUE(Permit("r", authpb::Permission::READ, "k", "").ok());
  ASSERT_TRUE(Permit("r", authpb::Permission::WRITE, "k", "").ok());  // the same interval: updated
  ASSERT_TRUE(Permit("r", authpb::Permission::READ, "a", "b").ok());
  const authpb::Role* r = store_->VisibleAuth()->FindRole("r");
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(r->keypermission_size(), 2);
  EXPECT_EQ(r->keypermission(0).key(), "a");  // etcd keeps them sorted by key
  EXPECT_EQ(r->keypermission(1).permtype(), authpb::Permission::WRITE);
  AuthChange not_granted;
  not_granted.mutable_user_revoke_role()->set_name("dave");
  not_granted.mutable_user_revoke_role()->set_role("r");
  EXPECT_EQ(Change(not_granted), errors::RoleNotGranted());
  // Deleting a role takes it from its users.
  ASSERT_TRUE(Grant("dave", "r").ok());
  AuthChange delete_r;
  delete_r.mutable_role_delete()->set_role("r");
  ASSERT_TRUE(Change(delete_r).ok());
  EXPECT_FALSE(store_->VisibleAuth()->HasRole("dave", "r"));
}

// Each request's checks (auth_checks.h), with etcd's errors; a refused write changes nothing.
TEST_F(AuthStoreTest, EveryRequestIsCheckedForItsCaller) {
  SetUpUsers();
  const AuthInfo alice{"alice"}, bob{"bob"}, nobody{}, stranger{"mallory"}, root{"root"};
  const int64_t rev = store_->Revision();
  EXPECT_EQ(Put("a/1", &nobody), errors::UserEmpty());
  EXPECT_EQ(Put("a/1", &stranger), errors::PermissionDenied());
  EXPECT_EQ(Put("a/1", &bob), errors::PermissionDenied());
  EXPECT_EQ(Put("b", &bob), errors::PermissionDenied());  // read only
  EXPECT_EQ(Put("b/1", &alice), errors::PermissionDenied());
  EXPECT_EQ(store_->Revision(), rev);
  EXPECT_TRUE(Put("a/1", &alice).ok());
  EXPECT_TRUE(Put("b", &root).ok());
  EXPECT_TRUE(Get("a/1", "", &alice).ok());
  EXPECT_TRUE(Get("a/", "a0", &alice).ok());
  EXPECT_EQ(Get("a/", "b", &alice), errors::PermissionDenied());  // more than the prefix
  EXPECT_EQ(Get("a/1", "", &bob), errors::PermissionDenied());
  EXPECT_TRUE(Get("b", "", &bob).ok());
  EXPECT_EQ(Get("b", kAll, &bob), errors::PermissionDenied());
  // DeleteRange: write, and read too with prev_kv.
  etcdserverpb::DeleteRangeRequest d;
  d.set_key("b");
  EXPECT_EQ(store_->DeleteRange(d, &bob).status(), errors::PermissionDenied());
  // Txn: compares are reads; every operation of both branches is checked, nested Txns too.
  etcdserverpb::TxnRequest t;
  auto* c = t.add_compare();
  c->set_key("b");
  c->set_target(etcdserverpb::Compare::VERSION);
  t.add_success()->mutable_request_put()->set_key("a/2");
  EXPECT_EQ(store_->Txn(t, TxnReads::kDurable, &alice).status(), errors::PermissionDenied());  // compare on b
  t.clear_compare();
  t.add_failure()->mutable_request_delete_range()->set_key("b");
  EXPECT_EQ(store_->Txn(t, TxnReads::kDurable, &alice).status(),
            errors::PermissionDenied());  // untaken branch
  t.clear_failure();
  t.add_success()->mutable_request_txn()->add_success()->mutable_request_put()->set_key("zzz");
  EXPECT_EQ(store_->Txn(t, TxnReads::kDurable, &alice).status(), errors::PermissionDenied());  // nested
  t.mutable_success()->RemoveLast();
  EXPECT_TRUE(store_->Txn(t, TxnReads::kDurable, &alice).ok());
  // A read-only Txn is checked as a read.
  etcdserverpb::TxnRequest ro;
  ro.add_success()->mutable_request_range()->set_key("b");
  EXPECT_EQ(store_->Txn(ro, TxnReads::kDurable, &alice).status(), errors::PermissionDenied());
  EXPECT_TRUE(store_->Txn(ro, TxnReads::kDurable, &bob).ok());
  // Leases: a grant needs a user; attaching to a lease, and revoking it, needs write on its keys.
  etcdserverpb::LeaseGrantRequest g;
  g.set_id(9);
  g.set_ttl(60);
  EXPECT_EQ(store_->LeaseGrant(g, &nobody).status(), errors::UserEmpty());
  ASSERT_TRUE(store_->LeaseGrant(g, &root).ok());
  ASSERT_TRUE(Put("b/leased", &root, 9).ok());
  EXPECT_EQ(Put("a/3", &alice, 9), errors::PermissionDenied());  // etcd's checkLeasePuts
  etcdserverpb::LeaseRevokeRequest revoke;
  revoke.set_id(9);
  EXPECT_EQ(store_->LeaseRevoke(revoke, &alice).status(), errors::PermissionDenied());
  EXPECT_TRUE(store_->LeaseRevoke(revoke, &root).ok());
  // Compact and alarms need the root role.
  etcdserverpb::CompactionRequest compact;
  compact.set_revision(2);
  EXPECT_EQ(store_->Compact(compact, &alice).status(), errors::PermissionDenied());
  etcdserverpb::AlarmRequest alarm;
  alarm.set_action(etcdserverpb::AlarmRequest::ACTIVATE);
  alarm.set_alarm(etcdserverpb::NOSPACE);
  EXPECT_EQ(store_->Alarm(alarm, &alice).status(), errors::PermissionDenied());
}

// A revoked permission refuses the next write, and a deleted user's next request.
TEST_F(AuthStoreTest, ARevokedPermissionOrADeletedUserRefusesTheNextRequest) {
  SetUpUsers();
  const AuthInfo alice{"alice"};
  ASSERT_TRUE(Put("a/1", &alice).ok());
  ASSERT_TRUE(Unpermit("a", "a/", "a0").ok());
  EXPECT_EQ(Put("a/1", &alice), errors::PermissionDenied());
  EXPECT_EQ(Get("a/1", "", &alice), errors::PermissionDenied());
  ASSERT_TRUE(Permit("a", authpb::Permission::READWRITE, "a/", "a0").ok());
  ASSERT_TRUE(Put("a/1", &alice).ok());
  AuthChange del;
  del.mutable_user_delete()->set_name("alice");
  ASSERT_TRUE(Change(del).ok());
  EXPECT_EQ(Put("a/1", &alice), errors::PermissionDenied());
  EXPECT_EQ(Get("a/1", "", &alice), errors::PermissionDenied());
}

// A write reads the auth state inside its transaction: writers racing 30 revoke/grant cycles of their
// permission never commit while it is revoked.
TEST_F(AuthStoreTest, AWriteRacingARevokeNeverCommitsWhileItIsRevoked) {
  SetUpUsers();
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::vector<int64_t> puts;
  std::vector<std::thread> writers;
  for (int t = 0; t < 3; ++t) {
    writers.emplace_back([&, t] {
      runtime::ThreadRegistration registration("writer");
      const AuthInfo alice{"alice"};
      for (int i = 0; !stop.load(); ++i) {
        etcdserverpb::PutRequest p;
        p.set_key("a/" + std::to_string(t) + "/" + std::to_string(i % 50));
        auto r = store_->Put(p, &alice);
        if (r.ok()) {
          std::lock_guard<std::mutex> lock(mu);
          puts.push_back(r->revision);
        } else {
          EXPECT_EQ(r.status(), errors::PermissionDenied());
        }
      }
    });
  }
  std::vector<std::pair<int64_t, int64_t>> revoked;
  for (int cycle = 0; cycle < 30; ++cycle) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    AuthChange off;
    off.mutable_role_revoke_permission()->set_role("a");
    off.mutable_role_revoke_permission()->set_key("a/");
    off.mutable_role_revoke_permission()->set_range_end("a0");
    auto r1 = store_->AuthChange(off);
    ASSERT_TRUE(r1.ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    AuthChange on;
    on.mutable_role_grant_permission()->set_name("a");
    *on.mutable_role_grant_permission()->mutable_perm() = Perm(authpb::Permission::READWRITE, "a/", "a0");
    auto r2 = store_->AuthChange(on);
    ASSERT_TRUE(r2.ok());
    revoked.emplace_back(r1->revision, r2->revision);
  }
  stop = true;
  for (auto& w : writers) w.join();
  ASSERT_FALSE(puts.empty());
  for (int64_t rev : puts) {
    for (const auto& [from, to] : revoked) {
      EXPECT_FALSE(rev > from && rev < to)
          << "a Put committed at " << rev << " while revoked (" << from << " to " << to << ")";
    }
  }
}

}  // namespace
}  // namespace revkv::server
