// Misuse: reading an object reached by loading a reference field of a *writable* object. The field of a
// WritePtr's object is not const, but the reference in it still names a global revision (the one the
// copy was made from, possibly old): reading through it would skip the read barrier and the read set.
// A field of a type that may be versioned has no Load(), const or not.
#include "tests/runtime/stm_compile_fail/handles.h"

namespace revkv::runtime::stm::compile_fail {
int64_t NextBalance(Tx& tx, Ref<Account> ref) {
  WritePtr<Account> w = tx.Write(ref);
#ifndef REVKV_WITHOUT_MISUSE
  return w->next.Load()->balance;
#else
  return tx.Read(ReadPtr<Account>(w), &Account::next)->balance;
#endif
}
}  // namespace revkv::runtime::stm::compile_fail
