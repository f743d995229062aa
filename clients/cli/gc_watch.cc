// The gc watch loop: one GetStats before the first refresh, then one per refresh; each refresh shows the
// rates between the last two samples.
#include "clients/cli/gc_watch.h"

#include <iostream>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "clients/cli/connection.h"
#include "clients/cli/exit_status.h"
#include "clients/cli/gc_view.h"
#include "clients/cli/terminal.h"

namespace revkv::client {
namespace {

absl::StatusOr<revkv::v1::GetStatsResponse> Sample(const Connection& connection) {
  revkv::v1::GetStatsRequest request;
  request.set_recent_events(kGcSparklineWidth);
  revkv::v1::GetStatsResponse response;
  absl::Status status =
      connection.Call(connection.admin(), &revkv::v1::Admin::Stub::GetStats, request, &response);
  if (!status.ok()) return status;
  return response;
}

}  // namespace

absl::Status RunGcWatch(const GlobalOptions& global, const GcWatchFlags& flags) {
  if (flags.interval < absl::Milliseconds(10)) {
    return UsageError("gc watch: --interval must be at least 10ms");
  }
  if (flags.count < 0) return UsageError("gc watch: --count must be >= 0");
  absl::StatusOr<std::unique_ptr<Connection>> connection = Connection::Open(global);
  if (!connection.ok()) return connection.status();
  const Connection& c = **connection;

  InterruptGuard interrupt;
  absl::StatusOr<revkv::v1::GetStatsResponse> previous = Sample(c);
  if (!previous.ok()) return previous.status();
  absl::Time previous_time = absl::Now();

  const bool live = !global.json && StdoutIsTerminal();
  std::optional<LiveScreen> screen;
  if (live) screen.emplace(std::cout);
  const std::string title =
      absl::StrCat(c.endpoint(), "  every ", absl::FormatDuration(flags.interval), "  (Ctrl-C quits)");

  for (int64_t shown = 0; flags.count == 0 || shown < flags.count; ++shown) {
    if (!InterruptGuard::SleepUnlessInterrupted(flags.interval)) break;
    absl::StatusOr<revkv::v1::GetStatsResponse> current = Sample(c);
    if (!current.ok()) return current.status();
    const absl::Time now = absl::Now();
    const GcFrame frame = MakeGcFrame(*previous, *current, absl::ToDoubleSeconds(now - previous_time));
    if (global.json) {
      std::cout << GcFrameToJson(frame).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
                << '\n'
                << std::flush;
    } else if (live) {
      screen->Draw(RenderGcView(frame, title, now));
    } else {
      std::cout << RenderGcLine(frame, now) << '\n' << std::flush;
    }
    previous = *std::move(current);
    previous_time = now;
  }
  return absl::OkStatus();
}

}  // namespace revkv::client
