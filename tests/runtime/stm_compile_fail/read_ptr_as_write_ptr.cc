// Misuse: turning a ReadPtr<T> into a WritePtr<T> without the write barrier (R does not imply W).
#include "tests/runtime/stm_compile_fail/handles.h"

namespace revkv::runtime::stm::compile_fail {
void Reset(Tx& tx, Ref<Account> ref) {
#ifndef REVKV_WITHOUT_MISUSE
  WritePtr<Account> w = tx.Read(ref);
#else
  WritePtr<Account> w = tx.Write(tx.Read(ref));
#endif
  w->balance = 0;
}
}  // namespace revkv::runtime::stm::compile_fail
