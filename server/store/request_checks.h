// Checks of KV requests made before any transaction runs, as etcd 3.4's gRPC layer makes them
// (etcdserver/api/v3rpc/key.go): empty keys, misuse of ignore_value / ignore_lease, the number of
// operations in a Txn, and keys put twice (or put and deleted) by one Txn.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "etcdserverpb/rpc.pb.h"

namespace revkv::server::store {

absl::Status CheckRangeRequest(const etcdserverpb::RangeRequest& r);
absl::Status CheckPutRequest(const etcdserverpb::PutRequest& r);
absl::Status CheckDeleteRequest(const etcdserverpb::DeleteRangeRequest& r);
// Operation counts (at every level) and the operations' own checks, then duplicate keys.
absl::Status CheckTxnRequest(const etcdserverpb::TxnRequest& r, int64_t max_txn_ops);

// True if no branch of the Txn (at any depth) puts or deletes.
bool IsTxnReadOnly(const etcdserverpb::TxnRequest& r);

}  // namespace revkv::server::store
