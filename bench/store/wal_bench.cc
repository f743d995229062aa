// wal: write throughput through the Engine under each fsync mode (benchmarks.h).
//
// Each writer is a closed-loop client with one request in flight, acknowledged the way the server
// acknowledges one (server/rpc/kv_service.cc): Store::Put, then Wal::OnDurable(lsn, callback), and the
// writer waits for its callback (run by the log's flusher thread once the record is durable under the
// fsync mode) before its next Put. Several writers share fsyncs: the flusher syncs whatever has been
// appended when it gets to it (group commit), which the "writes/fsync" column shows.
//
// Every (fsync mode, writers, run) case runs in a child process of its own on a fresh data directory,
// removed afterwards; the cases are interleaved like ops'. Keys are uniform over the key space, which
// starts empty (the first writes insert, later ones mostly overwrite). No background checkpoints.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "bench/store/benchmarks.h"
#include "bench/store/child_process.h"
#include "bench/store/timed_run.h"
#include "runtime/safepoint/safepoint.h"
#include "server/engine/engine.h"

namespace revkv::bench::store {

namespace {

using nlohmann::json;
using server::FsyncMode;

constexpr FsyncMode kModes[] = {FsyncMode::kAlways, FsyncMode::kInterval, FsyncMode::kNone};
constexpr int kWriterCounts[] = {1, 8};
constexpr std::chrono::milliseconds kFsyncInterval{10};

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "revkv-bench-store wal: %s\n", what.c_str());
  std::abort();
}

// Where the durability callback leaves its answer. Shared by the writer and its pending callback: the
// flusher may still be inside notify_one() when the writer, already woken, returns and drops it.
struct Ack {
  std::atomic<bool> done{false};
  absl::Status status;  // written by the callback before `done` is set
};

// One closed-loop writer. Owner thread only.
class Writer {
 public:
  Writer(server::Engine& engine, uint64_t keys, uint64_t seed)
      : engine_(engine), keys_(keys), rng_(seed), ack_(std::make_shared<Ack>()) {
    put_.set_key(Key(0));
    put_.set_value(Value(0));
  }

  void Run() {
    FormatKey(rng_.Below(keys_), put_.mutable_key()->data());
    absl::StatusOr<server::WriteResult<etcdserverpb::PutResponse>> r = engine_.store().Put(put_);
    if (!r.ok()) Die("Put failed: " + r.status().ToString());
    if (r->lsn == 0) Die("a Put through the Engine returned no log record");
    ack_->done.store(false, std::memory_order_relaxed);
    engine_.wal().OnDurable(r->lsn, [ack = ack_](absl::Status s) {
      ack->status = std::move(s);
      // Release: publishes `status` to the writer, which loads `done` with acquire.
      ack->done.store(true, std::memory_order_release);
      ack->done.notify_one();
    });
    {
      runtime::SafeRegion waiting;
      while (!ack_->done.load(std::memory_order_acquire)) ack_->done.wait(false, std::memory_order_acquire);
    }
    if (!ack_->status.ok()) Die("write not made durable: " + ack_->status.ToString());
  }

 private:
  server::Engine& engine_;
  const uint64_t keys_;
  Rng rng_;
  etcdserverpb::PutRequest put_;
  const std::shared_ptr<Ack> ack_;
};

absl::StatusOr<json> WalChild(const Config& config, FsyncMode mode, int writers, const std::string& dir,
                              int run) {
  server::EngineOptions options;
  options.data_dir = dir;
  options.fsync_mode = mode;
  options.fsync_interval = kFsyncInterval;
  options.checkpoint_interval = 0;
  absl::StatusOr<std::unique_ptr<server::Engine>> opened = server::Engine::Open(options, nullptr);
  if (!opened.ok()) return opened.status();
  server::Engine& engine = **opened;

  const server::WalStats before = engine.wal().stats();
  TimedRunResult r = RunTimed(writers, config.seconds, /*record_latency=*/true, [&](int t) {
    auto writer = std::make_shared<Writer>(engine, config.ops_keys,
                                           MakeSeed(run, static_cast<uint64_t>(mode), writers, t));
    return [writer] { writer->Run(); };
  });
  const server::WalStats after = engine.wal().stats();
  if (absl::Status s = engine.Close(); !s.ok()) return s;

  const uint64_t fsyncs = after.fsyncs - before.fsyncs;
  const uint64_t records = after.records_written - before.records_written;
  return json{
      {"writes", r.operations},
      {"seconds", r.seconds},
      {"writes_per_s", static_cast<double>(r.operations) / r.seconds},
      {"latency_p50_us", static_cast<double>(Quantile(r.latency_nanos, 0.50)) / 1e3},
      {"latency_p99_us", static_cast<double>(Quantile(r.latency_nanos, 0.99)) / 1e3},
      {"fsyncs", fsyncs},
      {"writes_per_fsync", fsyncs > 0 ? static_cast<double>(records) / static_cast<double>(fsyncs) : 0.0},
      {"write_calls", after.write_calls - before.write_calls},
      {"wal_mib_per_s",
       static_cast<double>(after.bytes_written - before.bytes_written) / (1 << 20) / r.seconds}};
}

}  // namespace

