// Misuse: reading an object through the raw reference of a field of a read-ready object. The raw load
// (Field::LoadReference) would skip the read barrier exactly like Load(): it may name an old revision and
// the object never enters the read set. Only stm::Ref may load it, and a Ref cannot be read through.
#include "tests/runtime/stm_compile_fail/handles.h"

namespace revkv::runtime::stm::compile_fail {
int64_t NextBalance(Tx& tx, Ref<Account> ref) {
  ReadPtr<Account> r = tx.Read(ref);
#ifndef REVKV_WITHOUT_MISUSE
  return r->next.LoadReference()->balance;
#else
  return tx.Read(Ref<Account>(r->next))->balance;
#endif
}
}  // namespace revkv::runtime::stm::compile_fail
