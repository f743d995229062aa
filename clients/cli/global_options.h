// The flags every revkv subcommand shares: where the server is, how to reach it, how long to wait, and
// which output format to write.
#ifndef REVKV_CLIENTS_CLI_GLOBAL_OPTIONS_H_
#define REVKV_CLIENTS_CLI_GLOBAL_OPTIONS_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "clients/common/transport.h"

namespace CLI {
class App;
}  // namespace CLI

namespace revkv::client {

// The output formats of -w/--write-out, as etcdctl names them.
enum class OutputFormat { kSimple, kJson, kTable };

struct GlobalOptions {
  std::string endpoints = "127.0.0.1:2379";           // etcdctl's list; the first endpoint is used
  TransportOptions transport;                         // --cacert, --cert, --key, --dial-timeout
  absl::Duration command_timeout = absl::Seconds(5);  // deadline of each call
  bool json = false;                                  // machine-readable output: --json or -w json
  std::string write_out;                              // -w/--write-out as given ("" if not)
  OutputFormat output = OutputFormat::kSimple;        // set by ResolveOutputFormat
};

// Adds --endpoints, the transport flags, --command-timeout, --json and -w/--write-out to `app`, stored
// into `*options` (which must outlive the parse).
void AddGlobalFlags(CLI::App& app, GlobalOptions* options);

// After the parse: sets options->output (and options->json) from -w and --json for `command`, the
// chosen subcommand. A usage error for an unknown format, for --json beside -w simple or table, and
// for -w table with a command that has no table (only get, range and status have one).
absl::Status ResolveOutputFormat(GlobalOptions* options, std::string_view command);

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_CLI_GLOBAL_OPTIONS_H_
