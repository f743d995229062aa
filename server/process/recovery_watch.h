// Watching a recovery that runs on main's thread: a thread that logs the progress at each change of
// phase and every `log_interval` ("recovery: replaying log segment 3/8 (revision 41211), 41% of 512 MiB,
// 12.3 s so far"), tells systemd (STATUS=, and EXTEND_TIMEOUT_USEC= while the figures move, so that a
// recovery making progress outlives TimeoutStartSec and one that is stuck does not), and takes the
// signals main has blocked: SIGHUP is logged and otherwise ignored; SIGINT and SIGTERM call on_stop
// (main exits: nothing has been acknowledged yet, and recovery survives an interruption as it survives
// a crash).
//
// Thread-safety: construct and Stop from one thread (main).
#pragma once

#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "server/engine/recovery_progress.h"
#include "server/process/systemd_notify.h"

namespace revkv::server {

class RecoveryWatch {
 public:
  struct Options {
    std::chrono::milliseconds log_interval{5000};  // a progress line at least this often
    std::chrono::milliseconds poll{200};           // how often the figures and the signals are looked at
    sigset_t signals;                              // taken with sigtimedwait; empty: none
    std::function<void(int signal)> on_stop;       // SIGINT or SIGTERM arrived (does not return, typically)
  };

  // Starts the thread. `progress` and `systemd` are borrowed and must outlive Stop.
  RecoveryWatch(const RecoveryProgress* progress, const SystemdNotifier* systemd, Options options);
  // Stop()s.
  ~RecoveryWatch();
  RecoveryWatch(const RecoveryWatch&) = delete;
  RecoveryWatch& operator=(const RecoveryWatch&) = delete;

  // Ends the thread (a signal not yet taken stays pending for main). Idempotent.
  void Stop();

 private:
  void Loop();

  const RecoveryProgress* const progress_;
  const SystemdNotifier* const systemd_;
  const Options options_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace revkv::server
