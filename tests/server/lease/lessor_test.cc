// Tests of the lessor (server/lease/lessor.h): expiry in deadline order through the store's revoke,
// keep-alive, recovery with full TTLs, and the expiry delay with many leases expiring at once.
#include "server/lease/lessor.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "runtime/heap/heap.h"
#include "runtime/safepoint/safepoint.h"
#include "server/engine/engine.h"
#include "server/store/errors.h"

namespace revkv::server {
namespace {

using Clock = std::chrono::steady_clock;

class LessorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    runtime::HeapOptions o;
    o.max_heap_bytes = size_t{2} << 30;
    runtime::InitializeRuntime(o);
    registration_.emplace("lessor-test");
    auto s = Store::Create(StoreOptions(), nullptr);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
    LessorOptions options;
    options.now = [this] { return now_; };
    lessor_.emplace(store_.get(), options);
  }
  void TearDown() override {
    lessor_.reset();
    store_.reset();
    registration_.reset();
  }

  void Grant(Lessor& lessor, int64_t id, int64_t ttl, const std::string& key) {
    etcdserverpb::LeaseGrantRequest g;
    g.set_id(id);
    g.set_ttl(ttl);
    ASSERT_TRUE(lessor.Grant(g).ok());
    etcdserverpb::PutRequest p;
    p.set_key(key);
    p.set_lease(id);
    ASSERT_TRUE(store_->Put(p).ok());
  }
  bool Has(const std::string& key, int64_t revision = 0) {
    etcdserverpb::RangeRequest r;
    r.set_key(key);
    r.set_revision(revision);
    auto res = store_->Range(r);
    EXPECT_TRUE(res.ok()) << res.status();
    return res.ok() && res->kvs_size() == 1;
  }

  Clock::time_point now_ = Clock::now();
  std::optional<runtime::ThreadRegistration> registration_;
  std::unique_ptr<Store> store_;
  std::optional<Lessor> lessor_;
};

TEST_F(LessorTest, ExpiredLeasesAreRevokedInDeadlineOrder) {
  const std::vector<std::pair<int64_t, int64_t>> leases = {{10, 9}, {11, 7}, {12, 8}, {13, 5}, {14, 6}};
  for (auto [id, ttl] : leases) Grant(*lessor_, id, ttl, "k" + std::to_string(id));
  now_ += std::chrono::seconds(4);
  EXPECT_EQ(lessor_->ExpireNow(), 0u);
  const int64_t before = store_->Revision();
  now_ += std::chrono::seconds(20);
  EXPECT_EQ(lessor_->ExpireNow(), 5u);
  EXPECT_EQ(store_->Revision(), before + 5);
  // Revision before + i removed the key of the lease with the i-th earliest deadline.
  const std::vector<int64_t> order = {13, 14, 11, 12, 10};
  for (size_t i = 0; i < order.size(); ++i) {
    const int64_t rev = before + static_cast<int64_t>(i) + 1;
    EXPECT_FALSE(Has("k" + std::to_string(order[i]), rev)) << "revision " << rev;
    if (i + 1 < order.size()) {
      EXPECT_TRUE(Has("k" + std::to_string(order[i + 1]), rev)) << "revision " << rev;
    }
  }
  EXPECT_EQ(lessor_->size(), 0u);
  auto left = store_->Leases();
  ASSERT_TRUE(left.ok());
  EXPECT_TRUE(left->empty());
}

TEST_F(LessorTest, KeepAliveExtendsToTheGrantedTtl) {
  Grant(*lessor_, 1, 10, "a");
  now_ += std::chrono::seconds(8);
  auto ttl = lessor_->Renew(1);
  ASSERT_TRUE(ttl.ok());
  EXPECT_EQ(*ttl, 10);
  now_ += std::chrono::seconds(8);  // 16 s after the grant: alive thanks to the keep-alive
  EXPECT_EQ(lessor_->ExpireNow(), 0u);
  EXPECT_TRUE(Has("a"));
  auto remaining = lessor_->Remaining(1);
  ASSERT_TRUE(remaining.ok());
  EXPECT_EQ(*remaining, 2);
  now_ += std::chrono::seconds(3);
  // Past its deadline a lease is not renewed, even before the expiry pass revokes it.
  EXPECT_EQ(lessor_->Renew(1).status(), errors::LeaseNotFound());
  EXPECT_EQ(lessor_->ExpireNow(), 1u);
  EXPECT_FALSE(Has("a"));
  EXPECT_EQ(lessor_->Renew(1).status(), errors::LeaseNotFound());
  EXPECT_EQ(lessor_->Renew(99).status(), errors::LeaseNotFound());
}

