// The gc subcommands over revkv's Admin service: `gc stats` (GetStats), `gc collect` (Collect, a major
// collection now) and `gc watch` (gc_watch.h).
#ifndef REVKV_CLIENTS_CLI_GC_COMMANDS_H_
#define REVKV_CLIENTS_CLI_GC_COMMANDS_H_

#include "clients/cli/command.h"

namespace revkv::client {

// Declares gc with its subcommands stats, collect and watch on `app`.
void AddGcCommands(CLI::App& app, const CommandSetup& setup);

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_CLI_GC_COMMANDS_H_
