// etcdserverpb.KV end to end against a real revkv-server: every method with etcd 3.4's semantics
// (Range's forms and options, revision reads, Put and DeleteRange options, Txn branches and compares,
// Compact), and the response headers. Every test also runs against a real etcd 3.4 (Debian's
// etcd-server; skipped if absent, a failure under REVKV_REQUIRE_TOOLS=1), so an expectation here is
// etcd's behaviour, not a guess at it.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "tests/integration/etcd_calls.h"
#include "tests/integration/server_process.h"
#include "tests/support/external_tools.h"

namespace revkv::integration {
namespace {

using etcdserverpb::Compare;
using etcdserverpb::KV;
using etcdserverpb::RangeRequest;
using etcdserverpb::RangeResponse;
using etcdserverpb::TxnRequest;

std::vector<std::string> Keys(const RangeResponse& r) {
  std::vector<std::string> keys;
  for (const auto& kv : r.kvs()) keys.push_back(kv.key());
  return keys;
}

::testing::AssertionResult KvIs(const mvccpb::KeyValue& kv, const std::string& key, const std::string& value,
                                int64_t create, int64_t mod, int64_t version) {
  if (kv.key() == key && kv.value() == value && kv.create_revision() == create && kv.mod_revision() == mod &&
      kv.version() == version && kv.lease() == 0) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << "kv {" << kv.ShortDebugString() << "}, expected {key \"" << key << "\" value \"" << value
         << "\" create " << create << " mod " << mod << " version " << version << "}";
}

class KvSemantics : public ::testing::TestWithParam<Flavor> {
 protected:
  void SetUp() override {
    if (!FlavorAvailable(GetParam())) REVKV_MISSING_TOOL() << FlavorName(GetParam()) << " is not installed";
    ServerOptions options;
    options.flavor = GetParam();
    server_ = std::make_unique<ServerProcess>(options);
    ASSERT_TRUE(server_->Start());
    channel_ = server_->NewChannel();
    kv_ = KV::NewStub(channel_);
    // A fresh store is at revision 1 (etcd's and revkv's); the tests count revisions from there.
    auto r = Call(kv_.get(), &KV::Stub::Range, RangeOf("any"));
    ASSERT_TRUE(IsOk(r.status));
    ASSERT_EQ(r.response.header().revision(), 1);
  }

  // Puts key=value; returns the revision of the put (0 if it failed, with a test failure).
  int64_t Put(const std::string& key, const std::string& value) {
    auto r = Call(kv_.get(), &KV::Stub::Put, PutOf(key, value));
    EXPECT_TRUE(IsOk(r.status)) << "put " << key;
    return r.status.ok() ? r.response.header().revision() : 0;
  }

  Reply<RangeResponse> Range(const RangeRequest& request) {
    return Call(kv_.get(), &KV::Stub::Range, request);
  }
  Reply<etcdserverpb::TxnResponse> Txn(const TxnRequest& request) {
    return Call(kv_.get(), &KV::Stub::Txn, request);
  }

