// Duration-valued command-line options.
#include "clients/common/duration_flag.h"

#include <CLI/CLI.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace revkv::client {

absl::StatusOr<absl::Duration> ParseDurationFlag(absl::string_view text) {
  absl::Duration duration;
  double seconds = 0;
  if (absl::SimpleAtod(text, &seconds)) {
    duration = absl::Seconds(seconds);
  } else if (!absl::ParseDuration(text, &duration)) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", text, "\" is not a duration (write e.g. 10s, 250ms, 1m30s or 2.5)"));
  }
  if (duration < absl::ZeroDuration() || duration == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("\"", text, "\" must be a finite duration >= 0"));
  }
  return duration;
}

CLI::Option* AddDurationOption(CLI::App& app, const std::string& name, absl::Duration* value,
                               const std::string& description) {
  CLI::Option* option = app.add_option_function<std::string>(
      name,
      [value](const std::string& text) {
        absl::StatusOr<absl::Duration> parsed = ParseDurationFlag(text);
        // CLI11 reports a failed option through its own exception, caught by the parse.
        if (!parsed.ok()) throw CLI::ValidationError(std::string(parsed.status().message()));
        *value = *parsed;
      },
      description);
  option->type_name("DURATION")->default_str(absl::FormatDuration(*value));
  return option;
}

}  // namespace revkv::client
