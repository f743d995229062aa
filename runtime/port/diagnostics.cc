// Warnings and fatal errors through the installed sink (runtime/port/diagnostics.h).
#include "runtime/port/diagnostics.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace revkv::runtime::port {
namespace {

// Release/acquire: whatever the installer set up before installing the sink (its logger) is visible to
// the thread that calls it.
std::atomic<DiagnosticSink> g_sink{nullptr};

void Deliver(DiagnosticSeverity severity, const char* format, va_list args) {
  char message[2048];
  std::vsnprintf(message, sizeof(message), format, args);
  const DiagnosticSink sink = g_sink.load(std::memory_order_acquire);
  if (sink != nullptr) {
    sink(severity, message);
    return;
  }
  std::fputs(message, stderr);
  std::fputc('\n', stderr);
  std::fflush(stderr);
}

}  // namespace

void SetDiagnosticSink(DiagnosticSink sink) { g_sink.store(sink, std::memory_order_release); }

void Warn(const char* format, ...) {
  va_list args;
  va_start(args, format);
  Deliver(DiagnosticSeverity::kWarning, format, args);
  va_end(args);
}

void Fatal(const char* format, ...) {
  va_list args;
  va_start(args, format);
  Deliver(DiagnosticSeverity::kFatal, format, args);
  va_end(args);
  std::abort();
}

}  // namespace revkv::runtime::port
