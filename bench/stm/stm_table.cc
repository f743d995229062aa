// The STM benchmark's table on revkv's heap (see stm_table.h).
#include "bench/stm/stm_table.h"

#include <cstdio>
#include <cstdlib>

#include "runtime/heap/heap.h"
#include "runtime/stm/stm.h"

namespace revkv::bench::stm {

namespace {

using runtime::Field;
using runtime::stm::Ref;
using runtime::stm::SnapshotTx;
using runtime::stm::Tx;

struct Record : runtime::VersionedObject {
  int64_t value;
  static runtime::TypeDescriptor Describe() { return runtime::TypeDescriptor::Fixed<Record>("bench.Record"); }
};

// Immutable once published: a tail of `size` references to records.
struct Table : runtime::Object {
  uint64_t size;
  static runtime::TypeDescriptor Describe() {
    runtime::TypeDescriptor d;
    d.name = "bench.Table";
    d.fixed_size = sizeof(Table);
    d.tail = runtime::TypeDescriptor::Tail::kRefs;
    d.tail_offset = sizeof(Table);
    return d;
  }
  const Field<Record>& at(size_t i) const { return reinterpret_cast<const Field<Record>*>(this + 1)[i]; }
  Field<Record>& at(size_t i) { return reinterpret_cast<Field<Record>*>(this + 1)[i]; }
};

template <class T>
T Must(absl::StatusOr<T> r) {
  if (!r.ok()) {
    std::fprintf(stderr, "revkv-bench-stm: transaction failed: %s\n", r.status().ToString().c_str());
    std::abort();
  }
  return *std::move(r);
}

void Must(const absl::Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "revkv-bench-stm: transaction failed: %s\n", s.ToString().c_str());
    std::abort();
  }
}

Ref<Table> TableOf(const runtime::GlobalRoot& root) {
  return Ref<Table>::FromRaw(static_cast<Table*>(root.Load()));
}

}  // namespace

StmTable::StmTable(uint64_t keys) : root_(std::make_unique<runtime::GlobalRoot>()) {
  Must(runtime::stm::Atomically([&](Tx& tx) {
    auto table = tx.NewWithTail<Table>(keys * sizeof(void*));
    table->size = keys;
    for (uint64_t i = 0; i < keys; ++i) table.Set(table->at(i), Ref<Record>(tx.New<Record>()));
    tx.PublishAtCommit(*root_, Ref<Table>(table));
  }));
}

int64_t StmTable::GetSnapshot(uint32_t key) const {
  return Must(runtime::stm::ReadOnly([&](SnapshotTx& tx) {
    auto table = tx.Read(TableOf(*root_));
    return tx.Read(Ref<Record>(table->at(key)))->value;
  }));
}

int64_t StmTable::GetAtomically(uint32_t key) const {
  return Must(runtime::stm::Atomically([&](Tx& tx) {
    auto table = tx.Read(TableOf(*root_));
    return tx.Read(Ref<Record>(table->at(key)))->value;
  }));
}

int64_t StmTable::GetManySnapshot(const uint32_t* keys, int n) const {
  return Must(runtime::stm::ReadOnly([&](SnapshotTx& tx) {
    auto table = tx.Read(TableOf(*root_));
    int64_t sum = 0;
    for (int i = 0; i < n; ++i) sum += tx.Read(Ref<Record>(table->at(keys[i])))->value;
    return sum;
  }));
}

int64_t StmTable::GetManyAtomically(const uint32_t* keys, int n) const {
  return Must(runtime::stm::Atomically([&](Tx& tx) {
    auto table = tx.Read(TableOf(*root_));
    int64_t sum = 0;
    for (int i = 0; i < n; ++i) sum += tx.Read(Ref<Record>(table->at(keys[i])))->value;
    return sum;
  }));
}

void StmTable::Add(uint32_t key, int64_t delta) {
  Must(runtime::stm::Atomically([&](Tx& tx) {
    auto table = tx.Read(TableOf(*root_));
    auto record = tx.Write(tx.Read(Ref<Record>(table->at(key))));
    record->value += delta;
  }));
}

}  // namespace revkv::bench::stm
