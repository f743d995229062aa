// Durability and process life cycle of a real revkv-server: with the default --fsync=always every
// acknowledged write survives SIGKILL and SIGTERM restarts with the revision it was acknowledged at,
// and the revisions stay gap-free; SIGTERM exits 0; the identity survives a restart; a second server
// cannot take a data directory or a port that a running server holds.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "revkv/v1/admin.grpc.pb.h"
#include "tests/integration/etcd_calls.h"
#include "tests/integration/server_process.h"
#include "tests/support/external_tools.h"

namespace revkv::integration {
namespace {

using etcdserverpb::KV;

// Writers that put distinct keys "w<tag>.<thread>/<i>" from several threads until stopped (or until their
// puts fail, as they do once the server is gone), remembering the revision each acknowledged put got.
class Writers {
 public:
  Writers(std::shared_ptr<grpc::Channel> channel, int threads, const std::string& tag = "")
      : kv_(KV::NewStub(channel)) {
    for (int t = 0; t < threads; ++t) {
      threads_.emplace_back([this, t, tag] {
        for (int i = 0; !stop_.load(); ++i) {
          const std::string key = "w" + tag + "." + std::to_string(t) + "/" + std::to_string(i);
          auto context = ContextWithDeadline(std::chrono::seconds(5));
          etcdserverpb::PutResponse response;
          if (!kv_->Put(context.get(), PutOf(key, "value-of-" + key), &response).ok()) return;
          std::lock_guard<std::mutex> lock(mu_);
          acknowledged_[key] = response.header().revision();
        }
      });
    }
  }
  ~Writers() {
    Stop();
    Join();
  }

  size_t Acknowledged() {
    std::lock_guard<std::mutex> lock(mu_);
    return acknowledged_.size();
  }
  // Waits until at least `n` puts were acknowledged (at most 60 s).
  bool WaitFor(size_t n) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (Acknowledged() < n && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return Acknowledged() >= n;
  }
  void Stop() { stop_.store(true); }
  // Waits for every writer to return; the acknowledged puts, key -> revision.
  std::map<std::string, int64_t> Join() {
    for (auto& t : threads_) t.join();
    threads_.clear();
    std::lock_guard<std::mutex> lock(mu_);
    return acknowledged_;
  }

