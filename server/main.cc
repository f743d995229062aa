// revkv-server: parses the configuration, binds its ports, recovers the store while the ports answer
// "recovering", serves gRPC and the ops endpoint, and on SIGINT or SIGTERM drains in-flight requests,
// flushes the log and exits 0. SIGHUP is logged and ignored.
//
// Order of start (each step's stop follows it): logging; signals blocked for every thread; the runtime;
// the gRPC port and the ops port bound (a busy port fails the start at once); the recovering gRPC server
// on the port; recovery, watched (progress lines, systemd); the lessor; the serving gRPC server takes
// the port over; systemd READY=1.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "absl/synchronization/mutex.h"
#include "fmt/format.h"
#include "runtime/gc/gc.h"
#include "runtime/heap/heap.h"
#include "runtime/safepoint/safepoint.h"
#include "server/auth/simple_token.h"
#include "server/config/config.h"
#include "server/config/version.h"
#include "server/engine/engine.h"
#include "server/engine/recovery_progress.h"
#include "server/lease/lessor.h"
#include "server/ops/http_server.h"
#include "server/ops/metrics.h"
#include "server/ops/process_metrics.h"
#include "server/process/logging.h"
#include "server/process/ops_routes.h"
#include "server/process/recovery_watch.h"
#include "server/process/systemd_notify.h"
#include "server/rpc/grpc_listener.h"
#include "server/rpc/recovering_server.h"
#include "server/rpc/rpc_server.h"
#include "server/rpc/server_metrics.h"
#include "spdlog/spdlog.h"

