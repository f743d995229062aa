// The event history: the key changes of every committed write revision, indexed by revision, for watchers.
//
// Writers publish a revision's events after its commit, concurrently and so possibly out of order
// (revision 7's writer may publish before revision 6's). The log holds the published revisions and
// exposes the contiguous prefix: the newest revision R such that every revision up to R has been
// published. Readers only ever see revisions inside that prefix, so a reader never skips a revision that
// is still on its way. The log starts after a base revision (Reset) and holds every revision from
// first() to contiguous(); Trim drops revisions older than the store's readable window.
//
// Invariants:
//   1. first() <= contiguous() + 1; every revision in [first(), contiguous()] has exactly one batch.
//   2. Pending (out-of-order) batches are all > contiguous() + 1.
//   3. contiguous() never moves backwards except by Reset (recovery, before any reader).
//
// Memory: one RevisionEvents per retained revision (a shared_ptr and a vector, about 64 bytes) plus,
// per event, sizeof(WatchEvent) (about 150 bytes) and its key and value bytes (twice when it has a
// previous key-value). docs/watch.md gives the figures.
//
// Thread-safety: thread-safe. Every method takes the log's mutex briefly (a leaf lock: the listener is
// called after it is released); contiguous() and first() are lock-free loads.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "server/store/apply.h"

namespace revkv::server::watch {

// One key change (store/apply.h captures them).
using WatchEvent = store::KeyEvent;

// The events of one revision, in apply order. Immutable once published (shared by readers).
struct RevisionEvents {
  int64_t revision = 0;
  std::vector<WatchEvent> events;
  size_t bytes = 0;  // approximate memory it holds (ApproximateBytes)
};

// Approximate heap bytes held by a batch of events (structs plus key and value bytes).
size_t ApproximateBytes(const std::vector<WatchEvent>& events);

class EventLog {
 public:
  // An empty log whose history starts after `base` (the store's revision at creation).
  explicit EventLog(int64_t base);
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  // Records the events of `revision` (possibly empty: a write that changed no key still commits a
  // revision). Each revision after the base must be published exactly once; a revision at or below
  // contiguous() (or one published twice) is a caller bug and aborts. Never blocks on readers. Calls
  // the listener (outside the lock) if the contiguous prefix moved.
  void Publish(int64_t revision, std::vector<WatchEvent> events);

  // Recovery only, before any reader: drops everything and starts the history after `base`.
  void Reset(int64_t base);

  // Drops the revisions before `oldest` (the store's oldest readable revision). Never moves first()
  // past contiguous() + 1, nor past the hold (SetHold).
  void Trim(int64_t oldest);
  // Keeps revisions >= `revision` whatever Trim is asked (the watch hub holds what it has not dispatched
  // yet, so a compaction never takes events from watchers that are keeping up). 0: no hold.
  void SetHold(int64_t revision);

  // The contiguous prefix (every revision up to it is readable, or trimmed).
  int64_t contiguous() const {
    // seq_cst (acquire would order the batches): the watch hub relies on a store-load order between a
    // publisher (stores the prefix, then loads the hub's watcher count) and the first watcher's creation
    // (stores the count, then loads the prefix), so that one of the two sees the other.
    return contiguous_.load(std::memory_order_seq_cst);
  }
  // The oldest revision whose events the log holds (contiguous() + 1 when it holds none).
  int64_t first() const {
    // Acquire: pairs with the release stores in Trim/Reset; a reader that sees first() then reads under
    // the lock anyway, so this only serves as a hint.
    return first_.load(std::memory_order_acquire);
  }

  // The oldest revision the store still keeps: first(), or the newest Trim asked for if a hold keeps
  // older revisions (those are compacted for anyone who is not being given them already). etcd's
  // compact_revision for a watcher that fell below it.
  int64_t compacted_to() const;

  // Appends to `out` the batches of revisions [from, to] (to is clamped to contiguous()). Returns false,
  // appending nothing, if `from` < first() (trimmed: compacted for the caller).
  bool Read(int64_t from, int64_t to, std::vector<std::shared_ptr<const RevisionEvents>>* out) const;

  // The events of revisions [from, to] whose key lies in `range`, in revision then apply order; false
  // if `from` was trimmed.
  bool ReadRange(int64_t from, int64_t to, const store::KeyRange& range, std::vector<WatchEvent>* out) const;

  // Called (from the publishing thread, with no lock held) whenever contiguous() moves. Set before any
  // Publish; must be quick and must not call back into the log's Publish.
  void SetListener(std::function<void()> listener) { listener_ = std::move(listener); }

  // Revisions and approximate bytes held (including out-of-order pending ones).
  size_t revisions() const;
  size_t bytes() const { return bytes_.load(std::memory_order_relaxed); }  // relaxed: a statistic

 private:
  mutable std::mutex mu_;
  std::deque<std::shared_ptr<const RevisionEvents>> ready_;           // first_..contiguous_; under mu_
  std::map<int64_t, std::shared_ptr<const RevisionEvents>> pending_;  // > contiguous_ + 1; under mu_
  std::atomic<int64_t> contiguous_;                                   // written under mu_
  std::atomic<int64_t> first_;                                        // written under mu_
  std::atomic<size_t> bytes_{0};                                      // written under mu_
  int64_t hold_ = 0;                                                  // under mu_
  int64_t wanted_ = 0;                                                // the newest Trim asked for; under mu_
  void TrimLocked();                                                  // requires mu_
  std::function<void()> listener_;  // set before any Publish, then read-only
};

}  // namespace revkv::server::watch
