// Reading settings from a TOML file (internal to server/config).
//
// The file is flat: every top-level key is a setting's flag name with '-' replaced by '_'
// (fsync_interval = "10ms"). Unknown keys, tables and values of the wrong TOML type are errors that
// name the file, the key and its line. Thread-safe (no shared state); reads the file.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "server/config/config.h"

namespace revkv::server::config {

// Applies every key of the TOML file at `path` to `config`. InvalidArgument ("config file <path>: ...")
// when the file cannot be read or parsed, or a key is unknown or has a bad value.
absl::Status ApplyConfigFile(const std::string& path, ServerConfig& config);

}  // namespace revkv::server::config
