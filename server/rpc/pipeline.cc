// One Pipeline stream (pipeline.h).
//
// Events: the stream opened, a read completed, a write completed, the finish completed — each a tag
// on the worker's queue, so they are handled one at a time on that worker. Durability callbacks come
// from the log's flusher thread; they and the worker share the queue of responses under `mu_`. At most
// one read and one write are outstanding (gRPC's rule for streams). Outstanding operations hold
// references; the call deletes itself when the last is released.
#include "server/rpc/pipeline.h"

#include <deque>
#include <mutex>

#include "server/rpc/call.h"
#include "server/rpc/grpc_handoff.h"
#include "server/rpc/identity.h"
#include "server/rpc/status.h"

namespace revkv::server {

namespace {

constexpr size_t kMaxPending = 4096;  // responses queued before the stream stops reading

class PipelineCall final {
 public:
  PipelineCall(::revkv::v1::KV::AsyncService* service, grpc::ServerCompletionQueue* cq, ServerState* state)
      : service_(service), cq_(cq), state_(state), stream_(&context_) {
    StartGrpcOperation(&opened_,
                       [this] { service_->RequestPipeline(&context_, &stream_, cq_, cq_, &opened_); });
  }
  ~PipelineCall() {
    state_->requests_in_flight.fetch_sub(static_cast<int64_t>(pending_.size()), std::memory_order_release);
  }

 private:
  struct Slot {
    etcdserverpb::TxnResponse response;
    grpc::Status status;
    bool ready = false;
  };

  class Tag final : public CallTag {
   public:
    Tag(PipelineCall* call, void (PipelineCall::*handler)(bool)) : call_(call), handler_(handler) {}
    void Proceed(bool ok) override { (call_->*handler_)(ok); }

   private:
    PipelineCall* call_;
    void (PipelineCall::*handler_)(bool);
  };

  // Every outstanding operation (the open, a read, a write, the finish, a durability callback) holds a
  // reference; the call deletes itself when the last one is released.
  void Release(std::unique_lock<std::mutex>& lock) {
    const bool last = --refs_ == 0;
    lock.unlock();
    if (last) delete this;
  }

  void OnOpened(bool ok) {
    std::unique_lock<std::mutex> lock(mu_);
    if (ok) {
      PostPipelineCall(service_, cq_, state_);
      StartReadLocked();
    }
    Release(lock);
  }

  void StartReadLocked() {
    ++refs_;
    reading_ = true;
    StartGrpcOperation(&read_done_, [this] { stream_.Read(&request_, &read_done_); });
  }

  void OnRead(bool ok) {
    std::unique_lock<std::mutex> lock(mu_);
    reading_ = false;
    if (!ok) {  // the client has finished sending, or went away
      client_done_ = true;
      MaybeFinishLocked();
      Release(lock);
      return;
    }
    pending_.emplace_back();
    state_->requests_in_flight.fetch_add(1, std::memory_order_relaxed);
    Slot* slot = &pending_.back();  // a deque: stays valid while slots are added or popped before it
    lock.unlock();
    const auto start = std::chrono::steady_clock::now();
    // kNewest: a read sees every earlier request of the stream, durable or not; its answer waits for the
    // log like a write's (and goes out after the earlier answers anyway).
    // Each request is checked for the stream's caller as it is then (its token may have expired).
    absl::StatusOr<AuthInfo> who = Identify(context_, state_);
    absl::StatusOr<WriteResult<etcdserverpb::TxnResponse>> result =
        who.ok() ? state_->engine->store().Txn(request_, TxnReads::kNewest, &*who)
                 : absl::StatusOr<WriteResult<etcdserverpb::TxnResponse>>(who.status());
    state_->ForMethod("Pipeline").Record(start, static_cast<int>(result.status().code()));
    lock.lock();
    if (!result.ok()) {
      // Nothing after a failing request is executed: the stream ends with its status once the
      // earlier answers are out, and the client knows the requests it sent after it were not applied.
      slot->status = ToGrpc(result.status());
      slot->ready = true;
      failed_ = true;
    } else {
      state_->FillHeader(result->response.mutable_header());
      slot->response = std::move(result->response);
      if (result->wait_lsn == 0) {
        slot->ready = true;
      } else {
        ++refs_;
        lock.unlock();
        state_->engine->wal().OnDurable(result->wait_lsn, [this, slot](absl::Status s) {
          std::unique_lock<std::mutex> l(mu_);
          if (!s.ok()) slot->status = WriteFailure(s);
          slot->ready = true;
          SendLocked();
          Release(l);
        });
        lock.lock();
      }
    }
    SendLocked();
    if (!failed_ && !client_done_ && pending_.size() < kMaxPending) StartReadLocked();
    Release(lock);
  }

  void SendLocked() {
    if (writing_ || finishing_ || pending_.empty() || !pending_.front().ready) return;
    Slot& front = pending_.front();
    if (!front.status.ok()) {  // the failing request ends the stream, after every earlier answer
      failed_ = true;
      FinishLocked(front.status);
      return;
    }
    ++refs_;
    writing_ = true;
    StartGrpcOperation(&write_done_, [&] { stream_.Write(front.response, &write_done_); });
  }

  void OnWritten(bool ok) {
    std::unique_lock<std::mutex> lock(mu_);
    writing_ = false;
    if (!ok) {  // the stream broke: nothing more can be sent
      failed_ = true;
      FinishLocked(grpc::Status::CANCELLED);
    } else {
      pending_.pop_front();
      state_->requests_in_flight.fetch_sub(1, std::memory_order_release);
      SendLocked();
      if (!reading_ && !client_done_ && !failed_ && pending_.size() < kMaxPending) StartReadLocked();
      MaybeFinishLocked();
    }
    Release(lock);
  }

  void MaybeFinishLocked() {
    if (client_done_ && pending_.empty() && !writing_) FinishLocked(grpc::Status::OK);
  }

  void FinishLocked(const grpc::Status& status) {
    if (finishing_) return;
    finishing_ = true;
    ++refs_;
    StartGrpcOperation(&finished_, [&] { stream_.Finish(status, &finished_); });
  }

  void OnFinished(bool /*ok*/) {
    std::unique_lock<std::mutex> lock(mu_);
    Release(lock);
  }

  ::revkv::v1::KV::AsyncService* service_;
  grpc::ServerCompletionQueue* cq_;
  ServerState* state_;
  grpc::ServerContext context_;
  grpc::ServerAsyncReaderWriter<etcdserverpb::TxnResponse, etcdserverpb::TxnRequest> stream_;
  etcdserverpb::TxnRequest request_;  // the read buffer: reused only after its request was executed
  Tag opened_{this, &PipelineCall::OnOpened};
  Tag read_done_{this, &PipelineCall::OnRead};
  Tag write_done_{this, &PipelineCall::OnWritten};
  Tag finished_{this, &PipelineCall::OnFinished};

  std::mutex mu_;
  int refs_ = 1;              // guarded by mu_; the open holds the first reference
  std::deque<Slot> pending_;  // guarded by mu_
  bool reading_ = false;      // guarded by mu_
  bool writing_ = false;      // guarded by mu_
  bool client_done_ = false;  // guarded by mu_
  bool failed_ = false;       // guarded by mu_
  bool finishing_ = false;    // guarded by mu_
};

}  // namespace

void PostPipelineCall(::revkv::v1::KV::AsyncService* service, grpc::ServerCompletionQueue* cq,
                      ServerState* state) {
  new PipelineCall(service, cq, state);
}

}  // namespace revkv::server
