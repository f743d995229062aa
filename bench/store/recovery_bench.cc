// recovery: how long the Engine takes to open again after a restart (benchmarks.h).
//
// One child process writes N keys through an Engine with fsync none (Puts back to back, without waiting
// for acknowledgements) and closes it, which writes and syncs the whole log. Then, each in a fresh
// process, as a restart is:
//   (a) `runs` opens from the log alone: every record is replayed as a transaction;
//   one open that takes a checkpoint (Engine::Checkpoint) and closes;
//   (b) `runs` opens from that checkpoint: its entries are loaded in batches and the log after it is empty.
// Only Engine::Open is timed, from the call to its return (the runtime is already started). The files
// have just been written, so they are read from the page cache: warm restarts, bound by the CPU.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/store/benchmarks.h"
#include "bench/store/child_process.h"
#include "server/engine/engine.h"

namespace revkv::bench::store {

namespace {

using nlohmann::json;

server::EngineOptions Options(const std::string& dir) {
  server::EngineOptions o;
  o.data_dir = dir;
  o.fsync_mode = server::FsyncMode::kNone;
  o.checkpoint_interval = 0;
  return o;
}

absl::StatusOr<json> WriteChild(const std::string& dir, uint64_t keys) {
  absl::StatusOr<std::unique_ptr<server::Engine>> engine = server::Engine::Open(Options(dir), nullptr);
  if (!engine.ok()) return engine.status();
  const uint64_t start = NowNanos();
  etcdserverpb::PutRequest put;
  for (uint64_t i = 0; i < keys; ++i) {
    put.set_key(Key(i));
    put.set_value(Value(i));
    if (absl::Status s = (*engine)->store().Put(put).status(); !s.ok()) return s;
  }
  if (absl::Status s = (*engine)->Close(); !s.ok()) return s;
  const server::WalStats stats = (*engine)->wal().stats();
  return json{{"write_seconds", SecondsSince(start)},
              {"revision", (*engine)->store().Revision()},
              {"wal_bytes", stats.bytes_written},
              {"wal_segments", stats.segments}};
}

// Opens the engine (timed), checks it holds every key, takes a checkpoint if asked, and closes.
absl::StatusOr<json> OpenChild(const std::string& dir, uint64_t keys, bool checkpoint) {
  server::RecoveryReport report;
  const uint64_t start = NowNanos();
  absl::StatusOr<std::unique_ptr<server::Engine>> engine = server::Engine::Open(Options(dir), &report);
  const double seconds = SecondsSince(start);
  if (!engine.ok()) return engine.status();
  if (report.keys != keys) {
    return absl::InternalError(absl::StrCat("recovered ", report.keys, " keys, not ", keys));
  }
  json out = {{"open_seconds", seconds},
              {"keys_per_s", static_cast<double>(keys) / seconds},
              {"revision", report.revision},
              {"checkpoint_entries", report.checkpoint.loaded ? report.checkpoint.loaded->entry_count : 0},
              {"records_replayed", report.wal.records_replayed},
              {"segments_read", report.wal.segments_read}};
  if (checkpoint) {
    absl::StatusOr<server::CheckpointStats> c = (*engine)->Checkpoint();
    if (!c.ok()) return c.status();
    out["checkpoint_seconds"] = static_cast<double>(c->duration.count()) / 1e3;
    out["checkpoint_bytes"] = c->bytes;
  }
  if (absl::Status s = (*engine)->Close(); !s.ok()) return s;
  return out;
}

// The medians of `field` over `runs`.
double MedianOf(const std::vector<json>& runs, const char* field) {
  std::vector<double> v;
  v.reserve(runs.size());
  for (const json& r : runs) v.push_back(r[field].get<double>());
  return Median(v);
}

}  // namespace

absl::StatusOr<json> RunRecovery(const Config& config) {
  const std::string dir = config.dir + "/recovery";
  const uint64_t keys = config.load_keys;
  std::fprintf(stderr, "recovery: writing %llu keys under %s\n", static_cast<unsigned long long>(keys),
               dir.c_str());
  const auto cleanup = [&] {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  };
  absl::StatusOr<json> written =
      RunInChild("recovery write", config.max_heap_bytes, [&] { return WriteChild(dir, keys); });
  if (!written.ok()) {
    cleanup();
    return written.status();
  }
  // Runs `runs` opens (and one more that checkpoints, if asked) and returns the timed opens.
  const auto opens = [&](const char* what, bool then_checkpoint) -> absl::StatusOr<std::vector<json>> {
    std::vector<json> results;
    for (int run = 1; run <= config.runs + (then_checkpoint ? 1 : 0); ++run) {
      const bool checkpoint = then_checkpoint && run > config.runs;
      absl::StatusOr<json> r = RunInChild(std::string("recovery ") + what, config.max_heap_bytes,
                                          [&] { return OpenChild(dir, keys, checkpoint); });
      if (!r.ok()) return r.status();
      std::fprintf(stderr, "  %s%s: opened in %.3f s\n", what, checkpoint ? " (then checkpoint)" : "",
                   (*r)["open_seconds"].get<double>());
      results.push_back(std::move(*r));
    }
    return results;
  };
  absl::StatusOr<std::vector<json>> from_log = opens("from the log", /*then_checkpoint=*/true);
  if (!from_log.ok()) {
    cleanup();
    return from_log.status();
  }
  const json checkpointed = from_log->back();
  from_log->pop_back();
  absl::StatusOr<std::vector<json>> from_checkpoint = opens("from the checkpoint", /*then_checkpoint=*/false);
  cleanup();
  if (!from_checkpoint.ok()) return from_checkpoint.status();

  const auto summary = [&](const std::vector<json>& runs) {
    return json{{"open_seconds", MedianOf(runs, "open_seconds")},
                {"keys_per_s", MedianOf(runs, "keys_per_s")},
                {"checkpoint_entries", runs.front()["checkpoint_entries"]},
                {"records_replayed", runs.front()["records_replayed"]},
                {"segments_read", runs.front()["segments_read"]},
                {"runs", runs}};
  };
  return json{
      {"keys", keys},
      {"dir", dir},
      {"file_system", FileSystemOf(config.dir)},
      {"runs", config.runs},
      {"write", *written},
      {"checkpoint",
       {{"seconds", checkpointed["checkpoint_seconds"]}, {"bytes", checkpointed["checkpoint_bytes"]}}},
      {"from_log", summary(*from_log)},
      {"from_checkpoint", summary(*from_checkpoint)}};
}

void PrintRecovery(const json& result, std::FILE* out) {
  const json& w = result["write"];
  std::fprintf(
      out,
      "\nrecovery: Engine::Open after writing %llu keys (fsync none; %.2f s to write, log of %.1f MiB in "
      "%llu segment(s))\n          data under %s (%s), warm page cache; median of %d open(s), each in "
      "a fresh process\n",
      result["keys"].get<unsigned long long>(), w["write_seconds"].get<double>(),
      w["wal_bytes"].get<double>() / (1 << 20), w["wal_segments"].get<unsigned long long>(),
      result["dir"].get<std::string>().c_str(), result["file_system"].get<std::string>().c_str(),
      result["runs"].get<int>());
  std::fprintf(out, "%-34s %10s %12s %12s %10s %9s\n", "open", "seconds", "keys/s", "ckpt entries",
               "replayed", "segments");
  for (const auto& [name, key] : {std::pair{"(a) from the log alone (replay)", "from_log"},
                                  std::pair{"(b) checkpoint + empty log tail", "from_checkpoint"}}) {
    const json& r = result[key];
    std::fprintf(out, "%-34s %10.3f %12.0f %12llu %10llu %9llu\n", name, r["open_seconds"].get<double>(),
                 r["keys_per_s"].get<double>(), r["checkpoint_entries"].get<unsigned long long>(),
                 r["records_replayed"].get<unsigned long long>(),
                 r["segments_read"].get<unsigned long long>());
  }
  std::fprintf(out, "checkpoint taken between (a) and (b): %.3f s, %.1f MiB\n",
               result["checkpoint"]["seconds"].get<double>(),
               result["checkpoint"]["bytes"].get<double>() / (1 << 20));
}

}  // namespace revkv::bench::store
