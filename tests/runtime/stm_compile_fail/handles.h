// Shared types of the STM compile-fail snippets (DESIGN 2.3 "Pointer categories as types").
//
// Each snippet in this folder holds exactly one misuse of the handle types, guarded by
// REVKV_WITHOUT_MISUSE: compiled as is it must be rejected; compiled with REVKV_WITHOUT_MISUSE defined
// (the correct use in its place) it must be accepted, so a snippet cannot "fail" for an unrelated
// reason such as a broken include. control_correct_use.cc uses every handle correctly.
#pragma once

#include <cstdint>

#include "runtime/heap/heap.h"
#include "runtime/stm/stm.h"

namespace revkv::runtime::stm::compile_fail {

// A versioned heap type: the STM may write it.
struct Account : VersionedObject {
  Field<Account> next;
  int64_t balance;
  static TypeDescriptor Describe() { return TypeDescriptor::Fixed<Account>("compile_fail.Account", &Account::next); }
};

// An immutable (non-versioned) heap type: readable, never written by the STM.
struct Blob : Object {
  int64_t value;
  static TypeDescriptor Describe() { return TypeDescriptor::Fixed<Blob>("compile_fail.Blob"); }
};

}  // namespace revkv::runtime::stm::compile_fail
