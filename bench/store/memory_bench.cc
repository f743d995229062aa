// memory: bytes per key of revkv's heap and process, and of Redis for the same keys (benchmarks.h).
//
// revkv: a child process creates a Store without a log (the log's 16 MiB buffer and segments are not
// per-key costs), Puts the N keys one by one, and runs a major collection (what the Admin Collect RPC
// runs). The live heap is then measured twice: with the store's default history window (the last
// 10000 revisions stay readable, and so do the tree nodes they use), and after Compact to the current
// revision and a second major collection, which leaves only the current state, as Redis holds it.
// "Live heap" is the old and large spaces in use after the collection, at 16 KiB-chunk granularity;
// "live objects" is the exact size of what the collection kept (evacuated, pinned and marked bytes). RSS
// is shown with and without the free pages the runtime keeps mapped (retained free pages, and the
// evacuation reserve if HeapOptions::retain_evacuation_reserve is on; off by default).
//
// Redis: in the parent, after revkv's child has exited, a redis-server child with persistence off
// receives the same keys and values as SETs pipelined 1000 at a time; its bytes per key are the growth of
// INFO used_memory over the load. Skipped, not failed, when redis-server is not on PATH or will not start.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "bench/store/benchmarks.h"
#include "bench/store/child_process.h"
#include "bench/store/redis.h"
#include "runtime/gc/gc.h"
#include "runtime/heap/heap.h"
#include "server/store/store.h"

