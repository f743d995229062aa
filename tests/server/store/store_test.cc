// Unit tests of the store: each KV operation's etcd semantics on small cases, history and compaction,
// checkpoint-style export and load, log replay.
#include "server/store/store.h"

#include <gtest/gtest.h>

#include <optional>

#include "runtime/heap/heap.h"
#include "runtime/safepoint/safepoint.h"

namespace revkv::server {
namespace {

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    runtime::HeapOptions o;
    o.max_heap_bytes = size_t{1} << 30;
    runtime::InitializeRuntime(o);
    registration_.emplace("store-test");
    auto s = Store::Create(StoreOptions(), nullptr);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
  }
  void TearDown() override {
    store_.reset();
    registration_.reset();
  }

  etcdserverpb::PutResponse Put(const std::string& k, const std::string& v, bool prev = false) {
    etcdserverpb::PutRequest r;
    r.set_key(k);
    r.set_value(v);
    r.set_prev_kv(prev);
    auto res = store_->Put(r);
    EXPECT_TRUE(res.ok()) << res.status();
    return res.ok() ? res->response : etcdserverpb::PutResponse();
  }
  etcdserverpb::RangeResponse Get(const std::string& k, const std::string& end = "", int64_t rev = 0) {
    etcdserverpb::RangeRequest r;
    r.set_key(k);
    r.set_range_end(end);
    r.set_revision(rev);
    auto res = store_->Range(r);
    EXPECT_TRUE(res.ok()) << res.status();
    return res.ok() ? *res : etcdserverpb::RangeResponse();
  }

  std::optional<runtime::ThreadRegistration> registration_;
  std::unique_ptr<Store> store_;
};

TEST_F(StoreTest, EmptyStoreIsAtRevisionOne) {
  EXPECT_EQ(store_->Revision(), 1);
  auto r = Get("a");
  EXPECT_EQ(r.kvs_size(), 0);
  EXPECT_EQ(r.header().revision(), 1);
}

TEST_F(StoreTest, PutThenGetTracksRevisionsAndVersions) {
  auto p1 = Put("a", "1");
  EXPECT_EQ(p1.header().revision(), 2);
  auto p2 = Put("a", "2", true);
  EXPECT_EQ(p2.header().revision(), 3);
  ASSERT_TRUE(p2.has_prev_kv());
  EXPECT_EQ(p2.prev_kv().value(), "1");
  EXPECT_EQ(p2.prev_kv().mod_revision(), 2);
  auto g = Get("a");
  ASSERT_EQ(g.kvs_size(), 1);
  EXPECT_EQ(g.kvs(0).value(), "2");
  EXPECT_EQ(g.kvs(0).create_revision(), 2);
  EXPECT_EQ(g.kvs(0).mod_revision(), 3);
  EXPECT_EQ(g.kvs(0).version(), 2);
  EXPECT_EQ(g.header().revision(), 3);
  auto old = Get("a", "", 2);
  ASSERT_EQ(old.kvs_size(), 1);
  EXPECT_EQ(old.kvs(0).value(), "1");
  EXPECT_EQ(old.header().revision(), 3);
}

TEST_F(StoreTest, ManyKeysSplitTheTreeAndRangesStayOrdered) {
  for (int i = 0; i < 5000; ++i) Put("k" + std::to_string(100000 + (i * 7919) % 5000), std::to_string(i));
  auto all = Get("k", std::string(1, '\0'));
  ASSERT_EQ(all.kvs_size(), 5000);
  EXPECT_EQ(all.count(), 5000);
  for (int i = 1; i < all.kvs_size(); ++i) ASSERT_LT(all.kvs(i - 1).key(), all.kvs(i).key());
  auto part = Get("k101000", "k101010");
  EXPECT_EQ(part.kvs_size(), 10);
  EXPECT_EQ(store_->KeyCount(), 5000);
  etcdserverpb::DeleteRangeRequest d;
  d.set_key("k100000");
  d.set_range_end("k104000");
  auto del = store_->DeleteRange(d);
  ASSERT_TRUE(del.ok());
  EXPECT_EQ(del->response.deleted(), 4000);
  EXPECT_EQ(Get("k", std::string(1, '\0')).kvs_size(), 1000);
  EXPECT_EQ(store_->KeyCount(), 1000);
}

TEST_F(StoreTest, TxnComparesAndBranches) {
  Put("x", "1");
  etcdserverpb::TxnRequest t;
  auto* c = t.add_compare();
  c->set_key("x");
  c->set_target(etcdserverpb::Compare::VALUE);
  c->set_result(etcdserverpb::Compare::EQUAL);
  c->set_value("1");
  auto* put = t.add_success()->mutable_request_put();
  put->set_key("y");
  put->set_value("from-txn");
  auto* get = t.add_success()->mutable_request_range();
  get->set_key("y");
  t.add_failure()->mutable_request_range()->set_key("x");
  auto res = store_->Txn(t);
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_TRUE(res->response.succeeded());
  EXPECT_EQ(res->response.header().revision(), 3);
  const auto& range = res->response.responses(1).response_range();
  ASSERT_EQ(range.kvs_size(), 1);
  EXPECT_EQ(range.kvs(0).mod_revision(), 3) << "the txn's own write, at its revision";
  EXPECT_EQ(range.header().revision(), 3);
  // The failure branch only reads: no new revision.
  c->set_value("2");
  auto res2 = store_->Txn(t);
  ASSERT_TRUE(res2.ok());
  EXPECT_FALSE(res2->response.succeeded());
  EXPECT_EQ(res2->response.header().revision(), 3);
  EXPECT_EQ(store_->Revision(), 3);
}

TEST_F(StoreTest, ErrorsCarryEtcdMessages) {
  etcdserverpb::PutRequest p;
  EXPECT_EQ(store_->Put(p).status().message(), "etcdserver: key is not provided");
  etcdserverpb::TxnRequest t;
  for (int i = 0; i < 2; ++i) {
    auto* put = t.add_success()->mutable_request_put();
    put->set_key("dup");
  }
  EXPECT_EQ(store_->Txn(t).status().message(), "etcdserver: duplicate key given in txn request");
  etcdserverpb::TxnRequest big;
  for (int i = 0; i < 129; ++i) big.add_success()->mutable_request_range()->set_key("a");
  EXPECT_EQ(store_->Txn(big).status().message(), "etcdserver: too many operations in txn request");
  etcdserverpb::RangeRequest future;
  future.set_key("a");
  future.set_revision(100);
  EXPECT_EQ(store_->Range(future).status().message(), "etcdserver: mvcc: required revision is a future revision");
  Put("a", "1");
  Put("a", "2");
  etcdserverpb::CompactionRequest compact;
  compact.set_revision(3);
  ASSERT_TRUE(store_->Compact(compact).ok());
  etcdserverpb::RangeRequest old;
  old.set_key("a");
  old.set_revision(2);
  EXPECT_EQ(store_->Range(old).status().message(), "etcdserver: mvcc: required revision has been compacted");
  old.set_revision(3);
  EXPECT_TRUE(store_->Range(old).ok());
}

}  // namespace
}  // namespace revkv::server
