// Unit tests of the store's leases (lease_table.h, apply.h): grant, revoke, the attachment index kept
// by Put, DeleteRange and Txn, a revoke deleting every attached key in one revision, and etcd's errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "runtime/gc/gc.h"
#include "runtime/heap/heap.h"
#include "runtime/safepoint/safepoint.h"
#include "server/store/errors.h"
#include "server/store/store.h"

namespace revkv::server {
namespace {

class LeaseStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    runtime::HeapOptions o;
    o.max_heap_bytes = size_t{1} << 30;
    runtime::InitializeRuntime(o);
    registration_.emplace("lease-test");
    auto s = Store::Create(StoreOptions(), nullptr);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
  }
  void TearDown() override {
    store_.reset();
    registration_.reset();
  }

  absl::StatusOr<etcdserverpb::LeaseGrantResponse> Grant(int64_t id, int64_t ttl) {
    etcdserverpb::LeaseGrantRequest r;
    r.set_id(id);
    r.set_ttl(ttl);
    auto res = store_->LeaseGrant(r);
    if (!res.ok()) return res.status();
    return res->response;
  }
  absl::StatusOr<etcdserverpb::LeaseRevokeResponse> Revoke(int64_t id) {
    etcdserverpb::LeaseRevokeRequest r;
    r.set_id(id);
    auto res = store_->LeaseRevoke(r);
    if (!res.ok()) return res.status();
    return res->response;
  }
  absl::Status Put(const std::string& k, const std::string& v, int64_t lease, bool ignore_lease = false) {
    etcdserverpb::PutRequest r;
    r.set_key(k);
    r.set_value(v);
    r.set_lease(lease);
    r.set_ignore_lease(ignore_lease);
    return store_->Put(r).status();
  }
  std::vector<std::string> Keys(int64_t id) {
    auto l = store_->LeaseAt(id, /*with_keys=*/true);
    EXPECT_TRUE(l.ok()) << l.status();
    return l.ok() ? l->keys : std::vector<std::string>();
  }
  etcdserverpb::RangeResponse All() {
    etcdserverpb::RangeRequest r;
    r.set_key(std::string(1, '\0'));
    r.set_range_end(std::string(1, '\0'));
    auto res = store_->Range(r);
    EXPECT_TRUE(res.ok()) << res.status();
    return res.ok() ? *res : etcdserverpb::RangeResponse();
  }

  std::optional<runtime::ThreadRegistration> registration_;
  std::unique_ptr<Store> store_;
};

TEST_F(LeaseStoreTest, GrantCommitsARevisionAndIsListed) {
  auto g = Grant(7, 60);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->id(), 7);
  EXPECT_EQ(g->ttl(), 60);
  EXPECT_EQ(g->header().revision(), 2);  // a departure from etcd 3.4: every write is a revision
  auto l = store_->LeaseAt(7, true);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->granted_ttl, 60);
  EXPECT_TRUE(l->keys.empty());
  auto all = store_->Leases();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].id, 7);
}

TEST_F(LeaseStoreTest, GrantChecksTheTtlAndTheIdAsEtcd) {
  EXPECT_EQ(Grant(1, kMaxLeaseTtl + 1).status(), errors::LeaseTtlTooLarge());
  auto small = Grant(1, 1);
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(small->ttl(), kMinLeaseTtl);
  EXPECT_EQ(Grant(1, 10).status(), errors::LeaseExists());
  auto chosen = Grant(0, 10);
  ASSERT_TRUE(chosen.ok());
  EXPECT_GT(chosen->id(), 0);
  auto other = Grant(0, 10);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->id(), chosen->id());
  // Negative IDs chosen by a client are leases like any other (etcd accepts them).
  ASSERT_TRUE(Grant(-5, 10).ok());
  auto all = store_->Leases();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 4u);
  EXPECT_EQ((*all)[0].id, -5);  // ID order
}

