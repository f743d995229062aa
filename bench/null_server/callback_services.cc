// The baseline servers' callback-API services (callback_services.h).
#include "bench/null_server/callback_services.h"

#include <deque>
#include <mutex>

namespace revkv::bench {
namespace {

using etcdserverpb::TxnRequest;
using etcdserverpb::TxnResponse;

const grpc::Status kUnimplemented(grpc::StatusCode::UNIMPLEMENTED, "revkv-null-server does not serve this");

grpc::ServerUnaryReactor* Answer(grpc::CallbackServerContext* context, const grpc::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

// A server-streaming call answered with a status alone.
template <class Response>
class StatusOnlyWriter final : public grpc::ServerWriteReactor<Response> {
 public:
  explicit StatusOnlyWriter(const grpc::Status& status) { this->Finish(status); }
  void OnDone() override { delete this; }
};

// revkv.v1.KV/Pipeline's messages: one Txn each, executed as the backend's Txn; a failing one ends the
// stream.
struct SingleTxn {
  using Request = TxnRequest;
  using Response = TxnResponse;
  static constexpr NullMethod kCounter = NullMethod::kPipeline;
  static grpc::Status Execute(KvBackend* backend, const Request& request, Response* answer) {
    return backend->Txn(request, answer);
  }
};

// revkv.v1.KV/PipelineBatch's messages: each request executed as the backend's Txn and answered in the
// batch's response, a failing one with its status (the others are not affected), as revkv does. The
// batch size limit is revkv's (server/rpc/pipeline.h).
struct TxnBatch {
  using Request = revkv::v1::TxnBatch;
  using Response = revkv::v1::TxnBatchResponse;
  static constexpr NullMethod kCounter = NullMethod::kPipelineBatch;
  static constexpr int kMaxRequests = 1024;
  static grpc::Status Execute(KvBackend* backend, const Request& request, Response* answer) {
    if (request.requests_size() > kMaxRequests) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "revkv-null-server: batch too large");
    }
    answer->mutable_results()->Reserve(request.requests_size());
    for (const TxnRequest& r : request.requests()) {
      revkv::v1::TxnResult* result = answer->add_results();
      const grpc::Status status = backend->Txn(r, result->mutable_response());
      if (!status.ok()) {
        result->mutable_error()->set_code(static_cast<int32_t>(status.error_code()));
        result->mutable_error()->set_message(status.error_message());
      }
    }
    return grpc::Status::OK;
  }
};

// One Pipeline or PipelineBatch stream. Invariants: at most one read and one write outstanding (gRPC's
// rule); answers_ holds the answers not yet fully written, in request order, the front one being
// written while `writing_`; once Finish is called nothing else is started. OnReadDone and OnWriteDone
// may run at the same time on two threads: mu_ guards the state they share.
template <class Kind>
class PipelineReactor final
    : public grpc::ServerBidiReactor<typename Kind::Request, typename Kind::Response> {
 public:
  using Request = typename Kind::Request;
  using Response = typename Kind::Response;
  explicit PipelineReactor(CallbackEnv env) : env_(env) { this->StartRead(&request_); }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the client is done sending (or gone)
      std::lock_guard<std::mutex> lock(mu_);
      reads_done_ = true;
      MaybeFinishLocked();
      return;
    }
    env_.counters->Increment(Kind::kCounter);
    // The read buffer is free once the request is executed, before the next read is started.
    Response answer;
    const grpc::Status status = Kind::Execute(env_.backend, request_, &answer);
    std::lock_guard<std::mutex> lock(mu_);
    if (!status.ok()) {
      // Answers before it go out first; the stream then ends with its status, and nothing is read.
      failure_ = status;
      reads_done_ = true;
      MaybeFinishLocked();
      return;
    }
    answers_.push_back(std::move(answer));
    WriteNextLocked();
    if (answers_.size() < kMaxQueued) {
      this->StartRead(&request_);
    } else {
      read_paused_ = true;
    }
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mu_);
    writing_ = false;
    answers_.pop_front();
    if (!ok) {  // the stream broke
      FinishLocked(grpc::Status::CANCELLED);
      return;
    }
    WriteNextLocked();
    if (read_paused_ && !reads_done_) {
      read_paused_ = false;
      this->StartRead(&request_);
    }
    MaybeFinishLocked();
  }

  void OnDone() override { delete this; }

 private:
  static constexpr size_t kMaxQueued = 4096;

  void WriteNextLocked() {
    if (writing_ || finished_ || answers_.empty()) return;
    writing_ = true;
    grpc::WriteOptions options;
    if (answers_.size() > 1) options.set_buffer_hint();  // more follow at once: send them together
    this->StartWrite(&answers_.front(), options);
  }
  void MaybeFinishLocked() {
    if (reads_done_ && answers_.empty() && !writing_) FinishLocked(failure_);
  }
  void FinishLocked(const grpc::Status& status) {
    if (finished_) return;
    finished_ = true;
    this->Finish(status);
  }

  const CallbackEnv env_;
  Request request_;  // the read buffer
  std::mutex mu_;
  std::deque<Response> answers_;  // guarded by mu_; a deque: the front stays put while others are added
  grpc::Status failure_;          // guarded by mu_
  bool writing_ = false;          // guarded by mu_
  bool reads_done_ = false;       // guarded by mu_
  bool read_paused_ = false;      // guarded by mu_
  bool finished_ = false;         // guarded by mu_
};

}  // namespace

