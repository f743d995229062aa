// The store's leases: the lease table and the index of the keys attached to each lease, as two more
// B+-trees (tree.h) under the StoreRoot, read and written by the same transactions as the key-values.
//
// Layout. StoreRoot::leases is a tree keyed by the lease ID's 8-byte encoding (EncodeLeaseId: big-endian
// with the sign bit flipped, so the byte order is the numeric order); its Entry holds the ID in `lease`
// and the granted TTL in seconds in `version` (value empty, revisions unused). StoreRoot::lease_keys is
// a tree keyed by EncodeLeaseId(id) + key, one entry per key attached to the lease (value empty): the
// keys of one lease are a contiguous range, in key order.
//
// The one rule: a key's Entry::lease and the attachment index always agree. A key with lease L != 0 has
// exactly the attachment (L, key), and every attachment names a key whose lease it is. Put, DeleteRange
// and revoke (apply.h) keep it in the same transaction that changes the key. A key without a lease
// costs nothing here: its lease field is checked, no index is touched.
//
// Remaining TTLs are not here: they live in memory, in the lessor (server/lease), as etcd 3.4 keeps
// them (keep-alives are not persisted).
//
// All functions are templates over the transaction type (stm::Tx or stm::SnapshotTx); the writing ones
// take stm::Tx. Heap pointers never leave a transaction body.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "server/store/tree.h"

namespace revkv::server::store {

// The lease ID as 8 bytes that sort as the signed number does.
inline std::string EncodeLeaseId(int64_t id) {
  const uint64_t u = static_cast<uint64_t>(id) ^ (uint64_t{1} << 63);
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((u >> (56 - 8 * i)) & 0xff);
  return out;
}

// The attachment index's range for `id`: every key attached to it.
inline KeyRange AttachedRange(int64_t id) {
  KeyRange r;
  r.begin = EncodeLeaseId(id);
  if (id != std::numeric_limits<int64_t>::max()) r.end = EncodeLeaseId(id + 1);
  return r;
}

template <class TxT>
Ref<StoreRoot> LeaseTree(TxT& tx, const Ref<StoreRoot>& root) {
  return Ref<StoreRoot>(tx.Read(root)->leases);
}
template <class TxT>
Ref<StoreRoot> AttachmentTree(TxT& tx, const Ref<StoreRoot>& root) {
  return Ref<StoreRoot>(tx.Read(root)->lease_keys);
}

// The granted TTL of lease `id`, or 0 if it does not exist (a granted TTL is at least 1).
template <class TxT>
int64_t LeaseTtl(TxT& tx, const Ref<StoreRoot>& root, int64_t id) {
  ReadPtr<Entry> e = Find(tx, LeaseTree(tx, root), EncodeLeaseId(id));
  return e ? e->version : 0;
}

// Calls visit(id, granted_ttl) for every lease, in ID order, until it returns false.
template <class TxT, class Visit>
void ForEachLease(TxT& tx, const Ref<StoreRoot>& root, Visit&& visit) {
  KeyRange all;
  ForEachInRange(tx, LeaseTree(tx, root), all,
                 [&](const ReadPtr<Entry>& e) { return visit(e->lease(), e->version); });
}

// The keys attached to lease `id`, in key order.
template <class TxT>
std::vector<std::string> AttachedKeys(TxT& tx, const Ref<StoreRoot>& root, int64_t id) {
  std::vector<std::string> keys;
  ForEachInRange(tx, AttachmentTree(tx, root), AttachedRange(id), [&](const ReadPtr<Entry>& e) {
    keys.emplace_back(e->key().substr(8));
    return true;
  });
  return keys;
}

// ----- writing (read-write transactions) -----------------------------------------------------------

// Creates the two empty trees under a new StoreRoot (Store::Create).
void NewLeaseTrees(runtime::stm::Tx& tx, const WritePtr<StoreRoot>& root);
// Adds lease `id` (absent) with `ttl`.
void InsertLease(runtime::stm::Tx& tx, const Ref<StoreRoot>& root, int64_t id, int64_t ttl);
// Removes lease `id` from the table (its attachments are the caller's to remove first).
void EraseLease(runtime::stm::Tx& tx, const Ref<StoreRoot>& root, int64_t id);
// Records that `key` is attached to lease `id` (absent before).
void Attach(runtime::stm::Tx& tx, const Ref<StoreRoot>& root, int64_t id, std::string_view key);
// Removes the attachment of `key` to lease `id`; false if there was none.
bool Detach(runtime::stm::Tx& tx, const Ref<StoreRoot>& root, int64_t id, std::string_view key);

}  // namespace revkv::server::store
