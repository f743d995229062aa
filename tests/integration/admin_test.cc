// revkv.v1.Admin against a real revkv-server: GetStats figures agree with what the test did, Collect
// runs a major collection that GetStats and WatchGcEvents then show, ServerInfo describes the process
// the test started, Checkpoint writes a checkpoint file at the current revision.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "revkv/v1/admin.grpc.pb.h"
#include "tests/integration/etcd_calls.h"
#include "tests/integration/server_process.h"

namespace revkv::integration {
namespace {

using ::revkv::v1::Admin;

constexpr uint64_t kDefaultMaxHeap = uint64_t{2} << 30;  // --max-heap's default, 2GiB

uint64_t UnixNanosNow() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

class AdminService : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start());
    channel_ = server_.NewChannel();
    admin_ = Admin::NewStub(channel_);
    kv_ = etcdserverpb::KV::NewStub(channel_);
  }

  // Puts `n` keys "key/<i>"; returns the revision of the last put.
  int64_t PutKeys(int n) {
    int64_t revision = 0;
    for (int i = 0; i < n; ++i) {
      auto r = Call(kv_.get(), &etcdserverpb::KV::Stub::Put, PutOf("key/" + std::to_string(i), "value"));
      EXPECT_TRUE(IsOk(r.status));
      revision = r.response.header().revision();
    }
    return revision;
  }

  ::revkv::v1::GetStatsResponse Stats(uint32_t recent_events = 0) {
    ::revkv::v1::GetStatsRequest request;
    request.set_recent_events(recent_events);
    auto r = Call(admin_.get(), &Admin::Stub::GetStats, request);
    EXPECT_TRUE(IsOk(r.status));
    return r.response;
  }

  static uint64_t Collections(const ::revkv::v1::GetStatsResponse& stats, ::revkv::v1::CollectionKind kind) {
    for (const auto& p : stats.gc().pauses()) {
      if (p.kind() == kind) return p.collections();
    }
    ADD_FAILURE() << "no pause summary of kind " << ::revkv::v1::CollectionKind_Name(kind);
    return 0;
  }

  static ServerOptions TwoCollectorThreads() {
    ServerOptions o;
    o.extra_flags = {"--gc-threads=2"};
    return o;
  }

  ServerProcess server_{TwoCollectorThreads()};
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<Admin::Stub> admin_;
  std::unique_ptr<etcdserverpb::KV::Stub> kv_;
};

TEST_F(AdminService, GetStatsReportsFiguresThatMatchTheWorkload) {
  const uint64_t before = UnixNanosNow();
  const int64_t revision = PutKeys(20);
  ASSERT_EQ(revision, 21);
  const ::revkv::v1::GetStatsResponse stats = Stats();

  EXPECT_GE(stats.unix_nanos(), before);
  EXPECT_LE(stats.unix_nanos(), UnixNanosNow());

  ASSERT_EQ(stats.gc().pauses_size(), 3);  // one per kind, in enum order
  EXPECT_EQ(stats.gc().pauses(0).kind(), ::revkv::v1::MINOR);
  EXPECT_EQ(stats.gc().pauses(1).kind(), ::revkv::v1::LOCAL);
  EXPECT_EQ(stats.gc().pauses(2).kind(), ::revkv::v1::MAJOR);
  for (const auto& p : stats.gc().pauses()) {
    EXPECT_LE(p.pause_p50_nanos(), p.pause_p99_nanos()) << p.ShortDebugString();
    EXPECT_LE(p.pause_p99_nanos(), p.pause_max_nanos()) << p.ShortDebugString();
    if (p.collections() == 0) {
      EXPECT_EQ(p.pause_total_nanos(), 0u) << p.ShortDebugString();
    }
  }
  EXPECT_GT(stats.gc().bytes_allocated(), 0u);

  EXPECT_EQ(stats.heap().max_bytes(), kDefaultMaxHeap);
  EXPECT_GT(stats.heap().committed_bytes(), 0u);
  EXPECT_LE(stats.heap().committed_bytes(), stats.heap().max_bytes());
  EXPECT_LE(stats.heap().old_bytes() + stats.heap().large_bytes(), stats.heap().committed_bytes());

  EXPECT_GE(stats.stm().commits(), 20u);                  // at least one write commit per put
  EXPECT_GE(stats.stm().inevitable_transactions(), 20u);  // every logged write becomes inevitable
  EXPECT_LE(stats.stm().read_set_p50(), stats.stm().read_set_p99());
  EXPECT_LE(stats.stm().write_set_p50(), stats.stm().write_set_p99());
  EXPECT_GT(stats.stm().global_time(), 0u);

  EXPECT_EQ(stats.store().revision(), revision);
  EXPECT_EQ(stats.store().keys(), 20u);
  EXPECT_LE(stats.store().compact_revision(), 1);  // nothing compacted (etcd says -1)
  EXPECT_GT(stats.store().wal_bytes(), 0u);
  EXPECT_GE(stats.store().wal_fsyncs(), 1u);   // --fsync=always
  EXPECT_LE(stats.store().wal_fsyncs(), 20u);  // at most one per write (commits may share one)
  EXPECT_FALSE(stats.store().read_only());
  EXPECT_EQ(stats.store().read_only_reason(), "");
  EXPECT_EQ(stats.recent_size(), 0);  // none asked for
}

