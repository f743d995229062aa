// The key-value subcommands: get, put, del, range and compact, over etcd's KV service.
#ifndef REVKV_CLIENTS_CLI_KV_COMMANDS_H_
#define REVKV_CLIENTS_CLI_KV_COMMANDS_H_

#include "clients/cli/command.h"

namespace revkv::client {

// Declares get, put, del, range and compact on `app`.
void AddKvCommands(CLI::App& app, const CommandSetup& setup);

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_CLI_KV_COMMANDS_H_
