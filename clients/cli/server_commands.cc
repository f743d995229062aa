// revkv status and revkv checkpoint.
#include "clients/cli/server_commands.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "clients/cli/connection.h"
#include "clients/cli/json_output.h"
#include "clients/cli/table.h"
#include "clients/cli/text_format.h"

namespace revkv::client {
namespace {

std::string Hex(uint64_t id) { return absl::StrFormat("%x", id); }

// The server's uptime from its start time, to the second.
std::string Uptime(uint64_t start_unix_nanos) {
  const absl::Time start = absl::FromUnixNanos(static_cast<int64_t>(start_unix_nanos));
  return absl::FormatDuration(absl::Trunc(absl::Now() - start, absl::Seconds(1)));
}

void PrintStatusText(const std::string& endpoint, const etcdserverpb::StatusResponse& status,
                     const std::optional<revkv::v1::ServerInfoResponse>& info) {
  Table table;
  table.AddRow({"endpoint", endpoint});
  table.AddRow({"version", status.version()});
  table.AddRow({"member id", Hex(status.header().member_id())});
  table.AddRow({"cluster id", Hex(status.header().cluster_id())});
  table.AddRow({"leader", Hex(status.leader())});
  table.AddRow({"revision", absl::StrCat(status.header().revision())});
  table.AddRow({"raft term", absl::StrCat(status.raftterm())});
  table.AddRow({"raft index", absl::StrCat(status.raftindex())});
  table.AddRow({"db size", FormatBytes(static_cast<uint64_t>(std::max<int64_t>(status.dbsize(), 0)))});
  table.AddRow({"errors", status.errors().empty() ? "none" : absl::StrJoin(status.errors(), "; ")});
  if (info.has_value()) {
    table.AddRow({"server version", info->version()});
    table.AddRow({"uptime", Uptime(info->start_unix_nanos())});
    table.AddRow({"data dir", info->data_dir()});
    table.AddRow({"listen", info->listen_address()});
    table.AddRow({"metrics", info->metrics_address()});
    table.AddRow({"fsync", info->fsync_mode()});
    table.AddRow({"workers", absl::StrCat(info->worker_threads())});
    table.AddRow({"max heap", FormatBytes(info->max_heap_bytes())});
  }
  std::cout << table.Render();
}

// -w table: the columns of `etcdctl endpoint status -w table`, one row for the endpoint.
void PrintStatusTable(const std::string& endpoint, const etcdserverpb::StatusResponse& status) {
  Table table({"ENDPOINT", "ID", "VERSION", "DB SIZE", "IS LEADER", "IS LEARNER", "RAFT TERM", "RAFT INDEX",
               "RAFT APPLIED INDEX", "ERRORS"});
  for (size_t column = 0; column < 10; ++column) table.AlignRight(column);  // etcdctl aligns every cell right
  table.AddRow({endpoint, Hex(status.header().member_id()), status.version(),
                FormatBytes(static_cast<uint64_t>(std::max<int64_t>(status.dbsize(), 0))),
                status.leader() == status.header().member_id() ? "true" : "false",
                status.islearner() ? "true" : "false", absl::StrCat(status.raftterm()),
                absl::StrCat(status.raftindex()), absl::StrCat(status.raftappliedindex()),
                absl::StrJoin(status.errors(), ", ")});
  std::cout << table.RenderBoxed();
}

absl::Status RunStatus(const GlobalOptions& global) {
  absl::StatusOr<std::unique_ptr<Connection>> connection = Connection::Open(global);
  if (!connection.ok()) return connection.status();
  const Connection& c = **connection;
  etcdserverpb::StatusResponse status;
  absl::Status called = c.Call(c.maintenance(), &etcdserverpb::Maintenance::Stub::Status,
                               etcdserverpb::StatusRequest(), &status);
  if (!called.ok()) return called;
  // ServerInfo is revkv's own; etcd answers UNIMPLEMENTED, and status then shows etcd's part alone.
  std::optional<revkv::v1::ServerInfoResponse> info;
  revkv::v1::ServerInfoResponse info_response;
  called =
      c.Call(c.admin(), &revkv::v1::Admin::Stub::ServerInfo, revkv::v1::ServerInfoRequest(), &info_response);
  if (called.ok()) {
    info = std::move(info_response);
  } else if (!absl::IsUnimplemented(called)) {
    return called;
  }
  if (global.json) {
    PrintJson(std::cout,
              nlohmann::ordered_json{{"endpoint", c.endpoint()},
                                     {"status", ProtoToJson(status)},
                                     {"server_info", info.has_value() ? ProtoToJson(*info) : nullptr}});
  } else if (global.output == OutputFormat::kTable) {
    PrintStatusTable(c.endpoint(), status);
  } else {
    PrintStatusText(c.endpoint(), status, info);
  }
  return absl::OkStatus();
}

absl::Status RunCheckpoint(const GlobalOptions& global) {
  absl::StatusOr<std::unique_ptr<Connection>> connection = Connection::Open(global);
  if (!connection.ok()) return connection.status();
  const Connection& c = **connection;
  revkv::v1::CheckpointResponse response;
  absl::Status called =
      c.Call(c.admin(), &revkv::v1::Admin::Stub::Checkpoint, revkv::v1::CheckpointRequest(), &response);
  if (!called.ok()) return called;
  if (global.json) {
    PrintProtoJson(std::cout, response);
  } else {
    std::cout << "checkpoint at revision " << response.revision() << ": " << response.path() << " ("
              << FormatBytes(response.bytes()) << ", took " << FormatNanos(response.duration_nanos())
              << ")\n";
  }
  return absl::OkStatus();
}

}  // namespace

void AddServerCommands(CLI::App& app, const CommandSetup& setup) {
  const GlobalOptions& global = *setup.global;
  CLI::App* status =
      app.add_subcommand("status", "show the server's version, revision, size and configuration");
  setup.dispatch->Bind(status, [&global] { return RunStatus(global); });
  CLI::App* checkpoint = app.add_subcommand("checkpoint", "write a checkpoint of the store now");
  setup.dispatch->Bind(checkpoint, [&global] { return RunCheckpoint(global); });
}

}  // namespace revkv::client
