// Telling systemd how the start goes (a unit with Type=notify): STATUS= lines while recovering,
// EXTEND_TIMEOUT_USEC= so that a long recovery that makes progress is not killed by TimeoutStartSec,
// READY=1 once every endpoint serves, STOPPING=1 when shutdown begins. Through libsystemd's
// sd_notify(3), which does nothing when NOTIFY_SOCKET is unset (the server was not started by systemd).
//
// Thread-safety: thread-safe (each call is one datagram).
#pragma once

#include <chrono>
#include <string_view>

namespace revkv::server {

class SystemdNotifier {
 public:
  // Whether systemd listens (NOTIFY_SOCKET is set).
  bool enabled() const;

  // STATUS=<text>: the one line `systemctl status` shows.
  void Status(std::string_view text) const;
  // STATUS=<text> and EXTEND_TIMEOUT_USEC=<extension>: systemd waits at least `extension` longer.
  void ExtendStart(std::string_view text, std::chrono::microseconds extension) const;
  // READY=1, MAINPID=<pid>, STATUS=<text>.
  void Ready(std::string_view text) const;
  // STOPPING=1, STATUS=<text>.
  void Stopping(std::string_view text) const;

 private:
  void Send(const std::string& message) const;
};

}  // namespace revkv::server
