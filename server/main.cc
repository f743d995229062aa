// revkv-server: parses the configuration, starts the runtime, recovers the store, serves gRPC and the
// ops endpoint, and on SIGINT or SIGTERM drains in-flight requests, flushes the log and exits 0.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <memory>

#include "absl/strings/numbers.h"
#include "absl/synchronization/mutex.h"
#include "google/protobuf/util/json_util.h"
#include "runtime/gc/gc.h"
#include "runtime/heap/heap.h"
#include "runtime/safepoint/safepoint.h"
#include "server/auth/simple_token.h"
#include "server/config/config.h"
#include "server/engine/engine.h"
#include "server/lease/lessor.h"
#include "server/ops/http_server.h"
#include "server/ops/metrics.h"
#include "server/rpc/admin_service.h"
#include "server/rpc/rpc_server.h"
#include "server/rpc/server_metrics.h"
#include "spdlog/sinks/stdout_sinks.h"
#include "spdlog/spdlog.h"

namespace revkv::server {
namespace {

void SetUpLogging(const ServerConfig& config) {
  auto logger = spdlog::stderr_logger_mt("revkv");
  spdlog::set_default_logger(logger);
  const spdlog::level::level_enum levels[] = {spdlog::level::trace, spdlog::level::debug, spdlog::level::info,
                                              spdlog::level::warn, spdlog::level::err};
  spdlog::set_level(levels[static_cast<int>(config.log_level)]);
  if (config.log_format == LogFormat::kJson) {
    spdlog::set_pattern(R"({"time":"%Y-%m-%dT%H:%M:%S.%e%z","level":"%l","thread":%t,"msg":"%v"})");
  } else {
    spdlog::set_pattern("%Y-%m-%d %H:%M:%S.%e %L [%t] %v");
  }
}

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
  absl::StatusOr<ServerConfig> parsed = ParseConfig(argc, argv);
  if (!parsed.ok()) {
    std::fprintf(stderr, "revkv-server: %s\n", std::string(parsed.status().message()).c_str());
    return 2;
  }
  const ServerConfig config = *parsed;
  SetUpLogging(config);

  // SIGINT and SIGTERM are taken by the main thread only (sigwait); every thread started later inherits
  // the blocked mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  runtime::HeapOptions heap;
  heap.max_heap_bytes = config.max_heap;
  heap.nursery_bytes = config.nursery_size;
  heap.retain_evacuation_reserve = config.evacuation_reserve;
  runtime::InitializeRuntime(heap);
  runtime::ThreadRegistration main_thread("main");
  spdlog::info("revkv-server {} starting with:\n{}", kServerVersion, config.Describe());

  if (config.repair_wal) {
    absl::StatusOr<WalRepairReport> repair = RepairLog(EngineOptionsFrom(config));
    if (!repair.ok()) {
      spdlog::error("cannot repair the log in {}: {}", config.data_dir, repair.status().ToString());
      return 1;
    }
    std::printf("%s\n", repair->ToString().c_str());
    return 0;
  }

  if (!config.restore_snapshot.empty()) {
    absl::StatusOr<RecoveryReport> restored =
        RestoreSnapshot(config.restore_snapshot, EngineOptionsFrom(config));
    if (!restored.ok()) {
      spdlog::error("cannot restore {} into {}: {}", config.restore_snapshot, config.data_dir,
                    restored.status().ToString());
      return 1;
    }
    std::printf("restored %s into %s: revision %lld, %llu keys (%s)\n", config.restore_snapshot.c_str(),
                config.data_dir.c_str(), static_cast<long long>(restored->revision),
                static_cast<unsigned long long>(restored->keys), restored->checkpoint.ToString().c_str());
    return 0;
  }

  RecoveryReport report;
  absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::Open(EngineOptionsFrom(config), &report);
  if (!engine.ok()) {
    spdlog::error("cannot open the data directory {}: {}", config.data_dir, engine.status().ToString());
    return 1;
  }
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
    spdlog::error("cannot restore the leases: {}", s.ToString());
    return 1;
  }
  spdlog::info("recovered {} leases, each with its full TTL", lessor.size());
  lessor.Start();

  MetricsRegistry metrics;
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

  std::unique_ptr<HttpServer> ops;
  if (!config.metrics_listen.empty()) {
    HttpServerOptions options;
    options.bind_address = config.metrics_listen;
    ops = std::make_unique<HttpServer>(options);
    ops->Handle("/metrics", [&](const HttpRequest&) {
      return HttpResponse::Make(200, MetricsRegistry::kContentType, metrics.Render());
    });
    ops->Handle("/healthz", [&](const HttpRequest&) {
      const absl::Status w = state.engine->write_status();
      return w.ok() ? HttpResponse::Text(200, "ok\n")
                    : HttpResponse::Text(503,
                                         "read-only after a disk error: " + std::string(w.message()) + "\n");
    });
    ops->Handle("/debug/gc", [&](const HttpRequest& request) {
      uint32_t recent = 0;
      const std::string_view text = request.Query("recent", "64");
      if (!absl::SimpleAtoi(absl::string_view(text.data(), text.size()), &recent)) {
        return HttpResponse::Text(400, "recent must be a non-negative integer\n");
      }
      ::revkv::v1::GetStatsResponse stats;
      FillStats(&state, recent, &stats);
      std::string json;
      google::protobuf::util::JsonPrintOptions print;
      print.add_whitespace = true;
      print.always_print_primitive_fields = true;
      (void)google::protobuf::util::MessageToJsonString(stats, &json, print);
      return HttpResponse::Json(200, json);
    });
    if (absl::Status s = ops->Start(); !s.ok()) {
      spdlog::error("{}", std::string(s.message()));
      return 1;
    }
    spdlog::info("serving /metrics, /healthz and /debug/gc on http://{}", config.metrics_listen);
  }
  // gRPC last: once its health service answers SERVING, every endpoint of the server is up.
  RpcServer rpc(&state);
  if (absl::Status s = rpc.Start(); !s.ok()) {
    spdlog::error("{}", std::string(s.message()));
    return 1;
  }
  spdlog::info("serving etcd v3 gRPC on {} ({} workers, fsync {})", config.listen, config.workers,
               FsyncModeName(config.fsync));

  (*engine)->StartBackgroundCheckpoints();

  int signal_number = 0;
  while (signal_number == 0) {
    timespec timeout{60, 0};
    siginfo_t info;
    {
      runtime::SafeRegion waiting;
      signal_number = sigtimedwait(&signals, &info, &timeout);
    }
    if (signal_number < 0) {
      signal_number = 0;
      LogSummary(state);
    }
  }
  spdlog::info("{}: draining in-flight requests", signal_number == SIGINT ? "SIGINT" : "SIGTERM");
  if (ops != nullptr) ops->Stop();
  rpc.Shutdown(std::chrono::seconds(5));
  lessor.Stop();  // before the log closes: an expiry revoke is a logged write
  runtime::RemoveCollectionListener(gc_log);
  const absl::Status closed = (*engine)->Close();
  if (!closed.ok()) {
    spdlog::error("closing the log: {}", closed.ToString());
    return 1;
  }
  spdlog::info("log flushed at revision {}; bye", (*engine)->store().Revision());
  return 0;
}

}  // namespace
}  // namespace revkv::server

int main(int argc, char** argv) { return revkv::server::Main(argc, argv); }
