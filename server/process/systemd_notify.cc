// sd_notify(3) messages (systemd_notify.h).
#include "server/process/systemd_notify.h"

#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace revkv::server {
namespace {

// A STATUS= value is one line.
std::string OneLine(std::string_view text) {
  std::string line(text);
  for (char& c : line) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return line;
}

}  // namespace

bool SystemdNotifier::enabled() const {
  return std::getenv("NOTIFY_SOCKET") != nullptr;  // NOLINT(concurrency-mt-unsafe): nobody sets it
}

void SystemdNotifier::Status(std::string_view text) const { Send(absl::StrCat("STATUS=", OneLine(text))); }

void SystemdNotifier::ExtendStart(std::string_view text, std::chrono::microseconds extension) const {
  Send(absl::StrCat("STATUS=", OneLine(text), "\nEXTEND_TIMEOUT_USEC=", extension.count()));
}

void SystemdNotifier::Ready(std::string_view text) const {
  Send(absl::StrCat("READY=1\nMAINPID=", getpid(), "\nSTATUS=", OneLine(text)));
}

void SystemdNotifier::Stopping(std::string_view text) const {
  Send(absl::StrCat("STOPPING=1\nSTATUS=", OneLine(text)));
}

void SystemdNotifier::Send(const std::string& message) const {
  // unset_environment = 0: every later message goes to the same socket.
  const int rc = sd_notify(0, message.c_str());
  if (rc < 0)
    spdlog::warn("cannot notify systemd ({}): {}", message.substr(0, message.find('\n')), std::strerror(-rc));
}

}  // namespace revkv::server
