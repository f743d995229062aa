// The unary transport: each request is its own etcdserverpb.KV RPC.
#ifndef REVKV_CLIENTS_BENCH_UNARY_CONNECTION_H_
#define REVKV_CLIENTS_BENCH_UNARY_CONNECTION_H_

#include <memory>
#include <optional>
#include <vector>

#include "clients/bench/connection.h"
#include "etcdserverpb/rpc.grpc.pb.h"

namespace revkv::client {

// A connection whose slots each keep one RPC in flight. Owner thread only.
class UnaryConnection final : public Connection {
 public:
  UnaryConnection(const ConnectionConfig& config, std::shared_ptr<grpc::Channel> channel,
                  grpc::CompletionQueue* cq, WorkerStats* stats, int* open_connections);

 private:
  // One slot's call: a fresh ClientContext per RPC (gRPC allows no reuse) and responses reused between
  // RPCs, so parsing a response reuses the previous one's storage.
  struct Call {
    UnaryConnection* owner = nullptr;
    Slot* slot = nullptr;
    std::optional<grpc::ClientContext> context;
    std::unique_ptr<grpc::ClientAsyncResponseReader<etcdserverpb::RangeResponse>> range_reader;
    std::unique_ptr<grpc::ClientAsyncResponseReader<etcdserverpb::PutResponse>> put_reader;
    std::unique_ptr<grpc::ClientAsyncResponseReader<etcdserverpb::TxnResponse>> txn_reader;
    etcdserverpb::RangeResponse range;
    etcdserverpb::PutResponse put;
    etcdserverpb::TxnResponse txn;
    grpc::Status status;
    MemberCompletion<Call> finished{this, &Call::OnFinished};

    void OnFinished(bool /*ok*/) { owner->OnCallFinished(*this); }
  };

  void Send(Slot& slot) override;
  void OnAllIdle() override {}
  bool TransportClosed() const override { return true; }
  void OnCallFinished(Call& call);

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<etcdserverpb::KV::Stub> stub_;
  std::vector<std::unique_ptr<Call>> calls_;  // one per slot, same index
};

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_BENCH_UNARY_CONNECTION_H_
