// Text reports of GetStats and of one collection.
#include "clients/cli/gc_report.h"

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "clients/cli/gc_view.h"
#include "clients/cli/table.h"
#include "clients/cli/text_format.h"

namespace revkv::client {
namespace {

std::string Count(uint64_t n) { return absl::StrCat(n); }

std::string CollectionsSection(const revkv::v1::GetStatsResponse& stats) {
  Table pauses({"collections", "count", "pause total", "p50", "p99", "max"});
  for (int i = 1; i <= 5; ++i) pauses.AlignRight(i);
  for (revkv::v1::CollectionKind kind : {revkv::v1::MINOR, revkv::v1::LOCAL, revkv::v1::MAJOR}) {
    const revkv::v1::PauseSummary& p = FindPauses(stats, kind);
    pauses.AddRow({KindName(kind), Count(p.collections()), FormatNanos(p.pause_total_nanos()),
                   FormatNanos(p.pause_p50_nanos()), FormatNanos(p.pause_p99_nanos()),
                   FormatNanos(p.pause_max_nanos())});
  }
  const revkv::v1::GcFigures& gc = stats.gc();
  pauses.AddRow({"time to safepoint", "", "", FormatNanos(gc.time_to_safepoint_p50_nanos()),
                 FormatNanos(gc.time_to_safepoint_p99_nanos()),
                 FormatNanos(gc.time_to_safepoint_max_nanos())});
  Table totals;
  totals.AlignRight(1);
  totals.AddRow({"safepoints", Count(gc.safepoints())});
  totals.AddRow({"allocated", FormatBytes(gc.bytes_allocated())});
  totals.AddRow({"copied", FormatBytes(gc.bytes_copied())});
  totals.AddRow({"promoted", FormatBytes(gc.bytes_promoted())});
  totals.AddRow({"revisions freed", Count(gc.revisions_freed())});
  totals.AddRow({"chains collapsed", Count(gc.chains_collapsed())});
  totals.AddRow({"allocation failures", Count(gc.allocation_failures())});
  return absl::StrCat(pauses.Render(), "\n", totals.Render());
}

std::string HeapSection(const revkv::v1::HeapFigures& heap) {
  Table table({"heap", "bytes"});
  table.AlignRight(1);
  table.AddRow({"max", FormatBytes(heap.max_bytes())});
  table.AddRow({"reserved", FormatBytes(heap.reserved_bytes())});
  table.AddRow({"committed", FormatBytes(heap.committed_bytes())});
  table.AddRow({"nursery", FormatBytes(heap.nursery_bytes())});
  table.AddRow({"old", FormatBytes(heap.old_bytes())});
  table.AddRow({"large", FormatBytes(heap.large_bytes())});
  table.AddRow({"free", FormatBytes(heap.free_bytes())});
  table.AddRow(
      {"pinned", absl::StrCat(FormatBytes(heap.pinned_bytes()), " in ", heap.pinned_chunks(), " chunks")});
  return table.Render();
}

std::string StmSection(const revkv::v1::StmFigures& stm) {
  Table table({"stm", "count"});
  table.AlignRight(1);
  table.AddRow({"commits (writes)", Count(stm.commits())});
  table.AddRow({"commits (read-only)", Count(stm.read_only_commits())});
  table.AddRow({"aborts: read conflict", Count(stm.aborts_read_conflict())});
  table.AddRow({"aborts: lock", Count(stm.aborts_lock())});
  table.AddRow({"aborts: validation", Count(stm.aborts_validation())});
  table.AddRow({"aborts: doomed by gc", Count(stm.aborts_doomed_by_gc())});
  table.AddRow({"retries", Count(stm.retries())});
  table.AddRow({"inevitable", absl::StrCat(stm.inevitable_transactions(), " (waited ",
                                           FormatNanos(stm.inevitable_wait_nanos()), ")")});
  table.AddRow({"read set p50/p99", absl::StrCat(stm.read_set_p50(), "/", stm.read_set_p99())});
  table.AddRow({"write set p50/p99", absl::StrCat(stm.write_set_p50(), "/", stm.write_set_p99())});
  table.AddRow({"live snapshots", absl::StrCat(stm.live_snapshots(), " (oldest ",
                                               FormatNanos(stm.oldest_snapshot_age_nanos()), ")")});
  table.AddRow({"chains compressed", Count(stm.chains_compressed())});
  table.AddRow({"chain links walked", absl::StrCat(Count(stm.chain_hops()), " (",
                                                   Count(stm.skip_hints_taken()), " through skip hints)")});
  table.AddRow({"auto localizations", Count(stm.auto_localizations())});
  table.AddRow({"global time", Count(stm.global_time())});
  return table.Render();
}

std::string StoreSection(const revkv::v1::StoreFigures& store) {
  Table table({"store", "value"});
  table.AlignRight(1);
  table.AddRow({"revision", absl::StrCat(store.revision())});
  table.AddRow(
      {"compact revision", store.compact_revision() > 0 ? absl::StrCat(store.compact_revision()) : "none"});
  table.AddRow({"keys", Count(store.keys())});
  table.AddRow({"log bytes", FormatBytes(store.wal_bytes())});
  table.AddRow({"log fsyncs", Count(store.wal_fsyncs())});
  table.AddRow({"checkpoint revision", absl::StrCat(store.checkpoint_revision())});
  table.AddRow(
      {"writes", store.read_only() ? absl::StrCat("stopped: ", store.read_only_reason()) : "accepted"});
  return table.Render();
}

std::string RecentSection(const revkv::v1::GetStatsResponse& stats) {
  Table table(
      {"recent", "#", "started", "pause", "to safepoint", "heap before", "after", "copied", "reason"});
  for (int i = 1; i <= 7; ++i) table.AlignRight(i);
  for (const revkv::v1::GcEvent& e : stats.recent()) {
    const absl::Time start = absl::FromUnixNanos(static_cast<int64_t>(e.start_unix_nanos()));
    table.AddRow({KindName(e.kind()), Count(e.sequence()),
                  absl::FormatTime("%H:%M:%E3S", start, absl::LocalTimeZone()), FormatNanos(e.pause_nanos()),
                  FormatNanos(e.time_to_safepoint_nanos()), FormatBytes(e.heap_bytes_before()),
                  FormatBytes(e.heap_bytes_after()), FormatBytes(e.bytes_copied()), e.reason()});
  }
  return table.Render();
}

}  // namespace

std::string RenderGcStats(const revkv::v1::GetStatsResponse& stats) {
  std::string text = absl::StrCat(CollectionsSection(stats), "\n", HeapSection(stats.heap()), "\n",
                                  StmSection(stats.stm()), "\n", StoreSection(stats.store()));
  if (stats.recent_size() > 0) absl::StrAppend(&text, "\n", RecentSection(stats));
  return text;
}

std::string DescribeCollection(const revkv::v1::GcEvent& e) {
  return absl::StrCat(
      KindName(e.kind()), " collection #", e.sequence(), ": pause ", FormatNanos(e.pause_nanos()),
      ", time to safepoint ", FormatNanos(e.time_to_safepoint_nanos()), ", heap ",
      FormatBytes(e.heap_bytes_before()), " -> ", FormatBytes(e.heap_bytes_after()), ", copied ",
      FormatBytes(e.bytes_copied()), ", promoted ", FormatBytes(e.bytes_promoted()), ", revisions freed ",
      e.revisions_freed(), ", pinned ", FormatBytes(e.pinned_bytes()), ", threads ", e.threads(),
      e.collector_threads() == 0
          ? ""
          : absl::StrCat(", marked in place ", FormatBytes(e.bytes_marked()), ", chunks evacuated ",
                         e.chunks_evacuated(), ", collector threads ", e.collector_threads(), " (",
                         Count(e.objects_scanned()), " objects scanned, ", Count(e.steals()), " stolen)"),
      e.reason().empty() ? "" : absl::StrCat(" (", e.reason(), ")"));
}

}  // namespace revkv::client