// ----- KV -----

grpc::ServerUnaryReactor* CallbackKv::Range(grpc::CallbackServerContext* context,
                                            const etcdserverpb::RangeRequest* request,
                                            etcdserverpb::RangeResponse* response) {
  env_.counters->Increment(NullMethod::kRange);
  return Answer(context, env_.backend->Range(*request, response));
}

grpc::ServerUnaryReactor* CallbackKv::Put(grpc::CallbackServerContext* context,
                                          const etcdserverpb::PutRequest* request,
                                          etcdserverpb::PutResponse* response) {
  env_.counters->Increment(NullMethod::kPut);
  return Answer(context, env_.backend->Put(*request, response));
}

grpc::ServerUnaryReactor* CallbackKv::DeleteRange(grpc::CallbackServerContext* context,
                                                  const etcdserverpb::DeleteRangeRequest* request,
                                                  etcdserverpb::DeleteRangeResponse* response) {
  env_.counters->Increment(NullMethod::kDeleteRange);
  return Answer(context, env_.backend->DeleteRange(*request, response));
}

grpc::ServerUnaryReactor* CallbackKv::Txn(grpc::CallbackServerContext* context,
                                          const etcdserverpb::TxnRequest* request,
                                          etcdserverpb::TxnResponse* response) {
  env_.counters->Increment(NullMethod::kTxn);
  return Answer(context, env_.backend->Txn(*request, response));
}

grpc::ServerUnaryReactor* CallbackKv::Compact(grpc::CallbackServerContext* context,
                                              const etcdserverpb::CompactionRequest* request,
                                              etcdserverpb::CompactionResponse* response) {
  env_.counters->Increment(NullMethod::kCompact);
  return Answer(context, env_.backend->Compact(*request, response));
}

// ----- Maintenance -----

