// One Pipeline or PipelineBatch stream (pipeline.h).
//
// Events: the stream opened, a read completed, a write completed, the finish completed — each a tag
// on the worker's queue, so they are handled one at a time on that worker. Durability callbacks run on
// the same worker once the log's flusher has made the records durable (RunWhenDurable); they and the
// worker's other events share the queue of responses under `mu_`. At most
// one read and one write are outstanding (gRPC's rule for streams). Outstanding operations hold
// references; the call deletes itself when the last is released.
//
// The two methods differ only in what one message is: a Txn (SingleTxn) or a batch of them (TxnBatch);
// StreamCall<Method> is the stream, Method executes one message.
#include "server/rpc/pipeline.h"

#include <algorithm>
#include <deque>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/rpc/call.h"
#include "server/rpc/grpc_handoff.h"
#include "server/rpc/identity.h"
#include "server/rpc/status.h"

namespace revkv::server {

namespace {

// Answers (one per Txn: a batch counts its requests) queued before the stream stops reading.
constexpr int64_t kMaxPending = 4096;

// What executing one message produced: its answer (or the status that ends the stream) and the record to
// wait for before answering.
template <class Response>
struct Executed {
  Response response;
  grpc::Status status;  // not OK: the stream ends with it (after the earlier answers)
  uint64_t wait_lsn = 0;
  int64_t answers = 1;  // toward kMaxPending: the batch's requests (at least 1, for an empty batch)
  // The batch's requests whose answers wait for the log, by index, with the record each waits for: if
  // the log fails, those whose record never became durable are answered with the failure.
  std::vector<std::pair<int, uint64_t>> waiting;
};

// revkv.v1.KV/Pipeline: one Txn per message.
struct SingleTxn {
  using Request = etcdserverpb::TxnRequest;
  using Response = etcdserverpb::TxnResponse;
  static constexpr const char* kMethod = "Pipeline";

  static void RequestCall(::revkv::v1::KV::AsyncService* service, grpc::ServerContext* context,
                          grpc::ServerAsyncReaderWriter<Response, Request>* stream,
                          grpc::ServerCompletionQueue* cq, void* tag) {
    service->RequestPipeline(context, stream, cq, cq, tag);
  }

  static Executed<Response> Execute(ServerState* state, const grpc::ServerContext& context,
                                    const Request& request) {
    Executed<Response> out;
    // kNewest: a read sees every earlier request of the stream, durable or not; its answer waits for
    // the log like a write's (and goes out after the earlier answers anyway).
    // Each request is checked for the stream's caller as it is then (its token may have expired).
    absl::StatusOr<AuthInfo> who = Identify(context, state);
    absl::StatusOr<WriteResult<etcdserverpb::TxnResponse>> result =
        who.ok() ? state->engine->store().Txn(request, TxnReads::kNewest, &*who)
                 : absl::StatusOr<WriteResult<etcdserverpb::TxnResponse>>(who.status());
    if (!result.ok()) {
      // Nothing after a failing request is executed: the stream ends with its status once the
      // earlier answers are out, and the client knows the requests it sent after it were not applied.
      out.status = ToGrpc(result.status());
      return out;
    }
    state->FillHeader(result->response.mutable_header());
    out.response = std::move(result->response);
    out.wait_lsn = result->wait_lsn;
    return out;
  }

  // The log failed before `lsn` was durable: the stream ends with the failure.
  static void FailDurability(const absl::Status& failure, WalLsn /*durable_lsn*/, Executed<Response>* out) {
    out->status = WriteFailure(failure);
  }
};

// revkv.v1.KV/PipelineBatch: independent Txns per message, answered together.
struct TxnBatch {
  using Request = ::revkv::v1::TxnBatch;
  using Response = ::revkv::v1::TxnBatchResponse;
  static constexpr const char* kMethod = "PipelineBatch";

  static void RequestCall(::revkv::v1::KV::AsyncService* service, grpc::ServerContext* context,
                          grpc::ServerAsyncReaderWriter<Response, Request>* stream,
                          grpc::ServerCompletionQueue* cq, void* tag) {
    service->RequestPipelineBatch(context, stream, cq, cq, tag);
  }

  static Executed<Response> Execute(ServerState* state, const grpc::ServerContext& context,
                                    const Request& request) {
    Executed<Response> out;
    out.answers = std::max(1, request.requests_size());
    if (request.requests_size() > kMaxBatchRequests) {
      out.status = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                absl::StrCat("revkv: a batch holds at most ", kMaxBatchRequests,
                                             " requests; this one holds ", request.requests_size()));
      return out;
    }
    // Checked once per message, for the stream's caller as it is then (its token may have expired);
    // every request of the batch fails with the refusal.
    absl::StatusOr<AuthInfo> who = Identify(context, state);
    std::vector<absl::StatusOr<WriteResult<etcdserverpb::TxnResponse>>> results;
    if (who.ok()) {
      state->engine->store().TxnBatch(request.requests(), &*who, &results, &out.wait_lsn);
    } else {
      results.assign(static_cast<size_t>(request.requests_size()), who.status());
    }
    out.response.mutable_results()->Reserve(static_cast<int>(results.size()));
    for (size_t i = 0; i < results.size(); ++i) {
      ::revkv::v1::TxnResult* r = out.response.add_results();
      if (!results[i].ok()) {
        SetError(ToGrpc(results[i].status()), r);
        continue;
      }
      state->FillHeader(results[i]->response.mutable_header());
      *r->mutable_response() = std::move(results[i]->response);
      if (results[i]->wait_lsn != 0) out.waiting.emplace_back(static_cast<int>(i), results[i]->wait_lsn);
    }
    return out;
  }

