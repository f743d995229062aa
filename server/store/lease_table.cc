// Writing the lease table and the attachment index (lease_table.h).
#include "server/store/lease_table.h"

#include <string>

namespace revkv::server::store {

using runtime::stm::Tx;

namespace {

// An index entry: `key` (the tree's key) and an empty value; the lease fields as given.
void InsertRow(Tx& tx, const Ref<StoreRoot>& tree, const std::string& key, int64_t id, int64_t ttl) {
  EntryFields f;
  f.version = ttl;
  f.lease = id;
  InsertEntry(tx, tree, key, std::string_view(), f);
}

}  // namespace

void NewLeaseTrees(Tx& tx, const WritePtr<StoreRoot>& root) {
  WritePtr<StoreRoot> leases = NewTree(tx);
  root.Set(&StoreRoot::leases, Ref<StoreRoot>(leases));
  WritePtr<StoreRoot> lease_keys = NewTree(tx);
  root.Set(&StoreRoot::lease_keys, Ref<StoreRoot>(lease_keys));
}

void InsertLease(Tx& tx, const Ref<StoreRoot>& root, int64_t id, int64_t ttl) {
  InsertRow(tx, LeaseTree(tx, root), EncodeLeaseId(id), id, ttl);
}

void EraseLease(Tx& tx, const Ref<StoreRoot>& root, int64_t id) {
  Erase(tx, LeaseTree(tx, root), EncodeLeaseId(id));
}

void Attach(Tx& tx, const Ref<StoreRoot>& root, int64_t id, std::string_view key) {
  std::string row = EncodeLeaseId(id);
  row.append(key);
  InsertRow(tx, AttachmentTree(tx, root), row, id, 0);
}

bool Detach(Tx& tx, const Ref<StoreRoot>& root, int64_t id, std::string_view key) {
  std::string row = EncodeLeaseId(id);
  row.append(key);
  return Erase(tx, AttachmentTree(tx, root), row);
}

}  // namespace revkv::server::store