namespace revkv::server {
namespace {

EngineOptions EngineOptionsFrom(const ServerConfig& c) {
  EngineOptions o;
  o.data_dir = c.data_dir;
  o.fsync_mode = c.fsync;
  o.fsync_interval = std::chrono::milliseconds(absl::ToInt64Milliseconds(c.fsync_interval));
  o.wal_segment_bytes = c.wal_segment_size;
  o.store.max_txn_ops = c.max_txn_ops;
  o.store.max_request_bytes = c.max_request_bytes;
  o.store.history_revisions = static_cast<int64_t>(c.history_revisions);
  o.store.history_duration = std::chrono::milliseconds(absl::ToInt64Milliseconds(c.history_duration));
  o.store.measure_reads_before_durable = c.measure_reads_before_durable;
  o.store.member_id = c.member_id;
  o.store.quota_bytes = c.EffectiveQuotaBytes();
  o.checkpoint_interval = static_cast<int64_t>(c.checkpoint_interval);
  o.checkpoint_keep = c.checkpoint_keep;
  o.lock_owner = fmt::format("revkv-server, member '{}'", c.name);
  return o;
}

void LogCollection(const runtime::CollectionRecord& r) {
  spdlog::debug(
      "gc {} #{}: pause {:.3f} ms (to safepoint {:.3f} ms), heap {} -> {} KiB, copied {} KiB, "
      "pinned {} chunks, revisions freed {} ({})",
      runtime::CollectionKindName(r.kind), r.sequence, r.pause_nanos / 1e6, r.time_to_safepoint_nanos / 1e6,
      r.heap_bytes_before >> 10, r.heap_bytes_after >> 10, r.bytes_copied >> 10, r.pinned_chunks,
      r.revisions_freed, r.reason);
}

void LogSummary(ServerState& state) {
  const runtime::GcStatistics gc = runtime::GetGcStatistics(0);
  const runtime::HistogramSnapshot major = runtime::PauseHistogram(runtime::CollectionKind::kMajor);
  spdlog::info("revision {}, {} keys; gc minor {} major {} (major p99 {:.2f} ms); heap {} MiB of {} MiB",
               state.engine->store().Revision(), state.engine->store().KeyCount(), gc.collections[0],
               gc.collections[2], major.Quantile(0.99) / 1e6, gc.heap.committed_bytes >> 20,
               gc.heap.max_bytes >> 20);
}

int Main(int argc, char** argv) {
  // Debian's absl tracks the lock order of every absl::Mutex acquisition (gRPC's mutexes are absl's) to
  // report potential deadlocks: a graph update per lock, 3-4% of a server's CPU under load
  // (docs/benchmarks.md). Off; revkv's own locks are checked by TSan and docs/locks.md.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  absl::StatusOr<CommandLine> parsed = ParseConfig(argc, argv);
  if (!parsed.ok()) {
    // In the format asked for, so that with JSON logs this line parses too.
    if (RequestedLogFormat(argc, argv) == LogFormat::kJson) {
      SetUpLogging(LogLevel::kInfo, LogFormat::kJson);
      spdlog::error("revkv-server: {}", std::string(parsed.status().message()));
    } else {
      std::fprintf(stderr, "revkv-server: %s\n", std::string(parsed.status().message()).c_str());
    }
    return 2;
  }
  ServerConfig config = parsed->config;  // const once the gRPC port is known (below)
  SetUpLogging(config.log_level, config.log_format);
  for (const std::string& warning : parsed->warnings) spdlog::warn("{}", warning);

  // SIGINT, SIGTERM and SIGHUP are taken by one thread only (sigtimedwait: the recovery watch, then
  // main); every thread started later inherits the blocked mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  runtime::HeapOptions heap;
  heap.max_heap_bytes = config.max_heap;
  heap.nursery_bytes = config.nursery_size;
  heap.retain_evacuation_reserve = config.evacuation_reserve;
  heap.collector_threads = static_cast<size_t>(config.gc_threads);
  runtime::InitializeRuntime(heap);
  runtime::ThreadRegistration main_thread("main");
  spdlog::info("revkv-server {} starting with:\n{}", kServerVersion, config.Describe());

  if (config.repair_wal) {
    absl::StatusOr<WalRepairReport> repair = RepairLog(EngineOptionsFrom(config));
    if (!repair.ok()) {
      spdlog::critical("cannot repair the log in {}: {}", config.data_dir,
                       std::string(repair.status().message()));
      return 1;
    }
    std::printf("%s\n", repair->ToString().c_str());
    return 0;
  }

  if (!config.restore_snapshot.empty()) {
    absl::StatusOr<RecoveryReport> restored =
        RestoreSnapshot(config.restore_snapshot, EngineOptionsFrom(config));
    if (!restored.ok()) {
      spdlog::critical("cannot restore {} into {}: {}", config.restore_snapshot, config.data_dir,
                       restored.status().ToString());
      return 1;
    }
    std::printf("restored %s into %s: revision %lld, %llu keys (%s)\n", config.restore_snapshot.c_str(),
                config.data_dir.c_str(), static_cast<long long>(restored->revision),
                static_cast<unsigned long long>(restored->keys), restored->checkpoint.ToString().c_str());
    return 0;
  }

  const SystemdNotifier systemd;
  RecoveryProgress progress;
  MetricsRegistry metrics;
  AddProcessCollector(metrics);
  OpsRoutes routes(&metrics, &progress);

  // 1. The ports, before recovery: a busy port fails now, and both answer while the store recovers.
  absl::StatusOr<std::unique_ptr<GrpcListener>> listener = GrpcListener::Bind(config.listen);
  if (!listener.ok()) {
    spdlog::critical("{}", std::string(listener.status().message()));
    return 1;
  }
  if (config.advertise_derived && config.listen.ends_with(":0")) {  // advertise the port actually bound
    config.listen = config.listen.substr(0, config.listen.size() - 1) + std::to_string((*listener)->port());
    config.advertise_client_urls = DeriveAdvertiseUrl(config);
  }
  absl::StatusOr<std::unique_ptr<RecoveringServer>> recovering = RecoveringServer::Start(
      config.tls, listener->get(), [&progress] { return progress.Read().Describe(); });
  if (!recovering.ok()) {
    spdlog::critical("{}", std::string(recovering.status().message()));
    return 1;
  }
  spdlog::info("gRPC port {} bound; it answers UNAVAILABLE until the store is recovered", config.listen);
  std::unique_ptr<HttpServer> ops;
  if (!config.metrics_listen.empty()) {
    HttpServerOptions options;
    options.bind_address = config.metrics_listen;
    ops = std::make_unique<HttpServer>(options);
    routes.AddTo(*ops);
    if (absl::Status s = ops->Start(); !s.ok()) {
      spdlog::critical("{}", std::string(s.message()));
      return 1;
    }
    spdlog::info("serving /metrics, /healthz, /health, /livez, /readyz, /version and /debug/gc on http://{}",
                 config.metrics_listen);
  }

  // 2. Recovery, watched.
  RecoveryWatch::Options watch_options;
  watch_options.signals = signals;
  watch_options.on_stop = [](int) { std::_Exit(0); };  // nothing acknowledged yet; the LOCK goes with us
  RecoveryWatch watch(&progress, &systemd, watch_options);
  EngineOptions engine_options = EngineOptionsFrom(config);
  engine_options.progress = &progress;
  RecoveryReport report;
  absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::Open(engine_options, &report);
  if (!engine.ok()) {
    spdlog::critical("cannot open the data directory {}: {}", config.data_dir,
                     std::string(engine.status().message()));
    return 1;
  }
  // From here a signal waits for main's loop below (the rest of the start takes a moment).
  watch.Stop();
  spdlog::info("recovery: {}", report.checkpoint.ToString());
  spdlog::info("recovery: {}", report.wal.ToString());
  if (report.wal.corruption.has_value()) {
    spdlog::warn("a torn tail of the log was cut at {} offset {}: {}", report.wal.corruption->segment,
                 report.wal.corruption->offset, report.wal.corruption->reason);
  }
  spdlog::info("recovered revision {} with {} keys in {} ms", report.revision, report.keys,
               report.duration.count());
  // Every lease that survived recovery gets its full granted TTL again (deadlines are not persisted).
  Lessor lessor(&(*engine)->store());
  if (absl::Status s = lessor.Recover(); !s.ok()) {
    spdlog::critical("cannot restore the leases: {}", std::string(s.message()));
    return 1;
  }
  spdlog::info("recovered {} leases, each with its full TTL", lessor.size());
  lessor.Start();

  auth::SimpleTokens tokens(std::chrono::seconds(config.auth_token_ttl));
  ServerState state;
  state.engine = engine->get();
  state.lessor = &lessor;
  state.tokens = &tokens;
  state.config = &config;
  state.metrics = &metrics;
  state.start_unix_nanos = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                     std::chrono::system_clock::now().time_since_epoch())
                                                     .count());
  RegisterServerMetrics(&state, &metrics);
  const int gc_log = runtime::AddCollectionListener(LogCollection);