TEST_F(LeaseStoreTest, PutWithAnUnknownLeaseFailsAndChangesNothing) {
  ASSERT_TRUE(Put("a", "1", 0).ok());
  const int64_t before = store_->Revision();
  EXPECT_EQ(Put("a", "2", 42), errors::LeaseNotFound());
  EXPECT_EQ(Put("b", "2", 42), errors::LeaseNotFound());
  EXPECT_EQ(store_->Revision(), before);
  auto all = All();
  ASSERT_EQ(all.kvs_size(), 1);
  EXPECT_EQ(all.kvs(0).value(), "1");
  EXPECT_EQ(all.kvs(0).lease(), 0);
}

TEST_F(LeaseStoreTest, PutAttachesMovesAndIgnoreLeaseKeeps) {
  ASSERT_TRUE(Grant(1, 60).ok());
  ASSERT_TRUE(Grant(2, 60).ok());
  ASSERT_TRUE(Put("a", "1", 1).ok());
  ASSERT_TRUE(Put("b", "1", 1).ok());
  EXPECT_EQ(Keys(1), (std::vector<std::string>{"a", "b"}));
  ASSERT_TRUE(Put("a", "2", 2).ok());  // moves to lease 2
  EXPECT_EQ(Keys(1), (std::vector<std::string>{"b"}));
  EXPECT_EQ(Keys(2), (std::vector<std::string>{"a"}));
  ASSERT_TRUE(Put("a", "3", 0, /*ignore_lease=*/true).ok());  // keeps lease 2
  EXPECT_EQ(Keys(2), (std::vector<std::string>{"a"}));
  ASSERT_TRUE(Put("b", "2", 0).ok());  // detached: no lease
  EXPECT_TRUE(Keys(1).empty());
  auto all = All();
  ASSERT_EQ(all.kvs_size(), 2);
  EXPECT_EQ(all.kvs(0).lease(), 2);
  EXPECT_EQ(all.kvs(1).lease(), 0);
}

TEST_F(LeaseStoreTest, DeleteRangeDetaches) {
  ASSERT_TRUE(Grant(1, 60).ok());
  ASSERT_TRUE(Put("a", "1", 1).ok());
  ASSERT_TRUE(Put("b", "1", 1).ok());
  etcdserverpb::DeleteRangeRequest d;
  d.set_key("a");
  ASSERT_TRUE(store_->DeleteRange(d).ok());
  EXPECT_EQ(Keys(1), (std::vector<std::string>{"b"}));
  // A key deleted and put again without a lease is not revoked with the lease.
  ASSERT_TRUE(Put("a", "2", 0).ok());
  ASSERT_TRUE(Revoke(1).ok());
  auto all = All();
  ASSERT_EQ(all.kvs_size(), 1);
  EXPECT_EQ(all.kvs(0).key(), "a");
}

TEST_F(LeaseStoreTest, RevokeDeletesEveryAttachedKeyInOneRevision) {
  ASSERT_TRUE(Grant(9, 60).ok());
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(Put("k" + std::to_string(i), "v", 9).ok());
  ASSERT_TRUE(Put("other", "v", 0).ok());
  const int64_t before = store_->Revision();
  auto r = Revoke(9);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->header().revision(), before + 1);
  EXPECT_EQ(store_->Revision(), before + 1);
  auto all = All();
  ASSERT_EQ(all.kvs_size(), 1);
  EXPECT_EQ(all.kvs(0).key(), "other");
  EXPECT_EQ(store_->KeyCount(), 1);
  // The revision before the revoke still has them all.
  etcdserverpb::RangeRequest past;
  past.set_key("k");
  past.set_range_end("l");
  past.set_revision(before);
  past.set_count_only(true);
  auto old = store_->Range(past);
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->count(), 100);
  EXPECT_EQ(store_->LeaseAt(9, false).status(), errors::LeaseNotFound());
  EXPECT_EQ(Revoke(9).status(), errors::LeaseNotFound());
}

