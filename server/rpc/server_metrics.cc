// Server metrics (server_metrics.h).
#include "server/rpc/server_metrics.h"

#include <string>
#include <vector>

#include "runtime/gc/gc.h"
#include "runtime/port/diagnostics.h"
#include "runtime/stm/stm.h"
#include "server/watch/watch_hub.h"

namespace revkv::server {

namespace {

const std::vector<std::string>& Methods() {
  static const std::vector<std::string> methods = {
      "Range", "Put", "DeleteRange", "Txn", "Compact", "Status", "Alarm", "MemberList", "Pipeline",
      "PipelineBatch",
      // etcdserverpb.Lease's unary methods
      "LeaseGrant", "LeaseRevoke", "LeaseTimeToLive", "LeaseLeases",
      // v3lockpb.Lock and v3electionpb.Election (Observe is a stream)
      "Lock", "Unlock", "Campaign", "Proclaim", "Leader", "Resign"};
  return methods;
}

CumulativeHistogram FromSnapshot(const runtime::HistogramSnapshot& h, const std::vector<double>& bounds) {
  return CumulativeHistogram::FromNanos(
      bounds, [&](uint64_t ns) { return h.CountAtOrBelow(ns); }, h.count, h.sum);
}

void CollectRuntime(MetricWriter& w) {
  using runtime::CollectionKind;
  const runtime::GcStatistics gc = runtime::GetGcStatistics(0);
  for (int k = 0; k < runtime::kCollectionKinds; ++k) {
    const auto kind = static_cast<CollectionKind>(k);
    const Labels labels = {{"kind", runtime::CollectionKindName(kind)}};
    w.WriteCounter("revkv_gc_collections_total", "Garbage collections, by kind (minor, local, major).",
                   static_cast<double>(gc.collections[k]), labels);
    w.WriteHistogram("revkv_gc_pause_seconds", "Pause of each collection, by kind.",
                     FromSnapshot(runtime::PauseHistogram(kind), PauseBuckets()), labels);
  }
  w.WriteHistogram("revkv_gc_time_to_safepoint_seconds",
                   "Time from a stop-the-world request until every thread had stopped.",
                   FromSnapshot(runtime::TimeToSafepointHistogram(), PauseBuckets()));
  w.WriteCounter("revkv_gc_allocated_bytes_total", "Bytes allocated on the heap.",
                 static_cast<double>(gc.bytes_allocated));
  w.WriteCounter("revkv_gc_copied_bytes_total", "Bytes moved by evacuating collections.",
                 static_cast<double>(gc.bytes_copied));
  w.WriteCounter("revkv_gc_promoted_bytes_total", "Bytes that left a nursery (copied or promoted in place).",
                 static_cast<double>(gc.bytes_promoted));
  w.WriteCounter("revkv_gc_revisions_freed_total", "Old object revisions freed by major collections.",
                 static_cast<double>(gc.revisions_freed));
  w.WriteCounter("revkv_gc_allocation_failures_total", "Allocations refused because the heap was exhausted.",
                 static_cast<double>(gc.allocation_failures));
  // Parts, whose sum is the heap's mapped memory (committed pages plus the retained free ones): sum()
  // over space means something. The totals are gauges of their own.
  const size_t parts = gc.heap.nursery_bytes + gc.heap.old_bytes + gc.heap.large_bytes + gc.heap.free_bytes;
  const std::pair<const char*, size_t> spaces[] = {
      {"nursery", gc.heap.nursery_bytes},
      {"old", gc.heap.old_bytes},
      {"large", gc.heap.large_bytes},
      {"free", gc.heap.free_bytes},
      {"page_headers", gc.heap.committed_bytes > parts ? gc.heap.committed_bytes - parts : 0},
      {"retained", gc.heap.retained_bytes}};
  for (const auto& [space, bytes] : spaces) {
    w.WriteGauge("revkv_heap_bytes",
                 "Heap memory by use; the parts sum to the heap's mapped memory (nursery, old and large: "
                 "chunks in use; free: unused chunks of pages in use; page_headers: each page's header "
                 "chunk; retained: free pages kept mapped for the next evacuation).",
                 static_cast<double>(bytes), {{"space", space}});
  }
  w.WriteGauge("revkv_heap_committed_bytes",
               "Heap pages in use: the sum of revkv_heap_bytes but for space=\"retained\".",
               static_cast<double>(gc.heap.committed_bytes));
  w.WriteGauge("revkv_heap_max_bytes", "The configured maximum heap size (--max-heap).",
               static_cast<double>(gc.heap.max_bytes));
  w.WriteGauge("revkv_heap_reserved_bytes", "Address space reserved for the heap.",
               static_cast<double>(gc.heap.reserved_bytes));
  w.WriteGauge("revkv_heap_pinned_bytes",
               "Bytes of objects kept in place by ambiguous roots at the last collection.",
               static_cast<double>(gc.heap.pinned_bytes));
  w.WriteGauge("revkv_heap_pinned_chunks", "Chunks holding pinned objects at the last collection.",
               static_cast<double>(gc.heap.pinned_chunks));

  const runtime::stm::StmStatistics stm = runtime::stm::GetStmStatistics();
  w.WriteCounter("revkv_stm_commits_total", "Read-write transactions committed, by whether they wrote.",
                 static_cast<double>(stm.write_commits), {{"writes", "true"}});
  w.WriteCounter("revkv_stm_commits_total", "Read-write transactions committed, by whether they wrote.",
                 static_cast<double>(stm.commits - stm.write_commits), {{"writes", "false"}});
  w.WriteCounter("revkv_stm_snapshot_reads_total", "Read-only snapshot transactions.",
                 static_cast<double>(stm.snapshot_reads));
  for (int c = 0; c < runtime::stm::kAbortCauses; ++c) {
    w.WriteCounter("revkv_stm_aborts_total", "Aborted transaction attempts, by cause.",
                   static_cast<double>(stm.aborts[c]),
                   {{"cause", runtime::stm::AbortCauseName(static_cast<runtime::stm::AbortCause>(c))}});
  }
  w.WriteCounter("revkv_stm_inevitable_total", "Transactions that became inevitable.",
                 static_cast<double>(stm.inevitable));
  w.WriteCounter("revkv_stm_inevitable_wait_seconds_total",
                 "Time spent waiting for another inevitable transaction.",
                 static_cast<double>(stm.inevitable_wait_nanos) / 1e9);
  w.WriteGauge("revkv_stm_live_snapshots", "Snapshot transactions running now.",
               static_cast<double>(stm.live_snapshots));
  w.WriteGauge("revkv_stm_oldest_snapshot_age_seconds", "Age of the oldest running snapshot transaction.",
               static_cast<double>(stm.oldest_snapshot_age_nanos) / 1e9);
}

void CollectStore(ServerState* state, MetricWriter& w) {
  Engine* engine = state->engine;
  Store& store = engine->store();
  w.WriteGauge("revkv_store_revision", "The store's newest revision clients see (the log's durable one).",
               static_cast<double>(store.VisibleRevision()));
  w.WriteGauge("revkv_store_compact_revision", "The oldest revision a read may still ask for.",
               static_cast<double>(store.CompactRevision()));
  w.WriteGauge("revkv_store_keys", "Keys in the store.", static_cast<double>(store.KeyCount()));
  w.WriteGauge("revkv_store_read_only", "1 when a disk error has stopped writes (until a restart).",
               engine->write_status().ok() ? 0.0 : 1.0);
  w.WriteGauge("revkv_watch_history_revisions", "Revisions whose events the watch history holds.",
               static_cast<double>(store.events().revisions()));
  w.WriteGauge("revkv_watch_history_bytes", "Approximate memory the watch history's events hold.",
               static_cast<double>(store.events().bytes()));
  // Relaxed: counters, nothing published through them.
  w.WriteCounter("revkv_watch_responses_total", "Responses written on Watch streams.",
                 static_cast<double>(state->watch_writes.responses.load(std::memory_order_relaxed)));
  w.WriteCounter("revkv_watch_responses_buffered_total",
                 "Watch responses written with more queued behind them, which gRPC may send together "
                 "with the next (its buffer hint).",
                 static_cast<double>(state->watch_writes.buffered.load(std::memory_order_relaxed)));
  if (watch::WatchHub* hub = state->watch_hub.load(std::memory_order_acquire)) {
    w.WriteGauge("revkv_watch_watchers", "Watchers on all Watch streams.",
                 static_cast<double>(hub->watchers()));
    w.WriteGauge("revkv_watch_unsynced_watchers",
                 "Watchers catching up from the history (behind the dispatched revision).",
                 static_cast<double>(hub->unsynced()));
  }
  const WalStats wal = engine->wal().stats();
  w.WriteCounter("revkv_wal_written_bytes_total", "Bytes written to the write-ahead log.",
                 static_cast<double>(wal.bytes_written));
  w.WriteCounter("revkv_wal_records_total", "Records written to the write-ahead log.",
                 static_cast<double>(wal.records_written));
  w.WriteCounter("revkv_wal_fsyncs_total", "fdatasync calls of log segments.",
                 static_cast<double>(wal.fsyncs));
  w.WriteCounter("revkv_wal_flusher_wakeups_total",
                 "Times writers woke the log's flusher: once per write, once per PipelineBatch message.",
                 static_cast<double>(wal.notifies));
  w.WriteCounter(
      "revkv_wal_callbacks_total",
      "Durability callbacks the log's flusher ran (workers register one per group, not per answer).",
      static_cast<double>(wal.callbacks_run));
  w.WriteGauge("revkv_rpc_requests_in_flight",
               "Requests received and not yet answered (unary calls, Pipeline and PipelineBatch messages).",
               static_cast<double>(state->requests_in_flight.load(std::memory_order_relaxed)));
  w.WriteCounter("revkv_rpc_held_answers_total",
                 "Durable writes' answers sent by the worker that executed them, once durable.",
                 static_cast<double>(state->held_answers.answers.load(std::memory_order_relaxed)));
  w.WriteCounter("revkv_rpc_held_answer_wakeups_total",
                 "Alarms the log's flusher posted to a worker's queue to have it send its durable answers.",
                 static_cast<double>(state->held_answers.wakeups.load(std::memory_order_relaxed)));
  CumulativeHistogram fsync;
  fsync.upper_bounds.assign(kLatencyBucketBounds.begin(), kLatencyBucketBounds.end());
  fsync.cumulative_counts.assign(wal.fsync_latency.cumulative_counts.begin(),
                                 wal.fsync_latency.cumulative_counts.end());
  fsync.count = wal.fsync_latency.count;
  fsync.sum = wal.fsync_latency.sum_seconds;
  w.WriteHistogram("revkv_wal_fsync_duration_seconds", "Duration of each fdatasync of the log.", fsync);
  const CheckpointStats ckpt = engine->last_checkpoint();
  w.WriteGauge("revkv_checkpoint_revision", "Revision of the newest checkpoint.",
               static_cast<double>(ckpt.revision));
  w.WriteGauge("revkv_checkpoint_duration_seconds",
               "Duration of the newest checkpoint taken by this process.",
               std::chrono::duration<double>(ckpt.duration).count());
}

}  // namespace

std::string_view StatusCodeName(int code) {
  static constexpr std::string_view kNames[] = {
      "OK",       "Canceled",       "Unknown",          "InvalidArgument",   "DeadlineExceeded",
      "NotFound", "AlreadyExists",  "PermissionDenied", "ResourceExhausted", "FailedPrecondition",
      "Aborted",  "OutOfRange",     "Unimplemented",    "Internal",          "Unavailable",
      "DataLoss", "Unauthenticated"};
  return code >= 0 && code < static_cast<int>(std::size(kNames)) ? kNames[code] : "Unknown";
}

void MethodMetrics::Record(std::chrono::steady_clock::time_point start, int code) const {
  requests->Increment();
  if (code != 0) {
    const size_t index =
        code > 0 && code < static_cast<int>(errors_by_code.size()) ? static_cast<size_t>(code) : 2;
    Counter* counter = errors_by_code[index].load(std::memory_order_acquire);
    if (counter == nullptr) {  // the first error with this code: the family's lock, once
      counter = &errors->WithLabels({method, StatusCodeName(static_cast<int>(index))});
      errors_by_code[index].store(counter, std::memory_order_release);
    }
    counter->Increment();
  }
  latency->Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

const MethodMetrics& ServerState::ForMethod(const std::string& method) {
  auto it = method_metrics.find(method);
  if (it == method_metrics.end()) {
    runtime::port::Fatal("revkv: no metrics registered for method %s", method.c_str());
  }
  return it->second;
}

void RegisterServerMetrics(ServerState* state, MetricsRegistry* registry) {
  CounterFamily& requests =
      registry->AddCounterFamily("revkv_requests_total", "gRPC requests handled, by method.", {"method"});
  CounterFamily& errors = registry->AddCounterFamily(
      "revkv_request_errors_total",
      "gRPC requests answered with an error, by method and status code (gRPC's names: InvalidArgument, ...).",
      {"method", "code"});
  HistogramFamily& latency = registry->AddHistogramFamily(
      "revkv_request_duration_seconds", "gRPC request latency (until the response is sent), by method.",
      {"method"}, LatencyBuckets());
  for (const std::string& m : Methods()) {
    MethodMetrics& mm = state->method_metrics[m];
    mm.method = m;
    mm.requests = &requests.WithLabels({m});
    mm.errors = &errors;
    mm.latency = &latency.WithLabels({m});
  }
  registry->AddCollector([](MetricWriter& w) { CollectRuntime(w); });
  registry->AddCollector([state](MetricWriter& w) { CollectStore(state, w); });
}

}  // namespace revkv::server