TEST_F(LessorTest, RevokeForgetsTheDeadline) {
  Grant(*lessor_, 1, 10, "a");
  etcdserverpb::LeaseRevokeRequest r;
  r.set_id(1);
  ASSERT_TRUE(lessor_->Revoke(r).ok());
  EXPECT_EQ(lessor_->size(), 0u);
  EXPECT_EQ(lessor_->Renew(1).status(), errors::LeaseNotFound());
  EXPECT_EQ(lessor_->Revoke(r).status(), errors::LeaseNotFound());
}

TEST_F(LessorTest, RecoverGivesEveryLeaseItsFullTtl) {
  Grant(*lessor_, 1, 10, "a");
  Grant(*lessor_, 2, 20, "b");
  now_ += std::chrono::seconds(9);
  LessorOptions options;
  options.now = [this] { return now_; };
  Lessor restarted(store_.get(), options);  // as after a restart: deadlines are not persisted
  ASSERT_TRUE(restarted.Recover().ok());
  EXPECT_EQ(restarted.size(), 2u);
  auto one = restarted.Remaining(1);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*one, 10);
  now_ += std::chrono::seconds(5);
  EXPECT_EQ(restarted.ExpireNow(), 0u);
  now_ += std::chrono::seconds(6);
  EXPECT_EQ(restarted.ExpireNow(), 1u);
  EXPECT_FALSE(Has("a"));
  EXPECT_TRUE(Has("b"));
}

// Many leases expiring at the same instant (as after a restart, which gives every lease its full TTL
// from the same moment): the expiry thread revokes them all, with their keys, within a bounded delay
// after that instant. The store is a durable one (a log in a temporary directory, fsync always), so each
// revoke is logged as in the server. REVKV_LEASE_COUNT sets the count (docs/benchmarks.md uses 100000).
TEST_F(LessorTest, ManyLeasesExpireWithinTheBound) {
  lessor_.reset();
  store_.reset();  // one store per process: this test's is durable
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("revkv-lessor-" + std::to_string(getpid()))).string();
  std::filesystem::remove_all(dir);
  EngineOptions options;
  options.data_dir = dir;
  options.checkpoint_interval = 0;
  auto engine = Engine::Open(options, nullptr);
  ASSERT_TRUE(engine.ok()) << engine.status();
  Store* store = &(*engine)->store();
  const char* env = std::getenv("REVKV_LEASE_COUNT");
  const int count = env != nullptr ? std::atoi(env) : 20000;
  const Clock::time_point start = Clock::now();
  {
    Lessor granting(store);
    for (int i = 1; i <= count; ++i) {
      etcdserverpb::LeaseGrantRequest g;
      g.set_id(i);
      g.set_ttl(kMinLeaseTtl);
      ASSERT_TRUE(granting.Grant(g).ok());
      etcdserverpb::PutRequest p;
      p.set_key("key/" + std::to_string(i));
      p.set_lease(i);
      auto put = store->Put(p);
      ASSERT_TRUE(put.ok());
      if (i == count) {
        ASSERT_TRUE(store->WaitDurable(put->lsn).ok());
      }
    }
  }
  const Clock::time_point granted = Clock::now();
  Lessor lessor(store);  // the real clock
  ASSERT_TRUE(lessor.Recover().ok());
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(kMinLeaseTtl);  // every lease's
  lessor.Start();
  while (store->KeyCount() > 0 && Clock::now() < deadline + std::chrono::seconds(60)) {
    runtime::SafeRegion sleeping;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const Clock::time_point gone = Clock::now();
  lessor.Stop();
  const double late_ms = std::chrono::duration<double, std::milli>(gone - deadline).count();
  std::printf(
      "%d leases (one key each) granted in %.0f ms; all expire at once; every key gone %.0f ms "
      "after the deadline (%.0f revokes/s)\n",
      count, std::chrono::duration<double, std::milli>(granted - start).count(), late_ms,
      count / std::max(late_ms, 1.0) * 1000);
  EXPECT_EQ(store->KeyCount(), 0);
  EXPECT_EQ(lessor.size(), 0u);
  auto left = store->Leases(/*newest=*/true);
  ASSERT_TRUE(left.ok());
  EXPECT_TRUE(left->empty());
  // The bound stated in docs/benchmarks.md: 5 s for 100,000 leases expiring at once (scaled, 2 s at least).
  // A speed figure, held in the main build only: a sanitizer's slowdown is not the lessor's.
#if !defined(REVKV_SANITIZER)
  EXPECT_LT(late_ms, std::max(2000.0, 5000.0 * count / 100000));
#endif
  EXPECT_TRUE((*engine)->Close().ok());
  engine->reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace revkv::server
