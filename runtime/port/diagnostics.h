// Messages written outside any logger: warnings the runtime gives while it runs (a thread that holds
// up a stop-the-world) and fatal errors (a broken invariant, after which the process aborts). They come
// from the lowest layers — the runtime, the log, the store — which know nothing of the program's log.
// By default each message is one line on stderr, "<message>\n". A program with a log of its own
// installs a sink, so that these lines come out in the log's format (revkv-server: JSON lines).
//
// Thread-safety: everything here may be called from any thread; SetDiagnosticSink is meant for main,
// before other threads start, but is safe at any time.
#pragma once

namespace revkv::runtime::port {

enum class DiagnosticSeverity { kWarning, kFatal };

// Receives one message (no trailing newline). For kFatal the process aborts when the sink returns, so a
// sink must write (and flush) what it will keep. A sink must not call Fatal or Warn itself.
using DiagnosticSink = void (*)(DiagnosticSeverity severity, const char* message);

// Installs `sink`; nullptr restores the default (one line on stderr).
void SetDiagnosticSink(DiagnosticSink sink);

// A printf-style warning, through the sink.
void Warn(const char* format, ...) __attribute__((format(printf, 1, 2)));

// A printf-style fatal error, through the sink; then std::abort(). Messages longer than 2 KiB are cut.
[[noreturn]] void Fatal(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace revkv::runtime::port
