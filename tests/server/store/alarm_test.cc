// Unit tests of the store's alarms and space quota (meta_state.h, quota.h): etcd's ACTIVATE, DEACTIVATE
// and GET; what NOSPACE and CORRUPT refuse and what they let through (applierV3Capped, applierV3Corrupt);
// the quota raising NOSPACE; a write that raced an alarm's commit retrying into the refusal.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "runtime/heap/heap.h"
#include "runtime/safepoint/safepoint.h"
#include "server/store/errors.h"
#include "server/store/store.h"

namespace revkv::server {
namespace {

using etcdserverpb::AlarmRequest;

constexpr uint64_t kMember = 0xabc;

class AlarmStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    runtime::HeapOptions o;
    o.max_heap_bytes = size_t{1} << 30;
    runtime::InitializeRuntime(o);
    registration_.emplace("alarm-test");
  }
  void Open(int64_t quota = 0) {
    StoreOptions options;
    options.member_id = kMember;
    options.quota_bytes = quota;
    options.store_bytes = [this] { return bytes_.load(); };
    auto s = Store::Create(options, nullptr);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
  }
  void TearDown() override {
    store_.reset();
    registration_.reset();
  }

  absl::StatusOr<etcdserverpb::AlarmResponse> Alarm(AlarmRequest::AlarmAction action, uint64_t member,
                                                    etcdserverpb::AlarmType type) {
    AlarmRequest r;
    r.set_action(action);
    r.set_memberid(member);
    r.set_alarm(type);
    auto res = store_->Alarm(r);
    if (!res.ok()) return res.status();
    return res->response;
  }
  absl::Status Put(const std::string& k, const std::string& v, int64_t lease = 0) {
    etcdserverpb::PutRequest r;
    r.set_key(k);
    r.set_value(v);
    r.set_lease(lease);
    return store_->Put(r).status();
  }
  absl::Status Delete(const std::string& k) {
    etcdserverpb::DeleteRangeRequest r;
    r.set_key(k);
    return store_->DeleteRange(r).status();
  }
  absl::Status Get(const std::string& k) {
    etcdserverpb::RangeRequest r;
    r.set_key(k);
    return store_->Range(r).status();
  }
  absl::Status TxnPutIf(const std::string& k, bool nested = false) {
    etcdserverpb::TxnRequest t;
    etcdserverpb::TxnRequest* target = &t;
    if (nested) target = t.add_success()->mutable_request_txn();
    target->add_success()->mutable_request_put()->set_key(k);
    return store_->Txn(t).status();
  }
  absl::Status TxnDelete(const std::string& k) {
    etcdserverpb::TxnRequest t;
    t.add_success()->mutable_request_delete_range()->set_key(k);
    return store_->Txn(t).status();
  }
  absl::Status Grant(int64_t id) {
    etcdserverpb::LeaseGrantRequest g;
    g.set_id(id);
    g.set_ttl(60);
    return store_->LeaseGrant(g).status();
  }
  absl::Status Revoke(int64_t id) {
    etcdserverpb::LeaseRevokeRequest r;
    r.set_id(id);
    return store_->LeaseRevoke(r).status();
  }
  absl::Status Compact(int64_t rev) {
    etcdserverpb::CompactionRequest c;
    c.set_revision(rev);
    return store_->Compact(c).status();
  }

  std::atomic<int64_t> bytes_{0};
  std::optional<runtime::ThreadRegistration> registration_;
  std::unique_ptr<Store> store_;
};

std::vector<std::pair<uint64_t, int>> Pairs(const etcdserverpb::AlarmResponse& r) {
  std::vector<std::pair<uint64_t, int>> out;
  for (const auto& a : r.alarms()) out.emplace_back(a.memberid(), static_cast<int>(a.alarm()));
  return out;
}

