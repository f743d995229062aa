// Platform layer of the runtime: the only place with OS- or CPU-specific code.
//
// Virtual memory reservation, thread stack bounds, the capture of callee-saved registers for the
// conservative stack scanner, a CPU pause hint and a monotonic clock. Everything else in runtime/ is
// portable C++20 on top of these functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace revkv::runtime::port {

// Excludes one function from AddressSanitizer and ThreadSanitizer instrumentation. Used only by the
// conservative scanner, which must read whole thread stacks: ASan redzones between locals and words
// another (stopped or safe-region) thread may write are part of what it reads. Nothing else may use it.
#define REVKV_NO_SANITIZE_STACK_SCAN __attribute__((no_sanitize("address", "thread"), noinline))

// Reserves `size` bytes of address space aligned at `alignment` (a power of two), readable and
// writable, backed lazily by the OS. Returns nullptr when the OS refuses. Thread-safe.
void* ReserveAligned(size_t size, size_t alignment);

// Returns a reservation made by ReserveAligned to the OS. Thread-safe.
void ReleaseReservation(void* base, size_t size);

// Tells the OS it may drop the physical pages behind [base, base+size); later reads see zeros.
// Thread-safe.
void Decommit(void* base, size_t size);

// Bounds of the calling thread's stack: [low, high). Stacks grow down, so `high` is the base the
// conservative scanner scans up to. Aborts if the OS cannot tell (that is a broken platform).
struct StackBounds {
  uintptr_t low;
  uintptr_t high;
};
StackBounds CurrentThreadStackBounds();

// The callee-saved registers of the calling thread at the point of the call. A pointer the caller
// keeps in one of them across a call to a blocking function is invisible on the stack; the scanner
// reads this copy instead. The copy is the frame in which the compiler spilled every callee-saved
// register (general and, on AArch64, d8-d15), so besides the registers it holds a few return addresses
// and frame links: more ambiguous words, never fewer. Aborts if that frame outgrows `words` (it is a
// few dozen words on both CPUs).
struct SavedRegisters {
  static constexpr int kCount = 64;
  uintptr_t words[kCount];
  int used;  // words filled; the rest are zero
};
void CaptureCalleeSavedRegisters(SavedRegisters* out);

// The calling thread's current stack pointer, approximately (an address in the caller's frame or
// below it). Everything the caller's frames hold lies at or above it.
uintptr_t ApproximateStackPointer();

// Spin-wait hint for the CPU.
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// Monotonic time in nanoseconds.
uint64_t NowNanos();

// Blocks while the 32-bit word at `word` holds `expected`, for at most `timeout_nanos`, or until
// WakeAllWaiters(word) is called; may also return spuriously. The word is read atomically by the
// kernel; the caller re-reads it through its std::atomic after the call. (std::atomic::wait has no
// timeout; a waiter here must be woken by WakeAllWaiters, not by std::atomic::notify_all, which may
// skip the system call when the library has recorded no waiter of its own.)
void WaitOnWord(const void* word, uint32_t expected, uint64_t timeout_nanos);

// Wakes every thread blocked in WaitOnWord on `word`.
void WakeAllWaiters(const void* word);

// Number of CPUs available to this process.
int CpuCount();

}  // namespace revkv::runtime::port
