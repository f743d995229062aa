// The store's ordered index: a B+-tree whose nodes, entries, keys and values are heap objects of the
// runtime, read and written through STM transactions.
//
// Layout. A StoreRoot (the object the store's GlobalRoot names) points to the tree's root node. Inner
// nodes hold up to kFanout children and kFanout-1 separator keys (separator i is the smallest key of
// child i+1, an immutable Bytes of its own); leaves hold up to kFanout entries in key order. An Entry
// holds its key (which searches read from it), its value, and {create_revision, mod_revision, version,
// lease}: small keys and values inline, so a key of the benchmark's shape is one object (see Entry).
//
// The one rule: a reference names an object, not a revision. Writing a node or an entry makes a new
// revision of *that* object (seed 000), so a parent never needs rewriting when a child changes:
// updating a key writes only its entry; inserting or deleting writes a leaf (and its parent only on
// a split or when the leaf empties). Concurrent writers conflict per object, not per store.
//
// Revisions. An entry's mod_revision is 0 while it means "the revision of the commit that made this
// entry revision", derived from the entry's commit time (every revision carries one); entries loaded
// from a checkpoint carry explicit values. create_revision is 0 for "created by this revision".
//
// All functions are templates over the transaction type: stm::Tx (read-write) or stm::SnapshotTx
// (read-only); the writing ones take stm::Tx. Heap pointers never leave a transaction body.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/heap/heap.h"
#include "runtime/stm/stm.h"

namespace revkv::server::store {

using runtime::Bytes;
using runtime::Field;
using runtime::Object;
using runtime::TypeDescriptor;
using runtime::VersionedObject;
using runtime::stm::ReadPtr;
using runtime::stm::Ref;
using runtime::stm::WritePtr;

inline constexpr int kFanout = 32;

// A key or a value of at most this many bytes lives inline in its Entry; a longer one is a Bytes object
// of its own that the entry references (a SpilledEntry). Inline saves the Bytes header and the reference
// (32 bytes) and an allocation; out of line, a revision that changes only metadata (ignore_value, a
// lease) copies 8 bytes instead of the part. At 256 bytes the out-of-line overhead is 12.5% of the part,
// and the most a metadata-only revision copies beyond the fixed fields is 2 x 256 bytes.
inline constexpr size_t kInlineMax = 256;
// A new revision of an entry is a copy of the same size (the STM copies objects whole). It reuses the
// entry object when its content fits and leaves at most this many bytes unused; otherwise the key gets a
// new entry object, which replaces the old one in its leaf (UpdateEntry).
inline constexpr size_t kMaxSlack = 32;

// The record of a key; each revision of the object is one state of the key. Layout (64 bytes, then the
// tail):
//   VersionedObject header (32) | create_revision | mod_revision | version | key_length | value_word
//   tail: [lease (int64), if the entry has a lease slot] [key, if inline] [value, if inline]
// The key never changes for the life of the object (every revision has the same key bytes), which is
// what lets a search read it from any revision (LeafKey). The tail is bytes: the collector never scans
// it; a SpilledEntry's two references come before its tail, at fixed offsets.
struct Entry : VersionedObject {
  int64_t create_revision;  // 0: this entry revision created the key
  int64_t mod_revision;     // 0: the revision of the commit that made this entry revision
  int64_t version;
  uint32_t key_length;
  uint32_t value_word;  // bits 0-30: the value's length; bit 31: kLeaseSlot

  static constexpr uint32_t kLeaseSlot = 1u << 31;
  static constexpr uint32_t kMaxValueLength = kLeaseSlot - 1;

