// The pipeline transport: one revkv.v1.KV/Pipeline (or PipelineBatch) stream per connection.
#include "clients/bench/pipeline_connection.h"

namespace revkv::client {
namespace {

// How long a connection waits before reopening a stream that failed, so that a dead server is not
// hammered with new streams.
constexpr auto kReopenPause = std::chrono::milliseconds(100);

}  // namespace

PipelineConnection::PipelineConnection(const ConnectionConfig& config, std::shared_ptr<grpc::Channel> channel,
                                       grpc::CompletionQueue* cq, WorkerStats* stats, int* open_connections)
    : Connection(config, cq, stats, open_connections),
      channel_(std::move(channel)),
      stub_(revkv::v1::KV::NewStub(channel_)),
      ring_(slot_count(), nullptr) {}

void PipelineConnection::OnPhaseStart() {
  if (state_ == StreamState::kClosed && !reopen_pending_) Open();
}

void PipelineConnection::Open() {
  stream_.reset();  // lives in the previous call's arena: goes before its context
  batch_stream_.reset();
  context_.emplace();
  if (config().timeout.count() > 0 && plan().end != Clock::time_point::max()) {
    context_->set_deadline(ToGprDeadline(plan().end + config().timeout));
  }
  read_closed_ = false;
  state_ = StreamState::kStarting;
  if (config().batch > 0) {
    batch_stream_ = stub_->PrepareAsyncPipelineBatch(&*context_, cq());
    batch_stream_->StartCall(started_.tag());
  } else {
    stream_ = stub_->PrepareAsyncPipeline(&*context_, cq());
    stream_->StartCall(started_.tag());
  }
}

void PipelineConnection::Send(Slot& slot) {
  RingAt(queued_++) = &slot;
  if (state_ == StreamState::kClosed && !reopen_pending_) {
    Open();
  } else if (!handing_back_) {
    WriteNext();
  }
}

void PipelineConnection::WriteNext() {
  if (state_ != StreamState::kOpen || writing_ || written_ == queued_) return;
  writing_ = true;
  if (config().batch > 0) {
    // Clear keeps the cleared requests' memory: a warm batch is filled without allocating.
    batch_request_.Clear();
    for (int n = 0; n < config().batch && written_ != queued_; ++n) {
      *batch_request_.add_requests() = RingAt(written_++)->op.pipeline_request();
    }
    stats().CountRequest(Method::kPipelineBatch);
    grpc::WriteOptions options;
    if (written_ != queued_) options.set_buffer_hint();
    batch_stream_->Write(batch_request_, options, write_done_.tag());  // serializes the batch now
    return;
  }
  Slot* slot = RingAt(written_++);
  stats().CountRequest(Method::kPipeline);
  // With more requests queued behind this one, let gRPC hold it back and send it with the next.
  grpc::WriteOptions options;
  if (written_ != queued_) options.set_buffer_hint();
  stream_->Write(slot->op.pipeline_request(), options, write_done_.tag());  // serializes the request now
}

void PipelineConnection::PostRead() {
  reading_ = true;
  if (config().batch > 0) {
    batch_stream_->Read(&batch_response_, read_done_.tag());
  } else {
    stream_->Read(&response_, read_done_.tag());
  }
}

void PipelineConnection::OnAllIdle() { MaybeHalfClose(); }

void PipelineConnection::MaybeHalfClose() {
  if (state_ != StreamState::kOpen || !all_idle() || writing_ || written_ != queued_) return;
  state_ = StreamState::kClosing;
  writes_done_pending_ = true;
  if (config().batch > 0) {
    batch_stream_->WritesDone(writes_done_.tag());
  } else {
    stream_->WritesDone(writes_done_.tag());
  }
}

void PipelineConnection::MaybeFinish() {
  if (!read_closed_ || reading_ || writing_ || writes_done_pending_) return;
  if (state_ == StreamState::kFinishing || state_ == StreamState::kClosed) return;
  state_ = StreamState::kFinishing;
  if (config().batch > 0) {
    batch_stream_->Finish(&finish_status_, finished_.tag());
  } else {
    stream_->Finish(&finish_status_, finished_.tag());
  }
}

void PipelineConnection::OnStarted(bool ok) {
  if (!ok) {  // the call never started; Finish tells why
    state_ = StreamState::kClosing;
    read_closed_ = true;
    MaybeFinish();
    return;
  }
  state_ = StreamState::kOpen;
  PostRead();
  WriteNext();
  MaybeHalfClose();
}

void PipelineConnection::OnWritten(bool ok) {
  writing_ = false;
  if (ok) {
    WriteNext();
    MaybeHalfClose();
  } else if (state_ == StreamState::kOpen) {
    state_ = StreamState::kClosing;  // the stream is broken; its read will fail too
  }
  MaybeFinish();
}

void PipelineConnection::OnRead(bool ok) {
  reading_ = false;
  if (!ok) {
    read_closed_ = true;
    if (state_ == StreamState::kOpen) state_ = StreamState::kClosing;
    MaybeFinish();
    return;
  }
  if (config().batch > 0) {
    OnBatchRead();
  } else {
    Answer(response_);
  }
  PostRead();
}

void PipelineConnection::Answer(const etcdserverpb::TxnResponse& response) {
  if (answered_ == written_) {
    // A response to nothing: the server broke the protocol. End the stream; Finish reports CANCELLED.
    context_->TryCancel();
    return;
  }
  Slot* slot = RingAt(answered_++);
  OnStep(*slot, slot->op.OnPipelineResponse(response, rng()));
}

void PipelineConnection::OnBatchRead() {
  // The requests the answers start are queued, and go out together once every answer is handed back.
  handing_back_ = true;
  for (const revkv::v1::TxnResult& result : batch_response_.results()) {
    if (result.has_error()) {
      if (answered_ == written_) {
        context_->TryCancel();
        break;
      }
      Slot* slot = RingAt(answered_++);
      OnFailure(*slot,
                grpc::Status(static_cast<grpc::StatusCode>(result.error().code()), result.error().message()));
    } else {
      Answer(result.response());
    }
  }
  handing_back_ = false;
  WriteNext();
  MaybeHalfClose();
}

void PipelineConnection::OnWritesDone(bool /*ok*/) {
  writes_done_pending_ = false;
  MaybeFinish();
}

void PipelineConnection::OnFinished(bool /*ok*/) {
  state_ = StreamState::kClosed;
  grpc::Status status = finish_status_;
  if (status.ok() && answered_ != written_) {
    status = grpc::Status(grpc::StatusCode::INTERNAL, "Pipeline stream ended with requests unanswered");
  }
  // Requests on the wire fail with the stream's status; ones not yet written stay queued for the next
  // stream. Collect first: failing a slot may queue its next request.
  std::vector<Slot*> failed;
  for (uint64_t p = answered_; p != written_; ++p) failed.push_back(RingAt(p));
  answered_ = written_;
  reopen_pending_ = true;  // keeps Send from opening a stream while the failures are handed back
  for (Slot* slot : failed) OnFailure(*slot, status);
  reopen_pending_ = false;

  if (written_ != queued_ || !all_idle()) {
    if (finish_status_.ok()) {
      Open();
    } else {
      reopen_pending_ = true;
      reopen_alarm_.Set(cq(), ToGprDeadline(Clock::now() + kReopenPause), reopen_.tag());
    }
    return;
  }
  CheckDone();
}

void PipelineConnection::OnReopen(bool /*ok*/) {
  reopen_pending_ = false;
  if (written_ != queued_ || !all_idle()) {
    Open();
  } else {
    CheckDone();
  }
}

}  // namespace revkv::client
