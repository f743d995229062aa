// The store's state beside the key-values and leases: etcd's alarms (and, in auth_state.h, its users,
// roles and permissions), as one heap object under the StoreRoot, read and written by the same
// transactions as the key-values.
//
// Layout. StoreRoot::meta names a MetaState, created with the store and never replaced (a reference
// names an object, not a revision): a change writes the MetaState, so its revisions are the history of
// this state. It holds each part as one immutable Bytes blob (the encoding below) plus the numbers a
// transaction needs without decoding anything:
//   - alarms: an etcdserverpb.AlarmResponse whose `alarms` lists every active (member, alarm type)
//     pair, ordered by type then member; alarm_mask has bit (1 << type) for every type that some member
//     has active.
//   - auth: see auth_state.h.
//
// The one rule: every write transaction reads the MetaState before it changes anything (Store::Write),
// so an alarm or auth change that commits while it runs makes it retry and meet the new state: a write
// never commits past an alarm that refuses it, or a permission revoked before its commit.
//
// All functions are templates over the transaction type (stm::Tx or stm::SnapshotTx); the writing ones
// take stm::Tx. Heap pointers never leave a transaction body.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "etcdserverpb/rpc.pb.h"
#include "server/store/tree.h"

namespace revkv::server::store {

struct MetaState : VersionedObject {
  Field<Bytes> alarms;    // etcdserverpb.AlarmResponse encoding; empty: no alarm
  Field<Bytes> auth;      // revkv.v1.AuthState encoding (auth_state.h); empty: no user, no role, auth off
  int64_t alarm_mask;     // bit (1 << AlarmType) for every alarm type active for some member
  int64_t auth_revision;  // etcd's auth revision: 1 at creation, +1 for every auth change
  int64_t auth_enabled;   // 1 while authentication is enabled
  static TypeDescriptor Describe();
};

// The bit of `type` in MetaState::alarm_mask (0 for a type outside 0..62).
inline int64_t AlarmBit(int type) { return type >= 0 && type < 63 ? int64_t{1} << type : 0; }

template <class TxT>
ReadPtr<MetaState> ReadMeta(TxT& tx, const Ref<StoreRoot>& root) {
  return tx.Read(tx.Read(root), &StoreRoot::meta);
}

// The active alarms of `meta`, ordered by type then member.
template <class TxT>
std::vector<etcdserverpb::AlarmMember> ReadAlarms(TxT& tx, const ReadPtr<MetaState>& meta) {
  std::vector<etcdserverpb::AlarmMember> out;
  const std::string_view bytes = KeyAt(tx, meta->alarms);
  if (bytes.empty()) return out;
  etcdserverpb::AlarmResponse decoded;
  if (!decoded.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return out;  // never written so
  out.assign(decoded.alarms().begin(), decoded.alarms().end());
  return out;
}

// The encoding of `alarms` (ordered by type then member) as MetaState::alarms holds it, and its mask.
std::string EncodeAlarms(const std::vector<etcdserverpb::AlarmMember>& alarms);
int64_t AlarmMask(const std::vector<etcdserverpb::AlarmMember>& alarms);
// Decodes MetaState::alarms bytes as a checkpoint holds them: InvalidArgument-free; false if they do
// not decode or are not ordered and unique.
bool DecodeAlarms(std::string_view bytes, std::vector<etcdserverpb::AlarmMember>* alarms);

// ----- writing (read-write transactions) -----------------------------------------------------------

// Creates the MetaState of a new store (no alarm, auth revision 1, auth off) under `root`.
void NewMetaState(runtime::stm::Tx& tx, const WritePtr<StoreRoot>& root);
// Replaces the alarm list (ordered by type then member).
void WriteAlarms(runtime::stm::Tx& tx, const ReadPtr<MetaState>& meta,
                 const std::vector<etcdserverpb::AlarmMember>& alarms);
// Replaces the auth state: its encoding (auth_state.h) and the numbers read without decoding it.
void WriteAuth(runtime::stm::Tx& tx, const ReadPtr<MetaState>& meta, std::string_view encoded,
               int64_t revision, bool enabled);

}  // namespace revkv::server::store
