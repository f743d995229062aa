// The shared flags of the revkv command line.
#include "clients/cli/global_options.h"

#include <CLI/CLI.hpp>

#include "absl/strings/str_cat.h"
#include "clients/cli/exit_status.h"
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
  app.add_flag("--json", options->json, "write machine-readable JSON instead of text (-w json)");
  app.add_option(
         "-w,--write-out", options->write_out,
         "output format, as etcdctl's: simple (text, the default), json, or table (get, range, status)")
      ->type_name("FORMAT")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

absl::Status ResolveOutputFormat(GlobalOptions* options, std::string_view command) {
  const std::string& w = options->write_out;
  if (w.empty() || w == "simple") {
    options->output = OutputFormat::kSimple;
  } else if (w == "json") {
    options->output = OutputFormat::kJson;
  } else if (w == "table") {
    options->output = OutputFormat::kTable;
  } else {
    return UsageError(
        absl::StrCat("-w/--write-out: unknown output format \"", w, "\" (use simple, json or table)"));
  }
  if (options->json && !w.empty() && options->output != OutputFormat::kJson) {
    return UsageError(absl::StrCat("--json and -w ", w, " ask for two output formats: give one"));
  }
  if (options->json) options->output = OutputFormat::kJson;
  options->json = options->output == OutputFormat::kJson;
  if (options->output == OutputFormat::kTable && command != "get" && command != "range" &&
      command != "status") {
    return UsageError(absl::StrCat("-w table is not supported by ", std::string(command),
                                   " (get, range and status write tables; use simple or json)"));
  }
  return absl::OkStatus();
}

}  // namespace revkv::client
