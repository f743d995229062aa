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

// One Pipeline stream. Invariants: at most one read and one write outstanding (gRPC's rule); answers_
// holds the answers not yet fully written, in request order, the front one being written while
// `writing_`; once Finish is called nothing else is started. OnReadDone and OnWriteDone may run at the
// same time on two threads: mu_ guards the state they share.
class PipelineReactor final : public grpc::ServerBidiReactor<TxnRequest, TxnResponse> {
 public:
  explicit PipelineReactor(CallbackEnv env) : env_(env) { StartRead(&request_); }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the client is done sending (or gone)
      std::lock_guard<std::mutex> lock(mu_);
      reads_done_ = true;
      MaybeFinishLocked();
      return;
    }
    env_.counters->Increment(NullMethod::kPipeline);
    // The read buffer is free once the request is executed, before the next read is started.
    TxnResponse answer;
    const grpc::Status status = env_.backend->Txn(request_, &answer);
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
      StartRead(&request_);
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
      StartRead(&request_);
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
    StartWrite(&answers_.front(), options);
  }
  void MaybeFinishLocked() {
    if (reads_done_ && answers_.empty() && !writing_) FinishLocked(failure_);
  }
  void FinishLocked(const grpc::Status& status) {
    if (finished_) return;
    finished_ = true;
    Finish(status);
  }

  const CallbackEnv env_;
  TxnRequest request_;  // the read buffer
  std::mutex mu_;
  std::deque<TxnResponse> answers_;  // guarded by mu_; a deque: the front stays put while others are added
  grpc::Status failure_;             // guarded by mu_
  bool writing_ = false;             // guarded by mu_
  bool reads_done_ = false;          // guarded by mu_
  bool read_paused_ = false;         // guarded by mu_
  bool finished_ = false;            // guarded by mu_
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
  return new PipelineReactor(env_);
}

}  // namespace revkv::bench
