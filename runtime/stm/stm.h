// revkv runtime — software transactional memory over immutable revisions (public header).
//
// The model is seed 000's: objects are global (visible to all threads, immutable except for header
// words) or local (visible only to the transaction that made them). A transaction writes a global
// object by writing a local copy; committing makes the copy the newest revision of the object, linked
// from the older revision's h_revision ("revision chains"). Reads are validated against the global
// time; commits lock the written objects' heads in address order, advance the time by 2 and publish.
// An inevitable transaction cannot abort, so it may have irrevocable effects (the write-ahead log).
// Read-only snapshot transactions read the state as of their start time and never abort.
//
// Pointer categories (seed 000 "Barrier placement") are C++ types:
//   Ref<T>      P: any reference, as stored in a field. Cannot be read through.
//   ReadPtr<T>  R/O: read-ready. operator-> yields `const T*`; each use repeats the cheap part of the
//               read barrier (RepeatReadBarrier), so a ReadPtr stays correct after writes.
//   WritePtr<T> W: a writable local object. operator-> yields `T*`.
// Reading a field therefore needs a ReadPtr or WritePtr, and writing one needs a WritePtr; the
// compiler rejects the rest (tests/runtime/stm_compile_fail_test checks that it does).
//
// Rules for transaction bodies:
//  - A body may run several times (after an abort); it must be restartable and must not catch the
//    STM's private abort signal (do not use `catch (...)` without rethrowing).
//  - Heap pointers never leave the body: return plain values. Handles are valid only inside it.
//  - Irrevocable effects (I/O) only after BecomeInevitable(), or in the commit action.
//
// Sections: 1. handles  2. transactions  3. running transactions  4. time and snapshots
//           5. statistics
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/gc/gc.h"
#include "runtime/heap/heap.h"

namespace revkv::runtime::stm {

class Tx;
class SnapshotTx;
struct TxDescriptor;

namespace internal {
// Seed 000 barriers; implemented in barriers.cc. They take and return raw object pointers; the handle
// types below are the only callers.
Object* RepeatReadBarrier(Object* o);  // slow half: o has kPossiblyOutdated
TxDescriptor* CurrentDescriptor();
// Runs one snapshot transaction at `time` (0: the newest committed state). Fails with
// FailedPrecondition if `time` is older than the retained horizon, OutOfRange if it is in the future.
absl::Status RunSnapshot(uint64_t time, const std::function<void(SnapshotTx&)>& body);
}  // namespace internal

// ---------------------------------------------------------------------------------------------------
// 1. Handles
// ---------------------------------------------------------------------------------------------------

template <class T>
class ReadPtr;
template <class T>
class WritePtr;

// Category P: a reference to some revision of an object, or a local object; null allowed.
template <class T>
class Ref {
 public:
  Ref() = default;
  Ref(std::nullptr_t) {}  // NOLINT: null converts implicitly, like a pointer
  // The reference stored in a field (a relaxed load; see Field<T>).
  explicit Ref(const Field<T>& field) : p_(field.LoadReference()) {}
  template <class U, class = std::enable_if_t<std::is_convertible_v<U*, T*>>>
  Ref(const ReadPtr<U>& r) : p_(r.p_) {}  // NOLINT: a narrower category widens implicitly
  template <class U, class = std::enable_if_t<std::is_convertible_v<U*, T*>>>
  Ref(const WritePtr<U>& w) : p_(w.p_) {}  // NOLINT

  explicit operator bool() const { return p_ != nullptr; }
  bool operator==(const Ref& other) const = default;
  // The reference itself (for a Field store or an identity comparison); not for reading through.
  T* unsafe_raw() const { return p_; }
  static Ref FromRaw(T* p) {
    Ref r;
    r.p_ = p;
    return r;
  }

 private:
  friend class Tx;
  friend class SnapshotTx;
  T* p_ = nullptr;
};

// Category R (and O): a read-ready object. Valid until the transaction ends.
template <class T>
class ReadPtr {
 public:
  ReadPtr() = default;
  explicit operator bool() const { return p_ != nullptr; }
  // Repeats the fast half of the read barrier: if the object may have a newer local copy (our own
  // write since this pointer was made), reads go to that copy.
  const T* operator->() const { return get(); }
  const T& operator*() const { return *get(); }
  const T* get() const {
    if (p_->HasFlag(kPossiblyOutdated)) [[unlikely]] {
      return static_cast<const T*>(internal::RepeatReadBarrier(p_));
    }
    return p_;
  }
  // True if both name the same object (the same revision or local copy).
  bool Is(const Ref<T>& other) const { return p_ == other.unsafe_raw(); }
  // The same read-ready object as a derived type U (the caller knows the dynamic type).
  template <class U>
  ReadPtr<U> StaticCast() const {
    static_assert(std::is_base_of_v<T, U>);
    return ReadPtr<U>(static_cast<U*>(p_));
  }

