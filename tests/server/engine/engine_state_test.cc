// The store's state beside the key-values across a restart: alarms (and auth, auth_state.h), from their
// log records and from a checkpoint's state records (format 4), as etcd keeps its alarms in its backend.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "server/engine/engine.h"
#include "server/store/errors.h"
#include "tests/server/engine/engine_test_util.h"

namespace revkv::server {
namespace {

namespace fs = std::filesystem;
using namespace engine_testing;  // NOLINT: the test helpers read best unqualified

absl::Status SetAlarm(Store& store, etcdserverpb::AlarmRequest::AlarmAction action, uint64_t member,
                      etcdserverpb::AlarmType type) {
  etcdserverpb::AlarmRequest r;
  r.set_action(action);
  r.set_memberid(member);
  r.set_alarm(type);
  auto w = store.Alarm(r);
  if (!w.ok()) return w.status();
  return store.WaitDurable(w->lsn);
}

// Puts a key, raises NOSPACE for members 1 and 2 and CORRUPT for 3, disarms CORRUPT, deletes the key:
// revisions 2 to 7.
int WriteAlarms(Store& store) {
  using A = etcdserverpb::AlarmRequest;
  CHILD_CHECK(store.Put(PutRequest("k", "v")).ok(), "put");
  CHILD_CHECK(SetAlarm(store, A::ACTIVATE, 1, etcdserverpb::NOSPACE).ok(), "raise 1");
  CHILD_CHECK(SetAlarm(store, A::ACTIVATE, 2, etcdserverpb::NOSPACE).ok(), "raise 2");
  CHILD_CHECK(SetAlarm(store, A::ACTIVATE, 3, etcdserverpb::CORRUPT).ok(), "raise 3");
  CHILD_CHECK(store.Put(PutRequest("k", "w")).status() == errors::Corrupt(), "CORRUPT refuses the Put");
  CHILD_CHECK(SetAlarm(store, A::DEACTIVATE, 3, etcdserverpb::CORRUPT).ok(), "disarm 3");
  etcdserverpb::DeleteRangeRequest d;
  d.set_key("k");
  auto w = store.DeleteRange(d);  // NOSPACE lets deletes through
  CHILD_CHECK(w.ok() && w->response.deleted() == 1, "delete: %s", w.status().ToString().c_str());
  CHILD_CHECK(store.WaitDurable(w->lsn).ok(), "durable");
  return 0;
}

// The state WriteAlarms leaves: NOSPACE for 1 and 2, and it refuses Puts.
int CheckAlarms(Store& store) {
  const std::vector<etcdserverpb::AlarmMember> alarms = store.Alarms();
  CHILD_CHECK(alarms.size() == 2 && alarms[0].memberid() == 1 && alarms[1].memberid() == 2 &&
                  alarms[0].alarm() == etcdserverpb::NOSPACE && alarms[1].alarm() == etcdserverpb::NOSPACE,
              "%zu alarms after recovery", alarms.size());
  CHILD_CHECK(store.Put(PutRequest("k2", "v")).status() == errors::NoSpace(), "NOSPACE refuses the Put");
  CHILD_CHECK(store.Revision() == 7, "revision %lld", static_cast<long long>(store.Revision()));
  return 0;
}

TEST(EngineState, AlarmRecordsReplay) {
  const std::string dir = TempDir("alarm-replay");
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(Options(dir), nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    return WriteAlarms((*engine)->store());
  });
  ASSERT_CHILD_PASSES([&] {
    RecoveryReport report;
    auto engine = Engine::Open(Options(dir), &report);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    CHILD_CHECK(report.wal.records_replayed == 6, "replayed %llu",
                static_cast<unsigned long long>(report.wal.records_replayed));
    return CheckAlarms((*engine)->store());
  });
  fs::remove_all(dir);
}

// A checkpoint holds the alarms of its base revision as a state record; recovery from it alone (nothing
// to replay) restores them, and the refusals with them.
TEST(EngineState, ACheckpointHoldsTheAlarms) {
  const std::string dir = TempDir("alarm-checkpoint");
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(Options(dir), nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    if (int rc = WriteAlarms((*engine)->store()); rc != 0) return rc;
    auto stats = (*engine)->Checkpoint();
    CHILD_CHECK(stats.ok() && stats->base_revision == 7, "checkpoint");
    return 0;
  });
  ASSERT_CHILD_PASSES([&] {
    RecoveryReport report;
    auto engine = Engine::Open(Options(dir), &report);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    CHILD_CHECK(report.checkpoint.loaded.has_value() && report.checkpoint.loaded->state_count == 1,
                "recovery from the checkpoint: %s", report.checkpoint.ToString().c_str());
    CHILD_CHECK(report.wal.records_replayed == 0, "replayed %llu",
                static_cast<unsigned long long>(report.wal.records_replayed));
    return CheckAlarms((*engine)->store());
  });
  fs::remove_all(dir);
}

