// The naive store: an ordered map behind one reader-writer lock, no history, no durability. It is the
// simplest KV service anyone would write, and the one revkv must beat.
//
// It serves etcd 3.4's semantics for what the benchmark workloads send, and says UNIMPLEMENTED for the
// rest rather than answering wrongly:
//   - Range of one key, of [key, range_end), of everything from key ("\0"); limit, count, count_only,
//     keys_only, more. Not: sorting, min/max revision filters, or a past revision (there is no history).
//   - Put with prev_kv, ignore_value, ignore_lease (the lease is stored as given; nothing expires).
//   - DeleteRange with prev_kv.
//   - Txn: compares of one key on VERSION, CREATE, MOD, VALUE and LEASE with the four results, then the
//     success or failure ops (Range, Put, DeleteRange; not nested txns); the whole Txn is one revision
//     and a key put twice is etcd's "duplicate key given in txn request".
//   - Compact only records the revision (there is nothing to drop).
// Revisions advance by one per write request that changed something, as in etcd.
//
// Thread-safety: thread-safe. Reads take the lock shared; writes (and a Txn that has a write op on
// either branch) take it exclusive.
#ifndef REVKV_BENCH_NULL_SERVER_MAP_STORE_H_
#define REVKV_BENCH_NULL_SERVER_MAP_STORE_H_

#include <cstdint>
#include <shared_mutex>
#include <string>

#include "absl/container/btree_map.h"
#include "bench/null_server/kv_backend.h"

namespace revkv::bench {

class MapStore final : public KvBackend {
 public:
  grpc::Status Range(const etcdserverpb::RangeRequest& request,
                     etcdserverpb::RangeResponse* response) override;
  grpc::Status Put(const etcdserverpb::PutRequest& request, etcdserverpb::PutResponse* response) override;
  grpc::Status DeleteRange(const etcdserverpb::DeleteRangeRequest& request,
                           etcdserverpb::DeleteRangeResponse* response) override;
  grpc::Status Txn(const etcdserverpb::TxnRequest& request, etcdserverpb::TxnResponse* response) override;
  grpc::Status Compact(const etcdserverpb::CompactionRequest& request,
                       etcdserverpb::CompactionResponse* response) override;
  int64_t Revision() override;

 private:
  struct Entry {
    std::string value;
    int64_t create_revision = 0;
    int64_t mod_revision = 0;
    int64_t version = 0;
    int64_t lease = 0;
  };
  using Map = absl::btree_map<std::string, Entry>;

  // The work of each method, with mu_ held (shared for reads, exclusive for writes). Writes stamp
  // `revision`, the revision their request commits as.
  grpc::Status CheckRangeLocked(const etcdserverpb::RangeRequest& request);
  grpc::Status RangeLocked(const etcdserverpb::RangeRequest& request, etcdserverpb::RangeResponse* response);
  grpc::Status PutLocked(const etcdserverpb::PutRequest& request, int64_t revision,
                         etcdserverpb::PutResponse* response);
  // Returns the number of keys deleted.
  int64_t DeleteRangeLocked(const etcdserverpb::DeleteRangeRequest& request,
                            etcdserverpb::DeleteRangeResponse* response);
  bool CompareLocked(const etcdserverpb::Compare& compare);
  // etcd's checks of a branch's ops against the state before the txn: OK, or the error one would fail with.
  grpc::Status CheckOpsLocked(const google::protobuf::RepeatedPtrField<etcdserverpb::RequestOp>& ops);

  std::shared_mutex mu_;
  Map map_;                       // guarded by mu_
  int64_t revision_ = 1;          // guarded by mu_: the revision of the newest write (1: the empty store)
  int64_t compact_revision_ = 0;  // guarded by mu_
};

}  // namespace revkv::bench

#endif  // REVKV_BENCH_NULL_SERVER_MAP_STORE_H_
