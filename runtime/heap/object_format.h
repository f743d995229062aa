// How objects are laid out in memory, for the heap and the collector: header initialisation,
// filler words that keep chunks parseable, and the compact per-type layout table used while tracing.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>

#include "runtime/heap/heap.h"

namespace revkv::runtime {

inline constexpr TypeId kFillerTypeId = 0;  // unused space inside a chunk; never an object
inline constexpr size_t kMaxTypes = 4096;
inline constexpr size_t kMinObjectSize = sizeof(Object);

inline size_t AlignObjectSize(size_t size) { return (size + kObjectAlignment - 1) & ~(kObjectAlignment - 1); }

// Writes headers into raw memory. The heap and the collector are the only users.
struct HeaderAccess {
  static void Init(void* p, TypeId type, uint32_t size) {
    auto* o = static_cast<Object*>(p);
    o->size_ = size;
    o->type_ = type;
    o->flags_.store(0, std::memory_order_relaxed);
    o->h_revision.store(1, std::memory_order_relaxed);
  }
  // Marks [p, p+size) as unused. size >= 8 and a multiple of 8.
  static void InitFiller(void* p, size_t size) {
    auto* o = static_cast<Object*>(p);
    o->size_ = static_cast<uint32_t>(size);
    o->type_ = kFillerTypeId;
    o->flags_.store(0, std::memory_order_relaxed);
  }
  static void SetBytesLength(Bytes* b, uint64_t length) { b->length_ = length; }
};

inline bool IsFiller(const void* p) { return static_cast<const Object*>(p)->type() == kFillerTypeId; }
inline uint32_t SizeAt(const void* p) { return static_cast<const Object*>(p)->size(); }

// Decoded type descriptor, indexed by type id; written once at registration, before the id is
// returned to anyone.
struct TypeLayout {
  uint32_t fixed_size;
  uint32_t tail_offset;
  const uint32_t* ref_offsets;
  uint16_t ref_count;
  TypeDescriptor::Tail tail;
  bool versioned;
};
extern TypeLayout g_type_layouts[kMaxTypes];
inline const TypeLayout& LayoutOf(TypeId type) { return g_type_layouts[type]; }

// Calls f(std::atomic<Object*>* slot) for every reference field of `o`.
template <class F>
inline void ForEachReferenceSlot(Object* o, F&& f) {
  const TypeLayout& layout = LayoutOf(o->type());
  char* base = reinterpret_cast<char*>(o);
  for (uint16_t i = 0; i < layout.ref_count; ++i) {
    f(reinterpret_cast<std::atomic<Object*>*>(base + layout.ref_offsets[i]));
  }
  if (layout.tail == TypeDescriptor::Tail::kRefs) {
    for (uint32_t off = layout.tail_offset; off + sizeof(void*) <= o->size(); off += sizeof(void*)) {
      f(reinterpret_cast<std::atomic<Object*>*>(base + off));
    }
  }
}

// h_revision values (seed 000): odd = timestamp (or a lock >= kLocked), even = pointer.
inline constexpr uintptr_t kLocked = uintptr_t{1} << 63 | 1;  // lock values are kLocked + 2 * thread index
inline bool IsRevisionPointer(uintptr_t v) { return (v & 1) == 0; }
inline bool IsLockValue(uintptr_t v) { return v >= kLocked; }

}  // namespace revkv::runtime
