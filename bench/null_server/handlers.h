// The null server's call handlers: each answers its method at once with a fixed response.
//
// Handlers follow gRPC's async server pattern. A unary handler serves one call at a time and is reused
// call after call: it posts a request for a call on its worker's queue, answers the call when it arrives,
// and posts the next request once the answer has been sent. A worker arms several handlers per method so
// that calls arriving together do not wait for one another. A Pipeline stream reads messages and
// answers each with the fixed TxnResponse, in order, with one read and one write in flight at a time.
//
// Everything here runs on the worker thread that drains the handler's queue (owner thread only).
#ifndef REVKV_BENCH_NULL_SERVER_HANDLERS_H_
#define REVKV_BENCH_NULL_SERVER_HANDLERS_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "bench/null_server/completion.h"
#include "bench/null_server/kv_backend.h"
#include "bench/null_server/method_counters.h"
#include "etcdserverpb/rpc.grpc.pb.h"
#include "revkv/v1/kv.grpc.pb.h"

namespace revkv::bench {

// The distinct client addresses (ip:port, so one per TCP connection) that called Maintenance/Status.
// Thread-safe. Status is not on the data path, so a lock per call costs nothing that is measured.
class PeerLog {
 public:
  void Add(std::string peer) {
    absl::MutexLock lock(&mu_);
    peers_.insert(std::move(peer));
  }
  std::set<std::string> peers() const {
    absl::MutexLock lock(&mu_);
    return peers_;
  }

 private:
  mutable absl::Mutex mu_;
  std::set<std::string> peers_ ABSL_GUARDED_BY(mu_);
};

// What a worker shares with the handlers on its queue. Owner thread only.
struct WorkerContext {
  grpc::ServerCompletionQueue* cq = nullptr;
  MethodCounters* counters = nullptr;
  PeerLog* status_peers = nullptr;  // shared by all workers
  // False once the worker has shut its queue down; handlers then post nothing more.
  bool accepting = true;
};

// The fixed responses of one worker: each carries only a header at revision 1 (MemberList also lists
// one member, kNullMemberId, so that etcd clients that list members first can connect). The Txn
// responses also say `succeeded: true`, so a client's transfer transactions commit at the first attempt
// instead of retrying forever against a store that never changes.
struct NullResponses {
  NullResponses();

  etcdserverpb::RangeResponse range;
  etcdserverpb::PutResponse put;
  etcdserverpb::DeleteRangeResponse delete_range;
  etcdserverpb::TxnResponse txn;
  etcdserverpb::CompactionResponse compact;
  etcdserverpb::StatusResponse status;
  etcdserverpb::MemberListResponse member_list;  // one member: this server
};

// A handler that can post a request for its next call.
class Handler {
 public:
  virtual ~Handler() = default;
  // Posts a request for the next call of this handler's method on the worker's queue.
  virtual void Arm() = 0;
};

// Serves one unary method: counts the call as `method` and answers with `response` when `status` is OK,
// else with `status` alone. `request_call(ctx, request, writer, cq, tag)` posts the generated
// Request<Method> call. `response` must outlive the handler.
template <class Request, class Response, class RequestCall>
class UnaryHandler final : public Handler {
 public:
  UnaryHandler(WorkerContext* worker, NullMethod method, const Response* response, grpc::Status status,
               RequestCall request_call)
      : worker_(worker),
        method_(method),
        response_(response),
        status_(std::move(status)),
        request_call_(std::move(request_call)) {}

  void Arm() override {
    context_.emplace();
    writer_.emplace(&*context_);
    request_call_(&*context_, &request_, &*writer_, worker_->cq, arrived_.tag());
  }

 private:
  void OnArrived(bool ok) {
    if (!ok) return;  // the server is shutting down: this request was cancelled
    worker_->counters->Increment(method_);
    if (method_ == NullMethod::kStatus) worker_->status_peers->Add(context_->peer());
    if (status_.ok()) {
      writer_->Finish(*response_, grpc::Status::OK, finished_.tag());
    } else {
      writer_->FinishWithError(status_, finished_.tag());
    }
  }
  void OnFinished(bool /*ok*/) {
    if (worker_->accepting) Arm();
  }

  WorkerContext* worker_;
  NullMethod method_;
  const Response* response_;
  grpc::Status status_;
  RequestCall request_call_;
  std::optional<grpc::ServerContext> context_;  // a fresh context per call
  Request request_;
  std::optional<grpc::ServerAsyncResponseWriter<Response>> writer_;
  MemberCompletion<UnaryHandler> arrived_{this, &UnaryHandler::OnArrived};
  MemberCompletion<UnaryHandler> finished_{this, &UnaryHandler::OnFinished};
};

template <class Request, class Response, class RequestCall>
std::unique_ptr<Handler> MakeUnaryHandler(WorkerContext* worker, NullMethod method, const Response* response,
                                          grpc::Status status, RequestCall request_call) {
  return std::make_unique<UnaryHandler<Request, Response, RequestCall>>(
      worker, method, response, std::move(status), std::move(request_call));
}

// Answers etcdserverpb.Maintenance/Snapshot (server streaming) with UNIMPLEMENTED.
std::unique_ptr<Handler> MakeSnapshotHandler(WorkerContext* worker,
                                             etcdserverpb::Maintenance::AsyncService* service);

// Posts a request for one new revkv.v1.KV/Pipeline stream and one new PipelineBatch stream on the
// worker's queue. A stream object owns itself: when a stream arrives it posts the request for the next
// one, serves its own stream, and deletes itself once none of its operations is in flight any more.
// `response` (every Txn's answer) must outlive them.
void AcceptPipelineStream(WorkerContext* worker, revkv::v1::KV::AsyncService* service,
                          const etcdserverpb::TxnResponse* response);

}  // namespace revkv::bench

#endif  // REVKV_BENCH_NULL_SERVER_HANDLERS_H_