 private:
  std::unique_ptr<KV::Stub> kv_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::map<std::string, int64_t> acknowledged_;  // guarded by mu_
};

// Every acknowledged key is in the store with its value and the revision it was acknowledged at, and
// the store holds exactly one key per revision 2..R (each put made one revision; no hole, nothing
// half-applied). Returns R.
int64_t ExpectRecovered(KV::Stub* stub, const std::map<std::string, int64_t>& acknowledged) {
  auto all = Call(stub, &KV::Stub::Range, RangeOf("w", PrefixEnd("w")));
  EXPECT_TRUE(IsOk(all.status));
  std::map<std::string, const mvccpb::KeyValue*> stored;
  std::map<int64_t, std::string> by_revision;
  for (const auto& kv : all.response.kvs()) {
    stored[kv.key()] = &kv;
    by_revision[kv.mod_revision()] = kv.key();
    EXPECT_EQ(kv.value(), "value-of-" + kv.key());
    EXPECT_EQ(kv.version(), 1) << kv.key();
    EXPECT_EQ(kv.create_revision(), kv.mod_revision()) << kv.key();
  }
  int lost = 0;
  for (const auto& [key, revision] : acknowledged) {
    auto it = stored.find(key);
    if (it == stored.end()) {
      if (++lost <= 10) ADD_FAILURE() << "acknowledged at revision " << revision << " but lost: " << key;
      continue;
    }
    EXPECT_EQ(it->second->mod_revision(), revision) << key;
  }
  EXPECT_EQ(lost, 0) << "of " << acknowledged.size() << " acknowledged puts";
  const int64_t revision = all.response.header().revision();
  EXPECT_EQ(static_cast<int64_t>(by_revision.size()), revision - 1) << "keys of distinct revisions";
  if (!by_revision.empty()) {
    EXPECT_EQ(by_revision.begin()->first, 2);
    EXPECT_EQ(by_revision.rbegin()->first, revision);
  }
  return revision;
}

// Fetches the Admin figures of `server`.
::revkv::v1::GetStatsResponse Stats(ServerProcess& server) {
  auto admin = ::revkv::v1::Admin::NewStub(server.NewChannel());
  auto r = Call(admin.get(), &::revkv::v1::Admin::Stub::GetStats, ::revkv::v1::GetStatsRequest());
  EXPECT_TRUE(IsOk(r.status));
  return r.response;
}

// Puts keys "<prefix><i>" for i in [0, n); returns the last revision.
int64_t PutKeys(ServerProcess& server, const std::string& prefix, int n) {
  auto kv = KV::NewStub(server.NewChannel());
  int64_t revision = 0;
  for (int i = 0; i < n; ++i) {
    auto r = Call(kv.get(), &KV::Stub::Put, PutOf(prefix + std::to_string(i), "v"));
    EXPECT_TRUE(IsOk(r.status));
    revision = r.response.header().revision();
  }
  return revision;
}

// Waits (at most 10 s: the checkpointer looks once a second) for a checkpoint at `revision` or later;
// returns the newest checkpoint's revision.
int64_t WaitForCheckpoint(ServerProcess& server, int64_t revision) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int64_t checkpoint = Stats(server).store().checkpoint_revision();
  while (checkpoint < revision && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    checkpoint = Stats(server).store().checkpoint_revision();
  }
  return checkpoint;
}

// ----- durability -----

TEST(Restart, AcknowledgedWritesSurviveSigkill) {
  ServerProcess server;
  ASSERT_TRUE(server.Start());
  std::map<std::string, int64_t> acknowledged;
  {
    Writers writers(server.NewChannel(), 8);
    ASSERT_TRUE(writers.WaitFor(1000));
    ASSERT_TRUE(server.Kill());  // in the middle of the writes
    acknowledged = writers.Join();
  }
  ASSERT_GE(acknowledged.size(), 1000u);

  ASSERT_TRUE(server.Start());
  auto kv = KV::NewStub(server.NewChannel());
  const int64_t revision = ExpectRecovered(kv.get(), acknowledged);
  // The next write continues from the recovered revision.
  auto put = Call(kv.get(), &KV::Stub::Put, PutOf("next", "v"));
  ASSERT_TRUE(IsOk(put.status));
  EXPECT_TRUE(HeaderAt(put.response.header(), revision + 1));
}

TEST(Restart, AcknowledgedWritesSurviveSigtermWhichExitsZero) {
  ServerProcess server;
  ASSERT_TRUE(server.Start());
  std::map<std::string, int64_t> acknowledged;
  {
    Writers writers(server.NewChannel(), 8);
    ASSERT_TRUE(writers.WaitFor(1000));
    ASSERT_TRUE(server.Stop());  // drains in-flight writes, exits 0
    acknowledged = writers.Join();
  }
  ASSERT_GE(acknowledged.size(), 1000u);
  EXPECT_NE(server.Log().find("log flushed at revision"), std::string::npos);

  ASSERT_TRUE(server.Start());
  auto kv = KV::NewStub(server.NewChannel());
  ExpectRecovered(kv.get(), acknowledged);
  EXPECT_TRUE(server.Stop());
}

TEST(Restart, WritesSurviveSigkillAfterACheckpointAndRepeatedRestarts) {
  ServerProcess server;
  ASSERT_TRUE(server.Start());
  std::map<std::string, int64_t> acknowledged;
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    auto channel = server.NewChannel();
    Writers writers(channel, 4, std::to_string(round));
    ASSERT_TRUE(writers.WaitFor(300));
    if (round == 0) {  // recovery from a checkpoint plus the log after it
      auto admin = ::revkv::v1::Admin::NewStub(channel);
      auto c = Call(admin.get(), &::revkv::v1::Admin::Stub::Checkpoint, ::revkv::v1::CheckpointRequest());
      EXPECT_TRUE(IsOk(c.status));  // if not, recovery is from the log alone: still check it
      ASSERT_TRUE(writers.WaitFor(writers.Acknowledged() + 300));
    }
    ASSERT_TRUE(server.Kill());
    for (const auto& [key, revision] : writers.Join()) acknowledged[key] = revision;
    ASSERT_TRUE(server.Start());
    auto kv = KV::NewStub(server.NewChannel());
    ExpectRecovered(kv.get(), acknowledged);
  }
}

TEST(Restart, TheClusterAndMemberIdsSurviveARestart) {
  ServerProcess server;
  ASSERT_TRUE(server.Start());
  auto kv = KV::NewStub(server.NewChannel());
  auto before = Call(kv.get(), &KV::Stub::Put, PutOf("k", "v"));
  ASSERT_TRUE(IsOk(before.status));
  ASSERT_TRUE(server.Stop());
  ASSERT_TRUE(server.Start());
  kv = KV::NewStub(server.NewChannel());
  auto after = Call(kv.get(), &KV::Stub::Range, RangeOf("k"));
  ASSERT_TRUE(IsOk(after.status));
  EXPECT_EQ(after.response.header().cluster_id(), before.response.header().cluster_id());
  EXPECT_EQ(after.response.header().member_id(), before.response.header().member_id());
  EXPECT_TRUE(HeaderAt(after.response.header(), 2));
}

// ----- checkpoints -----

TEST(Restart, AdminCheckpointSucceedsAfterARestartThatReplayedTheLog) {
  ServerProcess server;
  ASSERT_TRUE(server.Start());
  PutKeys(server, "before/", 10);
  ASSERT_TRUE(server.Stop());
  ASSERT_TRUE(server.Start());  // no checkpoint yet: the store is rebuilt from the log alone
  const int64_t revision = PutKeys(server, "after/", 5);
  ASSERT_EQ(revision, 16);
  auto admin = ::revkv::v1::Admin::NewStub(server.NewChannel());
  auto c = Call(admin.get(), &::revkv::v1::Admin::Stub::Checkpoint, ::revkv::v1::CheckpointRequest());
  ASSERT_TRUE(IsOk(c.status)) << "GetStats: " << Stats(server).store().ShortDebugString();
  EXPECT_EQ(c.response.revision(), revision);
}

