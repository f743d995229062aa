// Unit tests of the store: each KV operation's etcd semantics on small cases, history and compaction,
// checkpoint-style export and load, log replay.
#include "server/store/store.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <limits>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "runtime/heap/heap.h"
#include "runtime/safepoint/safepoint.h"
#include "server/store/tree.h"

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

// A limit is a count, not a bound to add to: the largest one means "all", as it does in etcd.
TEST_F(StoreTest, ARangeWithTheLargestLimitReturnsEveryKey) {
  for (int i = 0; i < 3; ++i) Put("l" + std::to_string(i), "v");
  etcdserverpb::RangeRequest r;
  r.set_key("l");
  r.set_range_end("m");
  r.set_limit(std::numeric_limits<int64_t>::max());
  auto res = store_->Range(r);
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_EQ(res->kvs_size(), 3);
  EXPECT_EQ(res->count(), 3);
  EXPECT_FALSE(res->more());
}

// A key past the last one of a full leaf starts a new leaf and leaves the old one full: ascending
// inserts (a checkpoint load, counter-named keys) fill leaves; other inserts split them half and half.
TEST_F(StoreTest, AscendingInsertsFillLeavesAndOthersSplitThemInHalves) {
  for (int i = 0; i < 5000; ++i) Put("a" + std::to_string(100000 + i), "v");
  auto ascending = store_->Shape();
  ASSERT_TRUE(ascending.ok()) << ascending.status();
  EXPECT_EQ(ascending->keys, 5000u);
  EXPECT_EQ(ascending->leaves, (5000u + store::kFanout - 1) / store::kFanout);
  EXPECT_GE(ascending->depth, 3);

  for (int i = 0; i < 5000; ++i) Put("b" + std::to_string(100000 + (i * 7919) % 5000), "v");
  auto both = store_->Shape();
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_EQ(both->keys, 10000u);
  const uint64_t scattered_leaves = both->leaves - ascending->leaves;
  EXPECT_GT(scattered_leaves, 5000u / store::kFanout * 5 / 4) << "scattered inserts do not fill leaves";
  EXPECT_LT(scattered_leaves, 5000u / (store::kFanout / 2) + 2) << "leaves stay at least half full";
  auto all = Get("a", std::string(1, '\0'));
  ASSERT_EQ(all.kvs_size(), 10000);
  for (int i = 1; i < all.kvs_size(); ++i) ASSERT_LT(all.kvs(i - 1).key(), all.kvs(i).key());
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
  EXPECT_EQ(store_->Range(future).status().message(),
            "etcdserver: mvcc: required revision is a future revision");
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

TEST_F(StoreTest, RequestsOverTheSizeLimitAreTooLargeAndChangeNothing) {
  // etcd checks the size of every request that goes through raft: Put, DeleteRange and Txn.
  store_.reset();
  StoreOptions small;
  small.max_request_bytes = 100;
  auto created = Store::Create(small, nullptr);
  ASSERT_TRUE(created.ok()) << created.status();
  store_ = std::move(*created);
  const std::string too_large = "etcdserver: request is too large";

  etcdserverpb::PutRequest put;
  put.set_key("k");
  put.set_value(std::string(120, 'v'));
  auto p = store_->Put(put);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(p.status().message(), too_large);

  etcdserverpb::DeleteRangeRequest del;
  del.set_key(std::string(60, 'a'));
  del.set_range_end(std::string(60, 'z'));
  auto d = store_->DeleteRange(del);
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(d.status().message(), too_large);

  etcdserverpb::TxnRequest txn;
  for (const char* k : {"x", "y"}) {
    auto* op = txn.add_success()->mutable_request_put();
    op->set_key(k);
    op->set_value(std::string(50, 'v'));
  }
  auto t = store_->Txn(txn);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t.status().message(), too_large);
  EXPECT_EQ(store_->Revision(), 1);
  EXPECT_EQ(Get("k").kvs_size(), 0);

  // Just under the limit, each one works.
  put.set_value(std::string(80, 'v'));
  ASSERT_TRUE(store_->Put(put).ok());
  del.set_key("k");
  del.set_range_end(std::string(80, 'l'));
  auto under = store_->DeleteRange(del);
  ASSERT_TRUE(under.ok()) << under.status();
  EXPECT_EQ(under->response.deleted(), 1);
  EXPECT_EQ(store_->Revision(), 3);
}

