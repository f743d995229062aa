// Progress lines, systemd and signals during recovery (recovery_watch.h).
#include "server/process/recovery_watch.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "spdlog/spdlog.h"

namespace revkv::server {
namespace {

std::string Line(const RecoveryProgress::Snapshot& s) {
  return absl::StrFormat("%s, %.1f s so far", s.Describe(), static_cast<double>(s.elapsed.count()) / 1000);
}

// The figures that show movement (the elapsed time does not count).
bool SameFigures(const RecoveryProgress::Snapshot& a, const RecoveryProgress::Snapshot& b) {
  return a.phase == b.phase && a.checkpoint == b.checkpoint && a.checkpoint_loaded == b.checkpoint_loaded &&
         a.log_segment == b.log_segment && a.log_bytes_replayed == b.log_bytes_replayed &&
         a.revision == b.revision;
}

}  // namespace

RecoveryWatch::RecoveryWatch(const RecoveryProgress* progress, const SystemdNotifier* systemd,
                             Options options)
    : progress_(progress), systemd_(systemd), options_(std::move(options)) {
  thread_ = std::thread([this] { Loop(); });
}

RecoveryWatch::~RecoveryWatch() { Stop(); }

void RecoveryWatch::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void RecoveryWatch::Loop() {
  // systemd waits this much longer after each sign of progress.
  const auto extension =
      std::max<std::chrono::microseconds>(std::chrono::seconds(30), 3 * options_.log_interval);
  const bool any_signal = !sigisemptyset(&options_.signals);
  RecoveryProgress::Snapshot last = progress_->Read();
  systemd_->ExtendStart("recovering: " + last.Describe(), extension);
  auto next_line = std::chrono::steady_clock::now() + options_.log_interval;
  for (;;) {
    if (any_signal) {
      const timespec wait{options_.poll.count() / 1000, (options_.poll.count() % 1000) * 1000000};
      const int signal = sigtimedwait(&options_.signals, nullptr, &wait);
      if (signal == SIGHUP) {
        spdlog::info(
            "SIGHUP during recovery: ignored (revkv logs to stderr and reads its settings only at start)");
      } else if (signal == SIGINT || signal == SIGTERM) {
        spdlog::warn(
            "{} during recovery: stopping before the store is recovered ({}); nothing is lost, the next "
            "start recovers again",
            signal == SIGINT ? "SIGINT" : "SIGTERM", progress_->Read().Describe());
        systemd_->Stopping("stopping during recovery");
        if (options_.on_stop) options_.on_stop(signal);
      }
    }
    {
      std::unique_lock<std::mutex> lock(mu_);
      // With signals to take, sigtimedwait already waited a poll period.
      cv_.wait_for(lock, any_signal ? std::chrono::milliseconds(0) : options_.poll,
                   [this] { return stopping_; });
      if (stopping_) return;
    }
    const RecoveryProgress::Snapshot now = progress_->Read();
    if (now.phase == RecoveryProgress::Phase::kDone) continue;
    const bool phase_changed = now.phase != last.phase || now.checkpoint != last.checkpoint;
    const bool due = std::chrono::steady_clock::now() >= next_line;
    if (!phase_changed && !due) continue;
    spdlog::info("recovery: {}", Line(now));
    if (!SameFigures(now, last)) {
      systemd_->ExtendStart("recovering: " + now.Describe(), extension);
    } else {
      systemd_->Status("recovering, no progress for a while: " + now.Describe());
    }
    last = now;
    next_line = std::chrono::steady_clock::now() + options_.log_interval;
  }
}

}  // namespace revkv::server
