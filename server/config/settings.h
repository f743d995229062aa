// The table of settings: the one place that names every setting (internal to server/config).
//
// Each entry gives the flag name, its help group and text, the kind of value, and two functions: one
// that parses a value as text into a ServerConfig (checking its own range), one that shows the value.
// The command-line parser, the TOML reader, --help, Describe() and the tests all walk this table, so a
// setting added here is complete everywhere at once. Checks that involve several settings live in
// ValidateConfig. Thread-safe (the table is immutable once built).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "server/config/config.h"

namespace revkv::server::config {

// How a value is written, which decides what a TOML value may be: kText and kEnum take a TOML string,
// kSize a string or an integer, kDuration a string (or the integer 0), kCount an integer, kBool a
// boolean. On the command line everything is text, and a kBool is a flag (--x or --x=false).
enum class ValueKind { kText, kEnum, kSize, kDuration, kCount, kBool };

struct Setting {
  std::string flag;       // without dashes: "fsync-interval"
  std::string group;      // --help section: "Network", "Storage", ...
  std::string type_name;  // placeholder in --help: "SIZE", "DURATION", "HOST:PORT", ...
  std::string help;       // meaning, units and accepted values; the default is appended by --help
  ValueKind kind;
  // Parses `text` into the config. InvalidArgument without the flag name (callers prefix it).
  std::function<absl::Status(std::string_view text, ServerConfig& config)> set;
  // The value as text, in a form `set` accepts ("" for an empty string).
  std::function<std::string(const ServerConfig& config)> get;
  std::string default_text;  // for --help when get(ServerConfig{}) would mislead (e.g. workers); or ""

  // The TOML key: the flag with '-' replaced by '_'.
  std::string TomlKey() const;
};

// Records `text`, just accepted by setting.set, in config.as_given if the setting is a size or a
// duration (whose formatted value may differ from what was written); forgets an earlier one otherwise.
void RememberAsGiven(const Setting& setting, std::string_view text, ServerConfig& config);

// Every setting, in the order --help and Describe() show them.
const std::vector<Setting>& Settings();

// The setting with this flag name (without dashes) or TOML key; nullptr if none.
const Setting* FindByFlag(std::string_view flag);
const Setting* FindByTomlKey(std::string_view key);

// Checks what no single setting can: TLS files come in pairs and exist, the two listen addresses
// differ, the nurseries fit in the heap. InvalidArgument naming the flags involved.
absl::Status ValidateConfig(const ServerConfig& config);

// Checks "host:port" (port 0-65535; IPv6 hosts in brackets). InvalidArgument quoting `address`.
absl::Status ValidateAddress(std::string_view address);

}  // namespace revkv::server::config
