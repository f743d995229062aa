// Leases across a restart: grant and revoke records replayed from the log, and leases held by a
// checkpoint (format 3), with their keys and the attachment index rebuilt.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "server/engine/engine.h"
#include "server/store/errors.h"
#include "tests/server/engine/engine_test_util.h"

namespace revkv::server {
namespace {

namespace fs = std::filesystem;
using namespace engine_testing;  // NOLINT: the test helpers read best unqualified

// Grants leases 1 (ttl 30) and 2 (ttl 40), puts a1, a2 on lease 1 and b1, b2 on lease 2 and c without a
// lease, revokes lease 2 and grants 3 (ttl 50); returns 0 or the child's failure.
int WriteLeases(Engine& engine) {
  Store& store = engine.store();
  for (auto [id, ttl] : {std::pair<int64_t, int64_t>{1, 30}, {2, 40}}) {
    etcdserverpb::LeaseGrantRequest g;
    g.set_id(id);
    g.set_ttl(ttl);
    auto w = store.LeaseGrant(g);
    CHILD_CHECK(w.ok(), "grant: %s", w.status().ToString().c_str());
  }
  for (auto [key, lease] :
       {std::pair<std::string, int64_t>{"a1", 1}, {"a2", 1}, {"b1", 2}, {"b2", 2}, {"c", 0}}) {
    etcdserverpb::PutRequest p = PutRequest(key, "v");
    p.set_lease(lease);
    auto w = store.Put(p);
    CHILD_CHECK(w.ok(), "put: %s", w.status().ToString().c_str());
  }
  etcdserverpb::LeaseRevokeRequest r;
  r.set_id(2);
  auto revoked = store.LeaseRevoke(r);
  CHILD_CHECK(revoked.ok(), "revoke: %s", revoked.status().ToString().c_str());
  etcdserverpb::LeaseGrantRequest g;
  g.set_id(3);
  g.set_ttl(50);
  auto w = store.LeaseGrant(g);
  CHILD_CHECK(w.ok(), "grant: %s", w.status().ToString().c_str());
  CHILD_CHECK(engine.wal().WaitDurable(w->lsn).ok(), "durable");
  return 0;
}

// Checks the state WriteLeases leaves, at `revision` (10: 2 grants, 5 puts, a revoke, a grant).
int CheckLeases(Store& store) {
  CHILD_CHECK(store.Revision() == 10, "revision %lld", static_cast<long long>(store.Revision()));
  auto leases = store.Leases(/*newest=*/true);
  CHILD_CHECK(leases.ok(), "leases");
  CHILD_CHECK(leases->size() == 2 && (*leases)[0].id == 1 && (*leases)[0].granted_ttl == 30 &&
                  (*leases)[1].id == 3 && (*leases)[1].granted_ttl == 50,
              "leases after recovery: %zu", leases->size());
  auto one = store.LeaseAt(1, true, true);
  CHILD_CHECK(one.ok() && one->keys == (std::vector<std::string>{"a1", "a2"}), "keys of lease 1");
  CHILD_CHECK(store.LeaseAt(2, true, true).status() == errors::LeaseNotFound(), "lease 2 was revoked");
  CHILD_READ(all, Everything(store));
  CHILD_CHECK(all.size() == 3 && all.count("a1") && all.count("a2") && all.count("c"), "keys %zu",
              all.size());
  // The attachment index was rebuilt: revoking lease 1 deletes its keys.
  etcdserverpb::LeaseRevokeRequest r;
  r.set_id(1);
  auto revoked = store.LeaseRevoke(r);
  CHILD_CHECK(revoked.ok() && store.WaitDurable(revoked->lsn).ok(), "revoke 1");
  CHILD_READ(after, Everything(store));
  CHILD_CHECK(after.size() == 1 && after.count("c"), "keys after revoking 1: %zu", after.size());
  return 0;
}

TEST(EngineLeases, GrantAndRevokeRecordsReplay) {
  const std::string dir = TempDir("lease-replay");
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(Options(dir), nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    return WriteLeases(**engine);
  });
  ASSERT_CHILD_PASSES([&] {
    RecoveryReport report;
    auto engine = Engine::Open(Options(dir), &report);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    CHILD_CHECK(report.wal.records_replayed == 9, "replayed %llu",
                static_cast<unsigned long long>(report.wal.records_replayed));
    return CheckLeases((*engine)->store());
  });
  fs::remove_all(dir);
}

// A checkpoint holds the leases of its base revision (format 3) and the keys attached to them; recovery
// from it alone (nothing to replay) restores both, and the attachment index with them.
TEST(EngineLeases, ACheckpointHoldsTheLeases) {
  const std::string dir = TempDir("lease-checkpoint");
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(Options(dir), nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    if (int rc = WriteLeases(**engine); rc != 0) return rc;
    auto stats = (*engine)->Checkpoint();
    CHILD_CHECK(stats.ok() && stats->base_revision == 10, "checkpoint");
    return 0;
  });
  ASSERT_CHILD_PASSES([&] {
    RecoveryReport report;
    auto engine = Engine::Open(Options(dir), &report);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    CHILD_CHECK(report.checkpoint.loaded.has_value() && report.checkpoint.loaded->lease_count == 2,
                "recovery from the checkpoint: %s", report.checkpoint.ToString().c_str());
    CHILD_CHECK(report.wal.records_replayed == 0, "replayed %llu",
                static_cast<unsigned long long>(report.wal.records_replayed));
    return CheckLeases((*engine)->store());
  });
  fs::remove_all(dir);
}

}  // namespace
}  // namespace revkv::server
