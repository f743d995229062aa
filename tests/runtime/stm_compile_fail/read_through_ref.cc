// Misuse: reading a field through a Ref<T> (seed 000 category P). Reads need a ReadPtr (Tx::Read).
#include "tests/runtime/stm_compile_fail/handles.h"

namespace revkv::runtime::stm::compile_fail {
int64_t Balance(Tx& tx, Ref<Account> ref) {
#ifndef REVKV_WITHOUT_MISUSE
  (void)tx;
  return ref->balance;
#else
  return tx.Read(ref)->balance;
#endif
}
}  // namespace revkv::runtime::stm::compile_fail
