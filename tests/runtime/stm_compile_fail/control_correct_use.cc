// Control: every handle category used as intended. Must compile; if it does not, the compile-fail
// tests beside it prove nothing.
#include "tests/runtime/stm_compile_fail/handles.h"

namespace revkv::runtime::stm::compile_fail {

absl::StatusOr<int64_t> Transfer(Ref<Account> from, Ref<Account> to, int64_t amount) {
  return Atomically([&](Tx& tx) {
    ReadPtr<Account> src = tx.Read(from);                    // P -> R (DirectReadBarrier)
    WritePtr<Account> dst = tx.Write(to);                    // P -> W (WriteBarrier)
    WritePtr<Account> src_w = tx.Write(src);                 // R -> W (WriteBarrierFromReadReady)
    src_w->balance -= amount;
    dst->balance += amount;
    ReadPtr<Account> again = tx.Read(from);                  // repeated read: our own copy
    ReadPtr<Account> next = tx.Read(again, &Account::next);  // field read with container fix-ups
    WritePtr<Account> fresh = tx.New<Account>();             // Allocate: a writable local object
    fresh.Set(&Account::next, Ref<Account>(next));           // reference store with the write barrier
    dst.Set(&Account::next, Ref<Account>(fresh));
    Ref<Account> widened = again;                            // R widens to P
    return again->balance + (widened == Ref<Account>(src_w) ? 1 : 0);
  });
}

absl::StatusOr<int64_t> Audit(Ref<Account> a) {
  return ReadOnly([&](SnapshotTx& tx) { return tx.Read(a)->balance; });
}

}  // namespace revkv::runtime::stm::compile_fail