TEST_F(AdminService, CollectRunsAMajorCollectionThatGetStatsCounts) {
  PutKeys(50);
  const ::revkv::v1::GetStatsResponse before = Stats();
  auto collected = Call(admin_.get(), &Admin::Stub::Collect, ::revkv::v1::CollectRequest());
  ASSERT_TRUE(IsOk(collected.status));
  const ::revkv::v1::GcEvent& event = collected.response.event();
  EXPECT_EQ(event.kind(), ::revkv::v1::MAJOR);
  EXPECT_GT(event.sequence(), 0u);
  EXPECT_GT(event.pause_nanos(), 0u);
  EXPECT_GE(event.start_unix_nanos(), before.unix_nanos());
  EXPECT_GT(event.heap_bytes_before(), 0u);
  EXPECT_GE(event.threads(), 1u);
  // The mark-region and parallel-trace figures (the server runs with --gc-threads=2).
  EXPECT_EQ(event.collector_threads(), 2u);
  ASSERT_EQ(event.objects_scanned_by_thread_size(), 2);
  EXPECT_EQ(event.objects_scanned_by_thread(0) + event.objects_scanned_by_thread(1), event.objects_scanned());
  EXPECT_GT(event.objects_scanned(), 50u);                     // at least the 50 entries
  EXPECT_GT(event.bytes_marked() + event.bytes_copied(), 0u);  // the live store stayed or moved

  const ::revkv::v1::GetStatsResponse after = Stats(/*recent_events=*/8);
  EXPECT_GE(Collections(after, ::revkv::v1::MAJOR), Collections(before, ::revkv::v1::MAJOR) + 1);
  EXPECT_GE(after.gc().pauses(2).pause_total_nanos(), event.pause_nanos());
  EXPECT_GE(after.gc().pauses(2).pause_max_nanos(), event.pause_nanos());
  ASSERT_GT(after.recent_size(), 0);
  EXPECT_LE(after.recent_size(), 8);
  bool found = false;
  for (int i = 0; i < after.recent_size(); ++i) {
    if (i > 0) {
      EXPECT_GT(after.recent(i).sequence(), after.recent(i - 1).sequence()) << "recent: oldest first";
    }
    if (after.recent(i).sequence() == event.sequence()) {
      found = true;
      EXPECT_EQ(after.recent(i).kind(), ::revkv::v1::MAJOR);
      EXPECT_EQ(after.recent(i).pause_nanos(), event.pause_nanos());
    }
  }
  EXPECT_TRUE(found) << "the collection " << event.sequence() << " is not among the recent events";

  // The store is intact after the collection moved its objects.
  auto all = Call(kv_.get(), &etcdserverpb::KV::Stub::Range, RangeOf("key/", PrefixEnd("key/")));
  ASSERT_TRUE(IsOk(all.status));
  EXPECT_EQ(all.response.count(), 50);
  for (const auto& kv : all.response.kvs()) EXPECT_EQ(kv.value(), "value");
}

