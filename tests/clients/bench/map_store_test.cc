// The naive map store of the baseline server: etcd 3.4's answers for what the benchmark workloads send
// (revisions, versions, ranges, compares, one revision per txn), and UNIMPLEMENTED for what it lacks.
#include "bench/null_server/map_store.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace revkv::bench {
namespace {

using etcdserverpb::Compare;

etcdserverpb::PutResponse Put(MapStore& store, const std::string& key, const std::string& value,
                              bool prev_kv = false) {
  etcdserverpb::PutRequest request;
  request.set_key(key);
  request.set_value(value);
  request.set_prev_kv(prev_kv);
  etcdserverpb::PutResponse response;
  const grpc::Status s = store.Put(request, &response);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return response;
}

etcdserverpb::RangeResponse Get(MapStore& store, const std::string& key, const std::string& range_end = "",
                                int64_t limit = 0) {
  etcdserverpb::RangeRequest request;
  request.set_key(key);
  request.set_range_end(range_end);
  request.set_limit(limit);
  etcdserverpb::RangeResponse response;
  const grpc::Status s = store.Range(request, &response);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return response;
}

// A transfer's txn as revkv-bench sends it: both mod revisions compared, both keys put.
etcdserverpb::TxnRequest Transfer(const std::string& a, int64_t a_mod, const std::string& b, int64_t b_mod) {
  etcdserverpb::TxnRequest txn;
  for (auto [key, mod] : {std::pair{a, a_mod}, std::pair{b, b_mod}}) {
    Compare* c = txn.add_compare();
    c->set_key(key);
    c->set_target(Compare::MOD);
    c->set_result(Compare::EQUAL);
    c->set_mod_revision(mod);
    etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
    put->set_key(key);
    put->set_value("moved");
  }
  return txn;
}

TEST(MapStore, PutsAdvanceTheRevisionAndKeepCreateModAndVersion) {
  MapStore store;
  EXPECT_EQ(store.Revision(), 1);
  EXPECT_EQ(Put(store, "a", "1").header().revision(), 2);
  EXPECT_EQ(Put(store, "b", "1").header().revision(), 3);
  const etcdserverpb::PutResponse again = Put(store, "a", "2", /*prev_kv=*/true);
  EXPECT_EQ(again.header().revision(), 4);
  EXPECT_EQ(again.prev_kv().value(), "1");
  EXPECT_EQ(again.prev_kv().mod_revision(), 2);
  const etcdserverpb::RangeResponse a = Get(store, "a");
  ASSERT_EQ(a.kvs_size(), 1);
  EXPECT_EQ(a.kvs(0).value(), "2");
  EXPECT_EQ(a.kvs(0).create_revision(), 2);
  EXPECT_EQ(a.kvs(0).mod_revision(), 4);
  EXPECT_EQ(a.kvs(0).version(), 2);
  EXPECT_EQ(a.header().revision(), 4);
  EXPECT_EQ(a.header().member_id(), kNullMemberId);
}

TEST(MapStore, RangesHonourRangeEndLimitCountAndMore) {
  MapStore store;
  for (const char* key : {"k1", "k2", "k3", "k4", "z"}) Put(store, key, "v");
  EXPECT_EQ(Get(store, "nope").kvs_size(), 0);
  EXPECT_EQ(Get(store, "nope").count(), 0);
  const etcdserverpb::RangeResponse prefix = Get(store, "k", "l");
  ASSERT_EQ(prefix.kvs_size(), 4);
  EXPECT_EQ(prefix.kvs(0).key(), "k1");
  EXPECT_EQ(prefix.kvs(3).key(), "k4");
  const etcdserverpb::RangeResponse limited = Get(store, "k", "l", 2);
  EXPECT_EQ(limited.kvs_size(), 2);
  EXPECT_EQ(limited.count(), 4);
  EXPECT_TRUE(limited.more());
  EXPECT_EQ(Get(store, "k3", std::string(1, '\0')).kvs_size(), 3);  // k3, k4, z
}

TEST(MapStore, DeleteRangeDeletesAndAdvancesOnlyWhenSomethingWentAway) {
  MapStore store;
  Put(store, "a", "1");
  Put(store, "b", "1");
  etcdserverpb::DeleteRangeRequest request;
  request.set_key("a");
  request.set_range_end("c");
  request.set_prev_kv(true);
  etcdserverpb::DeleteRangeResponse response;
  ASSERT_TRUE(store.DeleteRange(request, &response).ok());
  EXPECT_EQ(response.deleted(), 2);
  EXPECT_EQ(response.prev_kvs_size(), 2);
  EXPECT_EQ(response.header().revision(), 4);
  etcdserverpb::DeleteRangeResponse none;
  ASSERT_TRUE(store.DeleteRange(request, &none).ok());
  EXPECT_EQ(none.deleted(), 0);
  EXPECT_EQ(none.header().revision(), 4);
  // A key put again after its deletion starts a new life: version 1, a new create revision.
  Put(store, "a", "x");
  EXPECT_EQ(Get(store, "a").kvs(0).version(), 1);
  EXPECT_EQ(Get(store, "a").kvs(0).create_revision(), 5);
}

TEST(MapStore, TransferTxnCommitsAsOneRevisionOnlyWhenTheModRevisionsMatch) {
  MapStore store;
  Put(store, "from", "10");  // rev 2
  Put(store, "to", "10");    // rev 3
  etcdserverpb::TxnResponse stale;
  ASSERT_TRUE(store.Txn(Transfer("from", 2, "to", 2), &stale).ok());
  EXPECT_FALSE(stale.succeeded());
  EXPECT_EQ(stale.header().revision(), 3);
  EXPECT_EQ(Get(store, "to").kvs(0).value(), "10");

  etcdserverpb::TxnResponse fresh;
  ASSERT_TRUE(store.Txn(Transfer("from", 2, "to", 3), &fresh).ok());
  EXPECT_TRUE(fresh.succeeded());
  EXPECT_EQ(fresh.header().revision(), 4);
  ASSERT_EQ(fresh.responses_size(), 2);
  EXPECT_EQ(Get(store, "from").kvs(0).mod_revision(), 4);
  EXPECT_EQ(Get(store, "to").kvs(0).mod_revision(), 4);
  EXPECT_EQ(Get(store, "to").kvs(0).value(), "moved");
}

TEST(MapStore, CompareTargetsAndResults) {
  MapStore store;
  Put(store, "k", "b");  // version 1, create 2, mod 2
  auto check = [&](Compare c) {
    c.set_key("k");
    etcdserverpb::TxnRequest txn;
    *txn.add_compare() = c;
    etcdserverpb::TxnResponse r;
    EXPECT_TRUE(store.Txn(txn, &r).ok());
    return r.succeeded();
  };
  Compare c;
  c.set_target(Compare::VERSION);
  c.set_result(Compare::EQUAL);
  c.set_version(1);
  EXPECT_TRUE(check(c));
  c.set_result(Compare::GREATER);
  EXPECT_FALSE(check(c));
  c.set_result(Compare::LESS);
  c.set_version(2);
  EXPECT_TRUE(check(c));
  c = Compare();
  c.set_target(Compare::VALUE);
  c.set_result(Compare::GREATER);
  c.set_value("a");
  EXPECT_TRUE(check(c));
  c.set_result(Compare::NOT_EQUAL);
  c.set_value("b");
  EXPECT_FALSE(check(c));
  c = Compare();
  c.set_target(Compare::CREATE);
  c.set_result(Compare::EQUAL);
  c.set_create_revision(2);
  EXPECT_TRUE(check(c));
  // etcd: a value compare on a missing key fails, whatever it asks.
  etcdserverpb::TxnRequest missing;
  Compare* m = missing.add_compare();
  m->set_key("absent");
  m->set_target(Compare::VALUE);
  m->set_result(Compare::NOT_EQUAL);
  m->set_value("x");
  etcdserverpb::TxnResponse r;
  ASSERT_TRUE(store.Txn(missing, &r).ok());
  EXPECT_FALSE(r.succeeded());
}

TEST(MapStore, EtcdErrorsChangeNothing) {
  MapStore store;
  Put(store, "a", "1");
  etcdserverpb::TxnRequest twice;
  for (int i = 0; i < 2; ++i) {
    etcdserverpb::PutRequest* put = twice.add_success()->mutable_request_put();
    put->set_key("a");
    put->set_value("2");
  }
  etcdserverpb::TxnResponse r;
  const grpc::Status duplicate = store.Txn(twice, &r);
  EXPECT_EQ(duplicate.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(duplicate.error_message(), "etcdserver: duplicate key given in txn request");

  etcdserverpb::PutRequest empty;
  etcdserverpb::PutResponse pr;
  EXPECT_EQ(store.Put(empty, &pr).error_message(), "etcdserver: key is not provided");

  // A txn whose second op fails (ignore_value of a missing key) applies neither op.
  etcdserverpb::TxnRequest half;
  etcdserverpb::PutRequest* first = half.add_success()->mutable_request_put();
  first->set_key("b");
  first->set_value("new");
  etcdserverpb::PutRequest* second = half.add_success()->mutable_request_put();
  second->set_key("missing");
  second->set_ignore_value(true);
  EXPECT_EQ(store.Txn(half, &r).error_message(), "etcdserver: key not found");
  EXPECT_EQ(Get(store, "b").kvs_size(), 0);

  etcdserverpb::RangeRequest future;
  future.set_key("a");
  future.set_revision(99);
  etcdserverpb::RangeResponse rr;
  EXPECT_EQ(store.Range(future, &rr).error_message(),
            "etcdserver: mvcc: required revision is a future revision");
  EXPECT_EQ(store.Revision(), 2);
}

TEST(MapStore, SaysUnimplementedRatherThanAnswerWrongly) {
  MapStore store;
  Put(store, "a", "1");
  Put(store, "a", "2");
  etcdserverpb::RangeRequest past;
  past.set_key("a");
  past.set_revision(2);
  etcdserverpb::RangeResponse r;
  EXPECT_EQ(store.Range(past, &r).error_code(), grpc::StatusCode::UNIMPLEMENTED);
  etcdserverpb::RangeRequest sorted;
  sorted.set_key("a");
  sorted.set_sort_order(etcdserverpb::RangeRequest::DESCEND);
  EXPECT_EQ(store.Range(sorted, &r).error_code(), grpc::StatusCode::UNIMPLEMENTED);
  etcdserverpb::TxnRequest nested;
  nested.add_success()->mutable_request_txn();
  etcdserverpb::TxnResponse t;
  EXPECT_EQ(store.Txn(nested, &t).error_code(), grpc::StatusCode::UNIMPLEMENTED);
}

// Concurrent transfers between a few keys: every txn that succeeds moved its pair at one revision, so the
// number of successes equals the revisions they took, and no update is lost.
TEST(MapStore, ConcurrentTransfersLoseNoUpdate) {
  MapStore store;
  const std::vector<std::string> keys = {"k0", "k1", "k2", "k3"};
  for (const std::string& k : keys) Put(store, k, "v");
  const int64_t start = store.Revision();
  std::atomic<int64_t> succeeded{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        const std::string& a = keys[(t + i) % 4];
        const std::string& b = keys[(t + i + 1) % 4];
        const int64_t a_mod = Get(store, a).kvs(0).mod_revision();
        const int64_t b_mod = Get(store, b).kvs(0).mod_revision();
        etcdserverpb::TxnResponse r;
        ASSERT_TRUE(store.Txn(Transfer(a, a_mod, b, b_mod), &r).ok());
        if (r.succeeded()) succeeded.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_GT(succeeded.load(), 0);
  EXPECT_EQ(store.Revision() - start, succeeded.load());
  int64_t versions = 0;
  for (const std::string& k : keys) versions += Get(store, k).kvs(0).version() - 1;
  EXPECT_EQ(versions, 2 * succeeded.load());
}

}  // namespace
}  // namespace revkv::bench
