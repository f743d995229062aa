// `revkv gc watch`: samples Admin.GetStats every --interval and shows each refresh (gc_view.h) as a live
// view redrawn in place when standard output is a terminal, as one plain line per refresh when it is
// not, or as one JSON object per line with --json.
#ifndef REVKV_CLIENTS_CLI_GC_WATCH_H_
#define REVKV_CLIENTS_CLI_GC_WATCH_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "clients/cli/global_options.h"

namespace revkv::client {

struct GcWatchFlags {
  absl::Duration interval = absl::Seconds(1);  // between refreshes
  int64_t count = 0;                           // refreshes before stopping; 0: until Ctrl-C
};

// Runs the watch until --count refreshes are shown, Ctrl-C or SIGTERM (exit status 0), or a call
// fails (its status). Blocks for as long as the watch runs.
absl::Status RunGcWatch(const GlobalOptions& global, const GcWatchFlags& flags);

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_CLI_GC_WATCH_H_
