// The subcommands about the server as a whole: status (etcd's Maintenance.Status with revkv's
// Admin.ServerInfo) and checkpoint (Admin.Checkpoint).
#ifndef REVKV_CLIENTS_CLI_SERVER_COMMANDS_H_
#define REVKV_CLIENTS_CLI_SERVER_COMMANDS_H_

#include "clients/cli/command.h"

namespace revkv::client {

// Declares status and checkpoint on `app`.
void AddServerCommands(CLI::App& app, const CommandSetup& setup);

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_CLI_SERVER_COMMANDS_H_
