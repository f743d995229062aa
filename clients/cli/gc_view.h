// What one refresh of `revkv gc watch` shows, computed from two GetStats samples, and its three
// renderings: the live terminal view, one plain line (when standard output is not a terminal), and one
// JSON object (--json). Pure functions: no I/O, no clock (the caller passes the time).
//
// Counters in GetStats (collections, commits, aborts) only grow, so rates are their differences over
// the time between the two samples, as the server's clock measures it. Pause and time-to-safepoint
// percentiles are the server's histograms since it started; the sparkline shows the pauses of the most
// recent minor and major collections (GetStats' `recent`, oldest first), scaled to the largest.
#ifndef REVKV_CLIENTS_CLI_GC_VIEW_H_
#define REVKV_CLIENTS_CLI_GC_VIEW_H_

#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "revkv/v1/admin.pb.h"

namespace revkv::client {

// How many recent collections the view asks for and the sparkline shows.
inline constexpr int kGcSparklineWidth = 48;

// The abort causes of StmFigures, in the order the view shows them.
enum class AbortCause { kReadConflict, kLock, kValidation, kDoomedByGc };
inline constexpr int kAbortCauses = 4;

// Figures of one refresh.
struct GcFrame {
  double seconds = 0;                              // between the two samples
  std::array<double, 3> collections_per_second{};  // indexed by revkv::v1::CollectionKind
  double commits_per_second = 0;                   // transactions that wrote
  double read_only_commits_per_second = 0;
  double retries_per_second = 0;
  std::array<double, kAbortCauses> aborts_per_second{};  // indexed by AbortCause
  revkv::v1::GetStatsResponse current;                   // the newer sample
};

// The frame between `previous` and `current` (taken later). When the server's clock did not advance
// between them, `fallback_seconds` (the client's measure) is the interval. A counter that went down
// (the server restarted) counts as 0.
GcFrame MakeGcFrame(const revkv::v1::GetStatsResponse& previous, const revkv::v1::GetStatsResponse& current,
                    double fallback_seconds);

// The live view: about 24 lines of at most 80 columns, without line ends. `title` names the endpoint
// and the refresh interval; `now` is shown as local time.
std::vector<std::string> RenderGcView(const GcFrame& frame, const std::string& title, absl::Time now);

// One ASCII line with the same figures but the bars and the sparkline, for logs and pipes.
std::string RenderGcLine(const GcFrame& frame, absl::Time now);

// The frame as one JSON object (plain JSON numbers; docs/cli.md lists the fields).
nlohmann::ordered_json GcFrameToJson(const GcFrame& frame);

// The pause summary of `kind` in `stats`; an empty one if the server sent none.
const revkv::v1::PauseSummary& FindPauses(const revkv::v1::GetStatsResponse& stats,
                                          revkv::v1::CollectionKind kind);

// "minor", "local", "major".
const char* KindName(revkv::v1::CollectionKind kind);

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_CLI_GC_VIEW_H_