TEST(Restart, BackgroundCheckpointsFollowTheIntervalBeforeAndAfterARestart) {
  ServerOptions options;
  options.extra_flags = {"--checkpoint-interval=100"};
  ServerProcess server(options);
  ASSERT_TRUE(server.Start());
  ASSERT_EQ(PutKeys(server, "first/", 150), 151);
  EXPECT_GE(WaitForCheckpoint(server, 101), 101)
      << "no background checkpoint 10 s after passing --checkpoint-interval=100; GetStats: "
      << Stats(server).store().ShortDebugString();

  ASSERT_TRUE(server.Stop());
  ASSERT_TRUE(server.Start());
  ASSERT_EQ(PutKeys(server, "second/", 150), 301);
  EXPECT_GE(WaitForCheckpoint(server, 251), 251)
      << "no background checkpoint after the restart; GetStats: " << Stats(server).store().ShortDebugString();
}

// ----- life cycle -----

// Runs another server with `flags`; returns how it ended within 5 s, or that it was still running then
// (it is then killed). Its output goes to *log.
std::string RunSecondServer(const std::vector<std::string>& flags, std::string* log) {
  std::vector<std::string> argv = {REVKV_SERVER_BINARY};
  argv.insert(argv.end(), flags.begin(), flags.end());
  const CommandResult r = RunCommand(argv, "", {}, std::chrono::seconds(5));
  *log = r.err;
  if (r.timed_out) return "still running after 5 s";
  return "exited with status " + std::to_string(r.exit_code);
}

TEST(Restart, ASecondServerCannotTakeARunningServersDataDirectory) {
  ServerProcess first;
  ASSERT_TRUE(first.Start());
  std::string log;
  const std::string outcome = RunSecondServer(
      {"--listen=127.0.0.1:" + std::to_string(FreePort()),
       "--metrics-listen=127.0.0.1:" + std::to_string(FreePort()), "--data-dir=" + first.data_dir()},
      &log);
  EXPECT_EQ(outcome, "exited with status 1") << log;
  EXPECT_TRUE(first.Running());
  // The message names the holder (its pid and member name, from the LOCK file), in plain words: no
  // status code prefix such as FAILED_PRECONDITION.
  EXPECT_NE(log.find("is held by pid " + std::to_string(first.pid()) + " (revkv-server, member 'default')"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("FAILED_PRECONDITION"), std::string::npos) << log;
}

// gRPC listens with SO_REUSEPORT unless told otherwise; a second server must not silently share the
// port (the kernel would then spread connections over two servers with different data).
TEST(Restart, ASecondServerCannotListenOnARunningServersPort) {
  ServerProcess first;
  ASSERT_TRUE(first.Start());
  TempDir other;
  std::string log;
  const std::string outcome = RunSecondServer(
      {"--listen=" + first.address(), "--metrics-listen=127.0.0.1:" + std::to_string(FreePort()),
       "--data-dir=" + other.path() + "/data"},
      &log);
  EXPECT_EQ(outcome, "exited with status 1") << "second server's log:\n" << log;
  EXPECT_TRUE(first.Running());
  // The port is bound before recovery: the failure comes before the store is even opened.
  EXPECT_NE(log.find("cannot listen for gRPC on " + first.address() + ": Address already in use"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("recovered revision"), std::string::npos) << log;
}

// SIGTERM drains in-flight requests; a client that merely keeps its connection open (as every pooled
// client does) has none, so there is nothing to wait for. etcd exits at once in the same situation.
class PromptShutdown : public ::testing::TestWithParam<Flavor> {};

TEST_P(PromptShutdown, SigtermWithOnlyAnIdleClientConnectionExitsWithinTwoSeconds) {
  if (!FlavorAvailable(GetParam())) REVKV_MISSING_TOOL() << FlavorName(GetParam()) << " is not installed";
  ServerOptions options;
  options.flavor = GetParam();
  ServerProcess server(options);
  ASSERT_TRUE(server.Start());
  auto kv = KV::NewStub(server.NewChannel());
  ASSERT_TRUE(IsOk(Call(kv.get(), &KV::Stub::Put, PutOf("k", "v")).status));  // the connection is now idle
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(server.Stop());
  const auto took =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  EXPECT_LT(took.count(), 2000) << "from SIGTERM to exit, with no request in flight";
}

INSTANTIATE_TEST_SUITE_P(Servers, PromptShutdown, ::testing::Values(Flavor::kRevkv, Flavor::kEtcd),
                         [](const ::testing::TestParamInfo<Flavor>& p) { return FlavorName(p.param); });

}  // namespace
}  // namespace revkv::integration
