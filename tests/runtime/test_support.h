// Shared helpers of the runtime tests: a registered-thread fixture, test heap types, the test scale
// and seed knobs, and ways to hold an address without pinning what it points to.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "runtime/gc/gc.h"
#include "runtime/heap/heap.h"
#include "runtime/safepoint/safepoint.h"
#include "runtime/stm/stm.h"

namespace revkv::runtime::testing {

// The reference in `field` as stored, with no read barrier: for collector tests and for tests that
// inspect revision chains outside any transaction (stm::Ref::unsafe_raw, the one named way to it).
template <class T>
T* RawReference(const Field<T>& field) {
  return stm::Ref<T>(field).unsafe_raw();
}

// A binary-tree / list node: two references and a payload.
struct Node : Object {
  Field<Node> left;
  Field<Node> right;
  int64_t value;
  int64_t check;
  static TypeDescriptor Describe() {
    return TypeDescriptor::Fixed<Node>("test.Node", &Node::left, &Node::right);
  }
};

// A node with a variable tail of references.
struct Fan : Object {
  uint64_t count;
  static TypeDescriptor Describe() {
    TypeDescriptor d;
    d.name = "test.Fan";
    d.fixed_size = sizeof(Fan);
    d.tail = TypeDescriptor::Tail::kRefs;
    d.tail_offset = sizeof(Fan);
    return d;
  }
  Field<Object>* slots() { return reinterpret_cast<Field<Object>*>(this + 1); }
};

// REVKV_TEST_SCALE multiplies the sizes and durations of stress tests (sanitizer runs use < 1).
inline double Scale() {
  const char* s = std::getenv("REVKV_TEST_SCALE");
  return s != nullptr ? std::max(0.01, std::atof(s)) : 1.0;
}
inline size_t Scaled(size_t n) {
  return std::max<size_t>(1, static_cast<size_t>(static_cast<double>(n) * Scale()));
}

// The seed of a randomized test: REVKV_TEST_SEED if set, else random; printed so a failure reruns.
inline uint64_t TestSeed() {
  const char* s = std::getenv("REVKV_TEST_SEED");
  const uint64_t seed = s != nullptr ? std::strtoull(s, nullptr, 10) : std::random_device{}();
  std::printf("test seed: %llu (rerun with REVKV_TEST_SEED=%llu)\n", static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed));
  return seed;
}

// An address kept in a form the conservative scanner does not recognise, so holding it does not pin.
class HiddenAddress {
 public:
  explicit HiddenAddress(const void* p = nullptr) : bits_(reinterpret_cast<uintptr_t>(p) ^ kMask) {}
  uintptr_t get() const { return bits_ ^ kMask; }
  // Compares without unmasking, so the comparison leaves no real address on the stack.
  bool operator==(const HiddenAddress& other) const { return bits_ == other.bits_; }

 private:
  static constexpr uintptr_t kMask = 0x5A5A'5A5A'5A5A'5A5Aull;
  uintptr_t bits_;
};

// Overwrites a stretch of the stack below the caller, so stale copies of pointers left by earlier
// calls do not pin objects in tests that check what becomes garbage. Not instrumented by the
// sanitizers: AddressSanitizer would put redzones around the buffer, which the stores leave as they
// were, and the collector's frames later land on those stale words. Plain word stores, no memset: the
// sanitizers' memset interceptor would check the (uninstrumented) frame against stale shadow.
__attribute__((noinline, no_sanitize("address", "thread"))) inline void ScrubStack() {
  volatile uintptr_t buffer[8 * 1024];  // 64 KiB
  for (size_t i = 0; i < sizeof(buffer) / sizeof(buffer[0]); ++i) buffer[i] = 0;
}

// Joins threads from a registered thread: blocking in join is a safe region, so a collection that
// one of the threads starts does not wait for us.
inline void JoinAll(std::vector<std::thread>& threads) {
  SafeRegion region;
  for (auto& t : threads) t.join();
}
inline void Join(std::thread& t) {
  SafeRegion region;
  t.join();
}

