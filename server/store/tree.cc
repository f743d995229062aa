// Writing the B+-tree (tree.h): insertion with splits, removal of emptied nodes, type descriptors.
//
// Every allocation (a new node on a split) happens before the nodes it will change are rearranged,
// and every handle lives in a local variable or a stack Path, so a collection triggered by an
// allocation sees them all.
#include "server/store/tree.h"

#include <cstdio>
#include <cstdlib>

#include "runtime/port/diagnostics.h"

namespace revkv::server::store {

using runtime::stm::Tx;

namespace {

template <class T>
uint32_t OffsetIn(const T* base, const void* field) {
  return static_cast<uint32_t>(reinterpret_cast<const char*>(field) - reinterpret_cast<const char*>(base));
}

template <class T>
const T* Probe() {
  alignas(T) static unsigned char probe[sizeof(T)];
  return reinterpret_cast<const T*>(probe);
}

void Check(bool ok, const char* what) {
  if (!ok) {
    runtime::port::Fatal("revkv store: invariant violated: %s", what);
  }
}

// Copies the reference in `from` into `to`, both fields of the written object `w`.
template <class W, class T>
void Copy(const WritePtr<W>& w, Field<T>& to, const Field<T>& from) {
  w.Set(to, Ref<T>(from));
}

// Inserts (separator, child) into the parent at path level `level`, after the child taken there.
void InsertIntoParent(Tx& tx, const Ref<StoreRoot>& root, Path& path, int level, const Ref<Bytes>& separator,
                      const Ref<Node>& child) {
  if (level < 0) {  // the root split: a new root with two children
    WritePtr<Inner> new_root = tx.New<Inner>();
    ReadPtr<StoreRoot> r = tx.Read(root);
    new_root->is_leaf = 0;
    new_root->count = 2;
    new_root.Set(new_root->children[0], Ref<Node>(r->tree));
    new_root.Set(new_root->children[1], child);
    new_root.Set(new_root->separators[0], separator);
    tx.Write(r).Set(&StoreRoot::tree, Ref<Node>(new_root));
    return;
  }
  Path::Step& step = path.steps[level];
  const uint32_t at = step.index + 1;  // position of the new child
  WritePtr<Inner> right;
  if (step.node->count == kFanout) right = tx.New<Inner>();  // allocate before rearranging anything
  WritePtr<Inner> w = tx.Write(step.node);
  if (w->count < kFanout) {
    for (uint32_t j = w->count; j > at; --j) Copy(w, w->children[j], w->children[j - 1]);
    for (uint32_t j = w->count - 1; j > at - 1; --j) Copy(w, w->separators[j], w->separators[j - 1]);
    w.Set(w->children[at], child);
    w.Set(w->separators[at - 1], separator);
    ++w->count;
    return;
  }
  // Split. Conceptually the node holds kFanout + 1 children c[0..kFanout] and separators s[0..kFanout-1]
  // with the new pair inserted at `at`; the left keeps children [0, m), the right [m, kFanout], and
  // s[m-1] moves up.
  constexpr uint32_t kTotal = kFanout + 1;
  constexpr uint32_t m = kTotal / 2;
  auto child_at = [&](uint32_t j) -> Ref<Node> {
    if (j < at) return Ref<Node>(w->children[j]);
    if (j == at) return child;
    return Ref<Node>(w->children[j - 1]);
  };
  auto sep_at = [&](uint32_t j) -> Ref<Bytes> {  // separator between child j and j+1
    if (j + 1 < at) return Ref<Bytes>(w->separators[j]);
    if (j + 1 == at) return separator;
    return Ref<Bytes>(w->separators[j - 1]);
  };
  right->is_leaf = 0;
  right->count = kTotal - m;
  for (uint32_t j = m; j < kTotal; ++j) right.Set(right->children[j - m], child_at(j));
  for (uint32_t j = m; j + 1 < kTotal; ++j) right.Set(right->separators[j - m], sep_at(j));
  Ref<Bytes> up = sep_at(m - 1);
  if (at < m) {  // the new pair lands in the left half: shift the tail of the left half
    for (uint32_t j = m - 1; j > at; --j) Copy(w, w->children[j], w->children[j - 1]);
    for (uint32_t j = m - 2; j + 1 > at; --j) {
      Copy(w, w->separators[j], w->separators[j - 1]);
      if (j == 0) break;
    }
    w.Set(w->children[at], child);
    w.Set(w->separators[at - 1], separator);
  }
  for (uint32_t j = m; j < kFanout; ++j) w->children[j].Store(nullptr);
  for (uint32_t j = m - 1; j < kFanout - 1; ++j) w->separators[j].Store(nullptr);
  w->count = m;
  InsertIntoParent(tx, root, path, level - 1, up, Ref<Node>(right));
}

// Removes the child taken at path level `level` from its node (it emptied).
void RemoveFromParent(Tx& tx, const Ref<StoreRoot>& root, Path& path, int level) {
  if (level < 0) {  // the whole tree is empty: a fresh empty leaf
    WritePtr<Leaf> leaf = tx.New<Leaf>();
    leaf->is_leaf = 1;
    tx.Write(root).Set(&StoreRoot::tree, Ref<Node>(leaf));
    return;
  }
  Path::Step& step = path.steps[level];
  WritePtr<Inner> w = tx.Write(step.node);
  const uint32_t i = step.index;
  if (w->count == 1) {
    RemoveFromParent(tx, root, path, level - 1);
    return;
  }
  for (uint32_t j = i; j + 1 < w->count; ++j) Copy(w, w->children[j], w->children[j + 1]);
  // Drop the separator to the child's left (or, for child 0, the one to its right).
  const uint32_t s = i == 0 ? 0 : i - 1;
  for (uint32_t j = s; j + 2 < w->count; ++j) Copy(w, w->separators[j], w->separators[j + 1]);
  w->children[w->count - 1].Store(nullptr);
  w->separators[w->count - 2].Store(nullptr);
  --w->count;
}

}  // namespace

void Path::Push(ReadPtr<Inner> node, uint32_t index) {
  Check(depth < kMaxDepth, "tree deeper than kMaxDepth");
  steps[depth++] = Step{node, index};
}

TypeDescriptor Entry::Describe() {
  return TypeDescriptor::Fixed<Entry>("store.Entry", &Entry::key, &Entry::value);
}

TypeDescriptor Leaf::Describe() {
  const Leaf* l = Probe<Leaf>();
  TypeDescriptor d = TypeDescriptor::Fixed<Leaf>("store.Leaf");
  for (int i = 0; i < kFanout; ++i) d.ref_offsets.push_back(OffsetIn(l, &l->keys[i]));
  for (int i = 0; i < kFanout; ++i) d.ref_offsets.push_back(OffsetIn(l, &l->entries[i]));
  return d;
}

TypeDescriptor Inner::Describe() {
  const Inner* n = Probe<Inner>();
  TypeDescriptor d = TypeDescriptor::Fixed<Inner>("store.Inner");
  for (int i = 0; i < kFanout - 1; ++i) d.ref_offsets.push_back(OffsetIn(n, &n->separators[i]));
  for (int i = 0; i < kFanout; ++i) d.ref_offsets.push_back(OffsetIn(n, &n->children[i]));
  return d;
}

TypeDescriptor StoreRoot::Describe() {
  return TypeDescriptor::Fixed<StoreRoot>("store.Root", &StoreRoot::tree, &StoreRoot::leases,
                                          &StoreRoot::lease_keys, &StoreRoot::meta);
}

WritePtr<StoreRoot> NewTree(Tx& tx) {
  WritePtr<Leaf> leaf = tx.New<Leaf>();
  leaf->is_leaf = 1;
  WritePtr<StoreRoot> root = tx.New<StoreRoot>();
  root.Set(&StoreRoot::tree, Ref<Node>(leaf));
  return root;
}

void Insert(Tx& tx, const Ref<StoreRoot>& root, std::string_view key, const Ref<Bytes>& key_bytes,
            const Ref<Entry>& entry) {
  Path path;
  ReadPtr<Leaf> leaf = Descend(tx, root, key, &path);
  const uint32_t pos = LowerBound(tx, leaf.get(), key);
  WritePtr<Leaf> right;
  if (leaf->count == kFanout) right = tx.New<Leaf>();  // allocate before rearranging anything
  WritePtr<Leaf> w = tx.Write(leaf);
  if (w->count < kFanout) {
    for (uint32_t j = w->count; j > pos; --j) {
      Copy(w, w->keys[j], w->keys[j - 1]);
      Copy(w, w->entries[j], w->entries[j - 1]);
    }
    w.Set(w->keys[pos], key_bytes);
    w.Set(w->entries[pos], entry);
    ++w->count;
    return;
  }
  // Split kFanout + 1 items: the left keeps [0, m), the right gets [m, kFanout]. Half and half, except
  // for a key past the leaf's last one: the left stays full and the new key starts the right leaf, so
  // ascending inserts (a checkpoint load, keys named by a counter or a time) fill leaves completely
  // instead of leaving every one half empty.
  constexpr uint32_t kTotal = kFanout + 1;
  const uint32_t m = pos == kFanout ? kFanout : kTotal / 2;
  auto key_at = [&](uint32_t j) -> Ref<Bytes> {
    if (j < pos) return Ref<Bytes>(w->keys[j]);
    if (j == pos) return key_bytes;
    return Ref<Bytes>(w->keys[j - 1]);
  };
  auto entry_at = [&](uint32_t j) -> Ref<Entry> {
    if (j < pos) return Ref<Entry>(w->entries[j]);
    if (j == pos) return entry;
    return Ref<Entry>(w->entries[j - 1]);
  };
  right->is_leaf = 1;
  right->count = kTotal - m;
  for (uint32_t j = m; j < kTotal; ++j) {
    right.Set(right->keys[j - m], key_at(j));
    right.Set(right->entries[j - m], entry_at(j));
  }
  if (pos < m) {
    for (uint32_t j = m - 1; j > pos; --j) {
      Copy(w, w->keys[j], w->keys[j - 1]);
      Copy(w, w->entries[j], w->entries[j - 1]);
    }
    w.Set(w->keys[pos], key_bytes);
    w.Set(w->entries[pos], entry);
  }
  for (uint32_t j = m; j < kFanout; ++j) {
    w->keys[j].Store(nullptr);
    w->entries[j].Store(nullptr);
  }
  w->count = m;
  InsertIntoParent(tx, root, path, path.depth - 1, Ref<Bytes>::FromRaw(right->keys[0].Load()),
                   Ref<Node>(right));
}

bool Erase(Tx& tx, const Ref<StoreRoot>& root, std::string_view key) {
  Path path;
  ReadPtr<Leaf> leaf = Descend(tx, root, key, &path);
  const uint32_t pos = LowerBound(tx, leaf.get(), key);
  if (pos >= leaf->count || KeyAt(tx, leaf->keys[pos]) != key) return false;
  WritePtr<Leaf> w = tx.Write(leaf);
  for (uint32_t j = pos; j + 1 < w->count; ++j) {
    Copy(w, w->keys[j], w->keys[j + 1]);
    Copy(w, w->entries[j], w->entries[j + 1]);
  }
  w->keys[w->count - 1].Store(nullptr);
  w->entries[w->count - 1].Store(nullptr);
  --w->count;
  if (w->count == 0 && !path.empty()) RemoveFromParent(tx, root, path, path.depth - 1);
  return true;
}

}  // namespace revkv::server::store
