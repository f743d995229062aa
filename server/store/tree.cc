// Writing the B+-tree (tree.h): insertion with splits, removal of emptied nodes, type descriptors.
//
// Every allocation (a new node on a split) happens before the nodes it will change are rearranged,
// and every handle lives in a local variable or a stack Path, so a collection triggered by an
// allocation sees them all.
#include "server/store/tree.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
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
  TypeDescriptor d = TypeDescriptor::Fixed<Entry>("store.Entry");
  d.tail = TypeDescriptor::Tail::kBytes;  // lease slot, key, value: never scanned
  d.tail_offset = sizeof(Entry);
  return d;
}

TypeDescriptor SpilledEntry::Describe() {
  TypeDescriptor d = TypeDescriptor::Fixed<SpilledEntry>("store.SpilledEntry", &SpilledEntry::key_bytes,
                                                         &SpilledEntry::value_bytes);
  d.tail = TypeDescriptor::Tail::kBytes;
  d.tail_offset = sizeof(SpilledEntry);
  return d;
}

TypeDescriptor Leaf::Describe() {
  const Leaf* l = Probe<Leaf>();
  TypeDescriptor d = TypeDescriptor::Fixed<Leaf>("store.Leaf");
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

namespace {

// Where a new entry puts its parts, and its size.
struct Placement {
  bool key_inline;
  bool value_inline;
  bool lease_slot;
  size_t tail_bytes;  // lease slot and inline parts
  bool spilled() const { return !key_inline || !value_inline; }
  size_t size() const {
    const size_t fixed = spilled() ? sizeof(SpilledEntry) : sizeof(Entry);
    return (fixed + tail_bytes + runtime::kObjectAlignment - 1) & ~(runtime::kObjectAlignment - 1);
  }
};

Placement Place(size_t key_length, size_t value_length, bool lease_slot) {
  Placement p{key_length <= kInlineMax, value_length <= kInlineMax, lease_slot, 0};
  p.tail_bytes = (lease_slot ? sizeof(int64_t) : 0) + (p.key_inline ? key_length : 0) +
                 (p.value_inline ? value_length : 0);
  return p;
}

// Writes `fields` and the value's length word into `e` (whose placement is `p`), and the lease if the
// entry has a slot. The inline parts are the caller's.
void SetFields(Entry* e, const Placement& p, size_t value_length, const EntryFields& fields) {
  Check(value_length <= Entry::kMaxValueLength, "value of 2^31 bytes or more");
  e->create_revision = fields.create_revision;
  e->mod_revision = fields.mod_revision;
  e->version = fields.version;
  e->value_word = static_cast<uint32_t>(value_length) | (p.lease_slot ? Entry::kLeaseSlot : 0);
  if (p.lease_slot) std::memcpy(e->mutable_tail(), &fields.lease, sizeof(fields.lease));
}

// Copies `bytes` to `to`. (memcpy with the null data of an empty string_view is undefined, even for
// no bytes.)
void CopyBytes(char* to, std::string_view bytes) {
  if (!bytes.empty()) std::memcpy(to, bytes.data(), bytes.size());
}

// Where the inline value goes in `e`.
char* InlineValue(Entry* e, const Placement& p) {
  return e->mutable_tail() + (p.lease_slot ? sizeof(int64_t) : 0) + (p.key_inline ? e->key_length : 0);
}

// The length of the longest common prefix of `a` and `b`.
size_t SharedLength(std::string_view a, std::string_view b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

// Makes the shared prefix of `w` (a leaf written by this transaction) its keys' longest common one (the
// first key's and the last key's, as they are in order), and every head that of its key after it.
// Reads every key of the leaf; allocates nothing.
void RebuildHeads(const WritePtr<Leaf>& w) {
  const uint32_t n = w->count;
  if (n == 0) {
    w->prefix_length = 0;
    return;
  }
  const size_t shared =
      std::min(SharedLength(LeafKey(w->entries[0]), LeafKey(w->entries[n - 1])), kMaxPrefixLength);
  w->prefix_length = static_cast<uint16_t>(shared);
  for (uint32_t i = 0; i < n; ++i) w->heads[i] = KeyHead(LeafKey(w->entries[i]), shared);
}

// Keeps the heads of `w` after `key`'s entry was inserted at `pos` (the heads after it moved up with
// their entries): the new key's head if it has the leaf's shared prefix, else a new prefix and heads.
void HeadsAfterInsert(const WritePtr<Leaf>& w, uint32_t pos, std::string_view key) {
  if (w->count == 1) return RebuildHeads(w);
  const std::string_view other = LeafKey(w->entries[pos == 0 ? 1 : 0]);  // has the shared prefix
  if (SharedLength(key, other) >= w->prefix_length) {
    w->heads[pos] = KeyHead(key, w->prefix_length);
    return;
  }
  RebuildHeads(w);
}

// Inserts `entry` for `key` (absent from the tree), splitting nodes as needed.
void Insert(Tx& tx, const Ref<StoreRoot>& root, std::string_view key, const Ref<Entry>& entry) {
  Path path;
  ReadPtr<Leaf> leaf = Descend(tx, root, key, &path);
  const uint32_t pos = LowerBound(tx, leaf.get(), key);
  if (leaf->count < kFanout) {
    WritePtr<Leaf> w = tx.Write(leaf);
    for (uint32_t j = w->count; j > pos; --j) {
      Copy(w, w->entries[j], w->entries[j - 1]);
      w->heads[j] = w->heads[j - 1];
    }
    w.Set(w->entries[pos], entry);
    ++w->count;
    HeadsAfterInsert(w, pos, key);
    return;
  }
  // Split kFanout + 1 items: the left keeps [0, m), the right gets [m, kFanout]. Half and half, except
  // for a key past the leaf's last one: the left stays full and the new key starts the right leaf, so
  // ascending inserts (a checkpoint load, keys named by a counter or a time) fill leaves completely
  // instead of leaving every one half empty.
  constexpr uint32_t kTotal = kFanout + 1;
  const uint32_t m = pos == kFanout ? kFanout : kTotal / 2;
  // The separator (the right leaf's first key) is a Bytes of its own: allocated, like the right leaf,
  // before anything is rearranged. Copied out of its entry first: the allocation may move the entry.
  const std::string first_right(m == pos ? key : LeafKey(leaf->entries[m < pos ? m : m - 1]));
  WritePtr<Leaf> right = tx.New<Leaf>();
  Ref<Bytes> separator = tx.NewBytes(first_right);
  WritePtr<Leaf> w = tx.Write(leaf);
  auto entry_at = [&](uint32_t j) -> Ref<Entry> {
    if (j < pos) return Ref<Entry>(w->entries[j]);
    if (j == pos) return entry;
    return Ref<Entry>(w->entries[j - 1]);
  };
  right->is_leaf = 1;
  right->count = kTotal - m;
  for (uint32_t j = m; j < kTotal; ++j) right.Set(right->entries[j - m], entry_at(j));
  if (pos < m) {
    for (uint32_t j = m - 1; j > pos; --j) Copy(w, w->entries[j], w->entries[j - 1]);
    w.Set(w->entries[pos], entry);
  }
  for (uint32_t j = m; j < kFanout; ++j) w->entries[j].Store(nullptr);
  w->count = m;
  // Each half gets its own shared prefix (often longer than the whole leaf's) and heads.
  RebuildHeads(w);
  RebuildHeads(right);
  InsertIntoParent(tx, root, path, path.depth - 1, separator, Ref<Node>(right));
}

// Puts `entry` in the place of `key`'s entry (present) in its leaf. The key, so its head, is the same.
void Replace(Tx& tx, const Ref<StoreRoot>& root, std::string_view key, const Ref<Entry>& entry) {
  ReadPtr<Leaf> leaf = Descend(tx, root, key);
  const uint32_t pos = LowerBound(tx, leaf.get(), key);
  Check(pos < leaf->count && LeafKey(leaf->entries[pos]) == key, "replacing the entry of an absent key");
  WritePtr<Leaf> w = tx.Write(leaf);
  w.Set(w->entries[pos], entry);
}

}  // namespace

namespace {

// A new entry holding `key`, a value of `value_length` bytes and `fields`. The value is `shared_value`,
// an existing out-of-line value (longer than kInlineMax) that the new entry references too, if it is
// not null; else the bytes of `value`.
Ref<Entry> MakeEntry(Tx& tx, std::string_view key, std::string_view value, const Ref<Bytes>& shared_value,
                     size_t value_length, const EntryFields& fields) {
  const Placement p = Place(key.size(), value_length, fields.lease != 0);
  Check(!shared_value || !p.value_inline, "a shared value must be out of line");
  const size_t key_at = p.lease_slot ? sizeof(int64_t) : 0;
  if (!p.spilled()) {
    WritePtr<Entry> e = tx.NewWithTail<Entry>(p.size() - sizeof(Entry));
    e->key_length = static_cast<uint32_t>(key.size());
    SetFields(e.operator->(), p, value_length, fields);
    CopyBytes(e->mutable_tail() + key_at, key);
    CopyBytes(InlineValue(e.operator->(), p), value.substr(0, value_length));
    return e;
  }
  // The out-of-line parts first: each allocation may collect (the handles live in locals, seen by the
  // conservative scan).
  Ref<Bytes> key_bytes = p.key_inline ? Ref<Bytes>() : tx.NewBytes(key);
  Ref<Bytes> value_bytes = p.value_inline ? Ref<Bytes>() : shared_value ? shared_value : tx.NewBytes(value);
  WritePtr<SpilledEntry> e = tx.NewWithTail<SpilledEntry>(p.size() - sizeof(SpilledEntry));
  e->key_length = static_cast<uint32_t>(key.size());
  SetFields(e.operator->(), p, value_length, fields);
  e.Set(&SpilledEntry::key_bytes, key_bytes);
  e.Set(&SpilledEntry::value_bytes, value_bytes);
  if (p.key_inline) CopyBytes(e->mutable_tail() + key_at, key);
  if (p.value_inline) CopyBytes(InlineValue(e.operator->(), p), value.substr(0, value_length));
  return e;
}

}  // namespace

Ref<Entry> NewEntry(Tx& tx, std::string_view key, std::string_view value, const EntryFields& fields) {
  return MakeEntry(tx, key, value, Ref<Bytes>(), value.size(), fields);
}

void InsertEntry(Tx& tx, const Ref<StoreRoot>& root, std::string_view key, std::string_view value,
                 const EntryFields& fields) {
  Ref<Entry> e = NewEntry(tx, key, value, fields);
  Insert(tx, root, key, e);
}

bool EntryCanHold(const Entry* e, size_t value_length, int64_t lease) {
  if (lease != 0 && !e->has_lease_slot()) return false;
  const Placement p = Place(e->key_length, value_length, e->has_lease_slot());
  if (p.spilled() != e->spilled()) return false;
  if (p.spilled()) {
    const auto* s = static_cast<const SpilledEntry*>(e);
    if (p.value_inline != (s->value_bytes.Load() == nullptr)) return false;
  }
  return p.size() <= e->size() && e->size() - p.size() <= kMaxSlack;
}

void UpdateEntry(Tx& tx, const Ref<StoreRoot>& root, std::string_view key, const ReadPtr<Entry>& old,
                 std::optional<std::string_view> value, const EntryFields& fields) {
  const size_t value_length = value ? value->size() : old->value_length();
  if (!EntryCanHold(old.get(), value_length, fields.lease)) {
    if (value) {
      Replace(tx, root, key, NewEntry(tx, key, *value, fields));
      return;
    }
    // The old value in a new object (a lease slot was missing): an out-of-line value is shared, not
    // copied; an inline one (at most kInlineMax bytes) is copied out first, as the allocation may move
    // its entry.
    Ref<Bytes> shared;
    if (old->spilled()) shared = Ref<Bytes>(static_cast<const SpilledEntry*>(old.get())->value_bytes);
    const std::string inline_value = shared ? std::string() : std::string(old->value());
    Replace(tx, root, key, MakeEntry(tx, key, inline_value, shared, value_length, fields));
    return;
  }
  const Placement p = Place(key.size(), value_length, old->has_lease_slot());
  // A new out-of-line value is allocated before the write barrier's copy, which may collect too.
  Ref<Bytes> value_bytes = !value || p.value_inline ? Ref<Bytes>() : tx.NewBytes(*value);
  WritePtr<Entry> w = tx.Write(old);
  SetFields(w.operator->(), p, value_length, fields);
  if (!value) return;  // the copy holds the old value (inline, or its reference)
  if (p.value_inline) {
    CopyBytes(InlineValue(w.operator->(), p), *value);
  } else {
    static_cast<SpilledEntry*>(w.operator->())->value_bytes.Store(value_bytes.unsafe_raw());
  }
}

std::string LeafProblem(const Leaf* leaf) {
  const uint32_t n = leaf->count;
  if (n > static_cast<uint32_t>(kFanout)) return absl::StrCat("a leaf holds ", n, " keys");
  if (n == 0) return "";
  const size_t shared = leaf->prefix_length;
  const std::string_view first = LeafKey(leaf->entries[0]);
  std::string_view previous;
  for (uint32_t i = 0; i < n; ++i) {
    const std::string_view k = LeafKey(leaf->entries[i]);
    const std::string where = absl::StrCat("key ", i, " of ", n, " (\"",
                                           absl::CEscape(absl::string_view(k.data(), k.size())), "\")");
    if (i > 0 && !(previous < k)) return absl::StrCat(where, " is not after the key before it");
    if (k.size() < shared || first.size() < shared || k.substr(0, shared) != first.substr(0, shared)) {
      return absl::StrCat(where, " does not start with the leaf's shared prefix of ", shared, " bytes");
    }
    if (leaf->heads[i] != KeyHead(k, shared)) {
      return absl::StrCat(where, ": head ", leaf->heads[i], ", the key's is ", KeyHead(k, shared), " after ",
                          shared, " bytes");
    }
    previous = k;
  }
  return "";
}

bool Erase(Tx& tx, const Ref<StoreRoot>& root, std::string_view key) {
  Path path;
  ReadPtr<Leaf> leaf = Descend(tx, root, key, &path);
  const uint32_t pos = LowerBound(tx, leaf.get(), key);
  if (pos >= leaf->count || LeafKey(leaf->entries[pos]) != key) return false;
  WritePtr<Leaf> w = tx.Write(leaf);
  // The remaining keys still share the leaf's prefix: their heads move down with their entries.
  for (uint32_t j = pos; j + 1 < w->count; ++j) {
    Copy(w, w->entries[j], w->entries[j + 1]);
    w->heads[j] = w->heads[j + 1];
  }
  w->entries[w->count - 1].Store(nullptr);
  --w->count;
  if (w->count == 0 && !path.empty()) RemoveFromParent(tx, root, path, path.depth - 1);
  return true;
}

}  // namespace revkv::server::store