TEST_F(AlarmStoreTest, ActivateDeactivateAndGetAsEtcdsAlarmStore) {
  Open();
  const int64_t r0 = store_->Revision();
  auto a = Alarm(AlarmRequest::ACTIVATE, 7, etcdserverpb::NOSPACE);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(Pairs(*a), (std::vector<std::pair<uint64_t, int>>{{7, etcdserverpb::NOSPACE}}));
  EXPECT_EQ(store_->Revision(), r0 + 1);  // a logged write: one revision (docs/server.md)
  // Activating an active pair answers it and changes nothing.
  a = Alarm(AlarmRequest::ACTIVATE, 7, etcdserverpb::NOSPACE);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(Pairs(*a).size(), 1u);
  EXPECT_EQ(store_->Revision(), r0 + 1);
  ASSERT_TRUE(Alarm(AlarmRequest::ACTIVATE, 3, etcdserverpb::NOSPACE).ok());
  ASSERT_TRUE(Alarm(AlarmRequest::ACTIVATE, 9, etcdserverpb::CORRUPT).ok());
  // GET NONE lists every alarm, ordered by type then member; GET of a type only that type.
  auto all = Alarm(AlarmRequest::GET, 0, etcdserverpb::NONE);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(Pairs(*all),
            (std::vector<std::pair<uint64_t, int>>{
                {3, etcdserverpb::NOSPACE}, {7, etcdserverpb::NOSPACE}, {9, etcdserverpb::CORRUPT}}));
  auto corrupt = Alarm(AlarmRequest::GET, 0, etcdserverpb::CORRUPT);
  ASSERT_TRUE(corrupt.ok());
  EXPECT_EQ(Pairs(*corrupt), (std::vector<std::pair<uint64_t, int>>{{9, etcdserverpb::CORRUPT}}));
  // Deactivating an inactive pair answers nothing and writes nothing.
  const int64_t before = store_->Revision();
  auto none = Alarm(AlarmRequest::DEACTIVATE, 8, etcdserverpb::NOSPACE);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->alarms().empty());
  EXPECT_EQ(store_->Revision(), before);
  auto off = Alarm(AlarmRequest::DEACTIVATE, 7, etcdserverpb::NOSPACE);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(Pairs(*off), (std::vector<std::pair<uint64_t, int>>{{7, etcdserverpb::NOSPACE}}));
  EXPECT_EQ(store_->Alarms().size(), 2u);
}

// applierV3Capped: NOSPACE refuses what adds data and lets through what frees it.
TEST_F(AlarmStoreTest, NoSpaceRefusesWhatAddsDataAndLetsReadsDeletesRevokesAndCompactionThrough) {
  Open();
  ASSERT_TRUE(Put("a", "1").ok());
  ASSERT_TRUE(Put("b", "2").ok());
  ASSERT_TRUE(Grant(5).ok());
  ASSERT_TRUE(Alarm(AlarmRequest::ACTIVATE, 1, etcdserverpb::NOSPACE).ok());
  const int64_t rev = store_->Revision();
  EXPECT_EQ(Put("c", "3"), errors::NoSpace());
  EXPECT_EQ(Put("a", "overwrite"), errors::NoSpace());
  EXPECT_EQ(TxnPutIf("c"), errors::NoSpace());
  EXPECT_EQ(TxnPutIf("c", /*nested=*/true), errors::NoSpace());  // departure: nested Puts count
  EXPECT_EQ(Grant(6), errors::NoSpace());
  EXPECT_EQ(store_->Revision(), rev);  // nothing was applied
  EXPECT_TRUE(Get("a").ok());
  EXPECT_TRUE(TxnDelete("a").ok());
  EXPECT_TRUE(Delete("b").ok());
  EXPECT_TRUE(Revoke(5).ok());
  EXPECT_TRUE(Compact(store_->Revision()).ok());
  // Disarmed, writes work again.
  ASSERT_TRUE(Alarm(AlarmRequest::DEACTIVATE, 1, etcdserverpb::NOSPACE).ok());
  EXPECT_TRUE(Put("c", "3").ok());
  EXPECT_TRUE(Grant(6).ok());
}

// applierV3Corrupt: CORRUPT refuses every write, deletes and compactions included; reads and alarms work.
TEST_F(AlarmStoreTest, CorruptRefusesEveryWriteButReadsAndAlarmsWork) {
  Open();
  ASSERT_TRUE(Put("a", "1").ok());
  ASSERT_TRUE(Grant(5).ok());
  ASSERT_TRUE(Alarm(AlarmRequest::ACTIVATE, 1, etcdserverpb::CORRUPT).ok());
  const int64_t rev = store_->Revision();
  EXPECT_EQ(Put("b", "2"), errors::Corrupt());
  EXPECT_EQ(Delete("a"), errors::Corrupt());
  EXPECT_EQ(TxnDelete("a"), errors::Corrupt());
  EXPECT_EQ(Grant(6), errors::Corrupt());
  EXPECT_EQ(Revoke(5), errors::Corrupt());
  EXPECT_EQ(Compact(rev), errors::Corrupt());
  EXPECT_EQ(store_->Revision(), rev);
  EXPECT_TRUE(Get("a").ok());
  ASSERT_TRUE(Alarm(AlarmRequest::DEACTIVATE, 1, etcdserverpb::CORRUPT).ok());
  EXPECT_TRUE(Delete("a").ok());
}

