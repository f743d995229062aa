// The flags every revkv subcommand shares: where the server is, how to reach it, how long to wait, and
// which output format to write.
#ifndef REVKV_CLIENTS_CLI_GLOBAL_OPTIONS_H_
#define REVKV_CLIENTS_CLI_GLOBAL_OPTIONS_H_

#include <string>

#include "absl/time/time.h"
#include "clients/common/transport.h"

namespace CLI {
class App;
}  // namespace CLI

namespace revkv::client {

struct GlobalOptions {
  std::string endpoints = "127.0.0.1:2379";           // etcdctl's list; the first endpoint is used
  TransportOptions transport;                         // --cacert, --cert, --key, --dial-timeout
  absl::Duration command_timeout = absl::Seconds(5);  // deadline of each call
  bool json = false;                                  // --json: machine-readable output
};

// Adds --endpoints, the transport flags, --command-timeout and --json to `app`, stored into `*options`
// (which must outlive the parse).
void AddGlobalFlags(CLI::App& app, GlobalOptions* options);

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_CLI_GLOBAL_OPTIONS_H_
