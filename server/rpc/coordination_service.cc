// The Lock and Election services (coordination_service.h).
#include "server/rpc/coordination_service.h"

#include <deque>
#include <memory>
#include <mutex>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "server/rpc/grpc_handoff.h"
#include "server/rpc/identity.h"
#include "server/rpc/status.h"

namespace revkv::server {

namespace {

// etcd's Lock and Election servers are clients of etcd itself: an error of their inner calls (a lease
// not found, a full disk) reaches the caller as a plain Go error, which gRPC sends as UNKNOWN with the
// message. The coordinator's own errors are plain errors in etcd too. A cancelled call keeps CANCELLED.
grpc::Status AsEtcdCoordinationError(const absl::Status& s) {
  if (absl::IsCancelled(s)) return ToGrpc(s);
  return grpc::Status(grpc::StatusCode::UNKNOWN, std::string(s.message()));
}

// One unary call answered by a coordinator operation, possibly much later. gRPC calls OnDone only after
// Finish, and Finish is called once, by Complete: the operation's callback never outlives the reactor.
template <class Response>
class CoordinationReactor final : public grpc::ServerUnaryReactor {
 public:
  CoordinationReactor(ServerState* state, Response* response, const char* method)
      : state_(state), response_(response), metrics_(&state->ForMethod(method)) {
    HandOverToGrpc(this);  // for OnCancel and OnDone, on gRPC's threads
  }

  // The callback to hand to the coordinator.
  Coordinator::Done<Response> Callback() {
    return [this](absl::StatusOr<Response> result) { Complete(std::move(result)); };
  }

  // Attaches the long operation that a cancellation must stop (it may have been cancelled already).
  // Called by the method handler before it returns the reactor to gRPC.
  void Attach(std::shared_ptr<CoordinationOperation> operation) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      operation_ = std::move(operation);
      if (canceled_) operation_->Cancel();
    }
    HandOverToGrpc(this);  // for OnDone, which destroys operation_ without mu_
  }

  void OnCancel() override {
    GrpcReaction reaction(this);
    std::lock_guard<std::mutex> lock(mu_);
    canceled_ = true;
    if (operation_ != nullptr) operation_->Cancel();
  }

  void OnDone() override {
    TakeBackFromGrpc(this);
    metrics_->Record(start_, code_);
    delete this;
  }

 private:
  void Complete(absl::StatusOr<Response> result) {
    if (!result.ok()) {
      const grpc::Status error = AsEtcdCoordinationError(result.status());
      code_ = static_cast<int>(error.error_code());
      StartGrpcOperation(this, [&] { Finish(error); });
      return;
    }
    *response_ = std::move(*result);
    state_->FillHeader(response_->mutable_header());
    code_ = 0;
    StartGrpcOperation(this, [this] { Finish(grpc::Status::OK); });
  }

  ServerState* const state_;
  Response* const response_;
  const MethodMetrics* const metrics_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  // The grpc::StatusCode it finished with (CANCELLED until it completes): written before Finish, read
  // in OnDone (gRPC orders the two).
  int code_ = static_cast<int>(grpc::StatusCode::CANCELLED);
  std::mutex mu_;
  std::shared_ptr<CoordinationOperation> operation_ ABSL_GUARDED_BY(mu_);
  bool canceled_ ABSL_GUARDED_BY(mu_) = false;
};

// Observe's stream: leaders queued while a write is in flight; past kMaxQueued the newest replaces the
// last queued one (a slow reader skips intermediate proclamations, never the newest leader).
class ObserveReactor final : public grpc::ServerWriteReactor<v3electionpb::LeaderResponse> {
 public:
  static constexpr size_t kMaxQueued = 1024;

  explicit ObserveReactor(ServerState* state) : state_(state) { HandOverToGrpc(this); }

