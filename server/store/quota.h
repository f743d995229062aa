// etcd's space quota (etcdserver/quota.go): what a request costs against --quota-backend-bytes, and which
// requests the NOSPACE and CORRUPT alarms refuse (etcdserver/apply.go's applierV3Capped and
// applierV3Corrupt).
//
// A request that adds data has a cost: a Put its key and value plus 256 bytes of metadata, a Txn the
// larger of its two branches' Puts, a LeaseGrant 64 bytes. Requests with no cost (reads, deletes,
// revokes, compactions, Txns without Puts) are never refused for space: they are how space comes back.
// Departure: a Txn's cost counts the Puts of its nested Txns too (etcd counts only the outermost ones,
// so a Put inside a nested Txn slipped past the quota and the alarm).
#pragma once

#include <algorithm>
#include <cstdint>

#include "absl/status/status.h"
#include "etcdserverpb/rpc.pb.h"
#include "revkv/v1/store.pb.h"
#include "server/store/errors.h"

namespace revkv::server::store {

inline constexpr int64_t kKvOverhead = 256;    // etcd's kvOverhead: a key's metadata
inline constexpr int64_t kLeaseOverhead = 64;  // etcd's leaseOverhead

inline int64_t QuotaCost(const etcdserverpb::PutRequest& r) {
  return kKvOverhead + static_cast<int64_t>(r.key().size() + r.value().size());
}

inline int64_t QuotaCost(const etcdserverpb::TxnRequest& r) {
  auto branch = [](const auto& ops) {
    int64_t cost = 0;
    for (const etcdserverpb::RequestOp& op : ops) {
      if (op.request_case() == etcdserverpb::RequestOp::kRequestPut) cost += QuotaCost(op.request_put());
      if (op.request_case() == etcdserverpb::RequestOp::kRequestTxn) cost += QuotaCost(op.request_txn());
    }
    return cost;
  };
  return std::max(branch(r.success()), branch(r.failure()));
}

inline int64_t QuotaCost(const etcdserverpb::LeaseGrantRequest&) { return kLeaseOverhead; }

template <class Request>
int64_t QuotaCost(const Request&) {
  return 0;
}

// Requests the alarms never refuse: alarms themselves (so that they can be disarmed), and auth changes
// (etcd's applierV3Corrupt and applierV3Capped leave them alone).
template <class Request>
inline constexpr bool kIgnoresAlarms = false;
template <>
inline constexpr bool kIgnoresAlarms<etcdserverpb::AlarmRequest> = true;
template <>
inline constexpr bool kIgnoresAlarms<revkv::v1::AuthChange> = true;

// The refusal of a write of `cost` bytes under the alarms of `alarm_mask` (MetaState::alarm_mask), or OK.
inline absl::Status AdmitUnderAlarms(int64_t alarm_mask, int64_t cost) {
  if (alarm_mask & (int64_t{1} << etcdserverpb::CORRUPT)) return errors::Corrupt();
  if (cost > 0 && (alarm_mask & (int64_t{1} << etcdserverpb::NOSPACE))) return errors::NoSpace();
  return absl::OkStatus();
}

}  // namespace revkv::server::store