  bool spilled() const;  // a SpilledEntry
  bool has_lease_slot() const { return (value_word & kLeaseSlot) != 0; }
  size_t value_length() const { return value_word & kMaxValueLength; }
  // The lease (0: none). Only an entry with a lease slot can have one.
  int64_t lease() const;
  std::string_view key() const;
  std::string_view value() const;
  // Where the tail starts: after the fixed fields of this entry's type.
  size_t tail_offset() const;
  const char* tail() const { return reinterpret_cast<const char*>(this) + tail_offset(); }
  char* mutable_tail() { return reinterpret_cast<char*>(this) + tail_offset(); }
  static TypeDescriptor Describe();
};
static_assert(sizeof(Entry) == 64);

// An entry whose key or value is longer than kInlineMax: that part is a Bytes of its own (the other may
// still be inline: a null reference means inline).
struct SpilledEntry : Entry {
  Field<Bytes> key_bytes;    // null: the key is inline
  Field<Bytes> value_bytes;  // null: the value is inline
  static TypeDescriptor Describe();
};
static_assert(sizeof(SpilledEntry) == 80);

inline bool Entry::spilled() const { return type() == runtime::TypeIdOf<SpilledEntry>(); }
inline size_t Entry::tail_offset() const { return spilled() ? sizeof(SpilledEntry) : sizeof(Entry); }
inline int64_t Entry::lease() const {
  if (!has_lease_slot()) return 0;
  int64_t id;
  std::memcpy(&id, tail(), sizeof(id));
  return id;
}
inline std::string_view Entry::key() const {
  if (spilled()) {
    const Bytes* b = static_cast<const SpilledEntry*>(this)->key_bytes.Load();
    if (b != nullptr) return b->view();
  }
  return {tail() + (has_lease_slot() ? sizeof(int64_t) : 0), key_length};
}
inline std::string_view Entry::value() const {
  const char* t = tail() + (has_lease_slot() ? sizeof(int64_t) : 0);
  if (spilled()) {
    const auto* s = static_cast<const SpilledEntry*>(this);
    if (const Bytes* b = s->value_bytes.Load(); b != nullptr) return b->view();
    if (s->key_bytes.Load() == nullptr) t += key_length;
    return {t, value_length()};
  }
  return {t + key_length, value_length()};
}

// The fields of an entry revision besides its key and value.
struct EntryFields {
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t version = 0;
  int64_t lease = 0;
};

// The key of the entry in `slot` (a leaf's), read without a read barrier: every revision of an entry
// object has the same key, so whichever revision or local copy the slot names (another reader's
// container fix-up may move it to a newer revision at any time) gives the right bytes, and the read
// neither enters the read set nor conflicts with a writer of the entry (a new revision changes only the
// value and the fields). Valid until the next allocation or poll, like every view into the heap.
inline std::string_view LeafKey(const Field<Entry>& slot) {
  const Entry* e = Ref<Entry>(slot).unsafe_raw();
  // Acquire: pairs with the release store of h_revision that published this revision, as the read
  // barrier's does (a slot fixed up by another reader was stored with relaxed order).
  (void)e->h_revision.load(std::memory_order_acquire);
  return e->key();
}

struct Node : VersionedObject {
  uint32_t count;  // keys in a leaf; children in an inner node
  uint16_t is_leaf;
  uint16_t prefix_length;  // a leaf's (see Leaf); 0 in an inner node
};

// A leaf's search heads. The keys of a leaf read from their entries are 184 bytes apart (the entry of a
// 16-byte key and a 100-byte value), so a binary search over them touches a cache line or two per probe.
// Beside its entries a leaf keeps, for each, a head: the kHeadBytes bytes of the key after the leaf's
// shared prefix, big-endian (zero bytes past the key's end), so that heads order like the keys. A search
// compares heads and reads a key from an entry only to check the shared prefix and to settle equal
// heads (LowerBound): one entry where it read five or six. The shared prefix is what makes heads of the
// keys of a real key space differ (the benchmark's 16-byte keys share their first 8 bytes in every leaf,
// their first 13 or 14 in a full leaf).
//
// The leaf's invariant, kept by every change of entries[] (tree.cc) and checked by MeasureShape:
// every key of the leaf starts with the same prefix_length bytes, and heads[i] == KeyHead(key i,
// prefix_length) for i < count. The prefix may be shorter than the keys' longest common one (a deletion
// leaves it as it was); it is recomputed, as that longest one, when an insertion breaks it and on a
// split. An entry's key never changes, and a new entry object for a key (UpdateEntry) has the same key,
// so replacing an entry, or another reader's fix-up of a slot, leaves the heads as they are.
//
// Two bytes, not eight: a leaf of the benchmark's shape holds 32 keys, and its heads cost 64 bytes,
// 2 per key (the bytes per key stay below Redis's, entry_layout_test).
using LeafHead = uint16_t;
inline constexpr size_t kHeadBytes = sizeof(LeafHead);
// The longest shared prefix a leaf records (a longer one is recorded as this many bytes: still a prefix
// of every key).
inline constexpr size_t kMaxPrefixLength = UINT16_MAX;

// The head of `key` after its first `offset` bytes.
inline LeafHead KeyHead(std::string_view key, size_t offset) {
  uint32_t h = 0;
  for (size_t i = 0; i < kHeadBytes; ++i) {
    h <<= 8;
    if (offset + i < key.size()) h |= static_cast<uint8_t>(key[offset + i]);
  }
  return static_cast<LeafHead>(h);
}

struct Leaf : Node {
  LeafHead heads[kFanout];        // heads[i]: the head of entries[i]'s key (see LeafHead)
  Field<Entry> entries[kFanout];  // in key order; the keys are the entries' (LeafKey)
  static TypeDescriptor Describe();
};

struct Inner : Node {
  Field<Bytes> separators[kFanout - 1];
  Field<Node> children[kFanout];
  static TypeDescriptor Describe();
};

struct MetaState;  // meta_state.h

// The root of a tree. The store's own root also names the lease table and the lease attachment index
// (lease_table.h), each a tree under a StoreRoot of its own (whose lease and meta fields are null), and
// the alarm and auth state (meta_state.h).
struct StoreRoot : VersionedObject {
  Field<Node> tree;
  Field<StoreRoot> leases;
  Field<StoreRoot> lease_keys;
  Field<MetaState> meta;
  static TypeDescriptor Describe();
};

// Three-way comparison of byte strings (memcmp order, shorter first on a common prefix).
inline int CompareKeys(std::string_view a, std::string_view b) {
  return a.compare(b) < 0 ? -1 : (a == b ? 0 : 1);
}

// A key range [begin, end); end empty means "to the end of the key space". etcd's single-key form is
// expressed as [key, key + "\0").
struct KeyRange {
  std::string begin;
  std::string end;
  bool single = false;  // exactly `begin`
  bool Contains(std::string_view k) const {
    if (single) return k == begin;
    return k >= std::string_view(begin) && (end.empty() || k < std::string_view(end));
  }
  bool Before(std::string_view k) const { return !single && !end.empty() && k >= std::string_view(end); }
};

// ----- reading (any transaction type) --------------------------------------------------------------

template <class TxT>
std::string_view KeyAt(TxT& tx, const Field<Bytes>& f) {
  return tx.Read(Ref<Bytes>(f))->view();
}

// Index of the child of `inner` whose subtree may hold `key`.
template <class TxT>
uint32_t ChildIndex(TxT& tx, const Inner* inner, std::string_view key) {
  uint32_t lo = 0;
  uint32_t hi = inner->count - 1;  // number of separators in use
  while (lo < hi) {                // first separator > key
    const uint32_t mid = (lo + hi) / 2;
    if (CompareKeys(KeyAt(tx, inner->separators[mid]), key) <= 0) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// Position of the first key >= `key` in `leaf`. The heads (see LeafHead) bound it to the range of
// keys whose head is the search key's; one key read from an entry says whether the search key has the
// leaf's shared prefix (if not, it is before or after every key of the leaf), and the keys of that range
// settle the rest: usually one key, the one a lookup then compares anyway.
template <class TxT>
uint32_t LowerBound(TxT& /*tx*/, const Leaf* leaf, std::string_view key) {
  const uint32_t n = leaf->count;
  if (n == 0) return 0;
  const size_t shared = leaf->prefix_length;
  const LeafHead h = KeyHead(key, shared);
  // Heads ascend (keys with the same prefix order as their heads do, ties aside): count those below h
  // and those at most h, without branches over the whole (small) array.
  uint32_t lo = 0;
  uint32_t hi = 0;
  for (uint32_t i = 0; i < static_cast<uint32_t>(kFanout); ++i) {
    const uint32_t live = i < n ? 1 : 0;
    lo += live & (leaf->heads[i] < h ? 1u : 0u);
    hi += live & (leaf->heads[i] <= h ? 1u : 0u);
  }
  if (shared > 0) {
    const std::string_view prefix = LeafKey(leaf->entries[lo < n ? lo : n - 1]).substr(0, shared);
    const int c = key.substr(0, shared).compare(prefix);
    if (c < 0) return 0;  // before the prefix (or a proper prefix of it): before every key
    if (c > 0) return n;
  }
  // Keys before lo have smaller heads, so are smaller; keys from hi on are larger.
  while (lo < hi) {
    const uint32_t mid = (lo + hi) / 2;
    if (CompareKeys(LeafKey(leaf->entries[mid]), key) < 0) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// The inner nodes of a descent and the child taken in each. It lives on the stack on purpose: the
// handles in it must be seen by the conservative scanner (a heap pointer in a std::vector would not
// be, and a collection during an allocation or a poll could move its object).
inline constexpr int kMaxDepth = 24;
struct Path {
  struct Step {
    ReadPtr<Inner> node;
    uint32_t index;
  };
  Step steps[kMaxDepth];
  int depth = 0;
  void Push(ReadPtr<Inner> node, uint32_t index);
  Step& back() { return steps[depth - 1]; }
  bool empty() const { return depth == 0; }
  void pop_back() { --depth; }
};

// Descends from the root to the leaf that may hold `key`, recording the inner nodes on the way.
template <class TxT>
ReadPtr<Leaf> Descend(TxT& tx, const Ref<StoreRoot>& root, std::string_view key, Path* path = nullptr) {
  ReadPtr<StoreRoot> r = tx.Read(root);
  ReadPtr<Node> node = tx.Read(r, &StoreRoot::tree);
  while (!node->is_leaf) {
    ReadPtr<Inner> inner = node.template StaticCast<Inner>();
    const uint32_t i = ChildIndex(tx, inner.get(), key);
    if (path != nullptr) path->Push(inner, i);
    node = tx.Read(Ref<Node>(inner->children[i]));
  }
  return node.template StaticCast<Leaf>();
}

// The entry for `key`, or a null ReadPtr.
template <class TxT>
ReadPtr<Entry> Find(TxT& tx, const Ref<StoreRoot>& root, std::string_view key) {
  ReadPtr<Leaf> leaf = Descend(tx, root, key);
  const uint32_t i = LowerBound(tx, leaf.get(), key);
  if (i < leaf->count && LeafKey(leaf->entries[i]) == key) return tx.Read(Ref<Entry>(leaf->entries[i]));
  return ReadPtr<Entry>();
}

// Calls visit(ReadPtr<Entry>) for every entry whose key is in `range`, in key order, until visit
// returns false. Polls for collections every few thousand entries.
template <class TxT, class Visit>
void ForEachInRange(TxT& tx, const Ref<StoreRoot>& root, const KeyRange& range, Visit&& visit) {
  Path path;
  ReadPtr<Leaf> leaf = Descend(tx, root, range.begin, &path);
  uint32_t i = LowerBound(tx, leaf.get(), range.begin);
  size_t seen = 0;
  for (;;) {
    for (; i < leaf->count; ++i) {
      std::string_view k = LeafKey(leaf->entries[i]);
      if (!range.Contains(k)) {
        if (range.single || range.Before(k)) return;
        continue;
      }
      if (!visit(tx.Read(Ref<Entry>(leaf->entries[i])))) return;
      if (++seen % 4096 == 0) tx.Poll();
    }
    if (range.single) return;
    // Next leaf: climb to the first ancestor with a child to the right, then go down its leftmost path.
    while (!path.empty() && path.back().index + 1 >= path.back().node->count) path.pop_back();
    if (path.empty()) return;
    ++path.back().index;
    ReadPtr<Node> node = tx.Read(Ref<Node>(path.back().node->children[path.back().index]));
    while (!node->is_leaf) {
      ReadPtr<Inner> inner = node.template StaticCast<Inner>();
      path.Push(inner, 0);
      node = tx.Read(Ref<Node>(inner->children[0]));
    }
    leaf = node.template StaticCast<Leaf>();
    i = 0;
  }
}

// The tree's shape: node counts and depth (leaves count as depth 1).
struct TreeShape {
  uint64_t leaves = 0;
  uint64_t inner_nodes = 0;
  uint64_t keys = 0;
  int depth = 0;
  // Leaves whose keys are out of order or whose shared prefix or heads disagree with their keys (see
  // LeafHead); the first such problem, described.
  uint64_t bad_leaves = 0;
  std::string first_problem;
  // Keys per leaf slot: 1.0 when every leaf is full.
  double LeafFill() const { return leaves == 0 ? 0 : static_cast<double>(keys) / (leaves * kFanout); }
};

// What breaks the leaf's invariant (see LeafHead), or its keys' order; empty if nothing.
std::string LeafProblem(const Leaf* leaf);

template <class TxT>
void AddShape(TxT& tx, const ReadPtr<Node>& node, int depth, TreeShape* shape) {
  shape->depth = std::max(shape->depth, depth);
  if (node->is_leaf) {
    ++shape->leaves;
    shape->keys += node->count;
    if (std::string problem = LeafProblem(node.template StaticCast<Leaf>().get()); !problem.empty()) {
      if (shape->bad_leaves++ == 0) shape->first_problem = std::move(problem);
    }
    return;
  }
  ++shape->inner_nodes;
  ReadPtr<Inner> inner = node.template StaticCast<Inner>();
  for (uint32_t i = 0; i < inner->count; ++i)
    AddShape(tx, tx.Read(Ref<Node>(inner->children[i])), depth + 1, shape);
}

// Walks every node and checks every leaf (no poll: for inspection and tests, not for a hot path).
template <class TxT>
TreeShape MeasureShape(TxT& tx, const Ref<StoreRoot>& root) {
  TreeShape shape;
  ReadPtr<StoreRoot> r = tx.Read(root);
  AddShape(tx, tx.Read(r, &StoreRoot::tree), 1, &shape);
  return shape;
}

// ----- writing (read-write transactions) -----------------------------------------------------------

// Creates an empty tree (a StoreRoot and an empty leaf) and returns the root.
WritePtr<StoreRoot> NewTree(runtime::stm::Tx& tx);

// A new entry object (local to `tx`) holding `key`, `value` and `fields`: key and value inline up to
// kInlineMax bytes each, a lease slot only when fields.lease is not 0. `key` and `value` must not point
// into the heap (an allocation may move their object); the value is shorter than 2^31 bytes (request
// limits keep it far below).
Ref<Entry> NewEntry(runtime::stm::Tx& tx, std::string_view key, std::string_view value,
                    const EntryFields& fields);

// Inserts a new entry for `key` (absent from the tree) holding `value` and `fields`, splitting nodes as
// needed. Same conditions on `key` and `value` as NewEntry.
void InsertEntry(runtime::stm::Tx& tx, const Ref<StoreRoot>& root, std::string_view key,
                 std::string_view value, const EntryFields& fields);

// Makes `old` (the entry of `key`, read by `tx`) hold `value` (nullopt: its old value) and `fields`
// from this commit on: a new revision of `old` if its object can hold them (EntryCanHold), which writes
// only the entry; otherwise a new entry object in its place, which writes the key's leaf. An old value
// kept out of line is never copied: the new revision or object references the same Bytes. Same
// conditions as NewEntry.
void UpdateEntry(runtime::stm::Tx& tx, const Ref<StoreRoot>& root, std::string_view key,
                 const ReadPtr<Entry>& old, std::optional<std::string_view> value, const EntryFields& fields);

// True if a new revision of `e` can hold a value of `value_length` bytes and `lease`: the value placed as
// a new entry would place it (inline or not), a lease slot if `lease` is not 0, and at most kMaxSlack
// bytes of the object unused.
bool EntryCanHold(const Entry* e, size_t value_length, int64_t lease);

// Removes `key` from the tree; returns false if it was absent.
bool Erase(runtime::stm::Tx& tx, const Ref<StoreRoot>& root, std::string_view key);

}  // namespace revkv::server::store
