// Misuse: writing an object reached by loading a reference field of a read-ready object. The field of
// a `const Account` is a `const Field`, whose Load() yields a `const Account*`: the object it names is
// global and immutable, and is written only through Tx::Write.
#include "tests/runtime/stm_compile_fail/handles.h"

namespace revkv::runtime::stm::compile_fail {
void Deposit(Tx& tx, Ref<Account> ref) {
  ReadPtr<Account> r = tx.Read(ref);
#ifndef REVKV_WITHOUT_MISUSE
  r->next.Load()->balance += 1;
#else
  tx.Write(tx.Read(r, &Account::next))->balance += 1;
#endif
}
}  // namespace revkv::runtime::stm::compile_fail
