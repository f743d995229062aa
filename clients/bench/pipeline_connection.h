// The pipeline transport: every request of a connection travels on one revkv.v1.KV/Pipeline stream,
// or, with a batch size (ConnectionConfig::batch), on one revkv.v1.KV/PipelineBatch stream, each
// message carrying up to that many of the requests queued when the stream is free to write. A batch
// response answers as many entries as it holds results; while a response's answers are handed back,
// requests they start are only queued, so that they leave together in the next message.
//
// The stream answers in order, so the connection keeps the slots whose requests are on the stream in a
// ring, in sending order: a response belongs to the oldest unanswered entry. Requests are written one at
// a time (gRPC allows one write in flight per stream) and one read is always posted while the stream is
// open.
//
// Ring invariants: answered <= written <= queued, and queued - answered <= slots. Entries in
// [answered, written) are on the wire; entries in [written, queued) wait for the write in progress.
//
// A stream opens when a phase starts and half-closes when every slot is idle. When it ends early
// (server error, deadline), the requests on the wire fail with the stream's status (revkv answers every
// request before the failing one, so the first of them is the one that failed and the rest were never
// run), queued ones stay queued, and a new stream opens after a short pause if work remains.
#ifndef REVKV_CLIENTS_BENCH_PIPELINE_CONNECTION_H_
#define REVKV_CLIENTS_BENCH_PIPELINE_CONNECTION_H_

#include <memory>
#include <optional>
#include <vector>

#include "clients/bench/connection.h"
#include "revkv/v1/kv.grpc.pb.h"

namespace revkv::client {

// A connection whose slots share one Pipeline stream. Owner thread only.
class PipelineConnection final : public Connection {
 public:
  PipelineConnection(const ConnectionConfig& config, std::shared_ptr<grpc::Channel> channel,
                     grpc::CompletionQueue* cq, WorkerStats* stats, int* open_connections);

 private:
  enum class StreamState : uint8_t {
    kClosed,     // no stream (before a phase, after one, or waiting to reopen)
    kStarting,   // StartCall posted
    kOpen,       // reading and writing
    kClosing,    // WritesDone posted or the stream failed: draining until the read fails
    kFinishing,  // Finish posted
  };

  void OnPhaseStart() override;
  void Send(Slot& slot) override;
  void OnAllIdle() override;
  bool TransportClosed() const override { return state_ == StreamState::kClosed && !reopen_pending_; }

  void Open();
  void WriteNext();
  void PostRead();
  void MaybeHalfClose();
  void MaybeFinish();
  void OnStarted(bool ok);
  void OnWritten(bool ok);
  void OnRead(bool ok);
  void OnWritesDone(bool ok);
  void OnFinished(bool ok);
  void OnReopen(bool ok);
  // Hands back one answer (or the protocol error of an answer to nothing).
  void Answer(const etcdserverpb::TxnResponse& response);
  void OnBatchRead();

  Slot*& RingAt(uint64_t position) { return ring_[position % ring_.size()]; }

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<revkv::v1::KV::Stub> stub_;
  std::optional<grpc::ClientContext> context_;
  std::unique_ptr<grpc::ClientAsyncReaderWriter<etcdserverpb::TxnRequest, etcdserverpb::TxnResponse>> stream_;
  std::unique_ptr<grpc::ClientAsyncReaderWriter<revkv::v1::TxnBatch, revkv::v1::TxnBatchResponse>>
      batch_stream_;  // instead of stream_ when config().batch > 0
  StreamState state_ = StreamState::kClosed;
  bool writing_ = false;
  bool reading_ = false;
  bool read_closed_ = false;          // a read failed: the server has nothing more to say
  bool writes_done_pending_ = false;  // WritesDone posted and not yet completed
  bool reopen_pending_ = false;       // a reopen alarm is set
  etcdserverpb::TxnResponse response_;
  revkv::v1::TxnBatch batch_request_;  // reused: cleared messages keep their memory
  revkv::v1::TxnBatchResponse batch_response_;
  bool handing_back_ = false;  // answers of one batch response are being handed back: only queue
  grpc::Status finish_status_;
  grpc::Alarm reopen_alarm_;

  std::vector<Slot*> ring_;  // capacity: one entry per slot
  uint64_t answered_ = 0;
  uint64_t written_ = 0;
  uint64_t queued_ = 0;

  MemberCompletion<PipelineConnection> started_{this, &PipelineConnection::OnStarted};
  MemberCompletion<PipelineConnection> write_done_{this, &PipelineConnection::OnWritten};
  MemberCompletion<PipelineConnection> read_done_{this, &PipelineConnection::OnRead};
  MemberCompletion<PipelineConnection> writes_done_{this, &PipelineConnection::OnWritesDone};
  MemberCompletion<PipelineConnection> finished_{this, &PipelineConnection::OnFinished};
  MemberCompletion<PipelineConnection> reopen_{this, &PipelineConnection::OnReopen};
};

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_BENCH_PIPELINE_CONNECTION_H_