  void Start(Coordinator* coordinator, const v3electionpb::LeaderRequest& request) {
    std::shared_ptr<CoordinationOperation> operation = coordinator->Observe(
        request, [this](const v3electionpb::LeaderResponse& r) { OnLeader(r); },
        [this](absl::Status s) { OnEnd(std::move(s)); });
    {
      std::lock_guard<std::mutex> lock(mu_);
      operation_ = std::move(operation);
      if (canceled_) operation_->Cancel();
    }
    HandOverToGrpc(this);  // for OnDone, which destroys operation_ without mu_
  }

  void OnWriteDone(bool ok) override {
    GrpcReaction reaction(this);
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.pop_front();
      if (!ok) {  // the stream is broken: stop observing; OnEnd finishes
        writing_ = false;
        if (operation_ != nullptr) operation_->Cancel();
        return;
      }
      if (!queue_.empty()) {
        StartGrpcOperation(this, [this] { StartWrite(&queue_.front()); });
        return;
      }
      writing_ = false;
      if (!ended_) return;
    }
    FinishEnded();
  }

  void OnCancel() override {
    GrpcReaction reaction(this);
    std::lock_guard<std::mutex> lock(mu_);
    canceled_ = true;
    if (operation_ != nullptr) operation_->Cancel();
  }

  void OnDone() override {
    TakeBackFromGrpc(this);
    delete this;
  }

 private:
  void OnLeader(const v3electionpb::LeaderResponse& r) {
    std::lock_guard<std::mutex> lock(mu_);
    if (ended_) return;
    if (queue_.size() >= kMaxQueued) {
      queue_.back() = r;  // never the front: it may be in flight
    } else {
      queue_.push_back(r);
    }
    state_->FillHeader(queue_.back().mutable_header());
    if (!writing_) {
      writing_ = true;
      StartGrpcOperation(this, [this] { StartWrite(&queue_.front()); });
    }
  }

  void OnEnd(absl::Status s) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (ended_) return;
      ended_ = true;
      // A cancelled Observe ends as etcd's does: the client's context error, which the client made.
      end_status_ = AsEtcdCoordinationError(s);
      if (writing_) return;  // OnWriteDone finishes
    }
    FinishEnded();
  }

  // Finishes the ended stream. Called with mu_ released, once (by whichever of OnEnd and OnWriteDone sees
  // the stream ended with no write in flight): OnDone may follow at once, on another thread, and delete
  // this reactor, so nothing here may touch it after Finish (not even to unlock mu_). end_status_ is no
  // longer written once ended_ is set.
  void FinishEnded() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    StartGrpcOperation(this, [this] { Finish(end_status_); });
  }

  // Ends the stream before it starts, with `s` as etcd would answer it (a refused caller).
 public:
  void Refuse(absl::Status s) { OnEnd(std::move(s)); }

 private:
  ServerState* const state_;
  std::mutex mu_;
  std::deque<v3electionpb::LeaderResponse> queue_ ABSL_GUARDED_BY(mu_);  // front: in flight if writing_
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  bool canceled_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status end_status_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<CoordinationOperation> operation_ ABSL_GUARDED_BY(mu_);
};

// The recipes' reads and writes, checked for the caller as etcd's services check them: they are etcd's
// clients, sending the caller's token. Lock and Campaign read and write under "<name>/", Leader and Observe
// read it, Unlock and Resign delete (and compare) one key, Proclaim compares and puts one. Checked once,
// when the call starts, against the visible auth state. OK or the refusal.
absl::Status Permitted(grpc::CallbackServerContext* context, ServerState* state, const std::string& key,
                       bool prefix, bool write) {
  absl::StatusOr<AuthInfo> who = Identify(*context, state);
  if (!who.ok()) return who.status();
  const std::shared_ptr<const store::AuthView> view = state->engine->store().VisibleAuth();
  std::string begin = key;
  std::string end;
  if (prefix) {
    begin += "/";
    end = begin;
    while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xff) end.pop_back();
    if (end.empty()) {
      end = std::string(1, '\0');
    } else {
      end.back() = static_cast<char>(end.back() + 1);
    }
  }
  if (absl::Status s = view->CheckRange(*who, begin, end, /*write=*/false); !s.ok()) return s;
  if (write) return view->CheckRange(*who, begin, end, /*write=*/true);
  return absl::OkStatus();
}

}  // namespace

