// The unary transport.
#include "clients/bench/unary_connection.h"

namespace revkv::client {

UnaryConnection::UnaryConnection(const ConnectionConfig& config, std::shared_ptr<grpc::Channel> channel,
                                 grpc::CompletionQueue* cq, WorkerStats* stats, int* open_connections)
    : Connection(config, cq, stats, open_connections),
      channel_(std::move(channel)),
      stub_(etcdserverpb::KV::NewStub(channel_)) {
  calls_.reserve(slot_count());
  for (size_t i = 0; i < slot_count(); ++i) {
    auto call = std::make_unique<Call>();
    call->owner = this;
    call->slot = &slot(i);
    calls_.push_back(std::move(call));
  }
}

void UnaryConnection::Send(Slot& s) {
  Call& call = *calls_[s.index];
  // The readers live in the previous call's arena: drop them before the context that owns it.
  call.range_reader.reset();
  call.put_reader.reset();
  call.txn_reader.reset();
  call.context.emplace();
  if (config().timeout.count() > 0) {
    call.context->set_deadline(std::chrono::system_clock::now() + config().timeout);
  }
  grpc::ClientContext* context = &*call.context;
  void* tag = call.finished.tag();
  switch (s.op.rpc()) {
    case Rpc::kRange:
      stats().CountRequest(Method::kRange);
      call.range_reader = stub_->PrepareAsyncRange(context, s.op.range_request(), cq());
      call.range_reader->StartCall();
      call.range_reader->Finish(&call.range, &call.status, tag);
      return;
    case Rpc::kPut:
      stats().CountRequest(Method::kPut);
      call.put_reader = stub_->PrepareAsyncPut(context, s.op.put_request(), cq());
      call.put_reader->StartCall();
      call.put_reader->Finish(&call.put, &call.status, tag);
      return;
    case Rpc::kTxn:
      stats().CountRequest(Method::kTxn);
      call.txn_reader = stub_->PrepareAsyncTxn(context, s.op.txn_request(), cq());
      call.txn_reader->StartCall();
      call.txn_reader->Finish(&call.txn, &call.status, tag);
      return;
  }
}

void UnaryConnection::OnCallFinished(Call& call) {
  Slot& s = *call.slot;
  if (!call.status.ok()) return OnFailure(s, call.status);
  switch (s.op.rpc()) {
    case Rpc::kRange:
      return OnStep(s, s.op.OnRange(call.range, rng()));
    case Rpc::kPut:
      return OnStep(s, s.op.OnPut(call.put));
    case Rpc::kTxn:
      return OnStep(s, s.op.OnTxn(call.txn, rng()));
  }
}

}  // namespace revkv::client
