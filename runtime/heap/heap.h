// revkv runtime — the managed heap (public header).
//
// The heap holds every object of the global object graph. Its layout follows seed 003: address space
// is reserved in segments; a segment is a run of 8 MiB pages aligned at 8 MiB, so `addr & ~(8 MiB-1)`
// finds a page header; a page holds 16 KiB chunks; each registered thread bump-allocates in chunks of
// its own. Objects larger than kLargeObjectThreshold live in a non-moving large-object space.
//
// Every object starts with an Object header: size, type id, flags and the atomic word `h_revision`
// that the STM (seed 000) uses for revision chains. Types register a TypeDescriptor naming their
// reference fields, so the heap is traced precisely; only thread stacks and saved registers are
// ambiguous (see runtime/gc/gc.h).
//
// Sections: 1. geometry  2. object header  3. reference fields  4. type descriptors
//           5. built-in types  6. options and start-up  7. allocation  8. inspection
//
// Mutator rule (seeds 001/002): between safepoints the collector may move any object that no
// ambiguous root pins. A heap pointer held in a local variable or a register is safe; a pointer hidden
// in an integer, tagged, or kept outside the bounds of its object is not. Heap pointers never live in
// memory the collector does not scan (a std::vector<Object*> outside the heap is a bug unless its
// entries are registered roots).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace revkv::runtime {

// ---------------------------------------------------------------------------------------------------
// 1. Geometry
// ---------------------------------------------------------------------------------------------------

inline constexpr size_t kPageShift = 23;
inline constexpr size_t kPageSize = size_t{1} << kPageShift;  // 8 MiB, aligned at 8 MiB
inline constexpr size_t kChunkShift = 14;
inline constexpr size_t kChunkSize = size_t{1} << kChunkShift;    // 16 KiB
inline constexpr size_t kChunksPerPage = kPageSize / kChunkSize;  // 512; chunk 0 is the page header
inline constexpr size_t kObjectAlignment = 8;
// Objects larger than this go to the large-object space, which never moves them.
inline constexpr size_t kLargeObjectThreshold = 8 * 1024;
// The largest object the heap can hold: one page minus its header chunk.
inline constexpr size_t kMaxObjectSize = kPageSize - kChunkSize;

// ---------------------------------------------------------------------------------------------------
// 2. Object header
// ---------------------------------------------------------------------------------------------------

using TypeId = uint16_t;

// Header flags. The first three are seed 000's; the rest belong to the collector.
enum HeaderFlag : uint16_t {
  kGlobal = 1u << 0,            // visible to every thread, immutable except for header words
  kPossiblyOutdated = 1u << 1,  // global and maybe not the newest revision, or has a local copy
  kWritten = 1u << 2,           // local and written by its transaction
  kLocalCopies = 0x1fu << 3,    // STM: how many transactions hold a written copy (saturates at 31)
  kForwarded = 1u << 8,         // GC: moved; h_revision holds the new address
  kPinned = 1u << 9,            // GC: an ambiguous root points into it; it stays where it is
  kMarked = 1u << 10,           // GC: reached in this collection (objects that do not move)
  kCopying = 1u << 11,          // GC: a collector thread has claimed it and is copying it (major only)
};

// The header every heap object begins with. Thread-safety: size and type are immutable after
// allocation; flags and h_revision are atomics, written as documented at each site that writes them.
//
// Layout: the first word holds size, type and flags, the second h_revision. The order matters: a filler
// (a gap in a chunk, HeaderAccess::InitFiller) writes only the first word, so an 8-byte gap is a valid
// filler and never touches the object after it.
class Object {
 private:
  friend struct HeaderAccess;
  uint32_t size_;
  TypeId type_;
  std::atomic<uint16_t> flags_;

 public:
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;

  // Total size in bytes, header included; a multiple of kObjectAlignment.
  uint32_t size() const { return size_; }
  TypeId type() const { return type_; }

  uint16_t flags(std::memory_order order = std::memory_order_relaxed) const { return flags_.load(order); }
  bool HasFlag(HeaderFlag f, std::memory_order order = std::memory_order_relaxed) const {
    return (flags_.load(order) & f) != 0;
  }
  // Sets / clears flags with an atomic read-modify-write: safe on objects other threads may touch.
  void SetFlags(uint16_t f, std::memory_order order = std::memory_order_relaxed) {
    flags_.fetch_or(f, order);
  }
  void ClearFlags(uint16_t f, std::memory_order order = std::memory_order_relaxed) {
    flags_.fetch_and(static_cast<uint16_t>(~f), order);
  }
  // Compare-and-swap of the whole flags word (for counters kept in it); on failure `expected` is updated.
  bool CompareExchangeFlags(uint16_t& expected, uint16_t desired, std::memory_order order) {
    return flags_.compare_exchange_weak(expected, desired, order, std::memory_order_relaxed);
  }
  // Replaces all flags with a plain store: only for an object no other thread can reach yet.
  void SetFlagsExclusive(uint16_t f) { flags_.store(f, std::memory_order_relaxed); }
  // Replaces all flags with a store of the given order: only by the thread that holds the header
  // exclusively while others may read it (a major collector thread's claim, kCopying).
  void StoreFlags(uint16_t f, std::memory_order order) { flags_.store(f, order); }

