// How far recovery has come (recovery_progress.h).
#include "server/engine/recovery_progress.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace revkv::server {
namespace {

std::string Percent(double fraction) { return absl::StrFormat("%d%%", static_cast<int>(fraction * 100)); }

std::string Bytes(uint64_t bytes) {
  if (bytes >= (uint64_t{1} << 30))
    return absl::StrFormat("%.1f GiB", static_cast<double>(bytes) / (1 << 30));
  if (bytes >= (uint64_t{1} << 20))
    return absl::StrFormat("%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  if (bytes >= (uint64_t{1} << 10))
    return absl::StrFormat("%.1f KiB", static_cast<double>(bytes) / (1 << 10));
  return absl::StrCat(bytes, " bytes");
}

}  // namespace

std::string_view RecoveryPhaseName(RecoveryProgress::Phase phase) {
  switch (phase) {
    case RecoveryProgress::Phase::kStarting:
      return "starting";
    case RecoveryProgress::Phase::kCheckpoint:
      return "checkpoint";
    case RecoveryProgress::Phase::kLog:
      return "log";
    case RecoveryProgress::Phase::kFinishing:
      return "finishing";
    case RecoveryProgress::Phase::kDone:
      return "done";
  }
  return "?";
}

double RecoveryProgress::Snapshot::PhaseFraction() const {
  switch (phase) {
    case Phase::kCheckpoint:
      return checkpoint_entries == 0 ? 0.0
                                     : std::min(1.0, static_cast<double>(checkpoint_loaded) /
                                                         static_cast<double>(checkpoint_entries));
    case Phase::kLog:
      return log_bytes == 0
                 ? 0.0
                 : std::min(1.0, static_cast<double>(log_bytes_replayed) / static_cast<double>(log_bytes));
    case Phase::kFinishing:
    case Phase::kDone:
      return 1.0;
    case Phase::kStarting:
      return 0.0;
  }
  return 0.0;
}

std::string RecoveryProgress::Snapshot::Describe() const {
  switch (phase) {
    case Phase::kStarting:
      return "opening the data directory";
    case Phase::kCheckpoint:
      return absl::StrCat("loading checkpoint ", checkpoint, ": ", checkpoint_loaded, " of ",
                          checkpoint_entries, " entries (", Percent(PhaseFraction()), ")");
    case Phase::kLog:
      if (log_segment == 0) {
        return absl::StrCat("replaying the log: ", log_segments, " segment(s), ", Bytes(log_bytes));
      }
      return absl::StrCat("replaying log segment ", log_segment, "/", log_segments, " (revision ", revision,
                          "), ", Percent(PhaseFraction()), " of ", Bytes(log_bytes));
    case Phase::kFinishing:
      return absl::StrCat("restoring the compaction and the leases (revision ", revision, ")");
    case Phase::kDone:
      return "recovered";
  }
  return "?";
}

RecoveryProgress::RecoveryProgress() : start_(std::chrono::steady_clock::now()) {}

void RecoveryProgress::StartCheckpoint(std::string_view file_name, uint64_t entries) {
  {
    std::lock_guard<std::mutex> lock(name_mu_);
    checkpoint_ = std::string(file_name);
  }
  Store(checkpoint_entries_, entries);
  Store(checkpoint_loaded_, 0);
  phase_.store(static_cast<int>(Phase::kCheckpoint), std::memory_order_relaxed);
}

void RecoveryProgress::StartLog(uint64_t segments, uint64_t bytes) {
  Store(log_segments_, segments);
  Store(log_bytes_, bytes);
  Store(log_segment_, 0);
  Store(log_bytes_replayed_, 0);
  phase_.store(static_cast<int>(Phase::kLog), std::memory_order_relaxed);
}

void RecoveryProgress::LogReplayed(uint64_t segment, uint64_t bytes_replayed, int64_t revision) {
  Store(log_segment_, segment);
  Store(log_bytes_replayed_, bytes_replayed);
  revision_.store(revision, std::memory_order_relaxed);  // a figure for display, like the others
}

RecoveryProgress::Snapshot RecoveryProgress::Read() const {
  Snapshot s;
  s.phase = static_cast<Phase>(phase_.load(std::memory_order_relaxed));
  {
    std::lock_guard<std::mutex> lock(name_mu_);
    s.checkpoint = checkpoint_;
  }
  s.checkpoint_entries = checkpoint_entries_.load(std::memory_order_relaxed);
  s.checkpoint_loaded = checkpoint_loaded_.load(std::memory_order_relaxed);
  s.log_segments = log_segments_.load(std::memory_order_relaxed);
  s.log_segment = log_segment_.load(std::memory_order_relaxed);
  s.log_bytes = log_bytes_.load(std::memory_order_relaxed);
  s.log_bytes_replayed = log_bytes_replayed_.load(std::memory_order_relaxed);
  s.revision = revision_.load(std::memory_order_relaxed);
  s.elapsed =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start_);
  return s;
}

}  // namespace revkv::server