TEST_F(LeaseStoreTest, TxnPutsAreCheckedAndAttachAndCompareOnLeaseWorks) {
  ASSERT_TRUE(Grant(3, 60).ok());
  etcdserverpb::TxnRequest t;
  auto* op = t.add_success()->mutable_request_put();
  op->set_key("x");
  op->set_value("1");
  op->set_lease(4);  // unknown
  const int64_t before = store_->Revision();
  EXPECT_EQ(store_->Txn(t).status(), errors::LeaseNotFound());
  EXPECT_EQ(store_->Revision(), before);
  // etcd checks the Puts (checkRequestPut) before the Ranges at a revision: an unknown lease wins over
  // a future revision named by an earlier Range.
  etcdserverpb::TxnRequest both;
  auto* future = both.add_success()->mutable_request_range();
  future->set_key("x");
  future->set_revision(1000);
  *both.add_success() = t.success(0);
  EXPECT_EQ(store_->Txn(both).status(), errors::LeaseNotFound());
  op->set_lease(3);
  ASSERT_TRUE(store_->Txn(t).ok());
  EXPECT_EQ(Keys(3), (std::vector<std::string>{"x"}));
  // Compare on LEASE sees the key's lease.
  etcdserverpb::TxnRequest c;
  auto* cmp = c.add_compare();
  cmp->set_key("x");
  cmp->set_target(etcdserverpb::Compare::LEASE);
  cmp->set_result(etcdserverpb::Compare::EQUAL);
  cmp->set_lease(3);
  auto res = store_->Txn(c);
  ASSERT_TRUE(res.ok());
  EXPECT_TRUE(res->response.succeeded());
  cmp->set_lease(0);
  res = store_->Txn(c);
  ASSERT_TRUE(res.ok());
  EXPECT_FALSE(res->response.succeeded());
}

TEST_F(LeaseStoreTest, LeaseStateIsReadAtTheVisibleRevision) {
  ASSERT_TRUE(Grant(5, 30).ok());
  auto l = store_->LeaseAt(5, false);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->revision, store_->Revision());
  EXPECT_EQ(store_->LeaseAt(6, false).status(), errors::LeaseNotFound());
}

// The memory a lease costs: its lease-table row, and the attachment row of each key on it. Printed for
// docs/benchmarks.md; the bound only catches a gross regression. REVKV_LEASE_COUNT sets the count.
// The rows' bytes are the live objects': each phase ends with a compacting major collection, as the
// store's memory benchmark measures (bench/store/memory_bench.cc). A selective collection leaves the
// holes of sparse chunks it did not evacuate in the chunk-granularity figure, which then measures the
// collector's choice of chunks rather than the rows.
TEST(LeaseMemory, BytesPerLeaseAndPerAttachedKey) {
  runtime::HeapOptions o;
  o.max_heap_bytes = size_t{2} << 30;
  runtime::InitializeRuntime(o);
  runtime::ThreadRegistration registration("lease-memory");
  StoreOptions options;
  options.history_revisions = 1;  // only the newest state: superseded nodes are garbage
  auto store = Store::Create(options, nullptr);
  ASSERT_TRUE(store.ok());
  const char* env = std::getenv("REVKV_LEASE_COUNT");
  const int count = env != nullptr ? std::atoi(env) : 20000;
  auto live = [] {
    runtime::CollectMajor(runtime::MajorMode::kCompactEverything);
    const runtime::HeapUsage u = runtime::GetHeapUsage();
    return static_cast<double>(u.old_bytes + u.large_bytes);
  };
  std::vector<std::string> keys;
  for (int i = 1; i <= count; ++i) keys.push_back("key/" + std::to_string(i));
  for (const std::string& k : keys) {
    etcdserverpb::PutRequest p;
    p.set_key(k);
    ASSERT_TRUE((*store)->Put(p).ok());
  }
  const double before = live();
  for (int i = 1; i <= count; ++i) {
    etcdserverpb::LeaseGrantRequest g;
    g.set_id(i);
    g.set_ttl(60);
    ASSERT_TRUE((*store)->LeaseGrant(g).ok());
  }
  const double granted = live();
  for (int i = 1; i <= count; ++i) {
    etcdserverpb::PutRequest p;
    p.set_key(keys[static_cast<size_t>(i - 1)]);
    p.set_lease(i);
    ASSERT_TRUE((*store)->Put(p).ok());
  }
  const double attached = live();
  const double per_lease = (granted - before) / count;
  const double per_key = (attached - granted) / count;
  std::printf("%d leases: %.0f bytes per lease (table row), %.0f bytes per attached key (index row)\n", count,
              per_lease, per_key);
  EXPECT_LT(per_lease, 400);
  EXPECT_LT(per_key, 400);
}

}  // namespace
}  // namespace revkv::server