  // Seed 000's h_revision: an odd timestamp (head of a revision chain), an even pointer to a newer
  // revision or, on a local object, to its global original (1 for an object created locally), or a
  // lock value >= LOCKED. The collector uses it for forwarding while an object is being moved.
  std::atomic<uintptr_t> h_revision;

 protected:
  Object() = default;  // objects are created only by the heap
};
static_assert(sizeof(Object) == 16);

// Base of objects that the STM may write, creating revisions. Each revision keeps its own commit time
// (a non-head revision's h_revision holds a pointer, so its time would otherwise be lost); snapshot
// readers use it to pick the newest revision at or before their time.
class VersionedObject : public Object {
 public:
  // Commit time of this revision: written once by the commit that creates it (a new revision of an
  // object, or an object the transaction created), before the revision is published.
  std::atomic<uint64_t> h_commit_time;
  // Skip hint: 0, or a newer committed revision on this revision's chain that a reader may jump to
  // instead of following h_revision one link at a time (docs/runtime-stm.md, "Skip hints"). Chains are
  // kept long on purpose while history is retained (a reference may not be redirected past the
  // horizon), so without it a read of the newest revision walks every retained revision. Only ever
  // moved forward, by writers' compare-and-swap and by the major collector; a head has none.
  std::atomic<Object*> h_newest;
};

// ---------------------------------------------------------------------------------------------------
// 3. Reference fields
// ---------------------------------------------------------------------------------------------------

namespace internal {
// Per-chunk kind bytes sit at the very start of every page header; kNurseryKind marks a chunk some
// thread is using as its nursery. Read with relaxed order by the write barrier (the owner thread is
// the only one whose answer matters, and it wrote the byte itself).
inline constexpr uint8_t kNurseryKind = 2;
inline bool InNursery(const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const auto* kinds = reinterpret_cast<const std::atomic<uint8_t>*>(a & ~(kPageSize - 1));
  return kinds[(a & (kPageSize - 1)) >> kChunkShift].load(std::memory_order_relaxed) == kNurseryKind;
}
// Generational write barrier, slow half: remembers `slot` (outside any nursery) because it now holds
// a pointer into the calling thread's nursery. Owner thread only.
void RememberSlot(std::atomic<Object*>* slot);
}  // namespace internal

namespace stm {
template <class T>
class Ref;  // runtime/stm/stm.h: the only reader of a Field's raw reference
}  // namespace stm

// A reference field inside a heap object. The word is an atomic accessed with relaxed order: global
// objects are immutable and published by a release store of h_revision, so readers are ordered by
// their acquire load of it; the only concurrent writes are seed 000's benign container fix-ups.
template <class T>
class Field {
  // T may be a revision of a versioned object: reading through a pointer loaded from the field would skip
  // the read barrier (possibly an old revision, no read-set entry), and writing through it would write a
  // global object. Such a field gives no pointer at all, const or not (seed 000 "Pointer categories",
  // DESIGN 2.3): it is read with Tx::Read(container, &C::field), or made a stm::Ref (which cannot be read
  // through) and read with Tx::Read(ref).
  static constexpr bool kMayBeVersioned = std::is_same_v<T, Object> || std::is_base_of_v<VersionedObject, T>;

 public:
  // The reference, for immutable targets only (the read barrier would return them unchanged). Through a
  // const field (a field of an object read but not written) the result is const too.
  T* Load() requires(!kMayBeVersioned) { return static_cast<T*>(ptr_.load(std::memory_order_relaxed)); }
  const T* Load() const requires(!kMayBeVersioned) {
    return static_cast<const T*>(ptr_.load(std::memory_order_relaxed));
  }
  // Stores `value` with the generational write barrier. The object holding this field must be
  // writable by the calling thread (local to it, or not yet shared).
  void Store(T* value) {
    Object* v = value;
    ptr_.store(v, std::memory_order_relaxed);
    if (v != nullptr && internal::InNursery(v) && !internal::InNursery(&ptr_)) internal::RememberSlot(&ptr_);
  }
  // The word itself, for the STM's container fix-ups (Tx::Read) and tests of the collector. Never to
  // load a reference from.
  std::atomic<Object*>* unsafe_slot() { return &ptr_; }

