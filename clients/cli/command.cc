// Binding subcommands to their actions.
#include "clients/cli/command.h"

#include <CLI/CLI.hpp>

#include "clients/cli/exit_status.h"

namespace revkv::client {

void CommandDispatch::Bind(CLI::App* subcommand, CommandAction action) {
  subcommand->callback([this, action = std::move(action)] { chosen_ = action; });
}

absl::Status CommandDispatch::Run() const {
  if (!chosen_) return UsageError("no command given (see --help)");
  return chosen_();
}

}  // namespace revkv::client