  // The log failed before the batch's last record was durable: the requests whose record (or the
  // state they read) did not become durable are answered with the failure; the others stand.
  static void FailDurability(const absl::Status& failure, WalLsn durable_lsn, Executed<Response>* out) {
    const grpc::Status status = WriteFailure(failure);
    for (const auto& [index, lsn] : out->waiting) {
      if (lsn > durable_lsn) SetError(status, out->response.mutable_results(index));
    }
  }

  static void SetError(const grpc::Status& status, ::revkv::v1::TxnResult* result) {
    ::revkv::v1::TxnError* error = result->mutable_error();
    error->set_code(static_cast<int32_t>(status.error_code()));
    error->set_message(status.error_message());
  }
};

template <class Method>
class StreamCall final {
 public:
  using Request = typename Method::Request;
  using Response = typename Method::Response;

  StreamCall(::revkv::v1::KV::AsyncService* service, grpc::ServerCompletionQueue* cq, ServerState* state)
      : service_(service), cq_(cq), state_(state), stream_(&context_) {
    StartGrpcOperation(&opened_,
                       [this] { Method::RequestCall(service_, &context_, &stream_, cq_, &opened_); });
  }
  ~StreamCall() {
    state_->requests_in_flight.fetch_sub(static_cast<int64_t>(pending_.size()), std::memory_order_release);
  }

 private:
  using Slot = Executed<Response>;
  // A slot is answered once `ready`; `status` (not OK) ends the stream instead.
  struct ReadySlot : Slot {
    bool ready = false;
  };

  class Tag final : public CallTag {
   public:
    Tag(StreamCall* call, void (StreamCall::*handler)(bool)) : call_(call), handler_(handler) {}
    void Proceed(bool ok) override { (call_->*handler_)(ok); }

   private:
    StreamCall* call_;
    void (StreamCall::*handler_)(bool);
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
      new StreamCall(service_, cq_, state_);  // waits for the next stream of this method
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
    ReadySlot* slot = &pending_.back();  // a deque: stays valid while slots are added or popped before it
    lock.unlock();
    const auto start = std::chrono::steady_clock::now();
    Slot executed = Method::Execute(state_, context_, request_);
    metrics_->Record(start, static_cast<int>(executed.status.error_code()));
    const uint64_t wait_lsn = executed.status.ok() ? executed.wait_lsn : 0;
    lock.lock();
    static_cast<Slot&>(*slot) = std::move(executed);
    pending_answers_ += slot->answers;
    if (!slot->status.ok()) {
      slot->ready = true;
      failed_ = true;
    } else if (wait_lsn == 0) {
      slot->ready = true;
    } else {
      ++refs_;
      lock.unlock();
      // On this worker once durable (HeldAnswers), so the answer is written from here, not the flusher.
      RunWhenDurable(state_, wait_lsn, [this, slot](absl::Status s) {
        // Read before taking the lock: how far the log got before it failed.
        const WalLsn durable = s.ok() ? 0 : state_->engine->wal().durable_lsn();
        std::unique_lock<std::mutex> l(mu_);
        if (!s.ok()) Method::FailDurability(s, durable, slot);
        slot->ready = true;
        SendLocked();
        Release(l);
      });
      lock.lock();
    }
    SendLocked();
    if (!failed_ && !client_done_ && pending_answers_ < kMaxPending) StartReadLocked();
    Release(lock);
  }

  void SendLocked() {
    if (writing_ || finishing_ || pending_.empty() || !pending_.front().ready) return;
    ReadySlot& front = pending_.front();
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
      pending_answers_ -= pending_.front().answers;
      pending_.pop_front();
      state_->requests_in_flight.fetch_sub(1, std::memory_order_release);
      SendLocked();
      if (!reading_ && !client_done_ && !failed_ && pending_answers_ < kMaxPending) StartReadLocked();
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
  const MethodMetrics* metrics_ = &state_->ForMethod(Method::kMethod);
  grpc::ServerAsyncReaderWriter<Response, Request> stream_;
  Request request_;  // the read buffer: reused only after its request was executed
  Tag opened_{this, &StreamCall::OnOpened};
  Tag read_done_{this, &StreamCall::OnRead};
  Tag write_done_{this, &StreamCall::OnWritten};
  Tag finished_{this, &StreamCall::OnFinished};

  std::mutex mu_;
  int refs_ = 1;                   // guarded by mu_; the open holds the first reference
  std::deque<ReadySlot> pending_;  // guarded by mu_
  int64_t pending_answers_ = 0;    // guarded by mu_: the answers of pending_'s executed slots
  bool reading_ = false;           // guarded by mu_
  bool writing_ = false;           // guarded by mu_
  bool client_done_ = false;       // guarded by mu_
  bool failed_ = false;            // guarded by mu_
  bool finishing_ = false;         // guarded by mu_
};

}  // namespace

void PostPipelineCall(::revkv::v1::KV::AsyncService* service, grpc::ServerCompletionQueue* cq,
                      ServerState* state) {
  new StreamCall<SingleTxn>(service, cq, state);
  new StreamCall<TxnBatch>(service, cq, state);
}

}  // namespace revkv::server