 private:
  // The reference as stored, whatever T is, for stm::Ref alone: a Ref cannot be read through, and its
  // unsafe_raw() is the one named way to a raw pointer (for stores and identity checks).
  template <class U>
  friend class stm::Ref;
  T* LoadReference() const { return static_cast<T*>(ptr_.load(std::memory_order_relaxed)); }

  std::atomic<Object*> ptr_{nullptr};
};
static_assert(sizeof(Field<Object>) == sizeof(void*));

// ---------------------------------------------------------------------------------------------------
// 4. Type descriptors
// ---------------------------------------------------------------------------------------------------

// What the collector must know about a type: its size and where its references are.
struct TypeDescriptor {
  enum class Tail : uint8_t {
    kNone,   // fixed size
    kBytes,  // a variable run of bytes after `tail_offset`; never scanned
    kRefs,   // a variable run of Field<> words after `tail_offset`
  };
  std::string name;
  uint32_t fixed_size = 0;            // bytes, header included (the minimum size for tailed types)
  std::vector<uint32_t> ref_offsets;  // byte offsets of Field<> words in the fixed part
  Tail tail = Tail::kNone;
  uint32_t tail_offset = 0;
  bool versioned = false;  // derives from VersionedObject: the STM may write it

  // Descriptor of a fixed-size type T (deriving from Object) with the given Field<> members.
  template <class T, class... Members>
  static TypeDescriptor Fixed(std::string_view name, Members... members);
};

// Registers a type; returns its id. Thread-safe. Aborts after 4095 types (a programming error).
TypeId RegisterType(TypeDescriptor descriptor);
// The descriptor of a registered type; valid for the life of the process. Thread-safe.
const TypeDescriptor& DescribeType(TypeId id);

// The id of T, registering T::Describe() on first use. Thread-safe.
template <class T>
TypeId TypeIdOf() {
  static const TypeId id = RegisterType(T::Describe());
  return id;
}

template <class T, class... Members>
TypeDescriptor TypeDescriptor::Fixed(std::string_view name, Members... members) {
  static_assert(std::is_base_of_v<Object, T>, "heap types derive from Object");
  alignas(T) static unsigned char probe[sizeof(T)];
  [[maybe_unused]] const T* t = reinterpret_cast<const T*>(probe);
  TypeDescriptor d;
  d.name = std::string(name);
  d.fixed_size = static_cast<uint32_t>((sizeof(T) + kObjectAlignment - 1) & ~(kObjectAlignment - 1));
  d.versioned = std::is_base_of_v<VersionedObject, T>;
  (d.ref_offsets.push_back(static_cast<uint32_t>(reinterpret_cast<const unsigned char*>(&(t->*members)) -
                                                 reinterpret_cast<const unsigned char*>(t))),
   ...);
  return d;
}

// ---------------------------------------------------------------------------------------------------
// 5. Built-in types
// ---------------------------------------------------------------------------------------------------

// A pointer-free, immutable run of bytes (keys and values). Never scanned by the collector.
class Bytes : public Object {
 public:
  size_t length() const { return length_; }
  const char* data() const { return reinterpret_cast<const char*>(this + 1); }
  char* mutable_data() { return reinterpret_cast<char*>(this + 1); }
  std::string_view view() const { return {data(), length_}; }
  static TypeDescriptor Describe();

 private:
  friend struct HeaderAccess;
  uint64_t length_;
};
static_assert(sizeof(Bytes) == 24);
inline constexpr TypeId kBytesTypeId = 1;  // registered when the runtime starts
template <>
inline TypeId TypeIdOf<Bytes>() {
  return kBytesTypeId;
}

// ---------------------------------------------------------------------------------------------------
// 6. Options and start-up
// ---------------------------------------------------------------------------------------------------

struct HeapOptions {
  size_t max_heap_bytes = size_t{2} << 30;            // nursery + old + large; allocation fails beyond it
  size_t nursery_bytes = size_t{4} << 20;             // per registered thread
  size_t min_major_trigger_bytes = size_t{64} << 20;  // no major collection below this much in use
  double major_growth_factor = 2.0;                   // next major when in-use bytes reach live * factor
  size_t retained_free_pages = 4;                     // free pages always kept committed
  // true: after a major collection, also keep committed as many free pages as the live small-object
  // pages (capped by the maximum), so that a later evacuation copies into pages already mapped. Worth it
  // only when collections copy the whole live set (MajorMode::kCompactEverything); a selective
  // collection (the default, docs/runtime-heap-gc.md 7.3) copies only its sparse chunks, and the
  // reserve would keep the resident size near twice the live data for nothing.
  // false (default): free pages beyond `retained_free_pages` go back to the OS at once.
  bool retain_evacuation_reserve = false;
  // Threads that trace a major collection in parallel (the collecting thread included); 0: the
  // REVKV_GC_THREADS environment variable if set, else one per core (runtime/gc/gc.h,
  // SetCollectorThreads).
  size_t collector_threads = 0;
};

