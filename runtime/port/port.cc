// Linux implementation of runtime/port/port.h (x86-64 and AArch64).
#include "runtime/port/port.h"

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

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
    std::fprintf(stderr, "revkv runtime: pthread_getattr_np failed\n");
    std::abort();
  }
  void* addr = nullptr;
  size_t size = 0;
  pthread_attr_getstack(&attr, &addr, &size);
  pthread_attr_destroy(&attr);
  const uintptr_t low = reinterpret_cast<uintptr_t>(addr);
  return StackBounds{low, low + size};
}

__attribute__((noinline)) void CaptureCalleeSavedRegisters(SavedRegisters* out) {
#if defined(__x86_64__)
  // System V AMD64: rbx, rbp, r12-r15 are preserved across calls.
  asm volatile(
      "movq %%rbx, 0(%0)\n\t"
      "movq %%rbp, 8(%0)\n\t"
      "movq %%r12, 16(%0)\n\t"
      "movq %%r13, 24(%0)\n\t"
      "movq %%r14, 32(%0)\n\t"
      "movq %%r15, 40(%0)\n\t"
      :
      : "D"(out->words)  // rdi: a caller-saved register, so no callee-saved value is clobbered first
      : "memory");
  for (int i = 6; i < SavedRegisters::kCount; ++i) out->words[i] = 0;
#elif defined(__aarch64__)
  // AAPCS64: x19-x28 and x29 (the frame pointer) are preserved; x30 (the link register) may hold a
  // value too.
  register uintptr_t* words asm("x0") = out->words;  // caller-saved, so nothing preserved is clobbered
  asm volatile(
      "stp x19, x20, [%0, #0]\n\t"
      "stp x21, x22, [%0, #16]\n\t"
      "stp x23, x24, [%0, #32]\n\t"
      "stp x25, x26, [%0, #48]\n\t"
      "stp x27, x28, [%0, #64]\n\t"
      "stp x29, x30, [%0, #80]\n\t"
      :
      : "r"(words)
      : "memory");
#else
#error "revkv runtime: CaptureCalleeSavedRegisters is not implemented for this CPU"
#endif
}

__attribute__((noinline)) uintptr_t ApproximateStackPointer() {
  return reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
}

uint64_t NowNanos() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

int CpuCount() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

}  // namespace revkv::runtime::port