 private:
  friend class Tx;
  friend class SnapshotTx;
  template <class U>
  friend class Ref;
  template <class U>
  friend class ReadPtr;
  template <class U>
  friend class WritePtr;
  explicit ReadPtr(T* p) : p_(p) {}
  T* p_ = nullptr;
};

// Category W: a local object written by this transaction.
template <class T>
class WritePtr {
 public:
  WritePtr() = default;
  explicit operator bool() const { return p_ != nullptr; }
  T* operator->() const { return p_; }
  T& operator*() const { return *p_; }
  // Stores `value` into the reference field `member` (with the generational write barrier).
  template <class U, class V>
  void Set(Field<U> T::*member, const Ref<V>& value) const {
    static_assert(std::is_convertible_v<V*, U*>);
    (p_->*member).Store(value.unsafe_raw());
  }
  // Stores `value` into `field`, a reference field of this object (for tails of references).
  template <class U, class V>
  void Set(Field<U>& field, const Ref<V>& value) const {
    static_assert(std::is_convertible_v<V*, U*>);
    field.Store(value.unsafe_raw());
  }
  // A read-ready view of the same object.
  operator ReadPtr<T>() const { return ReadPtr<T>(p_); }  // NOLINT: W implies R

 private:
  friend class Tx;
  template <class U>
  friend class Ref;
  explicit WritePtr(T* p) : p_(p) {}
  T* p_ = nullptr;
};

// ---------------------------------------------------------------------------------------------------
// 2. Transactions
// ---------------------------------------------------------------------------------------------------

// Why a transaction attempt was abandoned.
enum class AbortCause : uint8_t {
  kReadConflict = 0,  // a read or a validation found an object newer than the start time
  kLock = 1,          // a written object's head was no longer the newest when locking it
  kValidation = 2,    // validation at commit (or when becoming inevitable) failed
  kDoomedByGc = 3,    // a collection found the read set holding an outdated revision
  kExplicit = 4,      // the body called Retry()
};
inline constexpr int kAbortCauses = 5;

// A read-write transaction, as seen by its body. Owner thread only; valid during the body.
class Tx {
 public:
  // DirectReadBarrier: a read-ready pointer to the revision of `ref` this transaction must see (or to
  // its own local copy). Aborts the attempt on a conflict. May allocate (auto-localization) and so
  // reach a safepoint.
  template <class T>
  ReadPtr<T> Read(const Ref<T>& ref) {
    return ReadPtr<T>(static_cast<T*>(ReadBarrier(ref.p_, nullptr, nullptr)));
  }
  // DirectReadBarrier for the reference in `container->*member`, with seed 000's container fix-ups
  // (ReadGlobalToLocal, PossiblyUpdateChain).
  template <class C, class T>
  ReadPtr<T> Read(const ReadPtr<C>& container, Field<T> C::*member) {
    C* c = const_cast<C*>(container.get());
    Field<T>& f = c->*member;
    return ReadPtr<T>(static_cast<T*>(
        ReadBarrier(Ref<T>(f).p_, c, reinterpret_cast<std::atomic<Object*>*>(f.unsafe_slot()))));
  }
  // WriteBarrier: a writable local copy of the newest revision of `ref`. `ref` must be non-null and
  // of a versioned type. May allocate.
  template <class T>
  WritePtr<T> Write(const Ref<T>& ref) {
    static_assert(std::is_base_of_v<VersionedObject, T>, "only VersionedObject types can be written");
    return WritePtr<T>(static_cast<T*>(WriteBarrier(ref.p_)));
  }
  // WriteBarrierFromReadReady.
  template <class T>
  WritePtr<T> Write(const ReadPtr<T>& ready) {
    static_assert(std::is_base_of_v<VersionedObject, T>, "only VersionedObject types can be written");
    return WritePtr<T>(static_cast<T*>(WriteBarrierFromReadReady(ready.p_)));
  }
  // Allocate: a new local object, writable. Aborts the transaction with ResourceExhausted when the
  // heap is exhausted (Atomically returns that status). May reach a safepoint.
  template <class T>
  WritePtr<T> New() {
    return WritePtr<T>(static_cast<T*>(AllocateLocal(TypeIdOf<T>(), DescribeType(TypeIdOf<T>()).fixed_size)));
  }
  template <class T>
  WritePtr<T> NewWithTail(size_t tail_bytes) {
    return WritePtr<T>(
        static_cast<T*>(AllocateLocal(TypeIdOf<T>(), DescribeType(TypeIdOf<T>()).tail_offset + tail_bytes)));
  }
  // A new immutable byte string.
  Ref<Bytes> NewBytes(std::string_view data);

