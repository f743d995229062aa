// Misuse: storing a reference field through a ReadPtr<T>. Reference fields are stored through a
// WritePtr (WritePtr::Set), which also runs the generational write barrier.
#include "tests/runtime/stm_compile_fail/handles.h"

namespace revkv::runtime::stm::compile_fail {
void Unlink(Tx& tx, Ref<Account> ref) {
  ReadPtr<Account> r = tx.Read(ref);
#ifndef REVKV_WITHOUT_MISUSE
  r->next.Store(nullptr);
#else
  tx.Write(r).Set(&Account::next, Ref<Account>());
#endif
}
}  // namespace revkv::runtime::stm::compile_fail