TEST_F(StoreTest, AWriteLargerThanTheLogBufferIsTooLargeAndChangesNothing) {
  // The log buffer bounds a record; a write under --max-request-bytes can still exceed it. The client
  // gets etcd's "request is too large", and neither the store nor the log changes.
  store_.reset();
  char dir_template[] = "/tmp/revkv-store-test-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  WalOptions wal_options;
  wal_options.dir = dir;
  wal_options.buffer_bytes = 64 * 1024;
  WalRecoveryReport report;
  // Revision 1 is the empty store: the log starts at revision 2 (as the engine opens it).
  auto wal = Wal::Open(
      wal_options, 1, [](int64_t, std::string_view) { return absl::OkStatus(); }, &report);
  ASSERT_TRUE(wal.ok()) << wal.status();
  StoreOptions options;
  options.max_request_bytes = 1 << 20;
  auto created = Store::Create(options, wal->get());
  ASSERT_TRUE(created.ok()) << created.status();
  store_ = std::move(*created);
  const std::string too_large = "etcdserver: request is too large";

  etcdserverpb::PutRequest put;
  put.set_key("k");
  put.set_value(std::string(100 * 1024, 'v'));
  auto p = store_->Put(put);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << p.status();
  EXPECT_EQ(p.status().message(), too_large);

  etcdserverpb::TxnRequest txn;
  for (const char* k : {"x", "y"}) {
    auto* op = txn.add_success()->mutable_request_put();
    op->set_key(k);
    op->set_value(std::string(40 * 1024, 'v'));
  }
  auto t = store_->Txn(txn);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << t.status();
  EXPECT_EQ(t.status().message(), too_large);

  EXPECT_EQ(store_->Revision(), 1);
  EXPECT_EQ(Get("k").kvs_size(), 0);
  EXPECT_EQ(Get("x").kvs_size(), 0);
  EXPECT_EQ((*wal)->appended_lsn(), 0u);
  EXPECT_FALSE((*wal)->failed());

  // The store and the log go on: a write that fits is logged and becomes durable.
  put.set_value(std::string(1000, 'v'));
  auto fits = store_->Put(put);
  ASSERT_TRUE(fits.ok()) << fits.status();
  EXPECT_EQ(fits->revision, 2);
  EXPECT_TRUE(store_->WaitDurable(fits->lsn).ok());
  EXPECT_EQ((*wal)->appended_lsn(), 1u);
  store_.reset();
  EXPECT_TRUE((*wal)->Close().ok());
  std::filesystem::remove_all(dir);
}

TEST_F(StoreTest, ARangeAtARevisionInsideAWriteTxnReadsThatRevision) {
  Put("a", "1");  // revision 2
  Put("a", "2");  // revision 3
  etcdserverpb::TxnRequest txn;
  auto* put = txn.add_success()->mutable_request_put();
  put->set_key("a");
  put->set_value("3");
  for (int64_t rev : {2, 3, 0}) {
    auto* r = txn.add_success()->mutable_request_range();
    r->set_key("a");
    r->set_revision(rev);
  }
  auto res = store_->Txn(txn);
  ASSERT_TRUE(res.ok()) << res.status();
  ASSERT_EQ(res->response.responses_size(), 4);
  const std::vector<std::string> expected = {"1", "2", "3"};
  for (int i = 0; i < 3; ++i) {
    const auto& range = res->response.responses(i + 1).response_range();
    ASSERT_EQ(range.kvs_size(), 1) << i;
    EXPECT_EQ(range.kvs(0).value(), expected[static_cast<size_t>(i)]);
    EXPECT_EQ(range.header().revision(), 4);  // the Txn's revision, as etcd reports it
  }
  EXPECT_EQ(res->response.responses(1).response_range().kvs(0).mod_revision(), 2);
  EXPECT_EQ(res->response.responses(3).response_range().kvs(0).mod_revision(), 4);

  // A future revision fails the whole Txn: its Put is not applied.
  txn.mutable_success(1)->mutable_request_range()->set_revision(5);
  auto future = store_->Txn(txn);
  EXPECT_EQ(future.status().message(), "etcdserver: mvcc: required revision is a future revision");
  EXPECT_EQ(store_->Revision(), 4);
  EXPECT_EQ(Get("a").kvs(0).value(), "3");
}