// Aborts the process with a message if it is still alive after `limit`: a deadlock then fails the test
// at once with its name instead of hanging until the CTest timeout. Stops watching when destroyed.
class Watchdog {
 public:
  Watchdog(const char* what, std::chrono::seconds limit)
      : thread_([this, what, limit] {
          std::unique_lock<std::mutex> lock(mu_);
          if (!cv_.wait_for(lock, limit, [this] { return done_; })) {
            std::fprintf(stderr, "watchdog: %s did not finish within %lld s (deadlock?)\n", what,
                         static_cast<long long>(limit.count()));
            std::abort();
          }
        }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_one();
    thread_.join();  // the watchdog exits at once: no need for a safe region
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;   // guarded by mu_
  std::thread thread_;  // last: starts after the members it uses
};

inline HeapOptions SmallHeapOptions(size_t max_heap_bytes = size_t{256} << 20) {
  HeapOptions o;
  o.max_heap_bytes = max_heap_bytes;
  o.nursery_bytes = size_t{1} << 20;
  o.min_major_trigger_bytes = size_t{32} << 20;
  return o;
}

// A new node of `value` with `check` derived from it (tests compare both) and the given children.
// Aborts the test program if the heap is exhausted.
inline Node* NewNode(int64_t value, Node* left = nullptr, Node* right = nullptr) {
  absl::StatusOr<Node*> n = New<Node>();
  if (!n.ok()) {
    ADD_FAILURE() << n.status();
    std::abort();
  }
  (*n)->value = value;
  (*n)->check = value * 7919 + 13;
  (*n)->left.Store(left);
  (*n)->right.Store(right);
  return *n;
}

// Allocates `bytes` of short-lived garbage (whole nodes: bytes / sizeof(Node) of them).
__attribute__((noinline)) inline void AllocateGarbage(size_t bytes) {
  const size_t n = bytes / sizeof(Node);
  for (size_t i = 0; i < n; ++i) (void)New<Node>();
}

// A Fan of `count` slots held by `root`, slot i pointing to a new node of value i.
__attribute__((noinline)) inline void FillFanOfNodes(Root<Fan>& root, size_t count) {
  absl::StatusOr<Fan*> fan = NewWithTail<Fan>(count * sizeof(void*));
  if (!fan.ok()) {
    ADD_FAILURE() << fan.status();
    std::abort();
  }
  (*fan)->count = count;
  for (size_t i = 0; i < count; ++i) (*fan)->slots()[i].Store(NewNode(static_cast<int64_t>(i)));
  root.set(*fan);
}

// The record of the latest minor or major collection.
inline CollectionRecord LastRecord() {
  const GcStatistics stats = GetGcStatistics(1);
  if (stats.recent.empty()) {
    ADD_FAILURE() << "no collection recorded";
    return CollectionRecord{};
  }
  return stats.recent.back();
}

// Registers the test's main thread with a runtime configured by Options(). The runtime starts once per
// process, with the first test's options; the options that can change later (the maximum, page
// retention) are applied again for every test, so that a test does not depend on running first. A
// fixture may override only those and the ones all fixtures share.
class RuntimeTest : public ::testing::Test {
 protected:
  virtual HeapOptions Options() { return SmallHeapOptions(); }
  void SetUp() override {
    // Every runtime test runs with the heap verifier (runtime/gc/verifier.cc) unless the environment
    // says otherwise; the runtime reads this when it starts.
    setenv("REVKV_VERIFY_HEAP", "1", /*overwrite=*/0);
    const HeapOptions options = Options();
    InitializeRuntime(options);
    SetMaxHeapBytes(options.max_heap_bytes);
    SetPageRetention(options.retained_free_pages, options.retain_evacuation_reserve);
    registration_.emplace("test-main");
    // One process may run many tests (ctest's *.one_process). Each starts from a heap without the
    // garbage and the retained free pages an earlier test left behind, and counts allocation
    // failures from here on, so that no test's figures depend on which tests ran before it.
    // Compacting, as every major collection did before mark-region: the live data of earlier tests
    // is gathered in as few chunks as it can be, and whole pages are freed.
    SetPageRetention(0, false);
    CollectMajor(MajorMode::kCompactEverything);
    SetPageRetention(options.retained_free_pages, options.retain_evacuation_reserve);
    allocation_failures_at_start_ = GetGcStatistics(0).allocation_failures;
  }
  void TearDown() override {
    ResetNursery();
    registration_.reset();
  }

  // Allocation failures since this test started (the statistic is process-wide).
  uint64_t AllocationFailuresInThisTest() const {
    return GetGcStatistics(0).allocation_failures - allocation_failures_at_start_;
  }

  template <class T>
  T* MustNew() {
    absl::StatusOr<T*> r = New<T>();
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : nullptr;
  }

 private:
  std::optional<ThreadRegistration> registration_;
  uint64_t allocation_failures_at_start_ = 0;
};

}  // namespace revkv::runtime::testing
