// Durable writes' answers, through the real gRPC server in this process over a log whose disk takes
// 20 ms per fdatasync (FaultInjectingFileSystem): 64 concurrent Puts on one worker, and a
// revkv.v1.KV/PipelineBatch message of 64 Puts.
//
// - No Put is answered before its record is durable: when an answer reaches the client, the log's
//   synced revision already covers the revision it names. (Fails if FinishWrite answers at once.)
// - Many Puts share each fsync (group commit): far fewer fsyncs than Puts. (Fails if the flusher
//   writes and syncs one record per pass.)
// - No batch is answered before the last of its records is synced (fails if the batch's answer does not
//   wait for the log), and the batch wakes the log's flusher once, after its 64 records are appended
//   (fails if each write wakes it), so they share one fsync (two if the flusher, still busy after the
//   warm-up, catches the first records on its own).
// - When the log fails (an fdatasync error) before a batch's records are durable, the results that
//   depend on them are answered with the log's failure and the ones that read durable state stand.
//   (Fails if the batch's results are sent as they were executed.)
// - The answers are sent by the worker that executed the writes, woken once per group by the flusher,
//   not by the flusher itself (held_answers.h).
// - A shutdown while the log syncs held writes: the flusher's callback for them comes after the workers'
//   queues are shut down and must post nothing to them (fails, with gRPC's abort or a counted wake-up,
//   if HeldAnswers::Wake ignores Close); the writes are durable all the same and come back on reopening.
// - An alarm the flusher posted before Close, and taken from the queue after it, runs no held answer (it
//   would finish a call on a queue that is shut down), and a Hold after Close runs none either: driven
//   on a HeldAnswers of its own, with this thread as its worker. (Fails if HeldAnswers::Proceed, or
//   Hold, ignores Close.)
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "revkv/v1/kv.grpc.pb.h"
#include "server/config/config.h"
#include "server/lease/lessor.h"
#include "server/ops/metrics.h"
#include "server/rpc/grpc_handoff.h"
#include "server/rpc/grpc_listener.h"
#include "server/rpc/held_answers.h"
#include "server/rpc/rpc_server.h"
#include "server/rpc/server_metrics.h"
#include "server/wal/fault_injecting_file_system.h"
#include "server/wal/wal.h"
#include "tests/server/engine/engine_test_util.h"

namespace revkv::server {
namespace {

using engine_testing::Options;
using engine_testing::TempDir;

constexpr int kPuts = 64;

// An engine over `disk` served by the real gRPC server on a free port, with one worker so that nothing
// else is appended while the worker would wait for its own record. Built in the test's child process.
struct ServedEngine {
  explicit ServedEngine(std::unique_ptr<Engine> opened)
      : engine(std::move(opened)), lessor(&engine->store()) {
    config.listen = "127.0.0.1:0";
    config.metrics_listen = "";
    config.workers = 1;
    state.engine = engine.get();
    state.lessor = &lessor;
    state.config = &config;
    state.metrics = &metrics;
    RegisterServerMetrics(&state, &metrics);
  }

  // Opens the engine in `dir` over `disk` and starts serving it; the error names the step that failed.
  static absl::StatusOr<std::unique_ptr<ServedEngine>> Start(const std::string& dir, FileSystem* disk) {
    EngineOptions o = Options(dir);
    o.file_system = disk;
    RecoveryReport report;
    absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::Open(o, &report);
    if (!engine.ok()) return engine.status();
    auto served = std::make_unique<ServedEngine>(*std::move(engine));
    absl::StatusOr<std::unique_ptr<GrpcListener>> listener = GrpcListener::Bind(served->config.listen);
    if (!listener.ok()) return listener.status();
    served->listener = *std::move(listener);
    if (absl::Status started = served->rpc.Start(served->listener.get()); !started.ok()) return started;
    return served;
  }

  std::shared_ptr<grpc::Channel> Channel() const {
    return grpc::CreateChannel("127.0.0.1:" + std::to_string(rpc.port()), grpc::InsecureChannelCredentials());
  }

