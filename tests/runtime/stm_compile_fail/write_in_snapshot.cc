// Misuse: writing inside a read-only snapshot transaction (SnapshotTx has no write barrier).
#include "tests/runtime/stm_compile_fail/handles.h"

namespace revkv::runtime::stm::compile_fail {
int64_t Audit(SnapshotTx& tx, Ref<Account> ref) {
#ifndef REVKV_WITHOUT_MISUSE
  return tx.Write(ref)->balance;
#else
  return tx.Read(ref)->balance;
#endif
}
}  // namespace revkv::runtime::stm::compile_fail
