// How subcommands plug into the revkv command line.
//
// Each group of subcommands (kv_commands, txn_command, server_commands, gc_commands) has an
// Add...Commands function that declares its subcommands and flags on the CLI11 app and binds each
// subcommand to an action. CLI11 only parses; the action of the chosen subcommand runs after the whole
// command line has been parsed, so that flags written after the subcommand (`revkv get k --json`) are
// already in place when it runs.
#ifndef REVKV_CLIENTS_CLI_COMMAND_H_
#define REVKV_CLIENTS_CLI_COMMAND_H_

#include <functional>

#include "absl/status/status.h"
#include "clients/cli/global_options.h"

namespace CLI {
class App;
}  // namespace CLI

namespace revkv::client {

// The action of a subcommand. Its status decides the exit status (exit_status.h).
using CommandAction = std::function<absl::Status()>;

// Remembers the action of the subcommand the command line chose. Owner thread only.
class CommandDispatch {
 public:
  // Makes `action` the one to run when `subcommand` appears on the command line.
  void Bind(CLI::App* subcommand, CommandAction action);

  // Runs the chosen action and returns its status; a usage error when none was chosen. Blocks.
  absl::Status Run() const;

 private:
  CommandAction chosen_;
};

// What the Add...Commands functions need; both pointers must outlive the parse and the run.
struct CommandSetup {
  const GlobalOptions* global;
  CommandDispatch* dispatch;
};

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_CLI_COMMAND_H_
