// The work-stealing deque of a collector thread (docs/runtime-heap-gc.md 7.3, "Parallel tracing"): the
// owner pushes and pops grey objects at the bottom (LIFO, no contention with itself), other collector
// threads steal from the top (FIFO: the oldest, typically the widest, part of the owner's work).
//
// The algorithm is the Chase-Lev deque (D. Chase and Y. Lev, "Dynamic Circular Work-Stealing Deque",
// SPAA 2005), with the memory orders of N. M. Lê, A. Pop, A. Cohen and F. Zappa Nardelli, "Correct and
// Efficient Work-Stealing for Weak Memory Models" (PPoPP 2013), except that each of their seq_cst
// fences is folded into the access it orders (a seq_cst store or load of `bottom_` or `top_`): the
// same single total order of those accesses, which is what the proofs need, and accesses ThreadSanitizer
// understands (it does not model stand-alone fences).
//
// Growth: a full array is replaced by one twice as large, published with a release store of `array_`.
// A thief may still read the old one (it loaded the pointer before the swap); old arrays are kept until
// the deque is destroyed (at the end of the collection), so such a read stays valid, and the element it
// reads is the same in both arrays (copied before the swap) or the thief's CAS on `top_` fails.
//
// Thread-safety: Push and Pop by the owner only; Steal and MaybeNonEmpty by any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace revkv::runtime {

template <class T>
class WorkStealingDeque {
 public:
  explicit WorkStealingDeque(size_t initial_capacity = 4096) {
    arrays_.push_back(std::make_unique<Array>(initial_capacity));
    array_.store(arrays_.back().get(), std::memory_order_relaxed);
  }
  WorkStealingDeque(const WorkStealingDeque&) = delete;
  WorkStealingDeque& operator=(const WorkStealingDeque&) = delete;

  // Owner only.
  void Push(T x) {
    const int64_t b = bottom_.load(std::memory_order_relaxed);
    // Acquire: pairs with the thieves' CAS on top_ (seq_cst, a release), so a slot they emptied is not
    // overwritten before they read it.
    const int64_t t = top_.load(std::memory_order_acquire);
    Array* a = array_.load(std::memory_order_relaxed);
    if (b - t > static_cast<int64_t>(a->mask)) a = Grow(a, b, t);
    a->Put(b, x);
    // Release: a thief that reads this bottom (or a later one) also sees the element and everything
    // the owner wrote before pushing it (the grey object's contents, e.g. a fresh copy).
    bottom_.store(b + 1, std::memory_order_release);
  }

  // Owner only. False if the deque is empty (or a thief took the last element).
  bool Pop(T* out) {
    const int64_t b = bottom_.load(std::memory_order_relaxed) - 1;
    Array* a = array_.load(std::memory_order_relaxed);
    // seq_cst store then seq_cst load: the store-load order Lê et al. get from a seq_cst fence. Either
    // a thief's load of bottom_ sees the decrement, or this load of top_ sees its increment.
    bottom_.store(b, std::memory_order_seq_cst);
    int64_t t = top_.load(std::memory_order_seq_cst);
    if (t > b) {  // empty
      bottom_.store(b + 1, std::memory_order_relaxed);
      return false;
    }
    *out = a->Get(b);
    if (t < b) return true;  // more than one element: no thief can reach this one
    // The last element: race the thieves for it with the same CAS they use.
    const bool won =
        top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst, std::memory_order_relaxed);
    bottom_.store(b + 1, std::memory_order_relaxed);
    return won;
  }

  // Any thread. False if the deque looked empty or another thread won the race for the top element.
  bool Steal(T* out) {
    int64_t t = top_.load(std::memory_order_seq_cst);
    // seq_cst (so acquire): pairs with the owner's release store in Push; ordered after the load of
    // top_ as Lê et al.'s fence orders them.
    const int64_t b = bottom_.load(std::memory_order_seq_cst);
    if (t >= b) return false;
    // Acquire: the array the owner published by Grow is read whole.
    Array* a = array_.load(std::memory_order_acquire);
    const T x = a->Get(t);
    if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst, std::memory_order_relaxed)) {
      return false;
    }
    *out = x;
    return true;
  }

  // Any thread: a hint for the termination protocol (a stale answer only costs a retry).
  bool MaybeNonEmpty() const {
    return top_.load(std::memory_order_relaxed) < bottom_.load(std::memory_order_relaxed);
  }

 private:
  struct Array {
    explicit Array(size_t capacity) : mask(capacity - 1), slots(new std::atomic<T>[capacity]) {}
    // Elements are atomics so that a thief's read racing with the owner's reuse of a slot is not a
    // data race (the thief's CAS then fails and the value is dropped); relaxed: ordering comes from
    // bottom_ and top_.
    T Get(int64_t i) const { return slots[static_cast<size_t>(i) & mask].load(std::memory_order_relaxed); }
    void Put(int64_t i, T x) { slots[static_cast<size_t>(i) & mask].store(x, std::memory_order_relaxed); }
    const size_t mask;
    std::unique_ptr<std::atomic<T>[]> slots;
  };

  Array* Grow(Array* old, int64_t b, int64_t t) {
    arrays_.push_back(std::make_unique<Array>((old->mask + 1) * 2));
    Array* a = arrays_.back().get();
    for (int64_t i = t; i < b; ++i) a->Put(i, old->Get(i));
    array_.store(a, std::memory_order_release);
    return a;
  }

  alignas(64) std::atomic<int64_t> top_{0};
  alignas(64) std::atomic<int64_t> bottom_{0};
  std::atomic<Array*> array_{nullptr};
  std::vector<std::unique_ptr<Array>> arrays_;  // owner only; every array this deque used
};

}  // namespace revkv::runtime
