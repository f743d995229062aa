// Misuse: storing a reference of an unrelated type into a reference field (Field<Account> <- Blob).
#include "tests/runtime/stm_compile_fail/handles.h"

namespace revkv::runtime::stm::compile_fail {
void Link(Tx& tx, Ref<Account> ref, Ref<Blob> blob, Ref<Account> other) {
  WritePtr<Account> w = tx.Write(ref);
#ifndef REVKV_WITHOUT_MISUSE
  (void)other;
  w.Set(&Account::next, blob);
#else
  (void)blob;
  w.Set(&Account::next, other);
#endif
}
}  // namespace revkv::runtime::stm::compile_fail
