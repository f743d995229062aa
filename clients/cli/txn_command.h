// The txn subcommand: compares and success/failure operations from arguments or a file
// (txn_grammar.h), sent as one etcd Txn.
#ifndef REVKV_CLIENTS_CLI_TXN_COMMAND_H_
#define REVKV_CLIENTS_CLI_TXN_COMMAND_H_

#include "clients/cli/command.h"

namespace revkv::client {

// Declares txn on `app`.
void AddTxnCommand(CLI::App& app, const CommandSetup& setup);

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_CLI_TXN_COMMAND_H_
