// The store's ordered index: a B+-tree whose nodes, entries, keys and values are heap objects of the
// runtime, read and written through STM transactions.
//
// Layout. A StoreRoot (the object the store's GlobalRoot names) points to the tree's root node. Inner
// nodes hold up to kFanout children and kFanout-1 separator keys (separator i is the smallest key of
// child i+1); leaves hold up to kFanout sorted keys and their entries. Keys and values are immutable
// Bytes; an Entry is {key, value, create_revision, mod_revision, version, lease}.
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

struct Entry : VersionedObject {
  Field<Bytes> key;
  Field<Bytes> value;
  int64_t create_revision;  // 0: this entry revision created the key
  int64_t mod_revision;     // 0: the revision of the commit that made this entry revision
  int64_t version;
  int64_t lease;
  static TypeDescriptor Describe();
};

struct Node : VersionedObject {
  uint32_t count;  // keys in a leaf; children in an inner node
  uint32_t is_leaf;
};

struct Leaf : Node {
  Field<Bytes> keys[kFanout];
  Field<Entry> entries[kFanout];
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

// Position of the first key >= `key` in `leaf`.
template <class TxT>
uint32_t LowerBound(TxT& tx, const Leaf* leaf, std::string_view key) {
  uint32_t lo = 0;
  uint32_t hi = leaf->count;
  while (lo < hi) {
    const uint32_t mid = (lo + hi) / 2;
    if (CompareKeys(KeyAt(tx, leaf->keys[mid]), key) < 0) {
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
  if (i < leaf->count && KeyAt(tx, leaf->keys[i]) == key) return tx.Read(Ref<Entry>(leaf->entries[i]));
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
      std::string_view k = KeyAt(tx, leaf->keys[i]);
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
  // Keys per leaf slot: 1.0 when every leaf is full.
  double LeafFill() const { return leaves == 0 ? 0 : static_cast<double>(keys) / (leaves * kFanout); }
};

template <class TxT>
void AddShape(TxT& tx, const ReadPtr<Node>& node, int depth, TreeShape* shape) {
  shape->depth = std::max(shape->depth, depth);
  if (node->is_leaf) {
    ++shape->leaves;
    shape->keys += node->count;
    return;
  }
  ++shape->inner_nodes;
  ReadPtr<Inner> inner = node.template StaticCast<Inner>();
  for (uint32_t i = 0; i < inner->count; ++i)
    AddShape(tx, tx.Read(Ref<Node>(inner->children[i])), depth + 1, shape);
}

// Walks every node (no poll: for inspection and tests, not for a hot path).
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

// Inserts `entry` for `key` (absent from the tree), splitting nodes as needed. `key_bytes` is the
// entry's key object. (Updating an existing key needs no tree change: write its Entry.)
void Insert(runtime::stm::Tx& tx, const Ref<StoreRoot>& root, std::string_view key,
            const Ref<Bytes>& key_bytes, const Ref<Entry>& entry);

// Removes `key` from the tree; returns false if it was absent.
bool Erase(runtime::stm::Tx& tx, const Ref<StoreRoot>& root, std::string_view key);

}  // namespace revkv::server::store