grpc::ServerUnaryReactor* CallbackMaintenance::Status(grpc::CallbackServerContext* context,
                                                      const etcdserverpb::StatusRequest* /*request*/,
                                                      etcdserverpb::StatusResponse* response) {
  env_.counters->Increment(NullMethod::kStatus);
  env_.status_peers->Add(context->peer());
  FillBaselineHeader(env_.backend->Revision(), response->mutable_header());
  response->set_leader(kNullMemberId);
  return Answer(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* CallbackMaintenance::Unimplemented(grpc::CallbackServerContext* context) {
  env_.counters->Increment(NullMethod::kUnimplemented);
  return Answer(context, kUnimplemented);
}

grpc::ServerUnaryReactor* CallbackMaintenance::Alarm(grpc::CallbackServerContext* context,
                                                     const etcdserverpb::AlarmRequest*,
                                                     etcdserverpb::AlarmResponse*) {
  return Unimplemented(context);
}
grpc::ServerUnaryReactor* CallbackMaintenance::Defragment(grpc::CallbackServerContext* context,
                                                          const etcdserverpb::DefragmentRequest*,
                                                          etcdserverpb::DefragmentResponse*) {
  return Unimplemented(context);
}
grpc::ServerUnaryReactor* CallbackMaintenance::Hash(grpc::CallbackServerContext* context,
                                                    const etcdserverpb::HashRequest*,
                                                    etcdserverpb::HashResponse*) {
  return Unimplemented(context);
}
grpc::ServerUnaryReactor* CallbackMaintenance::HashKV(grpc::CallbackServerContext* context,
                                                      const etcdserverpb::HashKVRequest*,
                                                      etcdserverpb::HashKVResponse*) {
  return Unimplemented(context);
}
grpc::ServerUnaryReactor* CallbackMaintenance::MoveLeader(grpc::CallbackServerContext* context,
                                                          const etcdserverpb::MoveLeaderRequest*,
                                                          etcdserverpb::MoveLeaderResponse*) {
  return Unimplemented(context);
}
grpc::ServerWriteReactor<etcdserverpb::SnapshotResponse>* CallbackMaintenance::Snapshot(
    grpc::CallbackServerContext* /*context*/, const etcdserverpb::SnapshotRequest*) {
  env_.counters->Increment(NullMethod::kUnimplemented);
  return new StatusOnlyWriter<etcdserverpb::SnapshotResponse>(
      grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "revkv-null-server serves no snapshots"));
}

// ----- Cluster -----

grpc::ServerUnaryReactor* CallbackCluster::MemberList(grpc::CallbackServerContext* context,
                                                      const etcdserverpb::MemberListRequest* /*request*/,
                                                      etcdserverpb::MemberListResponse* response) {
  env_.counters->Increment(NullMethod::kMemberList);
  FillBaselineHeader(env_.backend->Revision(), response->mutable_header());
  etcdserverpb::Member* member = response->add_members();
  member->set_id(kNullMemberId);
  member->set_name("revkv-null-server");
  return Answer(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* CallbackCluster::Unimplemented(grpc::CallbackServerContext* context) {
  env_.counters->Increment(NullMethod::kUnimplemented);
  return Answer(context, kUnimplemented);
}
grpc::ServerUnaryReactor* CallbackCluster::MemberAdd(grpc::CallbackServerContext* context,
                                                     const etcdserverpb::MemberAddRequest*,
                                                     etcdserverpb::MemberAddResponse*) {
  return Unimplemented(context);
}
grpc::ServerUnaryReactor* CallbackCluster::MemberRemove(grpc::CallbackServerContext* context,
                                                        const etcdserverpb::MemberRemoveRequest*,
                                                        etcdserverpb::MemberRemoveResponse*) {
  return Unimplemented(context);
}
grpc::ServerUnaryReactor* CallbackCluster::MemberUpdate(grpc::CallbackServerContext* context,
                                                        const etcdserverpb::MemberUpdateRequest*,
                                                        etcdserverpb::MemberUpdateResponse*) {
  return Unimplemented(context);
}
grpc::ServerUnaryReactor* CallbackCluster::MemberPromote(grpc::CallbackServerContext* context,
                                                         const etcdserverpb::MemberPromoteRequest*,
                                                         etcdserverpb::MemberPromoteResponse*) {
  return Unimplemented(context);
}

// ----- Pipeline -----

grpc::ServerBidiReactor<TxnRequest, TxnResponse>* CallbackPipeline::Pipeline(
    grpc::CallbackServerContext* /*context*/) {
  return new PipelineReactor<SingleTxn>(env_);
}

grpc::ServerBidiReactor<revkv::v1::TxnBatch, revkv::v1::TxnBatchResponse>* CallbackPipeline::PipelineBatch(
    grpc::CallbackServerContext* /*context*/) {
  return new PipelineReactor<TxnBatch>(env_);
}

}  // namespace revkv::bench