// HashKV at a revision and Hash depend only on the state: after a restart (replaying the log, or from a
// checkpoint alone) they answer what they answered before it.
TEST(EngineState, HashesAreEqualAcrossARestart) {
  const std::string dir = TempDir("hash-restart");
  EngineOptions options = Options(dir);
  options.store.history_revisions = 1000;
  uint32_t expected[3] = {0, 0, 0};  // HashKV(4), HashKV(0), Hash()
  auto hashes = [](Store& store, uint32_t* out) {
    auto past = store.HashKV(4);
    auto now = store.HashKV(0);
    auto whole = store.Hash();
    if (!past.ok() || !now.ok() || !whole.ok()) return false;
    out[0] = past->hash;
    out[1] = now->hash;
    out[2] = whole->hash;
    return true;
  };
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(options, nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    Store& store = (*engine)->store();
    etcdserverpb::LeaseGrantRequest g;
    g.set_id(3);
    g.set_ttl(100);
    CHILD_CHECK(store.LeaseGrant(g).ok(), "grant");
    uint64_t lsn = 0;
    for (int i = 0; i < 20; ++i) {
      etcdserverpb::PutRequest p = PutRequest("k" + std::to_string(i % 6), "v" + std::to_string(i));
      if (i % 4 == 0) p.set_lease(3);
      auto w = store.Put(p);
      CHILD_CHECK(w.ok(), "put");
      lsn = w->lsn;
    }
    CHILD_CHECK(store.WaitDurable(lsn).ok(), "durable");
    uint32_t h[3];
    CHILD_CHECK(hashes(store, h), "hashes");
    CHILD_CHECK(write(pipe_fds[1], h, sizeof h) == sizeof h, "pipe");
    return 0;
  });
  ASSERT_EQ(read(pipe_fds[0], expected, sizeof expected), static_cast<ssize_t>(sizeof expected));
  // Replaying the log.
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(options, nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    uint32_t h[3];
    CHILD_CHECK(hashes((*engine)->store(), h), "hashes");
    CHILD_CHECK(h[0] == expected[0] && h[1] == expected[1] && h[2] == expected[2],
                "after replay: %08x %08x %08x, before: %08x %08x %08x", h[0], h[1], h[2], expected[0],
                expected[1], expected[2]);
    auto stats = (*engine)->Checkpoint();  // holds revision 1 (the window reaches back to it)
    CHILD_CHECK(stats.ok(), "checkpoint");
    return 0;
  });
  // From a checkpoint of the newest revision alone.
  options.store.history_revisions = 1;
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(options, nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    auto stats = (*engine)->Checkpoint();
    CHILD_CHECK(stats.ok() && stats->base_revision == stats->revision, "checkpoint of the newest revision");
    return 0;
  });
  ASSERT_CHILD_PASSES([&] {
    RecoveryReport report;
    auto engine = Engine::Open(options, &report);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    CHILD_CHECK(report.wal.records_replayed == 0, "replayed %llu",
                static_cast<unsigned long long>(report.wal.records_replayed));
    auto now = (*engine)->store().HashKV(0);
    auto whole = (*engine)->store().Hash();
    CHILD_CHECK(now.ok() && whole.ok(), "hashes");
    CHILD_CHECK(now->hash == expected[1] && whole->hash == expected[2], "from the checkpoint: %08x %08x",
                now->hash, whole->hash);
    CHILD_CHECK((*engine)->store().HashKV(4).status() == errors::Compacted(),
                "revision 4 is before the checkpoint");
    return 0;
  });
  fs::remove_all(dir);
}

}  // namespace
}  // namespace revkv::server