TEST_F(AdminService, WatchGcEventsStreamsTheCollectionsRunMeanwhile) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  auto reader = admin_->WatchGcEvents(&context, ::revkv::v1::WatchGcEventsRequest());
  std::mutex mu;
  std::condition_variable cv;
  std::vector<::revkv::v1::GcEvent> events;  // guarded by mu
  bool ended = false;                        // guarded by mu
  std::thread reading([&] {
    ::revkv::v1::GcEvent e;
    while (reader->Read(&e)) {
      std::lock_guard<std::mutex> lock(mu);
      events.push_back(e);
      cv.notify_all();
    }
    std::lock_guard<std::mutex> lock(mu);
    ended = true;
    cv.notify_all();
  });

  // The watch starts listening at some point after the call; collect until one of ours shows up.
  std::set<uint64_t> ours;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  bool seen = false;
  while (!seen && std::chrono::steady_clock::now() < deadline) {
    auto collected = Call(admin_.get(), &Admin::Stub::Collect, ::revkv::v1::CollectRequest());
    ASSERT_TRUE(IsOk(collected.status));
    ours.insert(collected.response.event().sequence());
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, std::chrono::milliseconds(300), [&] {
      for (const auto& e : events) {
        if (ours.count(e.sequence()) != 0) return true;
      }
      return ended;
    });
    for (const auto& e : events) {
      if (ours.count(e.sequence()) == 0) continue;
      seen = true;
      EXPECT_EQ(e.kind(), ::revkv::v1::MAJOR);
      EXPECT_GT(e.pause_nanos(), 0u);
    }
    ASSERT_FALSE(ended) << "the watch ended early";
  }
  EXPECT_TRUE(seen) << "none of " << ours.size() << " collections reached the watch in 20 s";
  {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& e : events) EXPECT_NE(e.kind(), ::revkv::v1::LOCAL) << "local collections not asked for";
  }

  context.TryCancel();
  reading.join();
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

TEST_F(AdminService, ServerInfoDescribesTheRunningServer) {
  auto info = Call(admin_.get(), &Admin::Stub::ServerInfo, ::revkv::v1::ServerInfoRequest());
  ASSERT_TRUE(IsOk(info.status));
  const ::revkv::v1::ServerInfoResponse& r = info.response;
  EXPECT_EQ(r.version().substr(0, 4), "3.4.") << r.version();
  EXPECT_NE(r.version().find("revkv"), std::string::npos) << r.version();
  EXPECT_GT(r.start_unix_nanos(), UnixNanosNow() - uint64_t{120} * 1000000000);
  EXPECT_LE(r.start_unix_nanos(), UnixNanosNow());
  EXPECT_EQ(r.data_dir(), server_.data_dir());
  EXPECT_EQ(r.listen_address(), server_.address());
  EXPECT_EQ(r.metrics_address(), "127.0.0.1:" + std::to_string(server_.metrics_port()));
  EXPECT_EQ(r.fsync_mode(), "always");
  EXPECT_GE(r.worker_threads(), 1u);
  EXPECT_EQ(r.max_heap_bytes(), kDefaultMaxHeap);

  auto put = Call(kv_.get(), &etcdserverpb::KV::Stub::Put, PutOf("k", "v"));
  ASSERT_TRUE(IsOk(put.status));
  EXPECT_EQ(r.member_id(), put.response.header().member_id());
  EXPECT_EQ(r.cluster_id(), put.response.header().cluster_id());
  EXPECT_NE(r.member_id(), 0u);
}

TEST_F(AdminService, CheckpointWritesAFileAtTheCurrentRevision) {
  const int64_t revision = PutKeys(30);
  auto checkpoint = Call(admin_.get(), &Admin::Stub::Checkpoint, ::revkv::v1::CheckpointRequest());
  ASSERT_TRUE(IsOk(checkpoint.status));
  const ::revkv::v1::CheckpointResponse& c = checkpoint.response;
  EXPECT_EQ(c.revision(), revision);
  ASSERT_FALSE(c.path().empty());
  const std::filesystem::path path(c.path());
  EXPECT_TRUE(std::filesystem::exists(path)) << c.path();
  const std::string data_dir = std::filesystem::canonical(server_.data_dir()).string();
  EXPECT_EQ(std::filesystem::weakly_canonical(path).string().rfind(data_dir + "/", 0), 0u)
      << c.path() << " is not inside " << data_dir;
  EXPECT_GT(c.bytes(), 0u);
  if (std::filesystem::is_regular_file(path)) {
    EXPECT_EQ(std::filesystem::file_size(path), c.bytes());
  }

  EXPECT_EQ(Stats().store().checkpoint_revision(), revision);

  // A checkpoint with writes after it: the next one is at the newer revision, in another file.
  const int64_t later = PutKeys(5);
  auto second = Call(admin_.get(), &Admin::Stub::Checkpoint, ::revkv::v1::CheckpointRequest());
  ASSERT_TRUE(IsOk(second.status));
  EXPECT_EQ(second.response.revision(), later);
  EXPECT_NE(second.response.path(), c.path());
  EXPECT_TRUE(std::filesystem::exists(second.response.path()));
}

}  // namespace
}  // namespace revkv::integration