// Starts the runtime with `options`. The first call wins; later calls return the options in effect.
// Thread-safe. Threads must register (runtime/safepoint/safepoint.h) before they allocate.
const HeapOptions& InitializeRuntime(const HeapOptions& options = HeapOptions());
// Changes the maximum heap size; takes effect at the next allocation slow path. Thread-safe.
void SetMaxHeapBytes(size_t bytes);
// Changes HeapOptions::retained_free_pages and retain_evacuation_reserve; takes effect when the next
// major collection returns its free pages (pages retained by an earlier one stay until then).
// Thread-safe.
void SetPageRetention(size_t retained_free_pages, bool retain_evacuation_reserve);

// ---------------------------------------------------------------------------------------------------
// 7. Allocation
// ---------------------------------------------------------------------------------------------------

// Allocates a zero-filled object of `type` and `size` bytes (header included) in the calling
// thread's nursery, or in the large-object space when it is larger than kLargeObjectThreshold.
// The new object is local (kGlobal clear) with h_revision == 1.
// Fails with ResourceExhausted("heap exhausted: ...") when the heap cannot grow within its maximum even
// after a collection, and InvalidArgument for a size over kMaxObjectSize. The calling thread must be
// registered. May reach a safepoint (and so run any collection).
absl::StatusOr<Object*> Allocate(TypeId type, size_t size);

// Allocates a fixed-size T (see Allocate).
template <class T>
absl::StatusOr<T*> New() {
  absl::StatusOr<Object*> o = Allocate(TypeIdOf<T>(), DescribeType(TypeIdOf<T>()).fixed_size);
  if (!o.ok()) return o.status();
  return static_cast<T*>(*o);
}

// Allocates a Bytes object holding a copy of `data` (see Allocate).
absl::StatusOr<Bytes*> NewBytes(std::string_view data);

// Allocates a T with a tail of `tail_bytes` bytes (see Allocate).
template <class T>
absl::StatusOr<T*> NewWithTail(size_t tail_bytes) {
  const TypeDescriptor& d = DescribeType(TypeIdOf<T>());
  absl::StatusOr<Object*> o = Allocate(TypeIdOf<T>(), d.tail_offset + tail_bytes);
  if (!o.ok()) return o.status();
  return static_cast<T*>(*o);
}

// ---------------------------------------------------------------------------------------------------
// 8. Inspection
// ---------------------------------------------------------------------------------------------------

// Bytes of the heap by space, counted at chunk granularity. Readable at any time without stopping
// anything; the figures are consistent with each other only after a collection.
struct HeapUsage {
  size_t max_bytes;        // configured maximum
  size_t committed_bytes;  // pages in use (nursery, old and large), page headers included
  size_t nursery_bytes;    // chunks owned by nurseries
  size_t old_bytes;        // old-space chunks (objects that survived a collection or were committed)
  size_t large_bytes;      // large-object space
  size_t pinned_bytes;     // bytes of objects kept in place by ambiguous roots at the last collection
  size_t pinned_chunks;    // chunks holding them
  size_t free_bytes;       // committed but unused chunks
  size_t retained_bytes;   // free pages kept committed for reuse (HeapOptions::retained_free_pages and
                           // the evacuation reserve); not part of committed_bytes
  size_t reserved_bytes;   // address space reserved from the OS
};
HeapUsage GetHeapUsage();

// Resolves an ambiguous word: the start of the object it points into (interior pointers included),
// or nullptr when it points into no object. Only meaningful while the heap cannot change under the
// caller (the calling thread's own nursery, or a stopped world).
Object* ResolveAmbiguousWord(uintptr_t word);

// The objects an ambiguous word may stand for, as the conservative scanner sees them: `into`, the
// object it points into (ResolveAmbiguousWord), and `ending`, the object it points one past the end
// of. A derived pointer belongs to its base object (seed 001), and a loop over an object's words or
// bytes leaves one at its end, which is also the start of the next object or chunk: the scanner pins
// both. Either may be null. Same conditions as ResolveAmbiguousWord.
struct AmbiguousReferents {
  Object* into;
  Object* ending;
};
AmbiguousReferents ResolveAmbiguousReferents(uintptr_t word);

// True if `p` lies in some thread's nursery chunk.
inline bool IsInNursery(const void* p) { return internal::InNursery(p); }
// True if `p` lies in the heap's reserved address space.
bool IsHeapAddress(const void* p);

}  // namespace revkv::runtime
