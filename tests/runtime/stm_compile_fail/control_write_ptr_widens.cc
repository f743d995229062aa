// Control: a WritePtr<T> converts to a ReadPtr<T> (seed 000: W implies R; stm.h declares
// WritePtr::operator ReadPtr<T>). Must compile.
#include "tests/runtime/stm_compile_fail/handles.h"

namespace revkv::runtime::stm::compile_fail {
int64_t Widen(Tx& tx, Ref<Account> ref) {
  WritePtr<Account> w = tx.Write(ref);
  w->balance += 1;
  ReadPtr<Account> r = w;
  return r->balance;
}
}  // namespace revkv::runtime::stm::compile_fail
