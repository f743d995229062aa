// Unit tests of the store's hashes (etcd's HashKV and Hash): a hash depends only on the state it hashes
// (every key, value, revision, version and lease), a past revision's stays put while writers go on,
// etcd's compacted and future answers, and the compaction reported as etcd reports it.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "runtime/heap/heap.h"
#include "runtime/safepoint/safepoint.h"
#include "server/store/errors.h"
#include "server/store/store.h"

namespace revkv::server {
namespace {

class HashStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    runtime::HeapOptions o;
    o.max_heap_bytes = size_t{1} << 30;
    runtime::InitializeRuntime(o);
    registration_.emplace("hash-test");
    StoreOptions options;
    options.history_revisions = 0;  // every revision stays readable until a Compact
    auto s = Store::Create(options, nullptr);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
  }
  void TearDown() override {
    store_.reset();
    registration_.reset();
  }

  int64_t Put(const std::string& k, const std::string& v, int64_t lease = 0) {
    etcdserverpb::PutRequest r;
    r.set_key(k);
    r.set_value(v);
    r.set_lease(lease);
    auto res = store_->Put(r);
    EXPECT_TRUE(res.ok()) << res.status();
    return res.ok() ? res->revision : 0;
  }
  int64_t Delete(const std::string& k) {
    etcdserverpb::DeleteRangeRequest r;
    r.set_key(k);
    auto res = store_->DeleteRange(r);
    EXPECT_TRUE(res.ok()) << res.status();
    return res.ok() ? res->revision : 0;
  }
  uint32_t HashKV(int64_t revision = 0) {
    auto h = store_->HashKV(revision);
    EXPECT_TRUE(h.ok()) << h.status();
    return h.ok() ? h->hash : 0;
  }
  uint32_t Hash() {
    auto h = store_->Hash();
    EXPECT_TRUE(h.ok()) << h.status();
    return h.ok() ? h->hash : 0;
  }

  std::optional<runtime::ThreadRegistration> registration_;
  std::unique_ptr<Store> store_;
};

// The same state hashes the same, whichever revision holds it; any difference in a key, a value, a
// revision, a version or a lease changes the hash.
TEST_F(HashStoreTest, TheHashIsTheStatesAndSeesEveryField) {
  const uint32_t empty = HashKV();
  EXPECT_EQ(HashKV(1), empty);
  const int64_t r_a = Put("a", "1");
  const uint32_t with_a = HashKV();
  EXPECT_NE(with_a, empty);
  Delete("a");
  EXPECT_EQ(HashKV(), empty);  // the empty state again, at a later revision
  EXPECT_EQ(HashKV(r_a), with_a);
  // The same key and value at another revision: another create/mod revision, another hash.
  Put("a", "1");
  EXPECT_NE(HashKV(), with_a);
  const uint32_t v1 = HashKV();
  Put("a", "1");  // version 2, same value
  const uint32_t v2 = HashKV();
  EXPECT_NE(v2, v1);
  Put("b", "x");
  const uint32_t b_x = HashKV();
  Put("b", "y");
  EXPECT_NE(HashKV(), b_x);
  etcdserverpb::LeaseGrantRequest g;
  g.set_id(9);
  g.set_ttl(100);
  ASSERT_TRUE(store_->LeaseGrant(g).ok());
  const uint32_t before_lease = HashKV();
  const uint32_t whole_before_lease_key = Hash();
  Put("c", "z");
  const uint32_t c_no_lease = HashKV();
  Delete("c");
  EXPECT_EQ(HashKV(), before_lease);
  Put("c", "z", 9);
  EXPECT_NE(HashKV(), c_no_lease);  // only the lease differs... and the revisions
  EXPECT_NE(Hash(), whole_before_lease_key);
}

// A past revision's hash stays what it was while writes go on.
TEST_F(HashStoreTest, APastRevisionsHashStaysPut) {
  for (int i = 0; i < 50; ++i) Put("k" + std::to_string(i % 7), std::to_string(i));
  const int64_t r = store_->Revision();
  const uint32_t at_r = HashKV();
  for (int i = 0; i < 50; ++i) Put("k" + std::to_string(i % 5), "later" + std::to_string(i));
  EXPECT_EQ(HashKV(r), at_r);
  EXPECT_NE(HashKV(), at_r);
}

// Hash covers what HashKV does not: the lease table and the alarms.
TEST_F(HashStoreTest, TheWholeStoresHashCoversLeasesAndAlarms) {
  Put("a", "1");
  const uint32_t kv = HashKV();
  const uint32_t whole = Hash();
  etcdserverpb::LeaseGrantRequest g;
  g.set_id(5);
  g.set_ttl(60);
  ASSERT_TRUE(store_->LeaseGrant(g).ok());
  EXPECT_EQ(HashKV(), kv);
  const uint32_t with_lease = Hash();
  EXPECT_NE(with_lease, whole);
  etcdserverpb::AlarmRequest a;
  a.set_action(etcdserverpb::AlarmRequest::ACTIVATE);
  a.set_memberid(1);
  a.set_alarm(etcdserverpb::NOSPACE);
  ASSERT_TRUE(store_->Alarm(a).ok());
  EXPECT_EQ(HashKV(), kv);
  EXPECT_NE(Hash(), with_lease);
  a.set_action(etcdserverpb::AlarmRequest::DEACTIVATE);
  ASSERT_TRUE(store_->Alarm(a).ok());
  EXPECT_EQ(Hash(), with_lease);
}

// etcd's HashByRev: the current revision in the header, the compaction as -1 until there is one; a
// revision at or before the compaction is compacted, one after the current revision a future one.
TEST_F(HashStoreTest, CompactedAndFutureRevisionsAnswerAsEtcds) {
  for (int i = 0; i < 5; ++i) Put("k", std::to_string(i));  // r2..r6
  auto h = store_->HashKV(0);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->header_revision, 6);
  EXPECT_EQ(h->revision, 6);
  EXPECT_EQ(h->compact_revision, -1);
  EXPECT_EQ(store_->HashKV(7).status(), errors::FutureRevision());
  etcdserverpb::CompactionRequest c;
  c.set_revision(4);
  ASSERT_TRUE(store_->Compact(c).ok());
  EXPECT_EQ(store_->HashKV(3).status(), errors::Compacted());
  EXPECT_EQ(store_->HashKV(4).status(), errors::Compacted());  // unlike Range, which reads it
  auto after = store_->HashKV(5);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->compact_revision, 4);
  EXPECT_EQ(after->header_revision, 6);
  EXPECT_EQ(after->revision, 5);
}

}  // namespace
}  // namespace revkv::server
