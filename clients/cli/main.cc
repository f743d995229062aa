// revkv: the command-line client of revkv (and of etcd's v3 API).
//
//   revkv put greeting hello
//   revkv range --prefix greet --json
//   revkv txn --if 'mod(greeting) > 0' --then 'put greeting hi' --else 'get greeting'
//   revkv gc watch
//
// main declares the shared flags and the subcommands, parses, runs the chosen subcommand and turns its
// status into the exit status (exit_status.h). docs/cli.md describes every subcommand.
#include <CLI/CLI.hpp>
#include <iostream>
#include <string>
#include <vector>

#include "clients/cli/command.h"
#include "clients/cli/exit_status.h"
#include "clients/cli/gc_commands.h"
#include "clients/cli/global_options.h"
#include "clients/cli/kv_commands.h"
#include "clients/cli/server_commands.h"
#include "clients/cli/txn_command.h"
#include "server/config/version.h"

int main(int argc, char** argv) {
  using namespace revkv::client;
  GlobalOptions global;
  CommandDispatch dispatch;
  CLI::App app("revkv: command-line client for revkv's etcd v3 API and its Admin service");
  app.set_version_flag("--version", std::string("revkv ") + std::string(revkv::server::kServerVersion),
                       "Print the version and exit");
  app.require_subcommand(1);
  app.fallthrough();  // flags of the whole command line may follow the subcommand: `revkv get k --json`
  app.footer(
      "Exit status: 0 success, 1 error (server unreachable, etcd error), 2 bad usage, 3 `get` found no "
      "key. See docs/cli.md.");
  AddGlobalFlags(app, &global);
  const CommandSetup setup{.global = &global, .dispatch = &dispatch};
  AddKvCommands(app, setup);
  AddTxnCommand(app, setup);
  AddServerCommands(app, setup);
  AddGcCommands(app, setup);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);  // --help
    // CLI11 reports `revkv frob` as a missing subcommand; name the word it did not know instead.
    const std::vector<std::string> unknown = app.remaining();
    if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr && !unknown.empty()) {
      std::cerr << "revkv: unknown command \"" << unknown.front() << "\"\nRun with --help for usage.\n";
      return kExitUsage;
    }
    std::cerr << "revkv: " << e.what() << "\nRun with --help for usage.\n";
    return kExitUsage;
  }
  const std::vector<CLI::App*> chosen = app.get_subcommands();
  if (absl::Status s = ResolveOutputFormat(&global, chosen.empty() ? "" : chosen.front()->get_name());
      !s.ok()) {
    std::cerr << "revkv: " << s.message() << '\n';
    return ExitStatusOf(s);
  }
  const absl::Status status = dispatch.Run();
  std::cout.flush();
  if (!status.ok()) std::cerr << "revkv: " << status.message() << '\n';
  return ExitStatusOf(status);
}