TEST_F(StoreTest, ARangeOver100kKeysSeesOneStateWhileTwoThreadsWrite) {
  const int n = 100'000;
  // Load in Txns of 100 puts; every value is 10, so the sum is 10 * n in every state.
  for (int base = 0; base < n; base += 100) {
    etcdserverpb::TxnRequest t;
    for (int i = base; i < base + 100; ++i) {
      auto* p = t.add_success()->mutable_request_put();
      p->set_key("acct/" + std::to_string(1000000 + i));
      p->set_value("10");
    }
    ASSERT_TRUE(store_->Txn(t).ok());
  }
  std::atomic<bool> stop{false};
  std::atomic<int> writes{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < 2; ++w) {
    writers.emplace_back([&, w] {
      runtime::ThreadRegistration r("writer");
      std::mt19937 rng(static_cast<unsigned>(w));
      while (!stop.load()) {
        // Move 1 from one key to another in one Txn, guarded by both keys' mod revisions.
        const std::string a = "acct/" + std::to_string(1000000 + static_cast<int>(rng() % n));
        const std::string b = "acct/" + std::to_string(1000000 + static_cast<int>(rng() % n));
        if (a == b) continue;
        etcdserverpb::RangeRequest ra, rb;
        ra.set_key(a);
        rb.set_key(b);
        auto va = store_->Range(ra);
        auto vb = store_->Range(rb);
        ASSERT_TRUE(va.ok() && vb.ok());
        etcdserverpb::TxnRequest t;
        for (const auto* kv : {&va->kvs(0), &vb->kvs(0)}) {
          auto* c = t.add_compare();
          c->set_key(kv->key());
          c->set_target(etcdserverpb::Compare::MOD);
          c->set_result(etcdserverpb::Compare::EQUAL);
          c->set_mod_revision(kv->mod_revision());
        }
        auto* pa = t.add_success()->mutable_request_put();
        pa->set_key(a);
        pa->set_value(std::to_string(std::stoi(va->kvs(0).value()) - 1));
        auto* pb = t.add_success()->mutable_request_put();
        pb->set_key(b);
        pb->set_value(std::to_string(std::stoi(vb->kvs(0).value()) + 1));
        ASSERT_TRUE(store_->Txn(t).ok());
        writes.fetch_add(1);
      }
    });
  }
  while (writes.load() < 50) {
    runtime::Poll();  // registered: a collection one of the writers starts must not wait for us
    std::this_thread::yield();
  }
  const int before = writes.load();
  for (int scan = 0; scan < 3; ++scan) {
    etcdserverpb::RangeRequest all;
    all.set_key("acct/");
    all.set_range_end("acct0");
    auto r = store_->Range(all);
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r->kvs_size(), n);
    int64_t sum = 0;
    for (const auto& kv : r->kvs()) sum += std::stoll(kv.value());
    ASSERT_EQ(sum, 10LL * n) << "the range saw a mix of states";
  }
  stop.store(true);
  {
    runtime::SafeRegion waiting;
    for (auto& t : writers) t.join();
  }
  EXPECT_GT(writes.load(), before) << "writers kept committing during the scans";
}

}  // namespace
}  // namespace revkv::server
