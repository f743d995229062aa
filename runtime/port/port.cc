// Linux implementation of runtime/port/port.h (x86-64 and AArch64).
#include "runtime/port/port.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>

#include "runtime/port/diagnostics.h"

namespace revkv::runtime::port {

void* ReserveAligned(size_t size, size_t alignment) {
  // Over-reserve by one alignment unit and trim both ends so the result is aligned.
  const size_t padded = size + alignment;
  void* raw =
      mmap(nullptr, padded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + alignment - 1) & ~(alignment - 1);
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t end = aligned + size;
  const uintptr_t raw_end = start + padded;
  if (raw_end > end) munmap(reinterpret_cast<void*>(end), raw_end - end);
  return reinterpret_cast<void*>(aligned);
}

void ReleaseReservation(void* base, size_t size) { munmap(base, size); }

void Decommit(void* base, size_t size) { madvise(base, size, MADV_DONTNEED); }

StackBounds CurrentThreadStackBounds() {
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) {
    port::Fatal("revkv runtime: pthread_getattr_np failed");
  }
  void* addr = nullptr;
  size_t size = 0;
  pthread_attr_getstack(&attr, &addr, &size);
  pthread_attr_destroy(&attr);
  const uintptr_t low = reinterpret_cast<uintptr_t>(addr);
  return StackBounds{low, low + size};
}

namespace {
// Copies the stack from this function's frame up to `caller_cfa`, the top of the caller's frame (its
// canonical frame address: the stack pointer before the call to it), so the whole caller frame; returns
// the number of words. Reads raw stack, like the scanner, hence uninstrumented.
//
// It must not be inlined: the copy starts at its own frame, which lies below the frame of
// CaptureCalleeSavedRegisters where __builtin_unwind_init spilled the registers. Inlined, the copy
// would start inside that frame and could miss the spill slots. REVKV_NO_SANITIZE_STACK_SCAN
// happens to carry noinline too; this function must not depend on that.
__attribute__((noinline)) REVKV_NO_SANITIZE_STACK_SCAN int CopyCallerFrame(SavedRegisters* out,
                                                                           uintptr_t caller_cfa) {
  const uintptr_t low = reinterpret_cast<uintptr_t>(__builtin_frame_address(0)) & ~uintptr_t{7};
  if (caller_cfa < low || (caller_cfa - low) / sizeof(uintptr_t) > SavedRegisters::kCount) {
    port::Fatal("revkv runtime: callee-saved registers spill frame of %zd bytes does not fit",
                static_cast<ptrdiff_t>(caller_cfa - low));
  }
  const int words = static_cast<int>((caller_cfa - low) / sizeof(uintptr_t));
  const auto* from = reinterpret_cast<const volatile uintptr_t*>(low);
  for (int i = 0; i < words; ++i) out->words[i] = from[i];
  for (int i = words; i < SavedRegisters::kCount; ++i) out->words[i] = 0;
  return words;
}
}  // namespace

// __builtin_unwind_init makes the compiler save every callee-saved register of the target ABI in this
// function's frame (x86-64: rbx, rbp, r12-r15; AArch64: x19-x29 and d8-d15), as it must for a function
// that an exception may unwind through; the helper then copies the frame. The compiler knows the
// register set, so nothing here names a register, and a register the ABI adds is not forgotten. (A
// jmp_buf would do too, but glibc mangles the rbp it stores on x86-64, and rbp holds data when the
// frame pointer is omitted.) Storing the helper's result keeps the call from being a tail call, which
// would pop this frame before the copy.
__attribute__((noinline)) void CaptureCalleeSavedRegisters(SavedRegisters* out) {
  __builtin_unwind_init();
  out->used = CopyCallerFrame(out, reinterpret_cast<uintptr_t>(__builtin_dwarf_cfa()));
}

__attribute__((noinline)) uintptr_t ApproximateStackPointer() {
  return reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
}

uint64_t NowNanos() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void WaitOnWord(const void* word, uint32_t expected, uint64_t timeout_nanos) {
  timespec timeout;
  timeout.tv_sec = static_cast<time_t>(timeout_nanos / 1'000'000'000ull);
  timeout.tv_nsec = static_cast<long>(timeout_nanos % 1'000'000'000ull);
  // EAGAIN (the word no longer holds `expected`), ETIMEDOUT and EINTR all return to the caller's loop.
  syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, &timeout, nullptr, 0);
}

void WakeAllWaiters(const void* word) {
  syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr, nullptr, 0);
}

int CpuCount() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

}  // namespace revkv::runtime::port
