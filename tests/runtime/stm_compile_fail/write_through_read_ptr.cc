// Misuse: writing a field through a ReadPtr<T> (category R/O). Writes need a WritePtr (Tx::Write).
#include "tests/runtime/stm_compile_fail/handles.h"

namespace revkv::runtime::stm::compile_fail {
void Deposit(Tx& tx, Ref<Account> ref) {
  ReadPtr<Account> r = tx.Read(ref);
#ifndef REVKV_WITHOUT_MISUSE
  r->balance += 1;
#else
  tx.Write(r)->balance += 1;
#endif
}
}  // namespace revkv::runtime::stm::compile_fail
