// Asynchronous gRPC calls on the workers' completion queues.
//
// Each worker thread owns one completion queue and is the only thread that takes events from it, so a
// call's completion events are handled on one thread, one at a time. A handler may finish its call
// later from another thread (the log's flusher finishes durable writes): Finish may be called from any
// thread, but the handler must not touch the call after handing it over.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>

#include "server/rpc/grpc_handoff.h"
#include "server/rpc/server_state.h"
#include "server/rpc/status.h"

namespace revkv::server {

// A tag on a completion queue.
class CallTag {
 public:
  virtual ~CallTag() = default;
  // The event for this tag arrived (on the queue's worker thread, outside any safe region).
  virtual void Proceed(bool ok) = 0;
};

// One unary call of `Service::Request<Method>`. `Handler` is called once per call with it and must
// eventually call Finish exactly once (from any thread).
template <class Service, class Request, class Response>
class UnaryCall final : public CallTag {
 public:
  using RequestMethod = void (Service::*)(grpc::ServerContext*, Request*,
                                          grpc::ServerAsyncResponseWriter<Response>*, grpc::CompletionQueue*,
                                          grpc::ServerCompletionQueue*, void*);
  using Handler = std::function<void(UnaryCall*)>;

  // Posts a call waiting for the next request of this method on `cq`.
  static void Post(Service* service, RequestMethod method, grpc::ServerCompletionQueue* cq,
                   std::shared_ptr<const Handler> handler, const MethodMetrics* metrics,
                   std::atomic<int64_t>* in_flight) {
    auto* call = new UnaryCall(service, method, cq, std::move(handler), metrics, in_flight);
    StartGrpcOperation(
        call, [&] { (service->*method)(&call->context_, &call->request_, &call->responder_, cq, cq, call); });
  }

  const Request& request() const { return request_; }
  grpc::ServerContext& context() { return context_; }

  void Finish(const Response& response, const grpc::Status& status) {
    code_ = static_cast<int>(status.error_code());
    finishing_ = true;
    StartGrpcOperation(this, [&] {
      if (status.ok()) {
        responder_.Finish(response, status, this);
      } else {
        responder_.FinishWithError(status, this);
      }
    });
  }

  // For an answer sent later from another thread: Hold the response in the call now, FinishHeld
  // later. The callback that finishes it then carries only the call's address.
  void Hold(Response&& response) { held_response_ = std::move(response); }
  void FinishHeld(const grpc::Status& status) {
    if (status.ok()) {
      Finish(held_response_, status);
    } else {
      Finish(Response(), status);
    }
  }

  void Proceed(bool ok) override {
    if (finishing_) {
      if (metrics_ != nullptr) metrics_->Record(start_, code_);
      in_flight_->fetch_sub(1, std::memory_order_release);
      delete this;
      return;
    }
    if (!ok) {  // the server is shutting down: no request will come
      delete this;
      return;
    }
    in_flight_->fetch_add(1, std::memory_order_relaxed);
    Post(service_, method_, cq_, handler_, metrics_, in_flight_);  // the next request of this method
    start_ = std::chrono::steady_clock::now();
    (*handler_)(this);
  }

 private:
  UnaryCall(Service* service, RequestMethod method, grpc::ServerCompletionQueue* cq,
            std::shared_ptr<const Handler> handler, const MethodMetrics* metrics,
            std::atomic<int64_t>* in_flight)
      : service_(service),
        method_(method),
        cq_(cq),
        handler_(std::move(handler)),
        metrics_(metrics),
        in_flight_(in_flight),
        responder_(&context_) {}

  Service* service_;
  RequestMethod method_;
  grpc::ServerCompletionQueue* cq_;
  std::shared_ptr<const Handler> handler_;
  const MethodMetrics* metrics_;
  std::atomic<int64_t>* in_flight_;  // ServerState::requests_in_flight
  grpc::ServerContext context_;
  Request request_;
  grpc::ServerAsyncResponseWriter<Response> responder_;
  std::chrono::steady_clock::time_point start_;
  bool finishing_ = false;
  int code_ = 0;  // the grpc::StatusCode it finished with
  // Hold's answer, sent by FinishHeld: on the same worker (HeldAnswers), or on the flusher when the call
  // was held on another thread (written before OnDurable's queue push, a seq_cst exchange the flusher's
  // pop reads, so FinishHeld there sees it).
  Response held_response_;
};

// ----- helpers of the services' handlers -----

// Runs `answer` once record `lsn` is durable (OK) or the log has failed before it (the failure): on the
// calling worker, through its HeldAnswers (held_answers.h), when called on a worker; otherwise on the
// log's flusher (Wal::OnDurable: callers on gRPC's own threads). Requires lsn <= the appended LSN.
void RunWhenDurable(ServerState* state, WalLsn lsn, DurableCallback answer);

// Finishes a write: when its record is durable (on the flusher); a write that changed nothing, when
// the state it read is durable; at once if there is nothing to wait for. Without `with_header` the
// response goes out with no header (etcd's Alarm answers none).
template <class Call, class Response>
void FinishWrite(Call* call, ServerState* state, absl::StatusOr<WriteResult<Response>> result,
                 bool with_header = true) {
  if (!result.ok()) {
    call->Finish(Response(), ToGrpc(result.status()));
    return;
  }
  if (with_header) {
    state->FillHeader(result->response.mutable_header());
  } else {
    result->response.clear_header();
  }
  if (result->wait_lsn == 0) {
    call->Finish(result->response, grpc::Status::OK);
    return;
  }
  // The answer waits in the call, so the callback carries one pointer and fits the callback's inline
  // storage: no allocation of its own per write (the response by value would not fit).
  call->Hold(std::move(result->response));
  RunWhenDurable(state, result->wait_lsn,
                 [call](absl::Status s) { call->FinishHeld(s.ok() ? grpc::Status::OK : WriteFailure(s)); });
}

// Posts one waiting call of `method` on `cq`, recorded under `name` in the request metrics; `handler`
// runs on the queue's worker for every call (each call posts its successor when it starts).
template <class Service, class Request, class Response>
void PostUnary(Service* service, typename UnaryCall<Service, Request, Response>::RequestMethod method,
               grpc::ServerCompletionQueue* cq, ServerState* state, const std::string& name,
               std::function<void(UnaryCall<Service, Request, Response>*)> handler) {
  using Call = UnaryCall<Service, Request, Response>;
  UnaryCall<Service, Request, Response>::Post(
      service, method, cq, std::make_shared<const typename Call::Handler>(std::move(handler)),
      &state->ForMethod(name), &state->requests_in_flight);
}

}  // namespace revkv::server
