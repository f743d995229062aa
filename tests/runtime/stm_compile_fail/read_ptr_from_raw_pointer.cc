// Misuse: making a ReadPtr<T> from a raw object pointer, skipping the read barrier. A raw pointer
// becomes a Ref<T> (category P) and only Tx::Read / SnapshotTx::Read make it read-ready.
#include "tests/runtime/stm_compile_fail/handles.h"

namespace revkv::runtime::stm::compile_fail {
int64_t Peek(Tx& tx, Account* raw) {
#ifndef REVKV_WITHOUT_MISUSE
  (void)tx;
  ReadPtr<Account> r(raw);
#else
  ReadPtr<Account> r = tx.Read(Ref<Account>::FromRaw(raw));
#endif
  return r->balance;
}
}  // namespace revkv::runtime::stm::compile_fail
