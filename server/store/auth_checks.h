// The permission checks of each request (etcd's etcdserver/apply_auth.go, auth checks of v3_server.go and
// v3rpc), against one auth view (auth_state.h). A write is checked inside its transaction, against the
// auth state that transaction reads (Store::Write), so a permission revoked before its commit refuses it;
// a read is checked against the visible auth state before it reads.
//
// etcd 3.4's rules, and where revkv checks more (docs/server.md lists each):
//   Range                  read on [key, range_end)
//   Put                    write on the key; read on it with prev_kv; write on every key already attached
//                          to its lease (etcd's checkLeasePuts: a user who cannot revoke the lease may not
//                          attach to it)
//   DeleteRange            write on the range; read on it with prev_kv
//   Txn                    read for every compare; every operation of both branches as above, nested Txns
//                          too (etcd checks neither nested Txns nor a Put's prev_kv and lease there)
//   LeaseRevoke            write on every attached key (etcd's), and a user (revkv)
//   LeaseGrant             a user (revkv; etcd checks nothing)
//   Alarm (a change), auth changes   the root role (etcd checks no Alarm)
//
// All functions are templates over the transaction type; heap pointers never leave the body.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "etcdserverpb/rpc.pb.h"
#include "revkv/v1/store.pb.h"
#include "server/store/auth_state.h"
#include "server/store/lease_table.h"

namespace revkv::server::store {

// Every key attached to lease `id` must be writable by `who` (etcd's checkLeasePuts). OK for lease 0 or
// an unknown lease (the request fails on its own then).
template <class TxT>
absl::Status CheckLeaseKeys(TxT& tx, const Ref<StoreRoot>& root, const AuthView& view, const AuthInfo& who,
                            int64_t id) {
  if (id == 0 || LeaseTtl(tx, root, id) == 0) return absl::OkStatus();
  for (const std::string& key : AttachedKeys(tx, root, id)) {
    if (absl::Status s = view.CheckRange(who, key, std::string_view(), /*write=*/true); !s.ok()) return s;
  }
  return absl::OkStatus();
}

template <class TxT>
absl::Status CheckAuth(TxT& tx, const Ref<StoreRoot>& root, const AuthView& view, const AuthInfo& who,
                       const etcdserverpb::PutRequest& r) {
  if (absl::Status s = view.CheckRange(who, r.key(), std::string_view(), true); !s.ok()) return s;
  if (absl::Status s = CheckLeaseKeys(tx, root, view, who, r.lease()); !s.ok()) return s;
  if (r.prev_kv()) return view.CheckRange(who, r.key(), std::string_view(), false);
  return absl::OkStatus();
}

template <class TxT>
absl::Status CheckAuth(TxT&, const Ref<StoreRoot>&, const AuthView& view, const AuthInfo& who,
                       const etcdserverpb::DeleteRangeRequest& r) {
  if (r.prev_kv()) {
    if (absl::Status s = view.CheckRange(who, r.key(), r.range_end(), false); !s.ok()) return s;
  }
  return view.CheckRange(who, r.key(), r.range_end(), true);
}

template <class TxT>
absl::Status CheckAuth(TxT& tx, const Ref<StoreRoot>& root, const AuthView& view, const AuthInfo& who,
                       const etcdserverpb::TxnRequest& t) {
  for (const etcdserverpb::Compare& c : t.compare()) {
    if (absl::Status s = view.CheckRange(who, c.key(), c.range_end(), false); !s.ok()) return s;
  }
  for (const auto* ops : {&t.success(), &t.failure()}) {
    for (const etcdserverpb::RequestOp& op : *ops) {
      absl::Status s;
      switch (op.request_case()) {
        case etcdserverpb::RequestOp::kRequestRange:
          s = view.CheckRange(who, op.request_range().key(), op.request_range().range_end(), false);
          break;
        case etcdserverpb::RequestOp::kRequestPut:
          s = CheckAuth(tx, root, view, who, op.request_put());
          break;
        case etcdserverpb::RequestOp::kRequestDeleteRange:
          s = CheckAuth(tx, root, view, who, op.request_delete_range());
          break;
        case etcdserverpb::RequestOp::kRequestTxn:
          s = CheckAuth(tx, root, view, who, op.request_txn());
          break;
        default:
          break;
      }
      if (!s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

template <class TxT>
absl::Status CheckAuth(TxT& tx, const Ref<StoreRoot>& root, const AuthView& view, const AuthInfo& who,
                       const etcdserverpb::LeaseRevokeRequest& r) {
  if (absl::Status s = view.CheckUser(who); !s.ok()) return s;
  return CheckLeaseKeys(tx, root, view, who, r.id());
}

template <class TxT>
absl::Status CheckAuth(TxT&, const Ref<StoreRoot>&, const AuthView& view, const AuthInfo& who,
                       const etcdserverpb::LeaseGrantRequest&) {
  return view.CheckUser(who);
}

template <class TxT>
absl::Status CheckAuth(TxT&, const Ref<StoreRoot>&, const AuthView& view, const AuthInfo& who,
                       const etcdserverpb::AlarmRequest&) {
  return view.CheckAdmin(who);
}

template <class TxT>
absl::Status CheckAuth(TxT&, const Ref<StoreRoot>&, const AuthView& view, const AuthInfo& who,
                       const revkv::v1::AuthChange&) {
  return view.CheckAdmin(who);
}

}  // namespace revkv::server::store
