// DurableCallbacks: the completion callbacks of WAL records, registered by any thread and run by the
// flusher thread in LSN order once their record is durable (or the log has failed).
//
// Registration is an intrusive multi-producer single-consumer queue (D. Vyukov's): a push is one atomic
// exchange and one store, so Wal::Append can register a callback inside the inevitable section without
// allocating or blocking. The consumer moves queued nodes into a list sorted by LSN (records appended in
// order arrive in order, so that is an O(1) append at the end; a callback registered late for an older LSN
// is inserted by a scan) and runs the prefix that has become durable.
#ifndef REVKV_SERVER_WAL_DURABLE_CALLBACKS_H_
#define REVKV_SERVER_WAL_DURABLE_CALLBACKS_H_

#include <atomic>
#include <cstdint>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"

namespace revkv::server {

// Log sequence number: records are numbered 1, 2, 3, ... in append order, per Wal instance.
using WalLsn = uint64_t;

// Invoked exactly once with OK once the record is durable under the configured fsync mode, or with the
// log's failure status. Runs on the flusher thread: it must be quick and must not block on the WAL
// (no Reserve, no WaitDurable).
using DurableCallback = absl::AnyInvocable<void(absl::Status)>;

// One registered callback. Allocated by the registering thread, owned by DurableCallbacks once pushed,
// deleted by the consumer after it ran.
struct DurableCallbackNode {
  std::atomic<DurableCallbackNode*> next{nullptr};  // queue link: stored by the producer that follows
  DurableCallbackNode* sorted_next = nullptr;       // consumer only: the LSN-ordered pending list
  WalLsn lsn = 0;
  DurableCallback callback;
};

// Thread-safety: Push from any thread; every other method from the consumer (flusher) thread only.
class DurableCallbacks {
 public:
  DurableCallbacks();
  ~DurableCallbacks();  // deletes nodes that never ran, without running them
  DurableCallbacks(const DurableCallbacks&) = delete;
  DurableCallbacks& operator=(const DurableCallbacks&) = delete;

  // Takes ownership of `node` (its lsn and callback set). Wait-free: never blocks, allocates or makes a
  // system call. The exchange is seq_cst: a producer that pushes and then loads a seq_cst flag written by
  // the consumer before its Collect() either sees the flag or is seen by that Collect().
  void Push(DurableCallbackNode* node);

  // Moves every pushed node into the pending list. Yields only while a producer is between its exchange
  // and its link store (a few instructions).
  void Collect();

  // Runs and deletes, in LSN order, the pending callbacks with lsn <= `durable` (with OK), then, if
  // `failure` is not OK, all other pending ones (with `failure`). Returns how many ran.
  uint64_t Run(WalLsn durable, const absl::Status& failure);

  // True if nothing has been pushed since the last Collect() (pending callbacks do not count). Loads the
  // head seq_cst, as a producer's exchange stores it.
  bool QueueEmpty() const;

 private:
  DurableCallbackNode* Pop();  // oldest queued node, or nullptr when the queue is empty
  void InsertSorted(DurableCallbackNode* node);

  alignas(64) std::atomic<DurableCallbackNode*> head_;  // most recently pushed node (producers exchange)
  alignas(64) DurableCallbackNode* tail_;               // consumer only: next node to pop (or the stub)
  DurableCallbackNode stub_;                            // keeps the queue non-empty; re-pushed by Pop
  DurableCallbackNode* pending_head_ = nullptr;         // consumer only: sorted by lsn, then by arrival
  DurableCallbackNode* pending_tail_ = nullptr;
};

}  // namespace revkv::server

#endif  // REVKV_SERVER_WAL_DURABLE_CALLBACKS_H_