absl::StatusOr<json> RunWal(const Config& config) {
  std::fprintf(stderr, "wal: %zu cases x %d run(s) of %.2f s, data under %s\n",
               std::size(kModes) * std::size(kWriterCounts), config.runs, config.seconds, config.dir.c_str());
  json raw = json::array();
  for (int run = 1; run <= config.runs; ++run) {
    for (FsyncMode mode : kModes) {
      for (int writers : kWriterCounts) {
        const std::string name = std::string(server::FsyncModeName(mode));
        const std::string dir =
            config.dir + "/wal-" + name + "-" + std::to_string(writers) + "w-run" + std::to_string(run);
        absl::StatusOr<json> r = RunInChild("wal " + name, config.max_heap_bytes,
                                            [&] { return WalChild(config, mode, writers, dir, run); });
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
        if (!r.ok()) return r.status();
        (*r)["fsync"] = name;
        (*r)["writers"] = writers;
        (*r)["run"] = run;
        std::fprintf(stderr, "  run %d fsync %-8s %d writer(s): %.0f writes/s\n", run, name.c_str(), writers,
                     (*r)["writes_per_s"].get<double>());
        raw.push_back(std::move(*r));
      }
    }
  }

  json cases = json::array();
  for (FsyncMode mode : kModes) {
    for (int writers : kWriterCounts) {
      const std::string name = std::string(server::FsyncModeName(mode));
      json row = {{"fsync", name}, {"writers", writers}};
      for (const char* field :
           {"writes_per_s", "latency_p50_us", "latency_p99_us", "writes_per_fsync", "wal_mib_per_s"}) {
        std::vector<double> v;
        for (const json& r : raw) {
          if (r["fsync"] == name && r["writers"] == writers) v.push_back(r[field].get<double>());
        }
        row[field] = Median(v);
      }
      cases.push_back(row);
    }
  }
  return json{{"dir", config.dir},
              {"file_system", FileSystemOf(config.dir)},
              {"fsync_interval_ms", kFsyncInterval.count()},
              {"keys", config.ops_keys},
              {"seconds_per_case", config.seconds},
              {"runs", config.runs},
              {"cases", cases},
              {"raw", raw}};
}

void PrintWal(const json& result, std::FILE* out) {
  std::fprintf(
      out,
      "\nwal: Puts through the Engine, each writer waiting for Wal::OnDurable before its next Put; "
      "%llu-key space, %zu B keys, %zu B values\n     data under %s (%s): fsync figures depend on "
      "this file system\n     %.2f s per case, median of %d interleaved run(s); interval = fdatasync "
      "every %lld ms, acknowledged after write(2)\n",
      result["keys"].get<unsigned long long>(), kKeyBytes, kValueBytes,
      result["dir"].get<std::string>().c_str(), result["file_system"].get<std::string>().c_str(),
      result["seconds_per_case"].get<double>(), result["runs"].get<int>(),
      result["fsync_interval_ms"].get<long long>());
  std::fprintf(out, "%-9s %7s %12s %10s %10s %12s %10s\n", "fsync", "writers", "writes/s", "p50 us", "p99 us",
               "writes/fsync", "WAL MiB/s");
  for (const json& row : result["cases"]) {
    // fsync none never syncs while running: writes/fsync has no value there.
    const double per_fsync = row["writes_per_fsync"].get<double>();
    char per_fsync_text[32] = "-";
    if (per_fsync > 0) std::snprintf(per_fsync_text, sizeof(per_fsync_text), "%.1f", per_fsync);
    std::fprintf(out, "%-9s %7d %12.0f %10.1f %10.1f %12s %10.2f\n", row["fsync"].get<std::string>().c_str(),
                 row["writers"].get<int>(), row["writes_per_s"].get<double>(),
                 row["latency_p50_us"].get<double>(), row["latency_p99_us"].get<double>(), per_fsync_text,
                 row["wal_mib_per_s"].get<double>());
  }
}

}  // namespace revkv::bench::store