// etcd's quota: a write that would take the store to the quota raises NOSPACE (for this member) and is
// refused; it stays refused, even once the bytes fall, until the alarm is disarmed.
TEST_F(AlarmStoreTest, TheQuotaRaisesNoSpaceForThisMemberUntilDisarmed) {
  Open(/*quota=*/10000);
  bytes_ = 5000;
  ASSERT_TRUE(Put("k", std::string(100, 'v')).ok());
  const int64_t rev = store_->Revision();
  // 5000 + 256 + 1 + 4800 >= 10000: refused, and the alarm raised.
  EXPECT_EQ(Put("k", std::string(4800, 'v')), errors::NoSpace());
  EXPECT_EQ(store_->Revision(), rev + 1);  // the alarm's revision, not the Put's
  auto alarms = Alarm(AlarmRequest::GET, 0, etcdserverpb::NOSPACE);
  ASSERT_TRUE(alarms.ok());
  EXPECT_EQ(Pairs(*alarms), (std::vector<std::pair<uint64_t, int>>{{kMember, etcdserverpb::NOSPACE}}));
  // A small write that would fit is refused too: the alarm refuses, not the arithmetic.
  EXPECT_EQ(Put("small", "v"), errors::NoSpace());
  bytes_ = 0;
  EXPECT_EQ(Put("small", "v"), errors::NoSpace());
  EXPECT_TRUE(Delete("k").ok());
  ASSERT_TRUE(Alarm(AlarmRequest::DEACTIVATE, kMember, etcdserverpb::NOSPACE).ok());
  EXPECT_TRUE(Put("small", "v").ok());
  // Requests without a cost never meet the quota.
  bytes_ = 20000;
  EXPECT_TRUE(Get("small").ok());
  EXPECT_TRUE(Delete("small").ok());
}

// A write transaction reads the alarms before it changes anything: one whose attempt started before an
// alarm committed retries and is refused, never committed past it. Writers race 30 raise/disarm cycles of
// NOSPACE; no Put commits at a revision between a raise and its disarm.
TEST_F(AlarmStoreTest, AWriteRacingAnAlarmNeverCommitsWhileItIsActive) {
  Open();
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::vector<int64_t> put_revisions;  // under mu
  std::vector<std::thread> writers;
  for (int t = 0; t < 3; ++t) {
    writers.emplace_back([&, t] {
      runtime::ThreadRegistration registration("writer");
      for (int i = 0; !stop.load(); ++i) {
        etcdserverpb::PutRequest p;
        p.set_key("w" + std::to_string(t) + "/" + std::to_string(i % 50));
        p.set_value("v");
        auto r = store_->Put(p);
        if (r.ok()) {
          std::lock_guard<std::mutex> lock(mu);
          put_revisions.push_back(r->revision);
        } else {
          EXPECT_EQ(r.status(), errors::NoSpace());
        }
      }
    });
  }
  std::vector<std::pair<int64_t, int64_t>> active;  // (raise revision, disarm revision)
  for (int cycle = 0; cycle < 30; ++cycle) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    auto raised = Alarm(AlarmRequest::ACTIVATE, 1, etcdserverpb::NOSPACE);
    ASSERT_TRUE(raised.ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    auto disarmed = Alarm(AlarmRequest::DEACTIVATE, 1, etcdserverpb::NOSPACE);
    ASSERT_TRUE(disarmed.ok());
    active.emplace_back(raised->header().revision(), disarmed->header().revision());
  }
  stop = true;
  for (auto& w : writers) w.join();
  ASSERT_FALSE(put_revisions.empty());
  for (int64_t rev : put_revisions) {
    for (const auto& [from, to] : active) {
      EXPECT_FALSE(rev > from && rev < to)
          << "a Put committed at " << rev << " while NOSPACE was active (" << from << " to " << to << ")";
    }
  }
}

}  // namespace
}  // namespace revkv::server
