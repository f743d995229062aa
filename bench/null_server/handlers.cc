// The null server's Snapshot, Pipeline and PipelineBatch handlers, and its fixed responses.
#include "bench/null_server/handlers.h"

#include <deque>
#include <type_traits>

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

// revkv.v1.KV/Pipeline: every message is answered with the same fixed response.
struct FixedTxnAnswers {
  using Request = etcdserverpb::TxnRequest;
  using Response = etcdserverpb::TxnResponse;
  static constexpr NullMethod kCounter = NullMethod::kPipeline;
  static void RequestCall(revkv::v1::KV::AsyncService* service, grpc::ServerContext* context,
                          grpc::ServerAsyncReaderWriter<Response, Request>* stream,
                          grpc::ServerCompletionQueue* cq, void* tag) {
    service->RequestPipeline(context, stream, cq, cq, tag);
  }
};

// revkv.v1.KV/PipelineBatch: every message is answered with one fixed response per request.
struct BatchAnswers {
  using Request = revkv::v1::TxnBatch;
  using Response = revkv::v1::TxnBatchResponse;
  static constexpr NullMethod kCounter = NullMethod::kPipelineBatch;
  static void RequestCall(revkv::v1::KV::AsyncService* service, grpc::ServerContext* context,
                          grpc::ServerAsyncReaderWriter<Response, Request>* stream,
                          grpc::ServerCompletionQueue* cq, void* tag) {
    service->RequestPipelineBatch(context, stream, cq, cq, tag);
  }
};

// One revkv.v1.KV/Pipeline or PipelineBatch stream, from the request for it to its end.
//
// Invariants: at most one read and one write are posted at a time (gRPC's rule for a bidi stream);
// `owed_` counts messages read but not yet answered (for a batch stream, `batches_` holds their answers,
// the front one being written while `writing_`); once Finish is posted nothing else is. The object
// deletes itself when no operation is in flight and none will be posted, which is the only way it ends.
template <class Kind>
class PipelineStream {
 public:
  using Request = typename Kind::Request;
  using Response = typename Kind::Response;
  static constexpr bool kBatch = std::is_same_v<Kind, BatchAnswers>;

  PipelineStream(WorkerContext* worker, revkv::v1::KV::AsyncService* service,
                 const etcdserverpb::TxnResponse* response)
      : worker_(worker), service_(service), response_(response), stream_(&context_) {}

  void Arm() {
    Kind::RequestCall(service_, &context_, &stream_, worker_->cq, arrived_.tag());
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
      worker_->counters->Increment(Kind::kCounter);
      if constexpr (kBatch) {
        Response& answer = batches_.emplace_back();
        answer.mutable_results()->Reserve(request_.requests_size());
        for (int i = 0; i < request_.requests_size(); ++i)
          *answer.add_results()->mutable_response() = *response_;
      }
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
      if constexpr (kBatch) batches_.pop_front();
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
    if constexpr (kBatch) {
      stream_.Write(batches_.front(), options, written_.tag());
    } else {
      stream_.Write(*response_, options, written_.tag());
    }
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
  grpc::ServerAsyncReaderWriter<Response, Request> stream_;
  Request request_;               // read into (only a batch's size is used)
  std::deque<Response> batches_;  // batch streams: the answers owed, in order (a deque: the front stays put)
  int in_flight_ = 0;             // operations posted and not yet completed
  int64_t owed_ = 0;              // messages read and not yet answered
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
  (new PipelineStream<FixedTxnAnswers>(worker, service, response))->Arm();
  (new PipelineStream<BatchAnswers>(worker, service, response))->Arm();
}

}  // namespace revkv::bench
