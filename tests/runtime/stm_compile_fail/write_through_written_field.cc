// Misuse: writing an object reached by loading a reference field of a writable object. The object the
// field names is global and immutable (or another transaction's concern); it is written only through
// Tx::Write, which makes the transaction's own copy.
#include "tests/runtime/stm_compile_fail/handles.h"

namespace revkv::runtime::stm::compile_fail {
void Deposit(Tx& tx, Ref<Account> ref) {
  WritePtr<Account> w = tx.Write(ref);
#ifndef REVKV_WITHOUT_MISUSE
  w->next.Load()->balance += 1;
#else
  tx.Write(Ref<Account>(w->next))->balance += 1;
#endif
}
}  // namespace revkv::runtime::stm::compile_fail
