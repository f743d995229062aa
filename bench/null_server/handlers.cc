// The null server's Snapshot and Pipeline handlers, and its fixed responses.
#include "bench/null_server/handlers.h"

namespace revkv::bench {
namespace {

constexpr int64_t kNullRevision = 1;

// Answers one Snapshot call at a time with UNIMPLEMENTED; reused like UnaryHandler.
class SnapshotHandler final : public Handler {
 public:
  SnapshotHandler(WorkerContext* worker, etcdserverpb::Maintenance::AsyncService* service)
      : worker_(worker), service_(service) {}

  void Arm() override {
    context_.emplace();
    writer_.emplace(&*context_);
    service_->RequestSnapshot(&*context_, &request_, &*writer_, worker_->cq, worker_->cq, arrived_.tag());
  }

 private:
  void OnArrived(bool ok) {
    if (!ok) return;
    worker_->counters->Increment(NullMethod::kUnimplemented);
    writer_->Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "revkv-null-server serves no snapshots"),
                    finished_.tag());
  }
  void OnFinished(bool /*ok*/) {
    if (worker_->accepting) Arm();
  }

  WorkerContext* worker_;
  etcdserverpb::Maintenance::AsyncService* service_;
  std::optional<grpc::ServerContext> context_;
  etcdserverpb::SnapshotRequest request_;
  std::optional<grpc::ServerAsyncWriter<etcdserverpb::SnapshotResponse>> writer_;
  MemberCompletion<SnapshotHandler> arrived_{this, &SnapshotHandler::OnArrived};
  MemberCompletion<SnapshotHandler> finished_{this, &SnapshotHandler::OnFinished};
};

// One revkv.v1.KV/Pipeline stream, from the request for it to its end.
//
// Invariants: at most one read and one write are posted at a time (gRPC's rule for a bidi stream);
// `owed_` counts messages read but not yet answered; once Finish is posted nothing else is. The object
// deletes itself when no operation is in flight and none will be posted, which is the only way it ends.
class PipelineStream {
 public:
  PipelineStream(WorkerContext* worker, revkv::v1::KV::AsyncService* service,
                 const etcdserverpb::TxnResponse* response)
      : worker_(worker), service_(service), response_(response), stream_(&context_) {}

  void Arm() {
    service_->RequestPipeline(&context_, &stream_, worker_->cq, worker_->cq, arrived_.tag());
    ++in_flight_;
  }

 private:
  void OnArrived(bool ok) {
    --in_flight_;
    if (ok) {
      if (worker_->accepting) (new PipelineStream(worker_, service_, response_))->Arm();
      PostRead();
    }
    DeleteIfIdle();
  }

  void OnRead(bool ok) {
    --in_flight_;
    reading_ = false;
    if (ok) {
      worker_->counters->Increment(NullMethod::kPipeline);
      ++owed_;
      PostWrite();
      PostRead();
    } else {
      client_done_ = true;  // the client half-closed, or the call ended
      PostFinish();
    }
    DeleteIfIdle();
  }

  void OnWritten(bool ok) {
    --in_flight_;
    writing_ = false;
    if (ok) {
      --owed_;
      PostWrite();
    } else {
      broken_ = true;  // the call is gone; the pending read will fail too
    }
    PostFinish();
    DeleteIfIdle();
  }

  void OnFinished(bool /*ok*/) {
    --in_flight_;
    DeleteIfIdle();
  }

  void PostRead() {
    if (reading_ || client_done_ || finishing_ || !worker_->accepting) return;
    reading_ = true;
    ++in_flight_;
    stream_.Read(&request_, read_.tag());
  }
  void PostWrite() {
    if (writing_ || owed_ == 0 || broken_ || finishing_ || !worker_->accepting) return;
    writing_ = true;
    ++in_flight_;
    // With more answers owed after this one, let gRPC hold this one back and send them together.
    grpc::WriteOptions options;
    if (owed_ > 1) options.set_buffer_hint();
    stream_.Write(*response_, options, written_.tag());
  }
  void PostFinish() {
    if (!client_done_ || reading_ || writing_ || owed_ > 0 || broken_ || finishing_ || !worker_->accepting) {
      return;
    }
    finishing_ = true;
    ++in_flight_;
    stream_.Finish(grpc::Status::OK, finished_.tag());
  }
  void DeleteIfIdle() {
    if (in_flight_ == 0) delete this;
  }

  WorkerContext* worker_;
  revkv::v1::KV::AsyncService* service_;
  const etcdserverpb::TxnResponse* response_;
  grpc::ServerContext context_;
  grpc::ServerAsyncReaderWriter<etcdserverpb::TxnResponse, etcdserverpb::TxnRequest> stream_;
  etcdserverpb::TxnRequest request_;  // read into, then ignored
  int in_flight_ = 0;                 // operations posted and not yet completed
  int64_t owed_ = 0;                  // messages read and not yet answered
  bool reading_ = false;
  bool writing_ = false;
  bool client_done_ = false;  // no more messages will be read
  bool broken_ = false;       // a write failed: the call is over
  bool finishing_ = false;
  MemberCompletion<PipelineStream> arrived_{this, &PipelineStream::OnArrived};
  MemberCompletion<PipelineStream> read_{this, &PipelineStream::OnRead};
  MemberCompletion<PipelineStream> written_{this, &PipelineStream::OnWritten};
  MemberCompletion<PipelineStream> finished_{this, &PipelineStream::OnFinished};
};

}  // namespace

NullResponses::NullResponses() {
  range.mutable_header()->set_revision(kNullRevision);
  put.mutable_header()->set_revision(kNullRevision);
  delete_range.mutable_header()->set_revision(kNullRevision);
  txn.mutable_header()->set_revision(kNullRevision);
  txn.set_succeeded(true);
  compact.mutable_header()->set_revision(kNullRevision);
  status.mutable_header()->set_revision(kNullRevision);
  status.set_leader(kNullMemberId);
  status.mutable_header()->set_member_id(kNullMemberId);
  status.mutable_header()->set_cluster_id(kNullMemberId);
  member_list.mutable_header()->set_revision(kNullRevision);
  member_list.mutable_header()->set_member_id(kNullMemberId);
  member_list.mutable_header()->set_cluster_id(kNullMemberId);
  etcdserverpb::Member* member = member_list.add_members();
  member->set_id(kNullMemberId);
  member->set_name("revkv-null-server");
}

std::unique_ptr<Handler> MakeSnapshotHandler(WorkerContext* worker,
                                             etcdserverpb::Maintenance::AsyncService* service) {
  return std::make_unique<SnapshotHandler>(worker, service);
}

void AcceptPipelineStream(WorkerContext* worker, revkv::v1::KV::AsyncService* service,
                          const etcdserverpb::TxnResponse* response) {
  (new PipelineStream(worker, service, response))->Arm();
}

}  // namespace revkv::bench
