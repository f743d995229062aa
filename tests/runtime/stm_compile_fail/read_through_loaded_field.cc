// Misuse: reading an object reached by loading a reference field of a read-ready object. The loaded
// pointer skips the read barrier: it may name an old revision (not the one the transaction must see)
// and the object never enters the read set, so validation cannot notice a conflicting commit. A const
// Field of a type that may be versioned has no Load(); the field is read with Tx::Read(container,
// member), which runs the barrier.
#include "tests/runtime/stm_compile_fail/handles.h"

namespace revkv::runtime::stm::compile_fail {
int64_t NextBalance(Tx& tx, Ref<Account> ref) {
  ReadPtr<Account> r = tx.Read(ref);
#ifndef REVKV_WITHOUT_MISUSE
  return r->next.Load()->balance;
#else
  return tx.Read(r, &Account::next)->balance;
#endif
}
}  // namespace revkv::runtime::stm::compile_fail
