// The event history (event_log.h).
#include "server/watch/event_log.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "runtime/port/diagnostics.h"

namespace revkv::server::watch {

size_t ApproximateBytes(const std::vector<WatchEvent>& events) {
  size_t bytes = sizeof(RevisionEvents) + 2 * sizeof(void*) + events.capacity() * sizeof(WatchEvent);
  for (const WatchEvent& e : events) {
    bytes += e.kv.key.capacity() + e.kv.value.capacity();
    if (e.has_prev) bytes += e.prev.key.capacity() + e.prev.value.capacity();
  }
  return bytes;
}

EventLog::EventLog(int64_t base) : contiguous_(base), first_(base + 1) {}

void EventLog::Publish(int64_t revision, std::vector<WatchEvent> events) {
  auto batch = std::make_shared<RevisionEvents>();
  batch->revision = revision;
  batch->events = std::move(events);
  batch->bytes = ApproximateBytes(batch->events);
  bool moved = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    int64_t contiguous = contiguous_.load(std::memory_order_relaxed);  // relaxed: written under mu_ only
    if (revision <= contiguous || pending_.count(revision) != 0) {
      runtime::port::Fatal("revkv: event log: revision %lld published twice (contiguous %lld)",
                           static_cast<long long>(revision), static_cast<long long>(contiguous));
    }
    bytes_.fetch_add(batch->bytes, std::memory_order_relaxed);
#ifdef REVKV_MUTATION_WATCH_UNORDERED_LOG  // mutation switch: the prefix jumps over missing revisions
    if (revision > contiguous + 1) contiguous = revision - 1;
#endif
    if (revision != contiguous + 1) {
      pending_.emplace(revision, std::move(batch));
      return;
    }
    ready_.push_back(std::move(batch));
    ++contiguous;
    for (auto it = pending_.begin(); it != pending_.end() && it->first == contiguous + 1;
         it = pending_.erase(it)) {
      ready_.push_back(std::move(it->second));
      ++contiguous;
    }
    // seq_cst: see contiguous(). (Release alone would make the lock-free load a safe upper bound for
    // Read; the store-load order with the watch hub's watcher count needs seq_cst on both sides.)
    contiguous_.store(contiguous, std::memory_order_seq_cst);
    moved = true;
  }
  if (moved && listener_) listener_();
}

void EventLog::Reset(int64_t base) {
  std::lock_guard<std::mutex> lock(mu_);
  ready_.clear();
  pending_.clear();
  bytes_.store(0, std::memory_order_relaxed);
  // Release: recovery runs before any reader; the stores are ordered for the threads started later.
  contiguous_.store(base, std::memory_order_release);
  first_.store(base + 1, std::memory_order_release);
  wanted_ = 0;
}

void EventLog::Trim(int64_t oldest) {
  std::lock_guard<std::mutex> lock(mu_);
  wanted_ = std::max(wanted_, oldest);
  TrimLocked();
}

void EventLog::SetHold(int64_t revision) {
  std::lock_guard<std::mutex> lock(mu_);
  hold_ = revision;
  TrimLocked();
}

void EventLog::TrimLocked() {
  int64_t first = first_.load(std::memory_order_relaxed);  // relaxed: written under mu_ only
  int64_t limit = std::min(wanted_, contiguous_.load(std::memory_order_relaxed) + 1);
  if (hold_ > 0) limit = std::min(limit, hold_);
  if (limit <= first) return;
  size_t freed = 0;
  while (!ready_.empty() && ready_.front()->revision < limit) {
    freed += ready_.front()->bytes;
    ready_.pop_front();
  }
  first = limit;
  bytes_.fetch_sub(freed, std::memory_order_relaxed);
  first_.store(first, std::memory_order_release);  // release: see first()
}

int64_t EventLog::compacted_to() const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::max(first_.load(std::memory_order_relaxed), wanted_);  // relaxed: under mu_
}

bool EventLog::Read(int64_t from, int64_t to, std::vector<std::shared_ptr<const RevisionEvents>>* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t first = first_.load(std::memory_order_relaxed);  // relaxed: under mu_
  if (from < first) return false;
  to = std::min(to, contiguous_.load(std::memory_order_relaxed));
  for (int64_t r = from; r <= to; ++r) out->push_back(ready_[static_cast<size_t>(r - first)]);
  return true;
}

bool EventLog::ReadRange(int64_t from, int64_t to, const store::KeyRange& range,
                         std::vector<WatchEvent>* out) const {
  std::vector<std::shared_ptr<const RevisionEvents>> batches;
  if (!Read(from, to, &batches)) return false;
  for (const auto& b : batches) {
    for (const WatchEvent& e : b->events) {
      if (range.Contains(e.kv.key)) out->push_back(e);
    }
  }
  return true;
}

size_t EventLog::revisions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ready_.size() + pending_.size();
}

}  // namespace revkv::server::watch
