// Duration-valued command-line options: "10s", "250ms", "1m30s", or a bare number of seconds ("2.5").
#ifndef REVKV_CLIENTS_COMMON_DURATION_FLAG_H_
#define REVKV_CLIENTS_COMMON_DURATION_FLAG_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace revkv::client {

// Parses a duration as above. INVALID_ARGUMENT for anything else, negative durations included.
absl::StatusOr<absl::Duration> ParseDurationFlag(absl::string_view text);

// Adds an option `name` to `app` that parses its value with ParseDurationFlag into `*value` (which must
// outlive the parse); the current `*value` is shown as the default. Returns the option for chaining.
CLI::Option* AddDurationOption(CLI::App& app, const std::string& name, absl::Duration* value,
                               const std::string& description);

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_COMMON_DURATION_FLAG_H_
