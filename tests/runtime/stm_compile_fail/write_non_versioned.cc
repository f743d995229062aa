// Misuse: Tx::Write on a type that is not a VersionedObject (immutable payloads have no revisions).
#include "tests/runtime/stm_compile_fail/handles.h"

namespace revkv::runtime::stm::compile_fail {
int64_t Touch(Tx& tx, Ref<Blob> blob) {
#ifndef REVKV_WITHOUT_MISUSE
  return tx.Write(blob)->value;
#else
  return tx.Read(blob)->value;
#endif
}
}  // namespace revkv::runtime::stm::compile_fail