grpc::ServerUnaryReactor* LockService::Lock(grpc::CallbackServerContext* context,
                                            const v3lockpb::LockRequest* request,
                                            v3lockpb::LockResponse* response) {
  auto* reactor = new CoordinationReactor<v3lockpb::LockResponse>(state_, response, "Lock");
  if (absl::Status refused = Permitted(context, state_, request->name(), true, true); !refused.ok()) {
    reactor->Callback()(refused);
    return reactor;
  }
  reactor->Attach(coordinator_->Lock(*request, reactor->Callback()));
  return reactor;
}

grpc::ServerUnaryReactor* LockService::Unlock(grpc::CallbackServerContext* context,
                                              const v3lockpb::UnlockRequest* request,
                                              v3lockpb::UnlockResponse* response) {
  auto* reactor = new CoordinationReactor<v3lockpb::UnlockResponse>(state_, response, "Unlock");
  if (absl::Status refused = Permitted(context, state_, request->key(), false, true); !refused.ok()) {
    reactor->Callback()(refused);
    return reactor;
  }
  coordinator_->Unlock(*request, reactor->Callback());
  return reactor;
}

grpc::ServerUnaryReactor* ElectionService::Campaign(grpc::CallbackServerContext* context,
                                                    const v3electionpb::CampaignRequest* request,
                                                    v3electionpb::CampaignResponse* response) {
  auto* reactor = new CoordinationReactor<v3electionpb::CampaignResponse>(state_, response, "Campaign");
  if (absl::Status refused = Permitted(context, state_, request->name(), true, true); !refused.ok()) {
    reactor->Callback()(refused);
    return reactor;
  }
  reactor->Attach(coordinator_->Campaign(*request, reactor->Callback()));
  return reactor;
}

grpc::ServerUnaryReactor* ElectionService::Proclaim(grpc::CallbackServerContext* context,
                                                    const v3electionpb::ProclaimRequest* request,
                                                    v3electionpb::ProclaimResponse* response) {
  auto* reactor = new CoordinationReactor<v3electionpb::ProclaimResponse>(state_, response, "Proclaim");
  if (absl::Status refused = Permitted(context, state_, request->leader().key(), false, true);
      !refused.ok()) {
    reactor->Callback()(refused);
    return reactor;
  }
  coordinator_->Proclaim(*request, reactor->Callback());
  return reactor;
}

grpc::ServerUnaryReactor* ElectionService::Leader(grpc::CallbackServerContext* context,
                                                  const v3electionpb::LeaderRequest* request,
                                                  v3electionpb::LeaderResponse* response) {
  auto* reactor = new CoordinationReactor<v3electionpb::LeaderResponse>(state_, response, "Leader");
  if (absl::Status refused = Permitted(context, state_, request->name(), true, false); !refused.ok()) {
    reactor->Callback()(refused);
    return reactor;
  }
  coordinator_->Leader(*request, reactor->Callback());
  return reactor;
}

grpc::ServerWriteReactor<v3electionpb::LeaderResponse>* ElectionService::Observe(
    grpc::CallbackServerContext* context, const v3electionpb::LeaderRequest* request) {
  auto* reactor = new ObserveReactor(state_);
  if (absl::Status refused = Permitted(context, state_, request->name(), true, false); !refused.ok()) {
    reactor->Refuse(refused);
    return reactor;
  }
  reactor->Start(coordinator_, *request);
  return reactor;
}

grpc::ServerUnaryReactor* ElectionService::Resign(grpc::CallbackServerContext* context,
                                                  const v3electionpb::ResignRequest* request,
                                                  v3electionpb::ResignResponse* response) {
  auto* reactor = new CoordinationReactor<v3electionpb::ResignResponse>(state_, response, "Resign");
  if (absl::Status refused = Permitted(context, state_, request->leader().key(), false, true);
      !refused.ok()) {
    reactor->Callback()(refused);
    return reactor;
  }
  coordinator_->Resign(*request, reactor->Callback());
  return reactor;
}

}  // namespace revkv::server
