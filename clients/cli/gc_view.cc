// The `gc watch` frame and its renderings (gc_view.h).
#include "clients/cli/gc_view.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "clients/cli/text_format.h"

namespace revkv::client {
namespace {

using revkv::v1::CollectionKind;

constexpr std::array<CollectionKind, 3> kKinds = {revkv::v1::MINOR, revkv::v1::LOCAL, revkv::v1::MAJOR};
constexpr std::array<const char*, kAbortCauses> kAbortNames = {"read-conflict", "lock", "validation",
                                                               "doomed-by-gc"};
constexpr std::array<const char*, kAbortCauses> kAbortKeys = {"read_conflict", "lock", "validation",
                                                              "doomed_by_gc"};
constexpr int kBarWidth = 20;

uint64_t Delta(uint64_t before, uint64_t after) { return after >= before ? after - before : 0; }

std::array<uint64_t, kAbortCauses> Aborts(const revkv::v1::StmFigures& stm) {
  return {stm.aborts_read_conflict(), stm.aborts_lock(), stm.aborts_validation(), stm.aborts_doomed_by_gc()};
}

double Fraction(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0 : static_cast<double>(part) / static_cast<double>(whole);
}

std::string Percent(double fraction) { return absl::StrFormat("%3.0f%%", fraction * 100); }

std::vector<uint64_t> RecentPauses(const revkv::v1::GetStatsResponse& stats) {
  std::vector<uint64_t> pauses;
  const int first = std::max(0, stats.recent_size() - kGcSparklineWidth);
  for (int i = first; i < stats.recent_size(); ++i) pauses.push_back(stats.recent(i).pause_nanos());
  return pauses;
}

std::string LocalTime(absl::Time now, const char* format) {
  return absl::FormatTime(format, now, absl::LocalTimeZone());
}

}  // namespace

const char* KindName(CollectionKind kind) {
  switch (kind) {
    case revkv::v1::MINOR:
      return "minor";
    case revkv::v1::LOCAL:
      return "local";
    case revkv::v1::MAJOR:
      return "major";
    default:
      return "unknown";
  }
}

const revkv::v1::PauseSummary& FindPauses(const revkv::v1::GetStatsResponse& stats, CollectionKind kind) {
  for (const revkv::v1::PauseSummary& summary : stats.gc().pauses()) {
    if (summary.kind() == kind) return summary;
  }
  return revkv::v1::PauseSummary::default_instance();
}

GcFrame MakeGcFrame(const revkv::v1::GetStatsResponse& previous, const revkv::v1::GetStatsResponse& current,
                    double fallback_seconds) {
  GcFrame frame;
  frame.current = current;
  frame.seconds = current.unix_nanos() > previous.unix_nanos()
                      ? static_cast<double>(current.unix_nanos() - previous.unix_nanos()) / 1e9
                      : fallback_seconds;
  if (!(frame.seconds > 0)) return frame;  // rates stay 0
  auto rate = [&frame](uint64_t before, uint64_t after) {
    return static_cast<double>(Delta(before, after)) / frame.seconds;
  };
  for (CollectionKind kind : kKinds) {
    frame.collections_per_second[kind] =
        rate(FindPauses(previous, kind).collections(), FindPauses(current, kind).collections());
  }
  const revkv::v1::StmFigures& a = previous.stm();
  const revkv::v1::StmFigures& b = current.stm();
  frame.commits_per_second = rate(a.commits(), b.commits());
  frame.read_only_commits_per_second = rate(a.read_only_commits(), b.read_only_commits());
  frame.retries_per_second = rate(a.retries(), b.retries());
  const std::array<uint64_t, kAbortCauses> aborts_a = Aborts(a);
  const std::array<uint64_t, kAbortCauses> aborts_b = Aborts(b);
  for (int i = 0; i < kAbortCauses; ++i) frame.aborts_per_second[i] = rate(aborts_a[i], aborts_b[i]);
  return frame;
}

std::vector<std::string> RenderGcView(const GcFrame& frame, const std::string& title, absl::Time now) {
  const revkv::v1::GetStatsResponse& s = frame.current;
  const revkv::v1::HeapFigures& heap = s.heap();
  std::vector<std::string> lines;
  lines.push_back(absl::StrCat("revkv gc watch  ", title, "  ", LocalTime(now, "%Y-%m-%d %H:%M:%S")));
  lines.push_back("");
  lines.push_back(absl::StrFormat("%-16s %9s %9s %9s %9s   %s", "COLLECTIONS", "/s", "p50", "p99", "max",
                                  "(pauses since start)"));
  for (CollectionKind kind : kKinds) {
    const revkv::v1::PauseSummary& p = FindPauses(s, kind);
    lines.push_back(absl::StrFormat("  %-14s %9s %9s %9s %9s   %d total", KindName(kind),
                                    FormatRate(frame.collections_per_second[kind]),
                                    FormatNanos(p.pause_p50_nanos()), FormatNanos(p.pause_p99_nanos()),
                                    FormatNanos(p.pause_max_nanos()), p.collections()));
  }
  lines.push_back(absl::StrFormat(
      "  %-14s %9s %9s %9s %9s", "to safepoint", "", FormatNanos(s.gc().time_to_safepoint_p50_nanos()),
      FormatNanos(s.gc().time_to_safepoint_p99_nanos()), FormatNanos(s.gc().time_to_safepoint_max_nanos())));
  lines.push_back("");
  const double committed = Fraction(heap.committed_bytes(), heap.max_bytes());
  lines.push_back(absl::StrFormat("%-16s %9s [%s] %s of max %s", "HEAP committed",
                                  FormatBytes(heap.committed_bytes()), Bar(committed, kBarWidth),
                                  Percent(committed), FormatBytes(heap.max_bytes())));
  const std::array<std::pair<const char*, uint64_t>, 4> spaces = {
      std::pair{"nursery", heap.nursery_bytes()}, std::pair{"old", heap.old_bytes()},
      std::pair{"large", heap.large_bytes()}, std::pair{"free", heap.free_bytes()}};
  for (const auto& [name, bytes] : spaces) {
    const double share = Fraction(bytes, heap.committed_bytes());
    lines.push_back(absl::StrFormat("  %-14s %9s [%s] %s of committed", name, FormatBytes(bytes),
                                    Bar(share, kBarWidth), Percent(share)));
  }
  lines.push_back(absl::StrFormat("  %-14s %9s in %d chunks", "pinned", FormatBytes(heap.pinned_bytes()),
                                  heap.pinned_chunks()));
  lines.push_back("");
  lines.push_back(absl::StrFormat("%-16s %9s/s writes   %s/s read-only   %s/s retries", "STM commits",
                                  FormatRate(frame.commits_per_second),
                                  FormatRate(frame.read_only_commits_per_second),
                                  FormatRate(frame.retries_per_second)));
  std::string aborts = absl::StrFormat("  %-14s", "aborts/s");
  for (int i = 0; i < kAbortCauses; ++i) {
    absl::StrAppend(&aborts, " ", kAbortNames[i], " ", FormatRate(frame.aborts_per_second[i]),
                    i + 1 < kAbortCauses ? "  " : "");
  }
  lines.push_back(aborts);
  lines.push_back(absl::StrFormat(
      "%-16s %9d   keys %d   %s", "STORE revision", s.store().revision(), s.store().keys(),
      s.store().compact_revision() > 0 ? absl::StrCat("compacted at ", s.store().compact_revision())
                                       : std::string("never compacted")));
  lines.push_back("");
  const std::vector<uint64_t> recent = RecentPauses(s);
  if (recent.empty()) {
    lines.push_back(absl::StrFormat("%-16s (no collection yet)", "RECENT PAUSES"));
  } else {
    lines.push_back(absl::StrFormat("%-16s %s", "RECENT PAUSES", Sparkline(recent)));
    lines.push_back(absl::StrFormat("%-16s last %d collections, max %s, newest %s", "", recent.size(),
                                    FormatNanos(*std::max_element(recent.begin(), recent.end())),
                                    FormatNanos(recent.back())));
  }
  return lines;
}

std::string RenderGcLine(const GcFrame& frame, absl::Time now) {
  const revkv::v1::GetStatsResponse& s = frame.current;
  const revkv::v1::HeapFigures& heap = s.heap();
  std::string line = LocalTime(now, "%Y-%m-%dT%H:%M:%S%Ez");
  absl::StrAppend(&line, " gc/s");
  for (CollectionKind kind : kKinds) {
    absl::StrAppend(&line, " ", KindName(kind), "=", FormatRate(frame.collections_per_second[kind]));
  }
  absl::StrAppend(&line, " | pause p50/p99/max");
  for (CollectionKind kind : kKinds) {
    const revkv::v1::PauseSummary& p = FindPauses(s, kind);
    absl::StrAppend(&line, " ", KindName(kind), "=", FormatNanos(p.pause_p50_nanos()), "/",
                    FormatNanos(p.pause_p99_nanos()), "/", FormatNanos(p.pause_max_nanos()));
  }
  absl::StrAppend(&line, " tts=", FormatNanos(s.gc().time_to_safepoint_p50_nanos()), "/",
                  FormatNanos(s.gc().time_to_safepoint_p99_nanos()), "/",
                  FormatNanos(s.gc().time_to_safepoint_max_nanos()));
  absl::StrAppend(&line, " | heap committed=", FormatBytes(heap.committed_bytes()), "/",
                  FormatBytes(heap.max_bytes()), " nursery=", FormatBytes(heap.nursery_bytes()),
                  " old=", FormatBytes(heap.old_bytes()), " large=", FormatBytes(heap.large_bytes()),
                  " free=", FormatBytes(heap.free_bytes()), " pinned=", FormatBytes(heap.pinned_bytes()));
  absl::StrAppend(&line, " | stm commits/s=", FormatRate(frame.commits_per_second),
                  " read-only/s=", FormatRate(frame.read_only_commits_per_second), " aborts/s");
  for (int i = 0; i < kAbortCauses; ++i) {
    absl::StrAppend(&line, " ", kAbortNames[i], "=", FormatRate(frame.aborts_per_second[i]));
  }
  return line;
}

nlohmann::ordered_json GcFrameToJson(const GcFrame& frame) {
  const revkv::v1::GetStatsResponse& s = frame.current;
  const revkv::v1::HeapFigures& heap = s.heap();
  nlohmann::ordered_json json;
  json["unix_nanos"] = s.unix_nanos();
  json["interval_seconds"] = frame.seconds;
  for (CollectionKind kind : kKinds) {
    const revkv::v1::PauseSummary& p = FindPauses(s, kind);
    json["collections_per_second"][KindName(kind)] = frame.collections_per_second[kind];
    json["pauses"][KindName(kind)] = {{"collections", p.collections()},
                                      {"p50_nanos", p.pause_p50_nanos()},
                                      {"p99_nanos", p.pause_p99_nanos()},
                                      {"max_nanos", p.pause_max_nanos()}};
  }
  json["time_to_safepoint"] = {{"p50_nanos", s.gc().time_to_safepoint_p50_nanos()},
                               {"p99_nanos", s.gc().time_to_safepoint_p99_nanos()},
                               {"max_nanos", s.gc().time_to_safepoint_max_nanos()}};
  json["heap"] = {{"max_bytes", heap.max_bytes()},         {"committed_bytes", heap.committed_bytes()},
                  {"nursery_bytes", heap.nursery_bytes()}, {"old_bytes", heap.old_bytes()},
                  {"large_bytes", heap.large_bytes()},     {"free_bytes", heap.free_bytes()},
                  {"pinned_bytes", heap.pinned_bytes()},   {"pinned_chunks", heap.pinned_chunks()}};
  json["stm"] = {{"commits_per_second", frame.commits_per_second},
                 {"read_only_commits_per_second", frame.read_only_commits_per_second},
                 {"retries_per_second", frame.retries_per_second}};
  for (int i = 0; i < kAbortCauses; ++i) {
    json["stm"]["aborts_per_second"][kAbortKeys[i]] = frame.aborts_per_second[i];
  }
  json["store"] = {{"revision", s.store().revision()}, {"keys", s.store().keys()}};
  json["recent_pause_nanos"] = RecentPauses(s);
  return json;
}

}  // namespace revkv::client
