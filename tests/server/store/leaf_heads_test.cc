// A leaf's search heads (server/store/tree.h, LeafHead): a leaf's binary search compares the two bytes
// of each key after the leaf's shared prefix and reads full keys only to check that prefix and to settle
// equal heads. These tests prove that lookups, insertions and range scans still find exactly the right
// keys where heads cannot tell keys apart (keys equal in their first 20 bytes, keys shorter than the
// prefix or than a head, keys that are prefixes of others, 0x00 and 0xff bytes), and that every change
// of a leaf's entries (insertion, deletion, split, emptying, entry replacement, a checkpoint's load)
// keeps each leaf's prefix and heads in agreement with its keys (MeasureShape checks every leaf), with
// major collections moving everything and the heap verifier on.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "runtime/gc/gc.h"
#include "runtime/heap/heap.h"
#include "runtime/safepoint/safepoint.h"
#include "runtime/stm/stm.h"
#include "server/engine/engine.h"
#include "server/store/store.h"
#include "server/store/tree.h"
#include "tests/server/engine/engine_test_util.h"

namespace revkv::server {
namespace {

using runtime::stm::ReadPtr;
using runtime::stm::Ref;
using runtime::stm::SnapshotTx;
using runtime::stm::Tx;
using store::Entry;
using store::EntryFields;
using store::StoreRoot;

// A key in hex, for messages (keys here hold 0x00 and 0xff bytes).
std::string Hex(const std::string& s) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

// Keys that defeat heads: groups that share long prefixes (so that a leaf's prefix is long and keys
// differ only past a head's two bytes), keys shorter than the prefix and than a head, keys that are
// prefixes of one another (with 0x00 after them: "ab" < "ab\0" < "ab\0\0", all with the same head after
// "ab"), and 0x00 and 0xff bytes where heads are taken.
std::vector<std::string> HardKeys() {
  std::vector<std::string> keys;
  const std::string long_prefix = "/registry/pods/ns-1/";  // 20 bytes
  for (int i = 0; i < 200; ++i) {
    std::string k = long_prefix;
    k += static_cast<char>('a' + i % 3);
    k += static_cast<char>(i % 2 == 0 ? 0x00 : 0xff);
    k += std::to_string(i / 6);  // differs from its neighbours only past the head
    keys.push_back(k);
  }
  for (int i = 0; i < 64; ++i) {
    std::string k = long_prefix.substr(0, static_cast<size_t>(i % 21));  // prefixes of the long prefix
    if (i >= 21) k += std::string(static_cast<size_t>(i % 4), static_cast<char>(i >= 42 ? 0x00 : 0xff));
    if (!k.empty()) keys.push_back(k);
  }
  for (const char* base : {"ab", "x", "\xff", "\xff\xff", "\x01"}) {
    std::string k = base;
    for (int n = 0; n < 5; ++n) {
      keys.push_back(k);
      k += '\0';
    }
  }
  for (int i = 0; i < 300; ++i) {  // the benchmark's shape: 16 bytes, the first 8 shared by all
    char k[17];
    std::snprintf(k, sizeof(k), "key/%012d", i * 7);
    keys.push_back(k);
  }
  for (int i = 0; i < 12; ++i) {  // keys out of line (longer than kInlineMax), sharing 300 bytes
    keys.push_back(std::string(300, 'L') +
                   std::string(static_cast<size_t>(i % 3), static_cast<char>('0' + i)));
  }
  for (int i = 0; i < 256; ++i) {  // every byte value after a shared prefix, and after a short one
    keys.push_back(std::string("b/") + static_cast<char>(i));
    keys.push_back(std::string("b/") + static_cast<char>(i) + static_cast<char>(255 - i) + "tail");
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

// Keys that are not in HardKeys() but sort among them: lookups of them must miss, and a range from
// one must start at the next key.
std::vector<std::string> MissingNear(const std::vector<std::string>& present) {
  std::vector<std::string> out;
  for (const std::string& k : present) {
    for (std::string c : {k + std::string(1, '\0') + "?", k + "\x7f", k.substr(0, k.size() - 1) + "\x80"}) {
      if (!std::binary_search(present.begin(), present.end(), c)) out.push_back(c);
    }
  }
  return out;
}

class LeafHeadsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The heap verifier runs after every collection in this test (runtime/gc/verifier.cc).
    setenv("REVKV_VERIFY_HEAP", "1", /*overwrite=*/0);
    runtime::HeapOptions o;
    o.max_heap_bytes = size_t{1} << 30;
    runtime::InitializeRuntime(o);
    registration_.emplace("leaf-heads-test");
    ASSERT_TRUE(runtime::stm::Atomically([&](Tx& tx) {
                  tx.PublishAtCommit(root_, Ref<StoreRoot>(store::NewTree(tx)));
                }).ok());
  }
  void TearDown() override {
    root_.Store(nullptr);
    registration_.reset();
  }

  Ref<StoreRoot> RootRef() const { return Ref<StoreRoot>::FromRaw(static_cast<StoreRoot*>(root_.Load())); }

  void Insert(const std::string& k, const std::string& v) {
    ASSERT_TRUE(runtime::stm::Atomically([&](Tx& tx) {
                  store::InsertEntry(tx, RootRef(), k, v, EntryFields{1, 0, 1, 0});
                }).ok());
    model_[k] = v;
  }
  void Erase(const std::string& k) {
    absl::StatusOr<bool> erased =
        runtime::stm::Atomically([&](Tx& tx) { return store::Erase(tx, RootRef(), k); });
    ASSERT_TRUE(erased.ok());
    ASSERT_EQ(*erased, model_.erase(k) == 1) << Hex(k);
  }
  // A new value for `k` (present), with or without a lease: a new value much longer or shorter than
  // the old one, or a lease slot the entry lacks, puts a new entry object in the leaf (Replace).
  void Update(const std::string& k, const std::string& v, int64_t lease) {
    ASSERT_TRUE(runtime::stm::Atomically([&](Tx& tx) {
                  ReadPtr<Entry> old = store::Find(tx, RootRef(), k);
                  ASSERT_TRUE(old) << Hex(k);
                  store::UpdateEntry(tx, RootRef(), k, old, v, EntryFields{1, 0, 2, lease});
                }).ok());
    model_[k] = v;
  }

  // Every leaf's prefix and heads agree with its keys, and the tree holds exactly the model's keys.
  void ExpectConsistent(const char* when) {
    absl::StatusOr<store::TreeShape> shape =
        runtime::stm::ReadOnly([&](SnapshotTx& tx) { return store::MeasureShape(tx, RootRef()); });
    ASSERT_TRUE(shape.ok());
    ASSERT_EQ(shape->bad_leaves, 0u) << when << ": " << shape->first_problem;
    ASSERT_EQ(shape->keys, model_.size()) << when;
  }

  // Every model key is found with its value; every key of `missing` is not; a scan from each missing
  // key starts at the model's next key.
  void ExpectLookups(const std::vector<std::string>& missing, const char* when) {
    for (const auto& [k, v] : model_) {
      absl::StatusOr<std::string> got = runtime::stm::ReadOnly([&](SnapshotTx& tx) {
        ReadPtr<Entry> e = store::Find(tx, RootRef(), k);
        return e ? std::string(e->value()) : std::string("<absent>");
      });
      ASSERT_TRUE(got.ok());
      ASSERT_EQ(*got, v) << when << ": key " << Hex(k);
    }
    for (const std::string& k : missing) {
      if (model_.count(k) != 0) continue;
      absl::StatusOr<std::pair<bool, std::string>> got = runtime::stm::ReadOnly([&](SnapshotTx& tx) {
        std::pair<bool, std::string> r{static_cast<bool>(store::Find(tx, RootRef(), k)), "<end>"};
        store::KeyRange range{k, "", false};
        store::ForEachInRange(tx, RootRef(), range, [&](const ReadPtr<Entry>& e) {
          r.second = std::string(e->key());
          return false;
        });
        return r;
      });
      ASSERT_TRUE(got.ok());
      ASSERT_FALSE(got->first) << when << ": found absent key " << Hex(k);
      auto next = model_.lower_bound(k);
      ASSERT_EQ(got->second, next == model_.end() ? std::string("<end>") : next->first)
          << when << ": scan from " << Hex(k);
    }
  }

  // Every key in order, by a scan of the whole tree.
  void ExpectScanInOrder(const char* when) {
    absl::StatusOr<std::vector<std::string>> all = runtime::stm::ReadOnly([&](SnapshotTx& tx) {
      std::vector<std::string> keys;
      store::ForEachInRange(tx, RootRef(), store::KeyRange{"", "", false}, [&](const ReadPtr<Entry>& e) {
        keys.emplace_back(e->key());
        return true;
      });
      return keys;
    });
    ASSERT_TRUE(all.ok());
    std::vector<std::string> expected;
    for (const auto& [k, v] : model_) expected.push_back(k);
    ASSERT_EQ(*all, expected) << when;
  }

  runtime::GlobalRoot root_;
  std::optional<runtime::ThreadRegistration> registration_;
  std::map<std::string, std::string> model_;
};

TEST_F(LeafHeadsTest, LookupsAndScansFindExactlyTheKeysThatHeadsCannotTellApart) {
  const std::vector<std::string> keys = HardKeys();
  const std::vector<std::string> missing = MissingNear(keys);
  // Ascending (a checkpoint load's order: full leaves), then the same keys again in random order.
  for (const std::string& k : keys) ASSERT_NO_FATAL_FAILURE(Insert(k, "v" + Hex(k)));
  ASSERT_NO_FATAL_FAILURE(ExpectConsistent("ascending inserts"));
  ASSERT_NO_FATAL_FAILURE(ExpectLookups(missing, "ascending inserts"));
  ASSERT_NO_FATAL_FAILURE(ExpectScanInOrder("ascending inserts"));
  for (const std::string& k : keys) ASSERT_NO_FATAL_FAILURE(Erase(k));
  ASSERT_NO_FATAL_FAILURE(ExpectConsistent("every key erased"));

  std::vector<std::string> shuffled = keys;
  std::mt19937_64 rng(15);
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  for (const std::string& k : shuffled) ASSERT_NO_FATAL_FAILURE(Insert(k, "w" + Hex(k)));
  runtime::CollectMajor(runtime::MajorMode::kCompactEverything);
  ASSERT_NO_FATAL_FAILURE(ExpectConsistent("random inserts"));
  ASSERT_NO_FATAL_FAILURE(ExpectLookups(missing, "random inserts"));
  ASSERT_NO_FATAL_FAILURE(ExpectScanInOrder("random inserts"));
}

// Random insertions, deletions and replacements of entries (new values across kInlineMax, leases
// added), with the tree checked after every round and major collections between rounds.
TEST_F(LeafHeadsTest, EveryChangeOfALeafsEntriesKeepsItsPrefixAndHeads) {
  const std::vector<std::string> keys = HardKeys();
  const std::vector<std::string> missing = MissingNear(keys);
  std::mt19937_64 rng(16);
  std::uniform_int_distribution<size_t> pick(0, keys.size() - 1);
  std::uniform_int_distribution<int> op(0, 9);
  for (int round = 0; round < 12; ++round) {
    for (int i = 0; i < 400; ++i) {
      const std::string& k = keys[pick(rng)];
      const bool present = model_.count(k) != 0;
      const int o = op(rng);
      if (!present) {
        ASSERT_NO_FATAL_FAILURE(Insert(k, std::string(static_cast<size_t>(o), 'i')));
      } else if (o < 4) {
        ASSERT_NO_FATAL_FAILURE(Erase(k));
      } else {
        const size_t length =
            o < 7 ? static_cast<size_t>(o) : store::kInlineMax + 10 * static_cast<size_t>(o);
        ASSERT_NO_FATAL_FAILURE(Update(k, std::string(length, static_cast<char>('a' + o)), o == 9 ? 7 : 0));
      }
    }
    const std::string when = "round " + std::to_string(round);
    ASSERT_NO_FATAL_FAILURE(ExpectConsistent(when.c_str()));
    ASSERT_NO_FATAL_FAILURE(ExpectLookups(missing, when.c_str()));
    if (round % 3 == 2) {
      runtime::CollectMajor(runtime::MajorMode::kCompactEverything);
      ASSERT_NO_FATAL_FAILURE(ExpectScanInOrder(when.c_str()));
    }
  }
  // Empty the tree (leaves emptied and removed, the root leaf replaced), then fill it again.
  const std::map<std::string, std::string> all = model_;
  for (const auto& [k, v] : all) ASSERT_NO_FATAL_FAILURE(Erase(k));
  ASSERT_NO_FATAL_FAILURE(ExpectConsistent("emptied"));
  for (auto k = keys.rbegin(); k != keys.rend(); ++k) ASSERT_NO_FATAL_FAILURE(Insert(*k, "d"));
  ASSERT_NO_FATAL_FAILURE(ExpectConsistent("descending inserts"));
  ASSERT_NO_FATAL_FAILURE(ExpectLookups(missing, "descending inserts"));
}

// Through the store and the engine: Puts, deletions, a compaction and a compacting collection, a
// checkpoint, and the checkpoint's load (ascending batches of entries) with the log replayed after it;
// every leaf of the loaded store is consistent and every key is found.
TEST(LeafHeadsRecoveryTest, ACheckpointsLoadAndTheLogBuildConsistentLeaves) {
  setenv("REVKV_VERIFY_HEAP", "1", /*overwrite=*/0);
  using namespace engine_testing;  // NOLINT: the test helpers read best unqualified
  const std::string dir = TempDir("leaf-heads");
  const std::vector<std::string> keys = HardKeys();
  ASSERT_CHILD_PASSES([&] {
    RecoveryReport report;
    auto engine = Engine::Open(Options(dir), &report);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    Store& store = (*engine)->store();
    uint64_t lsn = 0;
    for (size_t i = 0; i < keys.size(); ++i) {
      auto w = store.Put(PutRequest(keys[i], std::to_string(i)));
      CHILD_CHECK(w.ok(), "%s", w.status().ToString().c_str());
      lsn = w->lsn;
    }
    for (size_t i = 0; i < keys.size(); i += 3) {
      etcdserverpb::DeleteRangeRequest d;
      d.set_key(keys[i]);
      auto w = store.DeleteRange(d);
      CHILD_CHECK(w.ok(), "%s", w.status().ToString().c_str());
      lsn = w->lsn;
    }
    CHILD_CHECK((*engine)->wal().WaitDurable(lsn).ok(), "durable");
    etcdserverpb::CompactionRequest compact;
    compact.set_revision(store.Revision());
    CHILD_CHECK(store.Compact(compact).ok(), "compact");
    runtime::CollectMajor(runtime::MajorMode::kCompactEverything);
    auto shape = store.Shape();
    CHILD_CHECK(shape.ok() && shape->bad_leaves == 0, "before the checkpoint: %s",
                shape.ok() ? shape->first_problem.c_str() : "no shape");
    CHILD_CHECK((*engine)->Checkpoint().ok(), "checkpoint");
    // After the checkpoint, the log: every third key back.
    for (size_t i = 0; i < keys.size(); i += 3) {
      auto w = store.Put(PutRequest(keys[i], "again"));
      CHILD_CHECK(w.ok(), "%s", w.status().ToString().c_str());
      lsn = w->lsn;
    }
    CHILD_CHECK((*engine)->wal().WaitDurable(lsn).ok(), "durable");
    return 0;
  });
  ASSERT_CHILD_PASSES([&] {
    RecoveryReport report;
    auto engine = Engine::Open(Options(dir), &report);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    CHILD_CHECK(report.checkpoint.loaded.has_value(), "no checkpoint loaded: %s",
                report.checkpoint.ToString().c_str());
    Store& store = (*engine)->store();
    runtime::CollectMajor(runtime::MajorMode::kCompactEverything);
    auto shape = store.Shape();
    CHILD_CHECK(shape.ok(), "shape");
    CHILD_CHECK(shape->bad_leaves == 0, "after recovery: %s", shape->first_problem.c_str());
    CHILD_CHECK(shape->keys == keys.size(), "%llu keys", static_cast<unsigned long long>(shape->keys));
    for (size_t i = 0; i < keys.size(); ++i) {
      etcdserverpb::RangeRequest r;
      r.set_key(keys[i]);
      auto got = store.Range(r);
      CHILD_CHECK(got.ok() && got->kvs_size() == 1, "key %s missing", Hex(keys[i]).c_str());
      const std::string expected = i % 3 == 0 ? "again" : std::to_string(i);
      CHILD_CHECK(got->kvs(0).value() == expected, "key %s: %s", Hex(keys[i]).c_str(),
                  got->kvs(0).value().c_str());
    }
    return 0;
  });
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace revkv::server