  std::unique_ptr<Engine> engine;
  Lessor lessor;
  ServerConfig config;
  MetricsRegistry metrics;
  ServerState state;
  std::unique_ptr<GrpcListener> listener;
  RpcServer rpc{&state};  // declared last: stopped before what it serves is destroyed
};

struct PutCall {
  grpc::ClientContext context;
  etcdserverpb::PutResponse response;
  grpc::Status status;
  std::unique_ptr<grpc::ClientAsyncResponseReader<etcdserverpb::PutResponse>> reader;
  int64_t synced_at_answer = -1;  // the log's synced revision when the answer came in
};

// Sends kPuts concurrent Puts of "<prefix><i>" on `cq`; each call's tag is its PutCall.
void StartPuts(etcdserverpb::KV::Stub* kv, grpc::CompletionQueue* cq, std::vector<PutCall>& puts,
               const std::string& prefix) {
  const auto deadline = std::chrono::system_clock::now() + std::chrono::seconds(30);
  for (int i = 0; i < kPuts; ++i) {
    PutCall& put = puts[static_cast<size_t>(i)];
    etcdserverpb::PutRequest request;
    request.set_key(prefix + std::to_string(i));
    request.set_value("value");
    put.context.set_deadline(deadline);
    put.reader = kv->AsyncPut(&put.context, request, cq);
    put.reader->Finish(&put.response, &put.status, &put);
  }
}

// A Put that must succeed before the measured part (the server's first write wakes its log).
bool WarmUp(etcdserverpb::KV::Stub* kv) {
  grpc::ClientContext context;
  etcdserverpb::PutRequest warm_up;
  warm_up.set_key("warm-up");
  etcdserverpb::PutResponse response;
  return kv->Put(&context, warm_up, &response).ok();
}

TEST(DurableReplies, NoPutIsAnsweredBeforeItsRecordIsSyncedAndConcurrentPutsShareFsyncs) {
  const std::string dir = TempDir("durable-reply");
  ASSERT_CHILD_PASSES([&] {
    FaultInjectingFileSystem disk(DefaultFileSystem());
    disk.SetSyncDelay(std::chrono::milliseconds(20));  // a slow disk: Puts pile up behind each fsync
    CHILD_READ(served, ServedEngine::Start(dir, &disk));
    Engine* engine = served->engine.get();

    std::vector<PutCall> puts(kPuts);
    uint64_t fsyncs = 0;
    {
      runtime::SafeRegion client;  // this thread only runs the client from here on
      std::shared_ptr<grpc::Channel> channel = served->Channel();
      auto kv = etcdserverpb::KV::NewStub(channel);
      CHILD_CHECK(WarmUp(kv.get()), "the warm-up Put failed");
      const int64_t fsyncs_before = disk.syncs();
      grpc::CompletionQueue cq;
      StartPuts(kv.get(), &cq, puts, "key/");
      for (int answered = 0; answered < kPuts; ++answered) {
        void* tag = nullptr;
        bool ok = false;
        CHILD_CHECK(cq.Next(&tag, &ok) && ok, "the completion queue failed");
        static_cast<PutCall*>(tag)->synced_at_answer = engine->wal().stats().synced_revision;
      }
      fsyncs = static_cast<uint64_t>(disk.syncs() - fsyncs_before);
      std::printf("%d puts: %llu fsyncs\n", kPuts, static_cast<unsigned long long>(fsyncs));
    }
    std::set<int64_t> revisions;
    for (const PutCall& put : puts) {
      CHILD_CHECK(put.status.ok(), "a Put failed: %s", put.status.error_message().c_str());
      const int64_t revision = put.response.header().revision();
      revisions.insert(revision);
      CHILD_CHECK(revision <= put.synced_at_answer, "revision %lld was answered when only %lld was synced",
                  static_cast<long long>(revision), static_cast<long long>(put.synced_at_answer));
    }
    CHILD_CHECK(revisions.size() == kPuts, "%zu distinct revisions", revisions.size());
    CHILD_CHECK(fsyncs >= 1 && fsyncs * 4 <= kPuts, "%llu fsyncs for %d Puts",
                static_cast<unsigned long long>(fsyncs), kPuts);
    served->rpc.Shutdown(std::chrono::seconds(5));
    return 0;
  });
}

TEST(DurableReplies, NoBatchIsAnsweredBeforeItsRecordsAreSyncedAndItsWritesShareOneFsync) {
  const std::string dir = TempDir("durable-batch");
  ASSERT_CHILD_PASSES([&] {
    FaultInjectingFileSystem disk(DefaultFileSystem());
    disk.SetSyncDelay(std::chrono::milliseconds(20));
    CHILD_READ(served, ServedEngine::Start(dir, &disk));
    Engine* engine = served->engine.get();

    revkv::v1::TxnBatchResponse answer;
    int64_t synced_at_answer = -1;
    int64_t fsyncs = 0;
    uint64_t wakeups = 0;
    grpc::Status status;
    {
      runtime::SafeRegion client;  // this thread only runs the client from here on
      std::shared_ptr<grpc::Channel> channel = served->Channel();
      auto pipeline = revkv::v1::KV::NewStub(channel);
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
      auto stream = pipeline->PipelineBatch(&context);
      revkv::v1::TxnBatch warm_up;  // the first segment exists and the flusher is idle afterwards
      etcdserverpb::PutRequest* put = warm_up.add_requests()->add_success()->mutable_request_put();
      put->set_key("warm-up");
      CHILD_CHECK(stream->Write(warm_up) && stream->Read(&answer), "the warm-up batch failed");
      const int64_t fsyncs_before = disk.syncs();
      const uint64_t wakeups_before = engine->wal().stats().notifies;
      revkv::v1::TxnBatch batch;
      for (int i = 0; i < kPuts; ++i) {
        put = batch.add_requests()->add_success()->mutable_request_put();
        put->set_key("key/" + std::to_string(i));
        put->set_value("value");
      }
      CHILD_CHECK(stream->Write(batch), "the batch could not be sent");
      CHILD_CHECK(stream->Read(&answer), "the batch was not answered");
      synced_at_answer = engine->wal().stats().synced_revision;
      fsyncs = disk.syncs() - fsyncs_before;
      wakeups = engine->wal().stats().notifies - wakeups_before;
      stream->WritesDone();
      status = stream->Finish();
    }
    CHILD_CHECK(status.ok(), "the stream failed: %s", status.error_message().c_str());
    CHILD_CHECK(answer.results_size() == kPuts, "%d results", answer.results_size());
    int64_t last = 0;
    for (const revkv::v1::TxnResult& r : answer.results()) {
      CHILD_CHECK(r.has_response(), "a Put failed: %s", r.error().message().c_str());
      CHILD_CHECK(r.response().header().revision() == last + 1 || last == 0, "revisions not consecutive");
      last = r.response().header().revision();
    }
    CHILD_CHECK(last <= synced_at_answer,
                "the batch up to revision %lld was answered when only %lld was synced",
                static_cast<long long>(last), static_cast<long long>(synced_at_answer));
    std::printf("a batch of %d Puts: %llu flusher wake-ups, %lld fsyncs\n", kPuts,
                static_cast<unsigned long long>(wakeups), static_cast<long long>(fsyncs));
    CHILD_CHECK(wakeups == 1, "a batch of %d Puts woke the flusher %llu times", kPuts,
                static_cast<unsigned long long>(wakeups));
    CHILD_CHECK(fsyncs >= 1 && fsyncs <= 2, "a batch of %d Puts took %lld fsyncs", kPuts,
                static_cast<long long>(fsyncs));
    served->rpc.Shutdown(std::chrono::seconds(5));
    return 0;
  });
}

TEST(DurableReplies, ABatchWhoseRecordsAreNeverDurableIsAnsweredWithTheLogFailureSaveWhatReadDurableState) {
  const std::string dir = TempDir("durable-batch-failure");
  ASSERT_CHILD_PASSES([&] {
    FaultInjectingFileSystem disk(DefaultFileSystem());
    CHILD_READ(served, ServedEngine::Start(dir, &disk));

    revkv::v1::TxnBatchResponse answer;
    grpc::Status status;
    {
      runtime::SafeRegion client;  // this thread only runs the client from here on
      std::shared_ptr<grpc::Channel> channel = served->Channel();
      auto pipeline = revkv::v1::KV::NewStub(channel);
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
      auto stream = pipeline->PipelineBatch(&context);
      revkv::v1::TxnBatch first;  // durable before the disk fails
      etcdserverpb::PutRequest* put = first.add_requests()->add_success()->mutable_request_put();
      put->set_key("durable");
      put->set_value("v");
      CHILD_CHECK(stream->Write(first) && stream->Read(&answer), "the first batch failed");
      CHILD_CHECK(answer.results_size() == 1 && answer.results(0).has_response(), "the first Put failed");
      disk.FailNthSync(1, EIO);
      revkv::v1::TxnBatch batch;  // a read of durable state, then two Puts the failed fsync never covers
      batch.add_requests()->add_success()->mutable_request_range()->set_key("durable");
      for (const char* key : {"a", "b"}) {
        put = batch.add_requests()->add_success()->mutable_request_put();
        put->set_key(key);
        put->set_value("lost");
      }
      CHILD_CHECK(stream->Write(batch), "the batch could not be sent");
      CHILD_CHECK(stream->Read(&answer), "the batch was not answered");
      stream->WritesDone();
      status = stream->Finish();
    }
    CHILD_CHECK(status.ok(), "the stream failed: %s", status.error_message().c_str());
    CHILD_CHECK(answer.results_size() == 3, "%d results", answer.results_size());
    const revkv::v1::TxnResult& read = answer.results(0);
    CHILD_CHECK(read.has_response() && read.response().responses(0).response_range().kvs_size() == 1,
                "the read of durable state did not stand: %s", read.ShortDebugString().c_str());
    for (int i = 1; i <= 2; ++i) {
      const revkv::v1::TxnResult& r = answer.results(i);
      CHILD_CHECK(r.has_error(), "Put %d was answered as a success although its record never became durable",
                  i);
      CHILD_CHECK(r.error().code() == grpc::StatusCode::UNAVAILABLE && !r.error().message().empty(),
                  "Put %d: code %d \"%s\"", i, r.error().code(), r.error().message().c_str());
    }
    served->rpc.Shutdown(std::chrono::seconds(5));
    return 0;
  });
}

// The answers of durable writes are sent by the worker that executed them, not by the log's flusher: the
// worker registers one callback with the log for the oldest answer it holds (revkv_wal_callbacks_total),
// whose run on the flusher only wakes the worker, which then sends every answer durable by then
// (revkv_rpc_held_answers_total). With 64 concurrent Puts behind 20 ms fsyncs, and a PipelineBatch of 64
// Puts, the flusher runs a few callbacks, not one per answer. (Fails with REVKV_MUTATION_ANSWERS_ON_FLUSHER,
// where every answer is a callback run, and sent, by the flusher: 64 callbacks, no held answers.)
TEST(DurableReplies, AnswersAreSentByTheirWorkerWithOneLogCallbackPerGroupNotOnePerAnswer) {
  const std::string dir = TempDir("durable-held");
  ASSERT_CHILD_PASSES([&] {
    FaultInjectingFileSystem disk(DefaultFileSystem());
    disk.SetSyncDelay(std::chrono::milliseconds(20));
    CHILD_READ(served, ServedEngine::Start(dir, &disk));
    Engine* engine = served->engine.get();
    ServerState& state = served->state;
    std::vector<PutCall> puts(kPuts);
    uint64_t unary_callbacks = 0, unary_held = 0, batch_callbacks = 0, batch_held = 0, fsyncs = 0;
    revkv::v1::TxnBatchResponse answer;
    {
      runtime::SafeRegion client;  // this thread only runs the client from here on
      std::shared_ptr<grpc::Channel> channel = served->Channel();
      auto kv = etcdserverpb::KV::NewStub(channel);
      CHILD_CHECK(WarmUp(kv.get()), "the warm-up Put failed");
      uint64_t callbacks_before = engine->wal().stats().callbacks_run;
      uint64_t held_before = state.held_answers.answers.load();
      const int64_t fsyncs_before = disk.syncs();
      grpc::CompletionQueue cq;
      StartPuts(kv.get(), &cq, puts, "key/");
      for (int answered = 0; answered < kPuts; ++answered) {
        void* tag = nullptr;
        bool ok = false;
        CHILD_CHECK(cq.Next(&tag, &ok) && ok, "the completion queue failed");
        PutCall* put = static_cast<PutCall*>(tag);
        CHILD_CHECK(put->status.ok(), "a Put failed: %s", put->status.error_message().c_str());
        put->synced_at_answer = engine->wal().stats().synced_revision;
        CHILD_CHECK(put->response.header().revision() <= put->synced_at_answer,
                    "revision %lld was answered when only %lld was synced",
                    static_cast<long long>(put->response.header().revision()),
                    static_cast<long long>(put->synced_at_answer));
      }
      unary_callbacks = engine->wal().stats().callbacks_run - callbacks_before;
      unary_held = state.held_answers.answers.load() - held_before;
      fsyncs = static_cast<uint64_t>(disk.syncs() - fsyncs_before);

      auto pipeline = revkv::v1::KV::NewStub(channel);
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
      auto stream = pipeline->PipelineBatch(&context);
      revkv::v1::TxnBatch batch;
      for (int i = 0; i < kPuts; ++i) {
        etcdserverpb::PutRequest* put = batch.add_requests()->add_success()->mutable_request_put();
        put->set_key("batch/" + std::to_string(i));
        put->set_value("value");
      }
      // A callback the concurrent Puts registered may still be waiting for the flusher's next pass (one
      // registered just after a pass found every answer of its group sent already): the batch's count
      // starts once the flusher has run them all, the count unchanged for 50 ms.
      for (uint64_t last = ~uint64_t{0};;) {
        const uint64_t now = engine->wal().stats().callbacks_run;
        if (now == last) break;
        last = now;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      callbacks_before = engine->wal().stats().callbacks_run;
      held_before = state.held_answers.answers.load();
      CHILD_CHECK(stream->Write(batch) && stream->Read(&answer), "the batch failed");
      batch_callbacks = engine->wal().stats().callbacks_run - callbacks_before;
      batch_held = state.held_answers.answers.load() - held_before;
      stream->WritesDone();
      CHILD_CHECK(stream->Finish().ok(), "the stream failed");
    }
    std::printf(
        "%d concurrent Puts: %llu fsyncs, %llu flusher callbacks, %llu answers sent by the worker; "
        "a batch of %d Puts: %llu flusher callbacks, %llu answers sent by the worker\n",
        kPuts, static_cast<unsigned long long>(fsyncs), static_cast<unsigned long long>(unary_callbacks),
        static_cast<unsigned long long>(unary_held), kPuts, static_cast<unsigned long long>(batch_callbacks),
        static_cast<unsigned long long>(batch_held));
    CHILD_CHECK(unary_held == kPuts, "%llu of %d Put answers were sent by their worker",
                static_cast<unsigned long long>(unary_held), kPuts);
    // About one callback per group (the groups are the fsyncs; a registration that just misses a group's
    // callbacks runs at the flusher's next pass), and far fewer than the answers.
    CHILD_CHECK(unary_callbacks * 4 <= kPuts, "%llu flusher callbacks for %d Puts in %llu fsyncs",
                static_cast<unsigned long long>(unary_callbacks), kPuts,
                static_cast<unsigned long long>(fsyncs));
    CHILD_CHECK(answer.results_size() == kPuts, "%d results", answer.results_size());
    CHILD_CHECK(batch_held == 1 && batch_callbacks <= 1,
                "the batch's answer: %llu flusher callbacks, %llu sent by its worker",
                static_cast<unsigned long long>(batch_callbacks),
                static_cast<unsigned long long>(batch_held));
    served->rpc.Shutdown(std::chrono::seconds(5));
    return 0;
  });
}

TEST(DurableReplies, AShutdownWhileHeldWritesSyncLeavesThemDurableAndTheLateLogCallbackPostsNothing) {
  const std::string dir = TempDir("durable-shutdown");
  ASSERT_CHILD_PASSES([&] {
    FaultInjectingFileSystem disk(DefaultFileSystem());
    disk.SetSyncDelay(std::chrono::milliseconds(20));
    CHILD_READ(served, ServedEngine::Start(dir, &disk));
    Engine* engine = served->engine.get();
    const ServerState& state = served->state;
    std::vector<PutCall> puts(kPuts);
    uint64_t callbacks_before = 0, wakeups_before = 0;
    int answered_ok = 0;
    {
      runtime::SafeRegion client;  // this thread only runs the client from here on
      std::shared_ptr<grpc::Channel> channel = served->Channel();
      auto kv = etcdserverpb::KV::NewStub(channel);
      CHILD_CHECK(WarmUp(kv.get()), "the warm-up Put failed");
      // A disk that takes 2 s per sync: the shutdown below comes while the puts' records are written.
      disk.SetSyncDelay(std::chrono::seconds(2));
      callbacks_before = engine->wal().stats().callbacks_run;
      wakeups_before = state.held_answers.wakeups.load();
      const WalLsn appended_before = engine->wal().stats().appended_lsn;
      grpc::CompletionQueue cq;
      StartPuts(kv.get(), &cq, puts, "key/");
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (engine->wal().stats().appended_lsn < appended_before + kPuts &&
             std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      CHILD_CHECK(engine->wal().stats().appended_lsn >= appended_before + kPuts,
                  "the puts were not appended");
      CHILD_CHECK(engine->wal().durable_lsn() < appended_before + kPuts, "the puts are durable already");
      served->rpc.Shutdown(std::chrono::milliseconds(0));  // held answers are never sent
      for (int finished = 0; finished < kPuts; ++finished) {
        void* tag = nullptr;
        bool ok = false;
        CHILD_CHECK(cq.Next(&tag, &ok) && ok, "the completion queue failed");
        if (static_cast<PutCall*>(tag)->status.ok()) ++answered_ok;
      }
    }
    // The log goes on after the RPC server: its flusher syncs the records and runs the held answers'
    // callback, which finds its worker's queue closed.
    const WalLsn appended = engine->wal().stats().appended_lsn;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (engine->wal().durable_lsn() < appended && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    CHILD_CHECK(engine->wal().durable_lsn() >= appended, "the log did not sync the puts");
    const uint64_t callbacks = engine->wal().stats().callbacks_run - callbacks_before;
    const uint64_t wakeups = state.held_answers.wakeups.load() - wakeups_before;
    std::printf("after the shutdown: %d of %d puts answered OK, %llu log callbacks, %llu wake-ups\n",
                answered_ok, kPuts, static_cast<unsigned long long>(callbacks),
                static_cast<unsigned long long>(wakeups));
    CHILD_CHECK(callbacks >= 1, "the held answers' callback never ran");
    CHILD_CHECK(wakeups == 0, "%llu alarms were posted to a closed worker's queue",
                static_cast<unsigned long long>(wakeups));
    served.reset();  // the server, then the engine (its log closes)

    EngineOptions o = Options(dir);
    RecoveryReport report;
    CHILD_READ(reopened, Engine::Open(o, &report));
    CHILD_READ(everything, engine_testing::Everything(reopened->store()));
    for (int i = 0; i < kPuts; ++i) {
      CHILD_CHECK(everything.count("key/" + std::to_string(i)) == 1, "key/%d is lost", i);
    }
    return 0;
  });
}

// The race RpcServer::Shutdown leaves open: the flusher's callback posts the alarm (Wake) just before
// Close, so the worker takes it from its queue after Close, when the queue is shut down. The answer it
// holds must not run then: a real one would finish its call on that queue (gRPC aborts the process).
// Driven step by step on a HeldAnswers of its own, over a real log and a real server completion queue,
// with this thread as the worker: the log's writes are paused while the answer is held, so that only
// the flusher's callback can wake the worker, and the queue is not polled until after Close.
TEST(DurableReplies, AnAlarmPostedBeforeCloseAndTakenAfterItRunsNoHeldAnswer) {
  const std::string dir = TempDir("held-close");
  ASSERT_CHILD_PASSES([&] {
    FaultInjectingFileSystem disk(DefaultFileSystem());
    WalOptions options;
    options.dir = dir + "/wal";
    options.file_system = &disk;
    WalRecoveryReport report;
    auto ignore_records = [](int64_t, std::string_view) { return absl::OkStatus(); };  // a new log
    CHILD_READ(wal, Wal::Open(options, 0, ignore_records, &report));
    grpc::ServerBuilder builder;  // no port and no service: only the queue is used
    std::unique_ptr<grpc::ServerCompletionQueue> cq = builder.AddCompletionQueue();
    std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    CHILD_CHECK(server != nullptr, "the gRPC server did not start");
    HeldAnswerStats stats;
    auto held = std::make_shared<HeldAnswers>(wal.get(), cq.get(), &stats);

    // A record the log cannot write yet, and an answer held for it.
    disk.PauseWrites(options.dir);
    const std::string payload = "held";
    CHILD_READ(reservation, wal->Reserve(payload));
    const WalLsn lsn = wal->Append(reservation, report.next_revision, payload);
    wal->Notify();
    bool ran = false;
    held->Hold(lsn, [&ran](absl::Status) { ran = true; });
    CHILD_CHECK(!ran && held->held() == 1, "the answer ran before its record was durable");

    // The record becomes durable and the flusher's callback posts the alarm; the worker does not poll.
    disk.ResumeWrites();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (stats.wakeups.load() == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    CHILD_CHECK(stats.wakeups.load() == 1, "the flusher did not post the alarm");
    CHILD_CHECK(wal->durable_lsn() >= lsn, "the alarm came before the record was durable");

    // RpcServer::Shutdown's order: the server, Close, the queue; then the worker drains the queue.
    server->Shutdown(std::chrono::system_clock::now());
    held->Close();
    cq->Shutdown();
    int alarms = 0, others = 0;
    void* tag = nullptr;
    bool ok = false;
    while (cq->Next(&tag, &ok)) {  // as RpcServer::WorkerLoop does
      (tag == held.get() ? alarms : others) += 1;
      TakeBackFromGrpc(tag);
      static_cast<CallTag*>(tag)->Proceed(ok);
    }
    CHILD_CHECK(alarms == 1 && others == 0, "%d alarms and %d other tags came out of the queue", alarms,
                others);
    CHILD_CHECK(!ran, "a held answer ran after Close");
    CHILD_CHECK(held->held() == 1, "%zu answers held after Close", held->held());
    CHILD_CHECK(stats.answers.load() == 0, "%llu answers counted as sent after Close",
                static_cast<unsigned long long>(stats.answers.load()));

    // A Hold after Close, for a record durable already, runs nothing either (neither answer).
    bool late_ran = false;
    held->Hold(lsn, [&late_ran](absl::Status) { late_ran = true; });
    CHILD_CHECK(!late_ran && !ran, "a Hold after Close ran answers");
    CHILD_CHECK(held->held() == 2, "%zu answers held", held->held());
    held.reset();  // the held answers are destroyed without running
    CHILD_CHECK(!ran && !late_ran, "an answer ran when its HeldAnswers went");
    CHILD_CHECK(wal->Close().ok(), "the log did not close cleanly");
    return 0;
  });
  std::filesystem::remove_all(dir);  // its preallocated segment is 64 MiB
}

}  // namespace
}  // namespace revkv::server