  std::unique_ptr<ServerProcess> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<KV::Stub> kv_;
};

TEST_P(KvSemantics, RangeReadsSingleKeyPrefixAndFromKey) {
  ASSERT_EQ(Put("a", "1"), 2);
  ASSERT_EQ(Put("ab", "2"), 3);
  ASSERT_EQ(Put("abc", "3"), 4);
  ASSERT_EQ(Put("b", "4"), 5);
  ASSERT_EQ(Put("c", "5"), 6);

  auto single = Range(RangeOf("ab"));
  ASSERT_TRUE(IsOk(single.status));
  EXPECT_TRUE(HeaderAt(single.response.header(), 6));
  ASSERT_EQ(single.response.kvs_size(), 1);
  EXPECT_TRUE(KvIs(single.response.kvs(0), "ab", "2", 3, 3, 1));
  EXPECT_EQ(single.response.count(), 1);
  EXPECT_FALSE(single.response.more());

  auto prefix = Range(RangeOf("ab", PrefixEnd("ab")));
  ASSERT_TRUE(IsOk(prefix.status));
  EXPECT_EQ(Keys(prefix.response), (std::vector<std::string>{"ab", "abc"}));
  EXPECT_EQ(prefix.response.count(), 2);

  auto half_open = Range(RangeOf("a", "b"));
  ASSERT_TRUE(IsOk(half_open.status));
  EXPECT_EQ(Keys(half_open.response), (std::vector<std::string>{"a", "ab", "abc"}));

  auto from_key = Range(RangeOf("b", std::string(1, '\0')));
  ASSERT_TRUE(IsOk(from_key.status));
  EXPECT_EQ(Keys(from_key.response), (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(from_key.response.count(), 2);

  auto all = Range(RangeOf(std::string(1, '\0'), std::string(1, '\0')));
  ASSERT_TRUE(IsOk(all.status));
  EXPECT_EQ(Keys(all.response), (std::vector<std::string>{"a", "ab", "abc", "b", "c"}));
  EXPECT_TRUE(HeaderAt(all.response.header(), 6));

  auto missing = Range(RangeOf("zz"));
  ASSERT_TRUE(IsOk(missing.status));
  EXPECT_EQ(missing.response.kvs_size(), 0);
  EXPECT_EQ(missing.response.count(), 0);
  EXPECT_TRUE(HeaderAt(missing.response.header(), 6));

  auto inverted = Range(RangeOf("c", "a"));  // range_end before key: an empty range
  ASSERT_TRUE(IsOk(inverted.status));
  EXPECT_EQ(inverted.response.kvs_size(), 0);
}

TEST_P(KvSemantics, RangeLimitReportsMoreAndTheTotalCount) {
  for (const char* key : {"a", "b", "c", "d", "e"}) ASSERT_GT(Put(key, "v"), 0);
  const std::string all(1, '\0');

  RangeRequest limited = RangeOf(all, all);
  limited.set_limit(2);
  auto two = Range(limited);
  ASSERT_TRUE(IsOk(two.status));
  EXPECT_EQ(Keys(two.response), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(two.response.more());
  EXPECT_EQ(two.response.count(), 5);

  limited.set_limit(5);
  auto five = Range(limited);
  ASSERT_TRUE(IsOk(five.status));
  EXPECT_EQ(five.response.kvs_size(), 5);
  EXPECT_FALSE(five.response.more());
  EXPECT_EQ(five.response.count(), 5);

  limited.set_limit(100);
  auto hundred = Range(limited);
  ASSERT_TRUE(IsOk(hundred.status));
  EXPECT_EQ(hundred.response.kvs_size(), 5);
  EXPECT_FALSE(hundred.response.more());

  RangeRequest prefix_limited = RangeOf("b", "e");
  prefix_limited.set_limit(1);
  auto one = Range(prefix_limited);
  ASSERT_TRUE(IsOk(one.status));
  EXPECT_EQ(Keys(one.response), (std::vector<std::string>{"b"}));
  EXPECT_TRUE(one.response.more());
  EXPECT_EQ(one.response.count(), 3);
}

TEST_P(KvSemantics, RangeCountOnlyAndKeysOnly) {
  ASSERT_EQ(Put("k1", "value-1"), 2);
  ASSERT_EQ(Put("k2", "value-2"), 3);
  ASSERT_EQ(Put("k3", "value-3"), 4);

  RangeRequest count_only = RangeOf("k", PrefixEnd("k"));
  count_only.set_count_only(true);
  auto counted = Range(count_only);
  ASSERT_TRUE(IsOk(counted.status));
  EXPECT_EQ(counted.response.kvs_size(), 0);
  EXPECT_EQ(counted.response.count(), 3);
  EXPECT_FALSE(counted.response.more());
  EXPECT_TRUE(HeaderAt(counted.response.header(), 4));

  RangeRequest keys_only = RangeOf("k", PrefixEnd("k"));
  keys_only.set_keys_only(true);
  auto keys = Range(keys_only);
  ASSERT_TRUE(IsOk(keys.status));
  ASSERT_EQ(keys.response.kvs_size(), 3);
  EXPECT_EQ(keys.response.count(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(KvIs(keys.response.kvs(i), "k" + std::to_string(i + 1), "", i + 2, i + 2, 1));
  }
}

TEST_P(KvSemantics, RangeSortsByEveryTargetInBothOrders) {
  // Versions k1 3, k2 2, k3 1; create revisions k1 2, k2 3, k3 4; mod revisions k1 7, k2 6, k3 4;
  // values k2 "a" < k3 "b" < k1 "c".
  ASSERT_EQ(Put("k1", "c"), 2);
  ASSERT_EQ(Put("k2", "a"), 3);
  ASSERT_EQ(Put("k3", "b"), 4);
  ASSERT_EQ(Put("k1", "c"), 5);
  ASSERT_EQ(Put("k2", "a"), 6);
  ASSERT_EQ(Put("k1", "c"), 7);

  struct Case {
    RangeRequest::SortTarget target;
    RangeRequest::SortOrder order;
    std::vector<std::string> keys;
  };
  const std::vector<Case> cases = {
      {RangeRequest::KEY, RangeRequest::ASCEND, {"k1", "k2", "k3"}},
      {RangeRequest::KEY, RangeRequest::DESCEND, {"k3", "k2", "k1"}},
      {RangeRequest::VERSION, RangeRequest::ASCEND, {"k3", "k2", "k1"}},
      {RangeRequest::VERSION, RangeRequest::DESCEND, {"k1", "k2", "k3"}},
      {RangeRequest::CREATE, RangeRequest::ASCEND, {"k1", "k2", "k3"}},
      {RangeRequest::CREATE, RangeRequest::DESCEND, {"k3", "k2", "k1"}},
      {RangeRequest::MOD, RangeRequest::ASCEND, {"k3", "k2", "k1"}},
      {RangeRequest::MOD, RangeRequest::DESCEND, {"k1", "k2", "k3"}},
      {RangeRequest::VALUE, RangeRequest::ASCEND, {"k2", "k3", "k1"}},
      {RangeRequest::VALUE, RangeRequest::DESCEND, {"k1", "k3", "k2"}},
      // With a target other than KEY, order NONE means ascending (etcd 3.4).
      {RangeRequest::VALUE, RangeRequest::NONE, {"k2", "k3", "k1"}},
      {RangeRequest::MOD, RangeRequest::NONE, {"k3", "k2", "k1"}},
  };
  for (const Case& c : cases) {
    RangeRequest request = RangeOf("k", PrefixEnd("k"));
    request.set_sort_target(c.target);
    request.set_sort_order(c.order);
    auto r = Range(request);
    ASSERT_TRUE(IsOk(r.status));
    EXPECT_EQ(Keys(r.response), c.keys) << "sort by " << RangeRequest::SortTarget_Name(c.target) << " "
                                        << RangeRequest::SortOrder_Name(c.order);
  }

  // The limit applies after sorting: the two greatest keys, and more.
  RangeRequest sorted_limited = RangeOf("k", PrefixEnd("k"));
  sorted_limited.set_sort_order(RangeRequest::DESCEND);
  sorted_limited.set_limit(2);
  auto r = Range(sorted_limited);
  ASSERT_TRUE(IsOk(r.status));
  EXPECT_EQ(Keys(r.response), (std::vector<std::string>{"k3", "k2"}));
  EXPECT_TRUE(r.response.more());
  EXPECT_EQ(r.response.count(), 3);
}

TEST_P(KvSemantics, RangeAtAPastRevisionSeesThatRevision) {
  ASSERT_EQ(Put("k", "v1"), 2);
  ASSERT_EQ(Put("other", "x"), 3);
  ASSERT_EQ(Put("k", "v2"), 4);
  auto del = Call(kv_.get(), &KV::Stub::DeleteRange, DeleteOf("k"));
  ASSERT_TRUE(IsOk(del.status));
  ASSERT_EQ(del.response.header().revision(), 5);
  ASSERT_EQ(Put("k", "v3"), 6);

  struct Case {
    int64_t revision;
    std::vector<std::string> values;  // of "k"
  };
  for (const Case& c :
       std::vector<Case>{{1, {}}, {2, {"v1"}}, {3, {"v1"}}, {4, {"v2"}}, {5, {}}, {6, {"v3"}}, {0, {"v3"}}}) {
    auto r = Range(RangeOf("k", "", c.revision));
    ASSERT_TRUE(IsOk(r.status)) << "revision " << c.revision;
    std::vector<std::string> values;
    for (const auto& kv : r.response.kvs()) values.push_back(kv.value());
    EXPECT_EQ(values, c.values) << "revision " << c.revision;
    // The header reflects the store's current revision, whatever revision was read.
    EXPECT_TRUE(HeaderAt(r.response.header(), 6)) << "revision " << c.revision;
  }
  auto at2 = Range(RangeOf("k", "", 2));
  ASSERT_EQ(at2.response.kvs_size(), 1);
  EXPECT_TRUE(KvIs(at2.response.kvs(0), "k", "v1", 2, 2, 1));
  auto at4 = Range(RangeOf("k", "", 4));
  ASSERT_EQ(at4.response.kvs_size(), 1);
  EXPECT_TRUE(KvIs(at4.response.kvs(0), "k", "v2", 2, 4, 2));
  auto now = Range(RangeOf("k"));
  ASSERT_EQ(now.response.kvs_size(), 1);
  EXPECT_TRUE(KvIs(now.response.kvs(0), "k", "v3", 6, 6, 1));  // recreated after the delete

  auto all_at_3 = Range(RangeOf(std::string(1, '\0'), std::string(1, '\0'), 3));
  ASSERT_TRUE(IsOk(all_at_3.status));
  EXPECT_EQ(Keys(all_at_3.response), (std::vector<std::string>{"k", "other"}));
}

TEST_P(KvSemantics, PutReturnsPrevKvAndIgnoreValueKeepsTheValue) {
  auto first = Call(kv_.get(), &KV::Stub::Put, PutOf("k", "v1", /*prev_kv=*/true));
  ASSERT_TRUE(IsOk(first.status));
  EXPECT_TRUE(HeaderAt(first.response.header(), 2));
  EXPECT_FALSE(first.response.has_prev_kv());  // a new key has none

  auto second = Call(kv_.get(), &KV::Stub::Put, PutOf("k", "v2", /*prev_kv=*/true));
  ASSERT_TRUE(IsOk(second.status));
  EXPECT_TRUE(HeaderAt(second.response.header(), 3));
  ASSERT_TRUE(second.response.has_prev_kv());
  EXPECT_TRUE(KvIs(second.response.prev_kv(), "k", "v1", 2, 2, 1));

  auto without = Call(kv_.get(), &KV::Stub::Put, PutOf("k", "v3"));
  ASSERT_TRUE(IsOk(without.status));
  EXPECT_FALSE(without.response.has_prev_kv());

  etcdserverpb::PutRequest ignore = PutOf("k", "", /*prev_kv=*/true);
  ignore.set_ignore_value(true);
  auto ignored = Call(kv_.get(), &KV::Stub::Put, ignore);
  ASSERT_TRUE(IsOk(ignored.status));
  EXPECT_TRUE(HeaderAt(ignored.response.header(), 5));
  ASSERT_TRUE(ignored.response.has_prev_kv());
  EXPECT_TRUE(KvIs(ignored.response.prev_kv(), "k", "v3", 2, 4, 3));
  auto r = Range(RangeOf("k"));
  ASSERT_EQ(r.response.kvs_size(), 1);
  EXPECT_TRUE(KvIs(r.response.kvs(0), "k", "v3", 2, 5, 4));  // same value, new version and revision

  // ignore_value needs an existing key, and no value.
  etcdserverpb::PutRequest ignore_missing = PutOf("missing", "");
  ignore_missing.set_ignore_value(true);
  EXPECT_TRUE(HasStatus(Call(kv_.get(), &KV::Stub::Put, ignore_missing).status,
                        grpc::StatusCode::INVALID_ARGUMENT, "etcdserver: key not found"));
  etcdserverpb::PutRequest ignore_with_value = PutOf("k", "v9");
  ignore_with_value.set_ignore_value(true);
  EXPECT_TRUE(HasStatus(Call(kv_.get(), &KV::Stub::Put, ignore_with_value).status,
                        grpc::StatusCode::INVALID_ARGUMENT, "etcdserver: value is provided"));
  auto after = Range(RangeOf("k"));
  EXPECT_TRUE(HeaderAt(after.response.header(), 5));  // the refused puts made no revision
}

TEST_P(KvSemantics, DeleteRangeReturnsTheDeletedCountAndPrevKvs) {
  ASSERT_EQ(Put("a", "1"), 2);
  ASSERT_EQ(Put("b", "2"), 3);
  ASSERT_EQ(Put("c", "3"), 4);
  ASSERT_EQ(Put("d", "4"), 5);

  auto ranged = Call(kv_.get(), &KV::Stub::DeleteRange, DeleteOf("b", "d", /*prev_kv=*/true));
  ASSERT_TRUE(IsOk(ranged.status));
  EXPECT_TRUE(HeaderAt(ranged.response.header(), 6));  // one revision for the whole range
  EXPECT_EQ(ranged.response.deleted(), 2);
  ASSERT_EQ(ranged.response.prev_kvs_size(), 2);
  EXPECT_TRUE(KvIs(ranged.response.prev_kvs(0), "b", "2", 3, 3, 1));
  EXPECT_TRUE(KvIs(ranged.response.prev_kvs(1), "c", "3", 4, 4, 1));

  auto nothing = Call(kv_.get(), &KV::Stub::DeleteRange, DeleteOf("zz", "", /*prev_kv=*/true));
  ASSERT_TRUE(IsOk(nothing.status));
  EXPECT_EQ(nothing.response.deleted(), 0);
  EXPECT_EQ(nothing.response.prev_kvs_size(), 0);
  EXPECT_TRUE(HeaderAt(nothing.response.header(), 6));  // deleting nothing makes no revision

  auto single = Call(kv_.get(), &KV::Stub::DeleteRange, DeleteOf("a"));
  ASSERT_TRUE(IsOk(single.status));
  EXPECT_EQ(single.response.deleted(), 1);
  EXPECT_EQ(single.response.prev_kvs_size(), 0);  // not asked for
  EXPECT_TRUE(HeaderAt(single.response.header(), 7));

  auto left = Range(RangeOf(std::string(1, '\0'), std::string(1, '\0')));
  ASSERT_TRUE(IsOk(left.status));
  EXPECT_EQ(Keys(left.response), (std::vector<std::string>{"d"}));

  auto from_key = Call(kv_.get(), &KV::Stub::DeleteRange, DeleteOf("c", std::string(1, '\0')));
  ASSERT_TRUE(IsOk(from_key.status));
  EXPECT_EQ(from_key.response.deleted(), 1);
  EXPECT_TRUE(HeaderAt(from_key.response.header(), 8));
}

TEST_P(KvSemantics, TxnRunsTheSuccessBranchWhenEveryCompareHolds) {
  ASSERT_EQ(Put("k", "v1"), 2);
  ASSERT_EQ(Put("k", "v2"), 3);  // k: create 2, mod 3, version 2

  TxnRequest txn;
  *txn.add_compare() = CompareValue("k", Compare::EQUAL, "v2");
  *txn.add_compare() = CompareVersion("k", Compare::EQUAL, 2);
  *txn.add_compare() = CompareMod("k", Compare::EQUAL, 3);
  *txn.add_compare() = CompareCreate("k", Compare::EQUAL, 2);
  *txn.add_compare() = CompareVersion("k", Compare::GREATER, 1);
  *txn.add_compare() = CompareMod("k", Compare::LESS, 100);
  *txn.add_compare() = CompareValue("k", Compare::NOT_EQUAL, "v1");
  *txn.add_success() = OpOf(PutOf("k", "v3"));
  *txn.add_success() = OpOf(PutOf("k2", "x"));
  *txn.add_success() = OpOf(RangeOf("k"));  // sees the txn's own put
  *txn.add_failure() = OpOf(PutOf("failed", "1"));
  auto r = Txn(txn);
  ASSERT_TRUE(IsOk(r.status));
  EXPECT_TRUE(r.response.succeeded());
  EXPECT_TRUE(HeaderAt(r.response.header(), 4));  // one revision for every write of the txn
  ASSERT_EQ(r.response.responses_size(), 3);
  EXPECT_TRUE(r.response.responses(0).has_response_put());
  EXPECT_TRUE(r.response.responses(1).has_response_put());
  ASSERT_TRUE(r.response.responses(2).has_response_range());
  ASSERT_EQ(r.response.responses(2).response_range().kvs_size(), 1);
  EXPECT_TRUE(KvIs(r.response.responses(2).response_range().kvs(0), "k", "v3", 2, 4, 3));

  auto k2 = Range(RangeOf("k2"));
  ASSERT_EQ(k2.response.kvs_size(), 1);
  EXPECT_TRUE(KvIs(k2.response.kvs(0), "k2", "x", 4, 4, 1));
  EXPECT_EQ(Range(RangeOf("failed")).response.kvs_size(), 0);
}

TEST_P(KvSemantics, TxnRunsTheFailureBranchWhenACompareFails) {
  ASSERT_EQ(Put("k", "v1"), 2);

  for (const Compare& failing :
       {CompareValue("k", Compare::EQUAL, "nope"), CompareVersion("k", Compare::EQUAL, 2),
        CompareMod("k", Compare::GREATER, 2), CompareCreate("k", Compare::LESS, 2)}) {
    const int64_t before = Range(RangeOf("k")).response.header().revision();
    TxnRequest txn;
    *txn.add_compare() = CompareVersion("k", Compare::EQUAL, 1);  // holds
    *txn.add_compare() = failing;
    *txn.add_success() = OpOf(PutOf("k", "success"));
    *txn.add_failure() = OpOf(PutOf("f", "failure"));
    *txn.add_failure() = OpOf(RangeOf("k"));
    auto r = Txn(txn);
    ASSERT_TRUE(IsOk(r.status));
    EXPECT_FALSE(r.response.succeeded()) << failing.ShortDebugString();
    EXPECT_TRUE(HeaderAt(r.response.header(), before + 1));
    ASSERT_EQ(r.response.responses_size(), 2);
    ASSERT_TRUE(r.response.responses(1).has_response_range());
    ASSERT_EQ(r.response.responses(1).response_range().kvs_size(), 1);
    EXPECT_EQ(r.response.responses(1).response_range().kvs(0).value(), "v1");
  }
  auto f = Range(RangeOf("f"));
  ASSERT_EQ(f.response.kvs_size(), 1);
  EXPECT_EQ(f.response.kvs(0).version(), 4);

  // A branch without writes makes no revision.
  const int64_t before = Range(RangeOf("k")).response.header().revision();
  TxnRequest read_only;
  *read_only.add_compare() = CompareValue("k", Compare::EQUAL, "nope");
  *read_only.add_success() = OpOf(PutOf("k", "success"));
  *read_only.add_failure() = OpOf(RangeOf("k"));
  auto r = Txn(read_only);
  ASSERT_TRUE(IsOk(r.status));
  EXPECT_FALSE(r.response.succeeded());
  EXPECT_TRUE(HeaderAt(r.response.header(), before));
  TxnRequest empty;
  *empty.add_compare() = CompareValue("k", Compare::EQUAL, "nope");
  *empty.add_success() = OpOf(PutOf("k", "success"));
  auto e = Txn(empty);
  ASSERT_TRUE(IsOk(e.status));
  EXPECT_FALSE(e.response.succeeded());
  EXPECT_EQ(e.response.responses_size(), 0);
  EXPECT_TRUE(HeaderAt(e.response.header(), before));
}

TEST_P(KvSemantics, TxnComparesAMissingKeyAsVersionZeroAndNeverByValue) {
  struct Case {
    Compare compare;
    bool holds;
  };
  const std::vector<Case> cases = {
      {CompareVersion("missing", Compare::EQUAL, 0), true},
      {CompareCreate("missing", Compare::EQUAL, 0), true},
      {CompareMod("missing", Compare::EQUAL, 0), true},
      {CompareValue("missing", Compare::EQUAL, ""), false},  // a value compare on a missing key always fails
      {CompareValue("missing", Compare::NOT_EQUAL, "x"), false},
  };
  for (const Case& c : cases) {
    TxnRequest txn;
    *txn.add_compare() = c.compare;
    auto r = Txn(txn);
    ASSERT_TRUE(IsOk(r.status));
    EXPECT_EQ(r.response.succeeded(), c.holds) << c.compare.ShortDebugString();
  }
}

TEST_P(KvSemantics, TxnComparesEveryKeyOfARangeAndNests) {
  ASSERT_EQ(Put("p1", "x"), 2);
  ASSERT_EQ(Put("p2", "x"), 3);
  ASSERT_EQ(Put("p2", "y"), 4);  // p1 version 1, p2 version 2

  Compare positive = CompareVersion("p", Compare::GREATER, 0);
  positive.set_range_end(PrefixEnd("p"));
  Compare all_one = CompareVersion("p", Compare::EQUAL, 1);
  all_one.set_range_end(PrefixEnd("p"));
  TxnRequest holds;
  *holds.add_compare() = positive;
  EXPECT_TRUE(Txn(holds).response.succeeded());
  TxnRequest fails;
  *fails.add_compare() = all_one;
  auto f = Txn(fails);
  ASSERT_TRUE(IsOk(f.status));
  EXPECT_FALSE(f.response.succeeded());

  // A nested txn: its own compares choose its branch; its writes share the outer txn's revision.
  TxnRequest inner;
  *inner.add_compare() = CompareValue("p2", Compare::EQUAL, "y");
  *inner.add_success() = OpOf(PutOf("inner", "then"));
  *inner.add_failure() = OpOf(PutOf("inner", "else"));
  TxnRequest outer;
  *outer.add_success() = OpOf(PutOf("outer", "1"));
  *outer.add_success() = OpOf(inner);
  auto r = Txn(outer);
  ASSERT_TRUE(IsOk(r.status));
  EXPECT_TRUE(r.response.succeeded());
  EXPECT_TRUE(HeaderAt(r.response.header(), 5));
  ASSERT_EQ(r.response.responses_size(), 2);
  ASSERT_TRUE(r.response.responses(1).has_response_txn());
  EXPECT_TRUE(r.response.responses(1).response_txn().succeeded());
  auto inner_kv = Range(RangeOf("inner"));
  ASSERT_EQ(inner_kv.response.kvs_size(), 1);
  EXPECT_TRUE(KvIs(inner_kv.response.kvs(0), "inner", "then", 5, 5, 1));
}

TEST_P(KvSemantics, CompactMakesOlderRevisionsUnreadable) {
  ASSERT_EQ(Put("k", "v1"), 2);
  ASSERT_EQ(Put("k", "v2"), 3);
  ASSERT_EQ(Put("k", "v3"), 4);

  etcdserverpb::CompactionRequest compact;
  compact.set_revision(3);
  compact.set_physical(true);
  auto c = Call(kv_.get(), &KV::Stub::Compact, compact);
  ASSERT_TRUE(IsOk(c.status));
  EXPECT_TRUE(HeaderAt(c.response.header(), 4));

  const std::string compacted = "etcdserver: mvcc: required revision has been compacted";
  EXPECT_TRUE(HasStatus(Range(RangeOf("k", "", 2)).status, grpc::StatusCode::OUT_OF_RANGE, compacted));
  EXPECT_TRUE(HasStatus(Range(RangeOf("k", "", 1)).status, grpc::StatusCode::OUT_OF_RANGE, compacted));
  auto at3 = Range(RangeOf("k", "", 3));  // the compaction revision itself stays readable
  ASSERT_TRUE(IsOk(at3.status));
  ASSERT_EQ(at3.response.kvs_size(), 1);
  EXPECT_EQ(at3.response.kvs(0).value(), "v2");
  auto now = Range(RangeOf("k"));
  ASSERT_EQ(now.response.kvs_size(), 1);
  EXPECT_EQ(now.response.kvs(0).value(), "v3");

  // A txn that reads a compacted revision fails as a whole, and writes nothing.
  TxnRequest txn;
  *txn.add_success() = OpOf(PutOf("written", "1"));
  *txn.add_success() = OpOf(RangeOf("k", "", 2));
  EXPECT_TRUE(HasStatus(Txn(txn).status, grpc::StatusCode::OUT_OF_RANGE, compacted));
  EXPECT_EQ(Range(RangeOf("written")).response.kvs_size(), 0);

  // Compacting at or before the compacted revision, or past the current one, is refused.
  compact.set_revision(3);
  EXPECT_TRUE(HasStatus(Call(kv_.get(), &KV::Stub::Compact, compact).status, grpc::StatusCode::OUT_OF_RANGE,
                        compacted));
  compact.set_revision(2);
  EXPECT_TRUE(HasStatus(Call(kv_.get(), &KV::Stub::Compact, compact).status, grpc::StatusCode::OUT_OF_RANGE,
                        compacted));
  compact.set_revision(5);
  EXPECT_TRUE(HasStatus(Call(kv_.get(), &KV::Stub::Compact, compact).status, grpc::StatusCode::OUT_OF_RANGE,
                        "etcdserver: mvcc: required revision is a future revision"));
  compact.set_revision(4);
  EXPECT_TRUE(IsOk(Call(kv_.get(), &KV::Stub::Compact, compact).status));
  EXPECT_TRUE(HasStatus(Range(RangeOf("k", "", 3)).status, grpc::StatusCode::OUT_OF_RANGE, compacted));

  // A txn that reads a readable past revision gets that revision's key-values, and writes.
  ASSERT_EQ(Put("k", "v4"), 5);
  *txn.mutable_success(1) = OpOf(RangeOf("k", "", 4));
  auto past = Txn(txn);
  ASSERT_TRUE(IsOk(past.status));
  ASSERT_EQ(past.response.responses(1).response_range().kvs_size(), 1);
  EXPECT_EQ(past.response.responses(1).response_range().kvs(0).value(), "v3");
  EXPECT_EQ(Range(RangeOf("written")).response.kvs_size(), 1);
}

TEST_P(KvSemantics, EveryResponseHeaderNamesTheSameClusterAndMember) {
  auto put = Call(kv_.get(), &KV::Stub::Put, PutOf("k", "v"));
  ASSERT_TRUE(IsOk(put.status));
  const etcdserverpb::ResponseHeader& h = put.response.header();
  EXPECT_TRUE(HeaderAt(h, 2));
  EXPECT_NE(h.raft_term(), 0u);

  std::vector<std::pair<std::string, etcdserverpb::ResponseHeader>> headers;
  auto range = Range(RangeOf("k"));
  headers.emplace_back("Range", range.response.header());
  auto del = Call(kv_.get(), &KV::Stub::DeleteRange, DeleteOf("nothing"));
  headers.emplace_back("DeleteRange", del.response.header());
  TxnRequest txn;
  auto t = Txn(txn);
  headers.emplace_back("Txn", t.response.header());
  etcdserverpb::CompactionRequest compact;
  compact.set_revision(2);
  auto c = Call(kv_.get(), &KV::Stub::Compact, compact);
  headers.emplace_back("Compact", c.response.header());
  auto maintenance = etcdserverpb::Maintenance::NewStub(channel_);
  auto status =
      Call(maintenance.get(), &etcdserverpb::Maintenance::Stub::Status, etcdserverpb::StatusRequest());
  ASSERT_TRUE(IsOk(status.status));
  headers.emplace_back("Status", status.response.header());
  auto cluster = etcdserverpb::Cluster::NewStub(channel_);
  auto members =
      Call(cluster.get(), &etcdserverpb::Cluster::Stub::MemberList, etcdserverpb::MemberListRequest());
  ASSERT_TRUE(IsOk(members.status));
  for (const auto& [method, header] : headers) {
    EXPECT_EQ(header.cluster_id(), h.cluster_id()) << method;
    EXPECT_EQ(header.member_id(), h.member_id()) << method;
    EXPECT_EQ(header.revision(), 2) << method;
  }
  // etcd leaves the revision of a cluster response at 0; the ids are what matters there.
  EXPECT_EQ(members.response.header().cluster_id(), h.cluster_id());
  EXPECT_EQ(members.response.header().member_id(), h.member_id());

  ASSERT_EQ(members.response.members_size(), 1);
  EXPECT_EQ(members.response.members(0).id(), h.member_id());
  ASSERT_EQ(members.response.members(0).clienturls_size(), 1);
  EXPECT_EQ(members.response.members(0).clienturls(0), "http://" + server_->address());
  EXPECT_EQ(status.response.leader(), h.member_id());
  EXPECT_EQ(status.response.version().substr(0, 4), "3.4.");
}

INSTANTIATE_TEST_SUITE_P(Servers, KvSemantics, ::testing::Values(Flavor::kRevkv, Flavor::kEtcd),
                         [](const ::testing::TestParamInfo<Flavor>& p) { return FlavorName(p.param); });

}  // namespace
}  // namespace revkv::integration
