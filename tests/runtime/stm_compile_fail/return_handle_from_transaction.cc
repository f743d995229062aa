// Misuse: returning a heap reference from a transaction body. Handles are valid only inside the body
// (DESIGN 2.3 "Heap pointers never cross a transaction boundary"); Atomically and ReadOnly reject a
// result that is a handle or an object pointer.
#include "tests/runtime/stm_compile_fail/handles.h"

namespace revkv::runtime::stm::compile_fail {
int64_t Balance(Ref<Account> ref) {
#ifndef REVKV_WITHOUT_MISUSE
  auto escaped = Atomically([&](Tx& tx) { return tx.Read(ref); });
  return escaped.ok() ? 1 : 0;
#else
  auto balance = Atomically([&](Tx& tx) { return tx.Read(ref)->balance; });
  return balance.ok() ? *balance : 0;
#endif
}
}  // namespace revkv::runtime::stm::compile_fail