  // 3. The serving gRPC server takes the port over; the recovering one lets its clients go (they
  // reconnect, to the serving one). Once its health service answers SERVING, everything is up.
  RpcServer rpc(&state);
  if (absl::Status s = rpc.Start(listener->get()); !s.ok()) {
    spdlog::critical("{}", std::string(s.message()));
    return 1;
  }
  // The ops pages that need the store answer from here on: /healthz says ok only once gRPC serves.
  routes.Serve(&state);
  (*recovering)->Retire();  // its clients reconnect, to the serving server, within a fifth of a second
  progress.Done();
  spdlog::info("serving etcd v3 gRPC on {} ({} workers, fsync {})", config.listen, config.workers,
               FsyncModeName(config.fsync));
  systemd.Ready(
      fmt::format("serving on {} at revision {}, {} keys",
                  config.listen.substr(0, config.listen.rfind(':') + 1) + std::to_string(rpc.port()),
                  report.revision, report.keys));

  (*engine)->StartBackgroundCheckpoints();

  int signal_number = 0;
  while (signal_number != SIGINT && signal_number != SIGTERM) {
    timespec timeout{60, 0};
    siginfo_t info;
    {
      runtime::SafeRegion waiting;
      signal_number = sigtimedwait(&signals, &info, &timeout);
    }
    if (signal_number < 0) {
      LogSummary(state);
    } else if (signal_number == SIGHUP) {
      spdlog::info(
          "SIGHUP: nothing to reload or reopen (revkv logs to stderr and reads its settings only at "
          "start); still serving");
    }
  }
  const char* name = signal_number == SIGINT ? "SIGINT" : "SIGTERM";
  spdlog::info("{}: draining in-flight requests", name);
  systemd.Stopping(fmt::format("{}: draining requests and flushing the log", name));
  if (ops != nullptr) ops->Stop();
  rpc.Shutdown(std::chrono::seconds(5));
  lessor.Stop();  // before the log closes: an expiry revoke is a logged write
  runtime::RemoveCollectionListener(gc_log);
  const absl::Status closed = (*engine)->Close();
  if (!closed.ok()) {
    spdlog::critical("closing the log: {}", std::string(closed.message()));
    return 1;
  }
  spdlog::info("log flushed at revision {}; bye", (*engine)->store().Revision());
  return 0;
}

}  // namespace
}  // namespace revkv::server

int main(int argc, char** argv) { return revkv::server::Main(argc, argv); }
