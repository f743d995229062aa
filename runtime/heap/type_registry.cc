// The registry of heap types: descriptors by id, and the compact layouts the collector traces with.
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>

#include "runtime/heap/heap.h"
#include "runtime/heap/object_format.h"
#include "runtime/port/diagnostics.h"

namespace revkv::runtime {

TypeLayout g_type_layouts[kMaxTypes];

namespace {
struct Registry {
  std::mutex mu;
  std::deque<TypeDescriptor> descriptors;  // deque: references stay valid as it grows
  const TypeDescriptor* by_id[kMaxTypes] = {};
  std::atomic<size_t> count{0};
};

Registry& Types() {
  static Registry* r = [] {
    auto* reg = new Registry();
    TypeDescriptor filler;
    filler.name = "filler";
    reg->descriptors.push_back(filler);
    reg->by_id[kFillerTypeId] = &reg->descriptors.back();
    g_type_layouts[kFillerTypeId] = TypeLayout{0, 0, nullptr, 0, TypeDescriptor::Tail::kNone, false};
    TypeDescriptor bytes = Bytes::Describe();
    reg->descriptors.push_back(bytes);
    const TypeDescriptor& b = reg->descriptors.back();
    reg->by_id[kBytesTypeId] = &b;
    g_type_layouts[kBytesTypeId] =
        TypeLayout{b.fixed_size, b.tail_offset, nullptr, 0, TypeDescriptor::Tail::kBytes, false};
    reg->count.store(2, std::memory_order_release);
    return reg;
  }();
  return *r;
}
}  // namespace

TypeId RegisterType(TypeDescriptor descriptor) {
  Registry& r = Types();
  std::lock_guard<std::mutex> lock(r.mu);
  const size_t id = r.count.load(std::memory_order_relaxed);
  if (id >= kMaxTypes) {
    port::Fatal("revkv runtime: more than %zu heap types", kMaxTypes);
  }
  if (descriptor.fixed_size < sizeof(Object)) descriptor.fixed_size = sizeof(Object);
  r.descriptors.push_back(std::move(descriptor));
  const TypeDescriptor& d = r.descriptors.back();
  r.by_id[id] = &d;
  g_type_layouts[id] = TypeLayout{
      d.fixed_size, d.tail_offset, d.ref_offsets.data(), static_cast<uint16_t>(d.ref_offsets.size()),
      d.tail,       d.versioned};
  r.count.store(id + 1, std::memory_order_release);
  return static_cast<TypeId>(id);
}

const TypeDescriptor& DescribeType(TypeId id) {
  Registry& r = Types();
  if (id >= r.count.load(std::memory_order_acquire)) {
    port::Fatal("revkv runtime: unknown heap type id %u", id);
  }
  return *r.by_id[id];
}

TypeDescriptor Bytes::Describe() {
  TypeDescriptor d;
  d.name = "bytes";
  d.fixed_size = sizeof(Bytes);
  d.tail = TypeDescriptor::Tail::kBytes;
  d.tail_offset = sizeof(Bytes);
  return d;
}

}  // namespace revkv::runtime
