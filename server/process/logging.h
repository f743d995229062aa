// The server's log: spdlog's default logger ("revkv") on stderr, as text or as JSON lines, with what
// gRPC and protobuf log routed into the same sink (loggers "grpc" and "protobuf"), and the warnings and
// fatal errors of the runtime and the lowest layers (runtime/port/diagnostics.h: a late safepoint, a
// broken invariant before the abort) written by "revkv" at warning and critical level, so that the
// whole stream has one format.
//
// JSON lines: every line is one JSON object, whatever the message holds (newlines, quotes, control
// characters and invalid UTF-8 are escaped), e.g.
//   {"time":"2024-05-01T10:00:00.123+00:00","level":"info","logger":"revkv","thread":123,"msg":"..."}
// which is what log shippers (journald's JSON export, Loki, Elasticsearch) parse line by line.
//
// gRPC: gpr_set_log_function forwards gRPC's messages (its own severity filter still applies: ERROR by
// default; --log-level trace lowers it to DEBUG and debug to INFO, unless GRPC_VERBOSITY is set).
//
// Thread-safety: SetUpLogging from main before other threads log; the rest is thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "server/config/config.h"

namespace revkv::server {

// Makes "revkv" (stderr, in `format`, at `level`) the default logger and routes gRPC's and protobuf's
// logging into its sink, and std::terminate's reason too (a critical line before the abort). Call once,
// early.
void SetUpLogging(LogLevel level, LogFormat format);

// Appends `text` to `out` as the inside of a JSON string: '"', '\\' and control characters escaped,
// valid UTF-8 kept, each byte of invalid UTF-8 replaced by U+FFFD.
void AppendJsonEscaped(std::string_view text, std::string& out);

}  // namespace revkv::server