  // Makes this transaction inevitable (seed 000 BecomeInevitable): from here on it cannot abort.
  // Waits (in a safe region) while another transaction is inevitable; aborts this attempt once if a
  // conflicting commit happened since it started. At most one transaction is inevitable at a time.
  void BecomeInevitable();
  bool inevitable() const;

  // Registers `action`, run once at commit inside the inevitable section (the transaction becomes
  // inevitable at commit), after validation and before the new revisions are published, with the
  // commit time. It must not block, allocate on the heap, or make a blocking system call.
  void SetCommitAction(std::function<void(uint64_t commit_time)> action);

  // Publishes `object` (created or written by this transaction) in `root` once the transaction
  // commits.
  template <class T>
  void PublishAtCommit(GlobalRoot& root, const Ref<T>& object) {
    PublishAtCommitRaw(root, object.p_);
  }

  // Abandons this attempt and runs the body again (after the objects it read change, or at once).
  [[noreturn]] void Retry();
  // Abandons the transaction: Atomically returns `status` (not OK) without running the body again.
  [[noreturn]] void Fail(absl::Status status);

  // The start time: every read is consistent with the global state at this time.
  uint64_t start_time() const;
  // Lets a collection run if one is waiting (long loops call it every few thousand reads). The
  // transaction's state survives a collection.
  void Poll();

 private:
  friend struct TxDescriptor;
  explicit Tx(TxDescriptor* d) : d_(d) {}
  Object* ReadBarrier(Object* p, Object* container, std::atomic<Object*>* slot);
  Object* WriteBarrier(Object* p);
  Object* WriteBarrierFromReadReady(Object* r);
  Object* AllocateLocal(TypeId type, size_t size);
  void PublishAtCommitRaw(GlobalRoot& root, Object* object);
  TxDescriptor* d_;
};

// A read-only snapshot transaction, as seen by its body: it reads the state as of its snapshot time
// and never aborts, validates or waits for writers (except, briefly, for a head locked by a commit
// that its snapshot includes). It writes no shared memory. Owner thread only; valid during the body.
class SnapshotTx {
 public:
  template <class T>
  ReadPtr<T> Read(const Ref<T>& ref) {
    return ReadPtr<T>(static_cast<T*>(SnapshotRead(ref.p_)));
  }
  template <class C, class T>
  ReadPtr<T> Read(const ReadPtr<C>& container, Field<T> C::*member) {
    return ReadPtr<T>(static_cast<T*>(SnapshotRead(Ref<T>(container.get()->*member).p_)));
  }
  // The snapshot time: the state read is the state after the commit with this time.
  uint64_t snapshot_time() const { return time_; }
  // Lets a collection run if one is waiting (long scans call it every few thousand reads).
  void Poll();

