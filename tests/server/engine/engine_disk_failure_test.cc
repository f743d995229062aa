// A failing disk under the durable store: a full disk in the middle of a record, an fsync that reports
// EIO. Writes fail with a clear error (etcd's NOSPACE answer for a full disk), reads go on at the last
// durable revision, checkpoints are refused, and a restart recovers everything acknowledged.
// Helpers and the "step" workload: engine_test_util.h.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>

#include "runtime/safepoint/safepoint.h"
#include "server/engine/engine.h"
#include "server/store/errors.h"
#include "server/wal/fault_injecting_file_system.h"
#include "tests/server/engine/engine_test_util.h"

namespace revkv::server {
namespace {

namespace fs = std::filesystem;
using namespace engine_testing;  // NOLINT: the test helpers read best unqualified

TEST(EngineTest, AFailingDiskStopsWritesWithAClearErrorWhileReadsGoOn) {
  const std::string dir = TempDir("disk");
  ASSERT_CHILD_PASSES([&] {
    FaultInjectingFileSystem faulty(DefaultFileSystem());
    EngineOptions o = Options(dir);
    o.file_system = &faulty;
    auto engine = Engine::Open(o, nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    Store& store = (*engine)->store();
    int64_t acked = 0;
    for (int i = 1; i <= 50; ++i) {
      auto w = store.Txn(StepTxn(i));
      CHILD_CHECK(w.ok() && (*engine)->wal().WaitDurable(w->lsn).ok(), "write %d", i);
      acked = i;
    }
    faulty.FailWritesAfterBytes(8, ENOSPC);  // the disk fills up in the middle of the next record
    auto w = store.Txn(StepTxn(51));
    absl::Status durable = w.ok() ? (*engine)->wal().WaitDurable(w->lsn) : w.status();
    CHILD_CHECK(!durable.ok(), "the write that hit the full disk was acknowledged");
    CHILD_CHECK(durable.message().find("No space left on device") != std::string::npos, "%s",
                durable.ToString().c_str());
    // A client gets etcd's answer under its NOSPACE alarm, for that write and every later one.
    const absl::Status no_space = errors::NoSpace();
    absl::Status client = w.ok() ? store.WaitDurable(w->lsn) : w.status();
    CHILD_CHECK(client == no_space, "%s", client.ToString().c_str());
    auto next = store.Put(PutRequest("c", "x"));
    CHILD_CHECK(!next.ok(), "writes go on after a disk error");
    CHILD_CHECK(next.status() == no_space, "%s", next.status().ToString().c_str());
    CHILD_CHECK(next.status().code() == absl::StatusCode::kResourceExhausted &&
                    next.status().message() == "etcdserver: mvcc: database space exceeded",
                "%s", next.status().ToString().c_str());
    // The detail stays in the engine's write status (Status RPC, /healthz, the server log).
    const absl::Status detail = (*engine)->write_status();
    CHILD_CHECK(detail.message().find("writes are disabled") != std::string::npos &&
                    detail.message().find("No space left on device") != std::string::npos &&
                    errors::IsNoSpace(detail),
                "%s", detail.ToString().c_str());
    // Reads go on, and do not show step 51: it was never durable and a restart drops it.
    CHILD_READ(all, Everything(store));
    CHILD_CHECK(all.count("a") == 1, "reads fail after a disk error");
    CHILD_CHECK(all["a"] == "50@51" && all["b"] == "50@51" && all.count(StepLogKey("", 51)) == 0,
                "a write that never became durable is visible: a=%s", all["a"].c_str());
    CHILD_CHECK(store.Revision() == 51, "revision %lld", static_cast<long long>(store.Revision()));
    etcdserverpb::RangeRequest future;
    future.set_key("a");
    future.set_revision(52);
    CHILD_CHECK(store.Range(future).status() == errors::FutureRevision(), "revision 52 is readable");
    etcdserverpb::TxnRequest read_txn;
    read_txn.add_success()->mutable_request_range()->set_key("a");
    auto read = store.Txn(read_txn);
    CHILD_CHECK(read.ok() && read->response.responses(0).response_range().kvs(0).value() == "50" &&
                    read->response.header().revision() == 51,
                "a read-only Txn sees the undurable write");
    std::ofstream(dir + "/acked.txt") << acked;
    (void)(*engine)->Close();
    return 0;
  });
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(Options(dir), nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    int64_t acked = 0;
    std::ifstream(dir + "/acked.txt") >> acked;
    CHILD_READ(all, Everything((*engine)->store()));
    const int64_t a = std::stoll(all["a"].substr(0, all["a"].find('@')));
    CHILD_CHECK(a == acked, "recovered step %lld, acknowledged %lld", static_cast<long long>(a),
                static_cast<long long>(acked));
    CHILD_CHECK(all["b"] == all["a"], "a torn transaction is visible");
    CHILD_CHECK((*engine)->store().Txn(StepTxn(a + 1)).ok(), "writes work again after a restart");
    return 0;
  });
  fs::remove_all(dir);
}

TEST(EngineTest, AnFsyncErrorStopsWritesClearlyWhileReadsGoOnAndARestartRecovers) {
  const std::string dir = TempDir("eio");
  ASSERT_CHILD_PASSES([&] {
    FaultInjectingFileSystem faulty(DefaultFileSystem());
    EngineOptions o = Options(dir);
    o.file_system = &faulty;
    auto engine = Engine::Open(o, nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    Store& store = (*engine)->store();
    absl::Status s = WriteSteps(store, 1, 50);
    CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
    faulty.FailNthSync(1, EIO);
    auto w = store.Txn(StepTxn(51));
    CHILD_CHECK(w.ok(), "%s", w.status().ToString().c_str());
    const absl::Status failed = store.WaitDurable(w->lsn);
    auto clear = [](const absl::Status& e) {
      return e.code() == absl::StatusCode::kUnavailable &&
             e.message().find("fdatasync of ") != std::string::npos &&
             e.message().find("wal-") != std::string::npos &&
             e.message().find("Input/output error") != std::string::npos &&
             e.message().find("writes are disabled until restart") != std::string::npos;
    };
    CHILD_CHECK(clear(failed), "%s", failed.ToString().c_str());
    auto next = store.Txn(StepTxn(52));
    CHILD_CHECK(!next.ok() && clear(next.status()), "%s", next.status().ToString().c_str());
    auto del = store.DeleteRange([] {
      etcdserverpb::DeleteRangeRequest d;
      d.set_key("a");
      return d;
    }());
    CHILD_CHECK(!del.ok() && clear(del.status()), "%s", del.status().ToString().c_str());
    // Reads go on, at the last durable revision.
    int64_t steps = 0;
    const std::string problem = CheckSteps(store, 50, &steps);
    CHILD_CHECK(problem.empty() && steps == 50, "%s (steps %lld)", problem.c_str(),
                static_cast<long long>(steps));
    CHILD_CHECK(!(*engine)->Checkpoint().ok(), "a checkpoint succeeded over a failed log");
    (void)(*engine)->Close();
    return 0;
  });
  ASSERT_CHILD_PASSES([&] {
    auto engine = Engine::Open(Options(dir), nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    Store& store = (*engine)->store();
    // Step 51 got an error: it may or may not be back (the record may have reached the file
    // before the fsync failed). Whatever came back is whole and gapless.
    int64_t steps = 0;
    std::string problem = CheckSteps(store, 50, &steps);
    CHILD_CHECK(problem.empty() && steps <= 51, "%s (steps %lld)", problem.c_str(),
                static_cast<long long>(steps));
    absl::Status s = WriteSteps(store, steps + 1, steps + 10);
    CHILD_CHECK(s.ok(), "writes work again after a restart: %s", s.ToString().c_str());
    problem = CheckSteps(store, steps + 10, &steps);
    CHILD_CHECK(problem.empty(), "%s", problem.c_str());
    return 0;
  });
  fs::remove_all(dir);
}

}  // namespace
}  // namespace revkv::server
