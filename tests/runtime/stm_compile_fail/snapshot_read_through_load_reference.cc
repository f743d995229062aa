// Misuse: a snapshot transaction reading through the raw reference of a field. Without SnapshotRead it
// would read whatever revision the field names, not the newest one at the snapshot's time.
#include "tests/runtime/stm_compile_fail/handles.h"

namespace revkv::runtime::stm::compile_fail {
int64_t NextBalance(SnapshotTx& tx, Ref<Account> ref) {
  ReadPtr<Account> r = tx.Read(ref);
#ifndef REVKV_WITHOUT_MISUSE
  return r->next.LoadReference()->balance;
#else
  return tx.Read(r, &Account::next)->balance;
#endif
}
}  // namespace revkv::runtime::stm::compile_fail
