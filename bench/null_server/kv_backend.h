// What the callback-API baseline servers answer the KV methods with: nothing (the null backend, the gRPC
// ceiling) or a naive in-memory store (map_store.h, the store revkv must beat).
#ifndef REVKV_BENCH_NULL_SERVER_KV_BACKEND_H_
#define REVKV_BENCH_NULL_SERVER_KV_BACKEND_H_

#include <grpcpp/support/status.h>

#include <cstdint>

#include "etcdserverpb/rpc.pb.h"

namespace revkv::bench {

// The member id (and cluster id) in the baseline servers' headers, MemberList and Status answers.
inline constexpr uint64_t kNullMemberId = 0x6e756c6c;  // "null"

// Fills a response header as the baseline servers do: this member, raft term 1, `revision`.
inline void FillBaselineHeader(int64_t revision, etcdserverpb::ResponseHeader* header) {
  header->set_cluster_id(kNullMemberId);
  header->set_member_id(kNullMemberId);
  header->set_revision(revision);
  header->set_raft_term(1);
}

// The KV methods of a baseline server. Each fills `response` (gRPC's, empty) and returns the call's
// status; on an error the response is not sent. Thread-safe: called concurrently from gRPC's threads.
class KvBackend {
 public:
  virtual ~KvBackend() = default;
  virtual grpc::Status Range(const etcdserverpb::RangeRequest& request,
                             etcdserverpb::RangeResponse* response) = 0;
  virtual grpc::Status Put(const etcdserverpb::PutRequest& request, etcdserverpb::PutResponse* response) = 0;
  virtual grpc::Status DeleteRange(const etcdserverpb::DeleteRangeRequest& request,
                                   etcdserverpb::DeleteRangeResponse* response) = 0;
  virtual grpc::Status Txn(const etcdserverpb::TxnRequest& request, etcdserverpb::TxnResponse* response) = 0;
  virtual grpc::Status Compact(const etcdserverpb::CompactionRequest& request,
                               etcdserverpb::CompactionResponse* response) = 0;
  // The revision Status and MemberList headers carry.
  virtual int64_t Revision() = 0;
};

// Answers every call at once with a header at revision 1 and nothing else (a Txn also says `succeeded`,
// so a client's transfer transactions commit at the first attempt instead of retrying forever against a
// store that never changes). Thread-safe and stateless.
class NullBackend final : public KvBackend {
 public:
  grpc::Status Range(const etcdserverpb::RangeRequest&, etcdserverpb::RangeResponse* response) override {
    FillBaselineHeader(1, response->mutable_header());
    return grpc::Status::OK;
  }
  grpc::Status Put(const etcdserverpb::PutRequest&, etcdserverpb::PutResponse* response) override {
    FillBaselineHeader(1, response->mutable_header());
    return grpc::Status::OK;
  }
  grpc::Status DeleteRange(const etcdserverpb::DeleteRangeRequest&,
                           etcdserverpb::DeleteRangeResponse* response) override {
    FillBaselineHeader(1, response->mutable_header());
    return grpc::Status::OK;
  }
  grpc::Status Txn(const etcdserverpb::TxnRequest&, etcdserverpb::TxnResponse* response) override {
    FillBaselineHeader(1, response->mutable_header());
    response->set_succeeded(true);
    return grpc::Status::OK;
  }
  grpc::Status Compact(const etcdserverpb::CompactionRequest&,
                       etcdserverpb::CompactionResponse* response) override {
    FillBaselineHeader(1, response->mutable_header());
    return grpc::Status::OK;
  }
  int64_t Revision() override { return 1; }
};

}  // namespace revkv::bench

#endif  // REVKV_BENCH_NULL_SERVER_KV_BACKEND_H_
