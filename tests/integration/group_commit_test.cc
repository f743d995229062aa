// A durable write's reply is finished by the log's flusher, never by a worker blocked on fsync
// (docs/server.md, "Threads"; DESIGN 3.3). A real revkv-server with a single worker and
// --fsync=always gets 64 concurrent Puts:
//
// - every Put succeeds, each with its own revision and its own log record;
// - the log took far fewer fdatasyncs than there were Puts. A worker that waited for the fsync of its
//   own record before taking the next request would make exactly one fsync per Put (with one worker,
//   nothing else is appended while it waits), so this is what fails if durable replies block workers;
// - a Range sent right behind them, while they are in flight, is answered too: the only worker is free
//   to take it while the Puts wait for the disk.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "tests/integration/etcd_calls.h"
#include "tests/integration/prometheus_scrape.h"
#include "tests/integration/server_process.h"

namespace revkv::integration {
namespace {

constexpr long kTmpfsMagic = 0x01021994;  // TMPFS_MAGIC, <linux/magic.h>

bool OnTmpfs(const std::string& path) {
  struct statfs fs {};
  return statfs(path.c_str(), &fs) == 0 && static_cast<long>(fs.f_type) == kTmpfsMagic;
}

// Where the server keeps its data: the usual temporary directory, unless that is a tmpfs, where an
// fsync costs next to nothing, so records need not pile up behind one and grouping would show only by
// chance; then the current directory (ctest runs tests in the build tree), if it is on a disk.
// Returns "" for the usual place.
std::string DataParent() {
  const char* tmp = std::getenv("TMPDIR");  // NOLINT(concurrency-mt-unsafe): no setenv in this test
  if (!OnTmpfs(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp")) return "";
  char cwd[4096];
  if (getcwd(cwd, sizeof(cwd)) == nullptr || OnTmpfs(cwd)) return "";
  return cwd;
}

using etcdserverpb::KV;

constexpr int kPuts = 64;
#if defined(REVKV_SANITIZER)
// A sanitizer slows the worker and not the disk, so fewer Puts pile up behind each fsync: the ratio is a
// speed figure there. A worker that waited for its own record's fsync would still make one per Put.
constexpr double kMaxFsyncs = kPuts - 1;
#else
// "Well below one per Put": at most one fsync per four Puts on average.
constexpr double kMaxFsyncs = kPuts / 4;
#endif

// One asynchronous unary call and what came back.
template <class Response>
struct AsyncCall {
  grpc::ClientContext context;
  Response response;
  grpc::Status status;
  std::unique_ptr<grpc::ClientAsyncResponseReader<Response>> reader;
  bool done = false;
};

TEST(DurableWrites, ConcurrentPutsOnOneWorkerShareFsyncsAndReadsAreServedMeanwhile) {
  const std::string data_parent = DataParent();
  std::unique_ptr<TempDir> data_dir;
  ServerOptions options;
  options.extra_flags = {"--workers=1", "--fsync=always"};
  if (!data_parent.empty()) {
    data_dir = std::make_unique<TempDir>(data_parent);
    options.extra_flags.push_back("--data-dir=" + data_dir->path() + "/data");
  }
  ServerProcess server(options);
  ASSERT_TRUE(server.Start());
  auto kv = KV::NewStub(server.NewChannel());
  // One Put first: the connection is up and the first log segment exists before anything is counted.
  ASSERT_TRUE(IsOk(Call(kv.get(), &KV::Stub::Put, PutOf("warm-up", "v")).status));
  const double fsyncs_before = ScrapeValue(server.metrics_port(), "revkv_wal_fsyncs_total");
  const double records_before = ScrapeValue(server.metrics_port(), "revkv_wal_records_total");

  grpc::CompletionQueue cq;
  std::vector<AsyncCall<etcdserverpb::PutResponse>> puts(kPuts);
  const auto deadline = std::chrono::system_clock::now() + kCallTimeout;
  for (int i = 0; i < kPuts; ++i) {
    auto& put = puts[i];
    put.context.set_deadline(deadline);
    put.reader = kv->AsyncPut(&put.context, PutOf("key/" + std::to_string(i), "value"), &cq);
    put.reader->Finish(&put.response, &put.status, &put);
  }
  // The Range goes out right behind them, before a single answer has been read: it reaches the only
  // worker while the Puts are in flight (most of them waiting for their fsync).
  AsyncCall<etcdserverpb::RangeResponse> range;
  range.context.set_deadline(deadline);
  range.reader = kv->AsyncRange(&range.context, RangeOf("warm-up"), &cq);
  range.reader->Finish(&range.response, &range.status, &range);

  int puts_answered = 0;
  int puts_answered_before_range = -1;
  while (puts_answered < kPuts || !range.done) {
    void* tag = nullptr;
    bool ok = false;
    ASSERT_TRUE(cq.Next(&tag, &ok));
    ASSERT_TRUE(ok);
    if (tag == &range) {
      range.done = true;
      puts_answered_before_range = puts_answered;
    } else {
      static_cast<AsyncCall<etcdserverpb::PutResponse>*>(tag)->done = true;
      ++puts_answered;
    }
  }

  // Every Put succeeded, each with its own revision (the warm-up Put was revision 2).
  std::set<int64_t> revisions;
  for (const auto& put : puts) {
    ASSERT_TRUE(IsOk(put.status));
    revisions.insert(put.response.header().revision());
  }
  EXPECT_EQ(revisions.size(), static_cast<size_t>(kPuts));
  EXPECT_EQ(*revisions.begin(), 3);
  EXPECT_EQ(*revisions.rbegin(), 2 + kPuts);

  // The Range was answered, and right.
  ASSERT_TRUE(IsOk(range.status));
  ASSERT_EQ(range.response.kvs_size(), 1);
  EXPECT_EQ(range.response.kvs(0).value(), "v");

  // Group commit: a record per Put, far fewer fsyncs. (The flusher counts an fsync before it runs the
  // callbacks that answer the Puts, so the counter is final once the last answer is in.)
  const double records = ScrapeValue(server.metrics_port(), "revkv_wal_records_total") - records_before;
  const double fsyncs = ScrapeValue(server.metrics_port(), "revkv_wal_fsyncs_total") - fsyncs_before;
  EXPECT_EQ(records, kPuts);
  EXPECT_GE(fsyncs, 1);
  EXPECT_LE(fsyncs, kMaxFsyncs) << kPuts << " durable Puts on one worker took " << fsyncs
                                << " fsyncs: replies are not grouped behind one fsync";
  // How many Put answers came before the Range's is printed, not checked: it depends on how long the
  // disk takes to fsync against the client's pace, which a test cannot fix.
  std::printf("%d Puts: %.0f log records, %.0f fsyncs; %d Puts were answered before the Range\n", kPuts,
              records, fsyncs, puts_answered_before_range);
}

}  // namespace
}  // namespace revkv::integration
