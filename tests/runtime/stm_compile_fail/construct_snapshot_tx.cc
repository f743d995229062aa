// Misuse: making a SnapshotTx by hand. Only ReadOnly / ReadOnlyAt make one, after publishing the
// snapshot time that keeps the collector and chain compression from freeing what it reads.
#include "tests/runtime/stm_compile_fail/handles.h"

namespace revkv::runtime::stm::compile_fail {
int64_t Peek(Ref<Account> ref) {
#ifndef REVKV_WITHOUT_MISUSE
  SnapshotTx tx(LastCommittedTime());
  return tx.Read(ref)->balance;
#else
  auto balance = ReadOnly([&](SnapshotTx& tx) { return tx.Read(ref)->balance; });
  return balance.ok() ? *balance : 0;
#endif
}
}  // namespace revkv::runtime::stm::compile_fail