namespace revkv::bench::store {

namespace {

using nlohmann::json;

constexpr size_t kRedisBatch = 1000;

// The heap after a compacting major collection started now (MajorMode::kCompactEverything: the live
// objects packed into as few chunks as they fill, as every major collection did before mark-region, so
// the chunk-granularity figure is the live data's and not the holes a selective collection keeps).
json CollectAndMeasure() {
  runtime::CollectMajor(runtime::MajorMode::kCompactEverything);
  const runtime::HeapUsage usage = runtime::GetHeapUsage();
  const runtime::GcStatistics gc = runtime::GetGcStatistics(16);
  uint64_t object_bytes = 0;
  for (auto r = gc.recent.rbegin(); r != gc.recent.rend(); ++r) {
    if (r->kind == runtime::CollectionKind::kMajor) {
      object_bytes = r->bytes_copied + r->pinned_bytes + r->bytes_marked;
      break;
    }
  }
  return {{"live_heap_bytes", usage.old_bytes + usage.large_bytes},
          {"live_object_bytes", object_bytes},
          {"committed_bytes", usage.committed_bytes},
          {"retained_bytes", usage.retained_bytes},
          {"rss_bytes", RssBytes()}};
}

absl::StatusOr<json> MemoryChild(uint64_t keys) {
  const uint64_t rss_at_start = RssBytes();
  const server::StoreOptions options;
  absl::StatusOr<std::unique_ptr<server::Store>> created = server::Store::Create(options, nullptr);
  if (!created.ok()) return created.status();
  server::Store& store = **created;

  const uint64_t start = NowNanos();
  etcdserverpb::PutRequest put;
  for (uint64_t i = 0; i < keys; ++i) {
    put.set_key(Key(i));
    put.set_value(Value(i));
    if (absl::Status s = store.Put(put).status(); !s.ok()) return s;
  }
  const double load_seconds = SecondsSince(start);
  if (store.KeyCount() != static_cast<int64_t>(keys)) {
    return absl::InternalError(absl::StrCat("the store holds ", store.KeyCount(), " keys, not ", keys));
  }

  const json with_history = CollectAndMeasure();
  etcdserverpb::CompactionRequest compact;
  compact.set_revision(store.Revision());
  if (absl::Status s = store.Compact(compact).status(); !s.ok()) return s;
  const json compacted = CollectAndMeasure();
  return json{{"load_seconds", load_seconds},
              {"history_revisions", options.history_revisions},
              {"rss_at_start_bytes", rss_at_start},
              {"with_history", with_history},
              {"compacted", compacted}};
}

// Loads the keys into a fresh redis-server; the reason in `skipped` if it cannot.
json RedisMemory(const Config& config) {
  absl::StatusOr<std::string> binary = RedisServer::FindBinary();
  if (!binary.ok()) {
    return {{"skipped", "redis-server is not on PATH (Debian: apt-get install redis-server)"}};
  }
  const std::string dir = config.dir + "/redis";
  std::filesystem::create_directories(dir);
  absl::StatusOr<json> result = [&]() -> absl::StatusOr<json> {
    absl::StatusOr<std::unique_ptr<RedisServer>> server = RedisServer::Start(*binary, dir);
    if (!server.ok()) return server.status();
    absl::StatusOr<std::unique_ptr<RespClient>> client = RespClient::Connect((*server)->port());
    if (!client.ok()) return client.status();
    RespClient& redis = **client;
    redis.Queue({"INFO", "server"});
    redis.Queue({"INFO", "memory"});
    absl::StatusOr<std::vector<std::string>> before = redis.Exec();
    if (!before.ok()) return before.status();

    const uint64_t start = NowNanos();
    for (uint64_t from = 0; from < config.load_keys; from += kRedisBatch) {
      const uint64_t to = std::min<uint64_t>(config.load_keys, from + kRedisBatch);
      for (uint64_t i = from; i < to; ++i) redis.Queue({"SET", Key(i), Value(i)});
      absl::StatusOr<std::vector<std::string>> replies = redis.Exec();
      if (!replies.ok()) return replies.status();
      for (const std::string& r : *replies) {
        if (r != "OK") return absl::InternalError("SET answered " + r);
      }
    }
    const double load_seconds = SecondsSince(start);
    redis.Queue({"DBSIZE"});
    redis.Queue({"INFO", "memory"});
    absl::StatusOr<std::vector<std::string>> after = redis.Exec();
    if (!after.ok()) return after.status();
    if (std::strtoull((*after)[0].c_str(), nullptr, 10) != config.load_keys) {
      return absl::InternalError("redis holds " + (*after)[0] + " keys");
    }
    const std::string& info_before = (*before)[1];
    const std::string& info_after = (*after)[1];
    return json{{"binary", *binary},
                {"version", InfoText((*before)[0], "redis_version")},
                {"allocator", InfoText(info_after, "mem_allocator")},
                {"load_seconds", load_seconds},
                {"used_memory_before", InfoField(info_before, "used_memory")},
                {"used_memory_after", InfoField(info_after, "used_memory")},
                {"used_memory_rss_after", InfoField(info_after, "used_memory_rss")}};
  }();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (!result.ok()) return {{"skipped", "redis failed: " + result.status().ToString()}};
  return *result;
}

}  // namespace

absl::StatusOr<json> RunMemory(const Config& config) {
  std::fprintf(stderr, "memory: loading %llu keys into revkv\n",
               static_cast<unsigned long long>(config.load_keys));
  absl::StatusOr<json> revkv =
      RunInChild("memory", config.max_heap_bytes, [&] { return MemoryChild(config.load_keys); });
  if (!revkv.ok()) return revkv.status();
  json redis = {{"skipped", "--no-redis"}};
  if (config.redis) {
    std::fprintf(stderr, "memory: loading %llu keys into redis-server\n",
                 static_cast<unsigned long long>(config.load_keys));
    redis = RedisMemory(config);
  }
  return json{{"keys", config.load_keys},
              {"key_bytes", kKeyBytes},
              {"value_bytes", kValueBytes},
              {"revkv", *revkv},
              {"redis", redis}};
}

void PrintMemory(const json& result, std::FILE* out) {
  const double keys = result["keys"].get<double>();
  const json& revkv = result["revkv"];
  const json& redis = result["redis"];
  std::fprintf(
      out,
      "\nmemory: %.0f keys (%zu B keys, %zu B values: %zu B of data per key); revkv: Store without a "
      "log, loaded with Puts in %.2f s, then a major collection\n",
      keys, kKeyBytes, kValueBytes, kKeyBytes + kValueBytes, revkv["load_seconds"].get<double>());
  std::fprintf(out, "%-64s %12s %10s\n", "", "MiB", "bytes/key");
  const auto line = [&](const std::string& what, double bytes) {
    std::fprintf(out, "%-64s %12.1f %10.1f\n", what.c_str(), bytes / (1 << 20), bytes / keys);
  };
  const double rss_start = revkv["rss_at_start_bytes"].get<double>();
  line("revkv live heap, history window (last " + std::to_string(revkv["history_revisions"].get<int64_t>()) +
           " revisions) kept",
       revkv["with_history"]["live_heap_bytes"].get<double>());
  line("revkv live heap, compacted to the current revision",
       revkv["compacted"]["live_heap_bytes"].get<double>());
  line("revkv live objects (exact), compacted", revkv["compacted"]["live_object_bytes"].get<double>());
  line("revkv heap committed (pages), compacted", revkv["compacted"]["committed_bytes"].get<double>());
  line("revkv free pages kept mapped (retained), compacted",
       revkv["compacted"]["retained_bytes"].get<double>());
  line("revkv process RSS (VmRSS), compacted", revkv["compacted"]["rss_bytes"].get<double>());
  line("revkv process RSS without the retained free pages, compacted",
       revkv["compacted"]["rss_bytes"].get<double>() - revkv["compacted"]["retained_bytes"].get<double>());
  line("revkv process RSS growth over the load (VmRSS - VmRSS at start)",
       revkv["compacted"]["rss_bytes"].get<double>() - rss_start);
  if (redis.contains("skipped")) {
    std::fprintf(out, "redis: skipped: %s\n", redis["skipped"].get<std::string>().c_str());
    return;
  }
  const double redis_growth =
      redis["used_memory_after"].get<double>() - redis["used_memory_before"].get<double>();
  const double redis_rss = redis["used_memory_rss_after"].get<double>();
  line("redis " + redis["version"].get<std::string>() + " used_memory growth over the load (" +
           redis["allocator"].get<std::string>() + ")",
       redis_growth);
  line("redis process RSS (used_memory_rss)", redis_rss);
  const auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  std::fprintf(out,
               "ratio revkv / redis: live heap (compacted) / used_memory growth %.2f; RSS / RSS %.2f "
               "(%.2f without the retained free pages)\n",
               ratio(revkv["compacted"]["live_heap_bytes"].get<double>(), redis_growth),
               ratio(revkv["compacted"]["rss_bytes"].get<double>(), redis_rss),
               ratio(revkv["compacted"]["rss_bytes"].get<double>() -
                         revkv["compacted"]["retained_bytes"].get<double>(),
                     redis_rss));
  std::fprintf(out, "(redis loaded in %.2f s over one connection, %zu SETs per pipelined batch)\n",
               redis["load_seconds"].get<double>(), kRedisBatch);
}

}  // namespace revkv::bench::store
