// The shared flags of the revkv command line.
#include "clients/cli/global_options.h"

#include <CLI/CLI.hpp>

#include "clients/common/duration_flag.h"

namespace revkv::client {

void AddGlobalFlags(CLI::App& app, GlobalOptions* options) {
  app.add_option("--endpoints", options->endpoints,
                 "server address, host:port (a comma-separated list is accepted; the first is used)")
      ->capture_default_str()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->type_name("ENDPOINTS");
  AddTransportFlags(app, &options->transport);
  AddDurationOption(app, "--command-timeout", &options->command_timeout, "how long to wait for each answer");
  app.add_flag("--json", options->json, "write machine-readable JSON instead of text");
}

}  // namespace revkv::client
