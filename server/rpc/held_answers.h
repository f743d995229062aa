// HeldAnswers: the answers of durable writes, held on the worker thread that executed them and sent from
// that worker once the log's flusher has made their records durable.
//
// Without it, every write registered its own callback with the log (Wal::OnDurable), and the flusher ran
// each one: it serialised the answer and handed it to the socket (gRPC's Finish and sendmsg) before it
// could write and sync the next group. With it, a worker keeps its waiting answers in its own list,
// ordered by LSN, and registers ONE callback with the log at a time: for the oldest answer it holds. That
// callback, on the flusher, only posts an alarm to the worker's completion queue (one atomic hand-off and
// at most one wake-up per group and worker, not one send per answer); the worker, when the alarm comes
// out of its queue, sends every held answer whose record is durable by then, and registers for the oldest
// one left. A worker that is busy takes the alarm on its next poll without being woken at all.
//
// Invariants:
//   1. An answer runs only once its record is durable (durable_lsn() >= its LSN), or with the log's
//      failure once the log has failed before it: the same contract as a Wal::OnDurable callback.
//   2. At most one callback is registered with the log and at most one alarm is outstanding, per worker:
//      `armed_` is true from the registration until the alarm comes out of the queue.
//   3. Once Close() has run, the flusher never posts the alarm again (the queue may be shut down), and no
//      answer held then runs (each would finish its call on the queue), not even from an alarm posted
//      before Close and taken after it; a Hold that finds Close has run holds its answer and registers
//      nothing. A Proceed already sending when Close comes finishes its sends before Close returns. (A
//      Hold whose record is durable already sends at once, as a handler's own immediate Finish does; if
//      Close and the queue's shutdown come between its check and that send, the send meets a shut-down
//      queue, as that Finish would; RpcServer::Shutdown first waits, up to its grace period, for the
//      requests in flight.)
//
// Thread-safety: owner thread only (the worker that drives `cq`), except Close (any thread; the worker
// may still be draining its queue) and the callback it registers with the log (the flusher).
#pragma once

#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>

#include "server/rpc/call.h"
#include "server/wal/wal.h"

namespace revkv::server {

class HeldAnswers final : public CallTag, public std::enable_shared_from_this<HeldAnswers> {
 public:
  // `wal` and `cq` are borrowed and must outlive the worker's use of this object; `stats` must outlive
  // Close(). Create it with std::make_shared: the callback registered with the log keeps it alive (the
  // log may run that callback after the RPC server has gone, at its own Close).
  HeldAnswers(Wal* wal, grpc::ServerCompletionQueue* cq, HeldAnswerStats* stats);
  ~HeldAnswers() override;

  // The held answers of the calling worker thread, or nullptr on any other thread.
  static HeldAnswers* Current();
  // Makes `held` the calling thread's Current() (the worker, before it polls; nullptr when it stops).
  static void SetCurrent(HeldAnswers* held);

  // Owner thread: runs `answer` on this worker once record `lsn` is durable (with OK), or once the log
  // has failed before it (with the failure). Runs it at once if it is durable already. Allocates only
  // when the list grows and when it registers with the log (once per group). Requires lsn <= the log's
  // appended LSN.
  void Hold(WalLsn lsn, DurableCallback answer);

  // The alarm came out of the queue (owner thread): sends what has become durable, re-registers.
  void Proceed(bool ok) override;

  // The flusher will not post to the queue any more, and no held answer runs any more: call before the
  // queue shuts down (waits for a Proceed that is sending). Answers still held then, or held later, are
  // destroyed without running when this object goes (their calls are never finished: the server has
  // stopped, as with the log's own callbacks at its destruction). Thread-safe.
  void Close();

  // Owner thread: answers held and not yet sent.
  size_t held() const { return held_.size(); }

 private:
  struct Held {
    WalLsn lsn;
    DurableCallback answer;
  };

  // Runs, in LSN order, the held answers whose record is durable, and all of them if the log failed.
  void RunDue();
  // Registers with the log for the oldest held answer (held_ not empty, not armed_).
  void Arm();
  // On the flusher: posts the alarm unless Close() has run.
  void Wake();

  Wal* const wal_;
  grpc::ServerCompletionQueue* const cq_;
  HeldAnswerStats* const stats_;
  std::deque<Held> held_;  // owner thread only; ascending LSN
  bool armed_ = false;     // owner thread only: a callback or its alarm is outstanding (invariant 2)
  std::mutex wake_mu_;     // serialises Wake's alarm Set, and Proceed's sends, with Close
  bool closed_ = false;    // guarded by wake_mu_
  grpc::Alarm alarm_;      // set by Wake (flusher) while armed_, delivered to the owner
};

}  // namespace revkv::server
