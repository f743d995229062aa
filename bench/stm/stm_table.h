// The STM side of the STM benchmark: a table of `keys` integer records on revkv's heap.
//
// Layout: one immutable Table object whose tail holds `keys` references, each to a Record (a
// VersionedObject with one int64 value), published in a GlobalRoot. Writing a record creates a new
// revision (the table itself is never written), so readers reach a record through the table's
// reference and the record's revision chain.
//
// Reads run either as snapshot transactions (stm::ReadOnly: never abort, never validate) or as
// read-write transactions that happen to write nothing (stm::Atomically); writes run in
// stm::Atomically as read-modify-write of the record. Every method must be called on a registered
// thread outside any transaction; each runs one transaction and may reach a safepoint.
// Thread-safe.
#pragma once

#include <cstdint>
#include <memory>

#include "runtime/gc/gc.h"

namespace revkv::bench::stm {

class StmTable {
 public:
  // Creates `keys` records of value 0 in one transaction and publishes the table.
  explicit StmTable(uint64_t keys);
  StmTable(const StmTable&) = delete;
  StmTable& operator=(const StmTable&) = delete;

  int64_t GetSnapshot(uint32_t key) const;
  int64_t GetAtomically(uint32_t key) const;
  // The sum of the values of keys[0 .. n), read in one transaction.
  int64_t GetManySnapshot(const uint32_t* keys, int n) const;
  int64_t GetManyAtomically(const uint32_t* keys, int n) const;
  // Adds `delta` to the record of `key` in one read-write transaction.
  void Add(uint32_t key, int64_t delta);

 private:
  std::unique_ptr<runtime::GlobalRoot> root_;
};

// StmTable as the benchmark's Store concept, with snapshot reads or with read-write transactions for
// reads. Writes are stm::Atomically in both.
struct StmSnapshotReads {
  static constexpr bool kNeedsRegistration = true;
  StmTable* table;
  int64_t Get(uint32_t key) const { return table->GetSnapshot(key); }
  int64_t GetMany(const uint32_t* keys, int n) const { return table->GetManySnapshot(keys, n); }
  void Add(uint32_t key, int64_t delta) const { table->Add(key, delta); }
};

struct StmAtomicReads {
  static constexpr bool kNeedsRegistration = true;
  StmTable* table;
  int64_t Get(uint32_t key) const { return table->GetAtomically(key); }
  int64_t GetMany(const uint32_t* keys, int n) const { return table->GetManyAtomically(keys, n); }
  void Add(uint32_t key, int64_t delta) const { table->Add(key, delta); }
};

}  // namespace revkv::bench::stm
