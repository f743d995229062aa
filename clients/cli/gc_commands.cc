// revkv gc stats | collect | watch.
#include "clients/cli/gc_commands.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "clients/cli/connection.h"
#include "clients/cli/gc_report.h"
#include "clients/cli/gc_watch.h"
#include "clients/cli/json_output.h"
#include "clients/common/duration_flag.h"

namespace revkv::client {
namespace {

struct GcStatsFlags {
  uint32_t recent = 0;  // recent collections to list
};

absl::Status RunGcStats(const GlobalOptions& global, const GcStatsFlags& flags) {
  absl::StatusOr<std::unique_ptr<Connection>> connection = Connection::Open(global);
  if (!connection.ok()) return connection.status();
  const Connection& c = **connection;
  revkv::v1::GetStatsRequest request;
  request.set_recent_events(flags.recent);
  revkv::v1::GetStatsResponse response;
  absl::Status status = c.Call(c.admin(), &revkv::v1::Admin::Stub::GetStats, request, &response);
  if (!status.ok()) return status;
  if (global.json) {
    PrintProtoJson(std::cout, response);
  } else {
    std::cout << RenderGcStats(response);
  }
  return absl::OkStatus();
}

absl::Status RunGcCollect(const GlobalOptions& global) {
  absl::StatusOr<std::unique_ptr<Connection>> connection = Connection::Open(global);
  if (!connection.ok()) return connection.status();
  const Connection& c = **connection;
  revkv::v1::CollectResponse response;
  absl::Status status =
      c.Call(c.admin(), &revkv::v1::Admin::Stub::Collect, revkv::v1::CollectRequest(), &response);
  if (!status.ok()) return status;
  if (global.json) {
    PrintProtoJson(std::cout, response);
  } else {
    std::cout << DescribeCollection(response.event()) << '\n';
  }
  return absl::OkStatus();
}

}  // namespace

void AddGcCommands(CLI::App& app, const CommandSetup& setup) {
  const GlobalOptions& global = *setup.global;
  CLI::App* gc = app.add_subcommand("gc", "the garbage collector: stats, collect, watch");
  gc->require_subcommand(1);
  gc->fallthrough();

  auto stats_flags = std::make_shared<GcStatsFlags>();
  CLI::App* stats = gc->add_subcommand("stats", "collector, heap, STM and store figures");
  stats->add_option("--recent", stats_flags->recent, "also list the last N collections (at most 1024)")
      ->check(CLI::Range(0, 1024));
  setup.dispatch->Bind(stats, [&global, stats_flags] { return RunGcStats(global, *stats_flags); });

  CLI::App* collect = gc->add_subcommand("collect", "run a major collection now and describe it");
  setup.dispatch->Bind(collect, [&global] { return RunGcCollect(global); });

  auto watch_flags = std::make_shared<GcWatchFlags>();
  CLI::App* watch = gc->add_subcommand(
      "watch", "live view of pauses, heap, collections and STM aborts (plain lines when not a terminal)");
  AddDurationOption(*watch, "--interval", &watch_flags->interval, "time between refreshes");
  watch->add_option("--count", watch_flags->count, "stop after N refreshes (0: run until Ctrl-C)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  setup.dispatch->Bind(watch, [&global, watch_flags] { return RunGcWatch(global, *watch_flags); });
}

}  // namespace revkv::client