 private:
  // Made only by ReadOnly / ReadOnlyAt, which publish the snapshot time first (the horizon protocol).
  friend absl::Status internal::RunSnapshot(uint64_t, const std::function<void(SnapshotTx&)>&);
  explicit SnapshotTx(uint64_t time) : time_(time) {}
  Object* SnapshotRead(Object* p);
  uint64_t time_;
};

// ---------------------------------------------------------------------------------------------------
// 3. Running transactions
// ---------------------------------------------------------------------------------------------------

namespace internal {
// Runs one read-write transaction to completion (see Atomically). `body` is called once per attempt.
absl::Status RunAtomically(const std::function<void(Tx&)>& body);
// A transaction's result must not be a heap reference: handles are valid only inside the body, and an
// object pointer held outside a transaction names a revision nobody keeps (DESIGN 2.3).
template <class R>
struct IsHandle : std::false_type {};
template <class T>
struct IsHandle<Ref<T>> : std::true_type {};
template <class T>
struct IsHandle<ReadPtr<T>> : std::true_type {};
template <class T>
struct IsHandle<WritePtr<T>> : std::true_type {};
template <class R, class D = std::remove_cvref_t<R>>
inline constexpr bool kIsHeapReference =
    IsHandle<D>::value ||
    (std::is_pointer_v<D> && std::is_base_of_v<Object, std::remove_cvref_t<std::remove_pointer_t<D>>>);

template <class R>
struct ResultOf {
  using Type = absl::StatusOr<R>;
};
template <>
struct ResultOf<void> {
  using Type = absl::Status;
};
}  // namespace internal

// Runs `body(Tx&)` as a read-write transaction: retries it after each abort until it commits, and
// returns its result. Returns ResourceExhausted if the heap is exhausted, or the status given to
// Tx::Fail. After many aborts in a row the transaction runs inevitable, so it always makes progress.
// The calling thread must be registered and not already in a transaction. Reaches safepoints.
template <class F>
auto Atomically(F&& body) -> typename internal::ResultOf<std::invoke_result_t<F, Tx&>>::Type {
  using R = std::invoke_result_t<F, Tx&>;
  static_assert(!internal::kIsHeapReference<R>,
                "a heap reference cannot leave its transaction: return a value");
  if constexpr (std::is_void_v<R>) {
    return internal::RunAtomically([&](Tx& tx) { body(tx); });
  } else {
    std::optional<R> result;
    absl::Status s = internal::RunAtomically([&](Tx& tx) { result.emplace(body(tx)); });
    if (!s.ok()) return s;
    return std::move(*result);
  }
}

// Runs `body(SnapshotTx&)` once, on the state as of time `time` (a past commit time), if the runtime
// still keeps it (see SetRetainedTime); else FailedPrecondition. A future time is OutOfRange.
template <class F>
auto ReadOnlyAt(uint64_t time, F&& body) ->
    typename internal::ResultOf<std::invoke_result_t<F, SnapshotTx&>>::Type {
  using R = std::invoke_result_t<F, SnapshotTx&>;
  static_assert(!internal::kIsHeapReference<R>,
                "a heap reference cannot leave its transaction: return a value");
  if constexpr (std::is_void_v<R>) {
    return internal::RunSnapshot(time, [&](SnapshotTx& tx) { body(tx); });
  } else {
    std::optional<R> result;
    absl::Status s = internal::RunSnapshot(time, [&](SnapshotTx& tx) { result.emplace(body(tx)); });
    if (!s.ok()) return s;
    return std::move(*result);
  }
}

// Runs `body(SnapshotTx&)` once, on the newest committed state. Never aborts.
template <class F>
auto ReadOnly(F&& body) -> typename internal::ResultOf<std::invoke_result_t<F, SnapshotTx&>>::Type {
  return ReadOnlyAt(0, std::forward<F>(body));
}

// ---------------------------------------------------------------------------------------------------
// 4. Time and snapshots
// ---------------------------------------------------------------------------------------------------

// The global time is even; a commit advances it by 2 and gives its revisions the odd time between.
// The commit time of the newest committed transaction (never the INEVITABLE marker). Thread-safe.
uint64_t LastCommittedTime();

// Keeps every state at or after `time` readable by ReadOnlyAt, as if a snapshot at `time` were live
// (the store's history retention). Time only moves forward; 0 releases nothing older than now.
// Thread-safe.
void SetRetainedTime(uint64_t time);
uint64_t RetainedTime();

// Skip hints (docs/runtime-stm.md) point no further than the newest revision committed at or before
// `time`, so that readers at `time` or later can take them: the store passes its durable revision's
// time, at which its reads of the newest state are made. 0: no limit (the default). A hint is only a
// shortcut; readers check its time, so any value is correct. Thread-safe.
void SetSkipHorizon(uint64_t time);

// The serialization time of the calling thread's last committed read-write transaction: its commit
// time if it wrote, else its start time (its reads are the state as of then). Owner thread only.
uint64_t ThisThreadLastCommitTime();

// Moves the global time forward to `time` (rounded down to even) if it is behind: recovery uses it so
// that the next commit gets the revision after the recovered one. Only while no transaction runs.
void AdvanceGlobalTime(uint64_t time);

// Starts the STM (installs it as the collector's client). Called by the first transaction; idempotent.
void InitializeStm();

// ---------------------------------------------------------------------------------------------------
// 5. Statistics
// ---------------------------------------------------------------------------------------------------

struct StmStatistics {
  uint64_t commits = 0;         // read-write transactions committed (with or without writes)
  uint64_t write_commits = 0;   // ... that published revisions
  uint64_t snapshot_reads = 0;  // snapshot transactions run
  uint64_t aborts[kAbortCauses] = {};
  uint64_t retries = 0;
  uint64_t inevitable = 0;  // transactions that became inevitable
  uint64_t inevitable_wait_nanos = 0;
  uint64_t chains_compressed = 0;  // PossiblyUpdateChain: header links and container fields redirected
  uint64_t chain_hops = 0;         // revisions passed by reads walking to a newer revision
  uint64_t skip_hints_taken = 0;   // ... of them reached through a skip hint
  uint64_t skip_hints_set = 0;     // skip hints moved forward by writers
  uint64_t auto_localizations = 0;
  uint64_t revisions_superseded = 0;
  HistogramSnapshot read_set_sizes;  // values are counts of entries
  HistogramSnapshot write_set_sizes;
  uint64_t live_snapshots = 0;
  uint64_t oldest_snapshot_age_nanos = 0;
  uint64_t global_time = 0;
  uint64_t retained_time = 0;
};
// Thread-safe; stops nothing.
StmStatistics GetStmStatistics();
const char* AbortCauseName(AbortCause cause);

}  // namespace revkv::runtime::stm
