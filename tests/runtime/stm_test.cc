// Tests of the STM (runtime/stm): the bank invariant under contention, serializability against a
// sequential replay, read-only transactions that write nothing shared, inevitable transactions,
// snapshot scans under a write load, bounded memory under overwrites, no lost update across
// collections, and chain compression / auto-localization under concurrency.
#include "runtime/stm/stm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "runtime/gc/collector.h"  // HeapVerificationEnabled
#include "runtime/gc/gc.h"
#include "runtime/gc/test_hooks.h"  // this binary links revkv_runtime_test_hooks
#include "runtime/heap/heap.h"
#include "runtime/heap/object_format.h"  // LayoutOf
#include "runtime/safepoint/safepoint.h"
#include "runtime/stm/descriptor.h"  // kInevitableAfterAborts and other constants the tests exercise
#include "runtime/stm/test_hooks.h"  // this binary links revkv_runtime_test_hooks
#include "tests/runtime/test_support.h"

namespace revkv::runtime::testing {
namespace {

using namespace std::chrono_literals;
using stm::Ref;
using stm::SnapshotTx;
using stm::Tx;

struct Account : VersionedObject {
  int64_t balance;
  int64_t writes;
  static TypeDescriptor Describe() { return TypeDescriptor::Fixed<Account>("test.Account"); }
};

// An immutable table of references to accounts (never written after creation).
struct Table : Object {
  uint64_t size;
  static TypeDescriptor Describe() {
    TypeDescriptor d;
    d.name = "test.Table";
    d.fixed_size = sizeof(Table);
    d.tail = TypeDescriptor::Tail::kRefs;
    d.tail_offset = sizeof(Table);
    return d;
  }
  const Field<Account>& at(size_t i) const { return reinterpret_cast<const Field<Account>*>(this + 1)[i]; }
  Field<Account>& at(size_t i) { return reinterpret_cast<Field<Account>*>(this + 1)[i]; }
};

class StmTest : public RuntimeTest {
 protected:
  HeapOptions Options() override { return SmallHeapOptions(size_t{1} << 30); }

  // Creates `n` accounts of `balance` each, published in table_.
  void MakeAccounts(size_t n, int64_t balance) {
    ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                  auto table = tx.NewWithTail<Table>(n * sizeof(void*));
                  table->size = n;
                  for (size_t i = 0; i < n; ++i) {
                    auto a = tx.New<Account>();
                    a->balance = balance;
                    table.Set(table->at(i), Ref<Account>(a));
                  }
                  tx.PublishAtCommit(table_, Ref<Table>(table));
                }).ok());
  }
  Ref<Table> table() const { return Ref<Table>::FromRaw(static_cast<Table*>(table_.Load())); }

  int64_t SnapshotTotal(uint64_t* time = nullptr) {
    absl::StatusOr<int64_t> total = stm::ReadOnly([&](SnapshotTx& tx) {
      auto t = tx.Read(table());
      int64_t sum = 0;
      for (size_t i = 0; i < t->size; ++i) sum += tx.Read(Ref<Account>(t->at(i)))->balance;
      if (time != nullptr) *time = tx.snapshot_time();
      return sum;
    });
    EXPECT_TRUE(total.ok());
    return *total;
  }

  GlobalRoot table_;
};

bool IsRevisionPointerForTest(uintptr_t v) { return (v & 1) == 0; }

uint64_t TotalAborts() {
  const stm::StmStatistics s = stm::GetStmStatistics();
  uint64_t n = 0;
  for (uint64_t a : s.aborts) n += a;
  return n;
}

TEST_F(StmTest, BankTransfersConserveTheTotalAndReallyConflict) {
  const size_t accounts = 1000;
  MakeAccounts(accounts, 1000);
  const int64_t expected = static_cast<int64_t>(accounts) * 1000;
  const uint64_t seed = TestSeed();
  const size_t transfers = Scaled(100'000);
  const uint64_t aborts_before = TotalAborts();
  std::atomic<bool> done{false};
  std::atomic<uint64_t> audits{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      ThreadRegistration r("bank");
      std::mt19937_64 rng(seed + static_cast<uint64_t>(t));
      for (size_t i = 0; i < transfers; ++i) {
        const size_t from = rng() % accounts;
        const size_t to = (from + 1 + rng() % (accounts - 1)) % accounts;
        const int64_t amount = static_cast<int64_t>(rng() % 50);
        ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                      auto tbl = tx.Read(table());
                      auto src = tx.Write(tx.Read(Ref<Account>(tbl->at(from))));
                      auto dst = tx.Write(Ref<Account>(tbl->at(to)));  // a blind write barrier
                      src->balance -= amount;
                      dst->balance += amount;
                    }).ok());
      }
    });
  }
  std::thread auditor([&] {
    ThreadRegistration r("auditor");
    while (!done.load()) {
      ASSERT_EQ(SnapshotTotal(), expected) << "a concurrent read-only audit saw money appear or vanish";
      audits.fetch_add(1);
    }
  });
  JoinAll(threads);
  done.store(true);
  Join(auditor);
  EXPECT_EQ(SnapshotTotal(), expected);
  EXPECT_GT(audits.load(), 0u);
  EXPECT_GT(TotalAborts(), aborts_before) << "4 threads on 1000 accounts must conflict at least once";
  const stm::StmStatistics s = stm::GetStmStatistics();
  std::printf("commits %llu, aborts read %llu lock %llu validation %llu doomed %llu, audits %llu\n",
              static_cast<unsigned long long>(s.write_commits), static_cast<unsigned long long>(s.aborts[0]),
              static_cast<unsigned long long>(s.aborts[1]), static_cast<unsigned long long>(s.aborts[2]),
              static_cast<unsigned long long>(s.aborts[3]), static_cast<unsigned long long>(audits.load()));
}

// One committed transaction of the serializability test: what it read and wrote, and when.
struct Recorded {
  uint64_t time;  // ThisThreadLastCommitTime
  std::vector<std::pair<size_t, int64_t>> reads;
  std::vector<std::pair<size_t, int64_t>> writes;
};

TEST_F(StmTest, ReplayingCommittedTransactionsInTimeOrderReproducesEveryRead) {
  const size_t keys = 8;
  MakeAccounts(keys, 0);
  const uint64_t seed = TestSeed();
  const size_t per_thread = Scaled(20'000);
  std::mutex mu;
  std::vector<Recorded> log;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      ThreadRegistration r("serial");
      std::mt19937_64 rng(seed * 31 + static_cast<uint64_t>(t));
      std::vector<Recorded> mine;
      for (size_t i = 0; i < per_thread; ++i) {
        Recorded rec;
        const int nreads = 1 + static_cast<int>(rng() % 3);
        const int nwrites = static_cast<int>(rng() % 3);
        std::vector<size_t> read_keys, write_keys;
        for (int k = 0; k < nreads; ++k) read_keys.push_back(rng() % keys);
        for (int k = 0; k < nwrites; ++k) write_keys.push_back(rng() % keys);
        const int64_t stamp = static_cast<int64_t>((uint64_t(t) << 40) | i);
        // Values wrap around: sums are computed in unsigned arithmetic.
        auto add = [](int64_t a, int64_t b) {
          return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
        };
        ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                      rec.reads.clear();
                      rec.writes.clear();
                      auto tbl = tx.Read(table());
                      int64_t acc = 0;
                      for (size_t k : read_keys) {
                        const int64_t v = tx.Read(Ref<Account>(tbl->at(k)))->balance;
                        rec.reads.emplace_back(k, v);
                        acc = add(acc, v);
                      }
                      for (size_t k : write_keys) {
                        auto w = tx.Write(Ref<Account>(tbl->at(k)));
                        w->balance = add(stamp, acc);
                        rec.writes.emplace_back(k, add(stamp, acc));
                        // Reads after our own write see it.
                        const int64_t again = tx.Read(Ref<Account>(tbl->at(k)))->balance;
                        ASSERT_EQ(again, add(stamp, acc));
                      }
                    }).ok());
        rec.time = stm::ThisThreadLastCommitTime();
        mine.push_back(std::move(rec));
      }
      std::lock_guard<std::mutex> lock(mu);
      for (auto& m : mine) log.push_back(std::move(m));
    });
  }
  JoinAll(threads);
  // Writers commit at odd times (unique); read-only transactions serialize at their even start time,
  // after every writer with a smaller time. Replay in that order.
  std::stable_sort(log.begin(), log.end(),
                   [](const Recorded& a, const Recorded& b) { return a.time < b.time; });
  std::vector<int64_t> state(keys, 0);
  for (size_t i = 0; i < log.size(); ++i) {
    const Recorded& rec = log[i];
    if (i > 0 && !rec.writes.empty()) {
      ASSERT_NE(log[i - 1].time, rec.time) << "two writers share a commit time";
    }
    for (auto [k, v] : rec.reads)
      ASSERT_EQ(state[k], v) << "transaction at time " << rec.time << " read key " << k;
    for (auto [k, v] : rec.writes) state[k] = v;
  }
  // The final state is what the replay says.
  ASSERT_TRUE(stm::ReadOnly([&](SnapshotTx& tx) {
                auto tbl = tx.Read(table());
                for (size_t k = 0; k < keys; ++k)
                  EXPECT_EQ(tx.Read(Ref<Account>(tbl->at(k)))->balance, state[k]);
              }).ok());
}

// The newest revision of `o` (a test helper: single-threaded, outside transactions).
Object* HeadOf(Object* o) {
  while (IsRevisionPointerForTest(o->h_revision.load())) o = reinterpret_cast<Object*>(o->h_revision.load());
  return o;
}

// A checksum of every shared word a transaction could write: the table's header and reference fields,
// and the header words of every revision on each account's chain.
uint64_t HeaderChecksum(Table* t) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  mix(t->flags());
  mix(t->h_revision.load());
  for (size_t i = 0; i < t->size; ++i) {
    Account* a = RawReference(t->at(i));
    mix(reinterpret_cast<uintptr_t>(a));
    for (;;) {
      mix(a->flags());
      const uintptr_t v = a->h_revision.load();
      mix(v);
      mix(a->h_commit_time.load());
      if (!IsRevisionPointerForTest(v)) break;
      a = reinterpret_cast<Account*>(v);
    }
  }
  return h;
}

// Read-only transactions, read-write or snapshot, write no shared memory (DESIGN 2.3) even where a
// writer would compress chains: the table names the first revision of each account, 4 hops from its
// head, so every read walks a chain that PossiblyUpdateChain would shorten.
TEST_F(StmTest, ReadOnlyTransactionsWriteNoSharedMemory) {
  MakeAccounts(16, 7);
  constexpr int kChain = 4;
  for (int round = 0; round < kChain; ++round) {
    for (size_t k = 0; k < 16; ++k) {
      // Written through the head itself, so building the chain walks (and compresses) nothing.
      auto* head = static_cast<Account*>(HeadOf(RawReference(table().unsafe_raw()->at(k))));
      ASSERT_TRUE(stm::Atomically([&](Tx& tx) { tx.Write(Ref<Account>::FromRaw(head))->writes += 1; }).ok());
    }
  }
  for (size_t k = 0; k < 16; ++k) {
    size_t hops = 0;
    for (Object* o = RawReference(table().unsafe_raw()->at(k));
         IsRevisionPointerForTest(o->h_revision.load());
         o = reinterpret_cast<Object*>(o->h_revision.load())) {
      ++hops;
    }
    ASSERT_EQ(hops, static_cast<size_t>(kChain)) << "account " << k << ": the chain to read through";
  }
  const uint64_t time_before = stm::LastCommittedTime();
  const uint64_t headers_before = HeaderChecksum(table().unsafe_raw());
  const uint64_t compressed_before = stm::GetStmStatistics().chains_compressed;
  const size_t n = Scaled(1'000'000);
  int64_t sum = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i % 2 == 0) {
      sum += *stm::Atomically([&](Tx& tx) {
        auto tbl = tx.Read(table());
        return tx.Read(Ref<Account>(tbl->at(i % 16)))->balance;
      });
    } else {
      sum += *stm::ReadOnly([&](SnapshotTx& tx) {
        auto tbl = tx.Read(table());
        return tx.Read(Ref<Account>(tbl->at(i % 16)))->balance;
      });
    }
  }
  EXPECT_EQ(sum, static_cast<int64_t>(n) * 7);
  EXPECT_EQ(stm::LastCommittedTime(), time_before) << "no clock bump";
  EXPECT_EQ(stm::GetStmStatistics().chains_compressed, compressed_before) << "no chain compression";
  EXPECT_EQ(HeaderChecksum(table().unsafe_raw()), headers_before) << "no header or field store";
}

TEST_F(StmTest, AtMostOneInevitableTransactionRunsAndItsEffectHappensOnce) {
  MakeAccounts(4, 0);
  std::atomic<int> inside{0};
  std::atomic<int> max_inside{0};
  std::atomic<int> effects{0};
  const size_t per_thread = Scaled(2000);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      ThreadRegistration r("inevitable");
      for (size_t i = 0; i < per_thread; ++i) {
        const bool irrevocable = (i % 4) == static_cast<size_t>(t % 4);
        ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                      auto tbl = tx.Read(table());
                      auto w = tx.Write(Ref<Account>(tbl->at(i % 4)));
                      w->balance += 1;
                      if (irrevocable) {
                        tx.BecomeInevitable();
                        const int now = inside.fetch_add(1) + 1;
                        int seen = max_inside.load();
                        while (now > seen && !max_inside.compare_exchange_weak(seen, now)) {
                        }
                        effects.fetch_add(1);  // the irrevocable effect
                        std::this_thread::yield();
                        inside.fetch_sub(1);
                      }
                    }).ok());
      }
    });
  }
  JoinAll(threads);
  EXPECT_EQ(max_inside.load(), 1);
  EXPECT_EQ(effects.load(), static_cast<int>(per_thread));  // one in four transactions of each thread
  int64_t total = 0;
  ASSERT_TRUE(stm::ReadOnly([&](SnapshotTx& tx) {
                auto tbl = tx.Read(table());
                for (size_t k = 0; k < 4; ++k) total += tx.Read(Ref<Account>(tbl->at(k)))->balance;
              }).ok());
  EXPECT_EQ(total, static_cast<int64_t>(4 * per_thread));
  EXPECT_GE(stm::GetStmStatistics().inevitable, per_thread);
}

TEST_F(StmTest, OthersRunButDoNotCommitWhileATransactionIsInevitable) {
  MakeAccounts(2, 0);
  std::atomic<int> phase{0};
  std::atomic<bool> other_committed{false};
  std::atomic<bool> other_ran{false};
  std::thread inevitable([&] {
    ThreadRegistration r("inevitable");
    ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                  auto tbl = tx.Read(table());
                  tx.Write(Ref<Account>(tbl->at(0)))->balance = 1;
                  tx.BecomeInevitable();
                  phase.store(1);
                  while (!other_ran.load()) std::this_thread::yield();
                  std::this_thread::sleep_for(50ms);
                  EXPECT_FALSE(other_committed.load())
                      << "another transaction committed during an inevitable one";
                }).ok());
  });
  while (phase.load() != 1) std::this_thread::yield();
  ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                auto tbl = tx.Read(table());
                tx.Write(Ref<Account>(tbl->at(1)))->balance = 2;  // no conflict with the inevitable one
                other_ran.store(true);
              }).ok());
  other_committed.store(true);
  Join(inevitable);
  EXPECT_GE(stm::GetStmStatistics().inevitable_wait_nanos, 1'000'000u);
}

TEST_F(StmTest, AConflictingCommitMakesBecomeInevitableAbortOnceAndNeverAfterwards) {
  MakeAccounts(1, 0);
  std::atomic<int> attempts{0};
  std::atomic<int> effects{0};
  std::atomic<int> phase{0};
  std::thread writer([&] {
    ThreadRegistration r("writer");
    while (phase.load() != 1) std::this_thread::yield();
    ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                  auto tbl = tx.Read(table());
                  tx.Write(Ref<Account>(tbl->at(0)))->balance += 100;
                }).ok());
    phase.store(2);
  });
  ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                const int attempt = attempts.fetch_add(1);
                auto tbl = tx.Read(table());
                const int64_t seen = tx.Read(Ref<Account>(tbl->at(0)))->balance;
                if (attempt == 0) {
                  phase.store(1);  // let the conflicting commit happen after our read
                  while (phase.load() != 2) std::this_thread::yield();
                }
                tx.BecomeInevitable();
                effects.fetch_add(1);
                EXPECT_EQ(seen, 100) << "only the attempt after the conflicting commit gets here";
                tx.Write(Ref<Account>(tbl->at(0)))->balance = seen + 1;
              }).ok());
  Join(writer);
  EXPECT_EQ(attempts.load(), 2);
  EXPECT_EQ(effects.load(), 1);
}

TEST_F(StmTest, ASnapshotScanOf100kObjectsSeesOneStateWhileWritersCommit) {
  const size_t n = 100'000;
  MakeAccounts(n, 10);
  const int64_t expected = static_cast<int64_t>(n) * 10;
  std::atomic<bool> scanning{true};
  std::atomic<uint64_t> writes{0};
  std::vector<std::thread> writers;
  const uint64_t seed = TestSeed();
  for (int t = 0; t < 2; ++t) {
    writers.emplace_back([&, t] {
      ThreadRegistration r("writer");
      std::mt19937_64 rng(seed + static_cast<uint64_t>(t));
      while (scanning.load(std::memory_order_relaxed)) {
        const size_t a = rng() % n;
        const size_t b = rng() % n;
        ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                      auto tbl = tx.Read(table());
                      tx.Write(Ref<Account>(tbl->at(a)))->balance -= 1;
                      tx.Write(Ref<Account>(tbl->at(b)))->balance += 1;
                    }).ok());
        writes.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  while (writes.load() < 100) std::this_thread::yield();
  int scans = 0;
  const auto end =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int>(2000 * Scale()) + 200);
  const uint64_t writes_before = writes.load();
  while (std::chrono::steady_clock::now() < end || scans < 3) {
    absl::StatusOr<int64_t> total = stm::ReadOnly([&](SnapshotTx& tx) {
      auto tbl = tx.Read(table());
      int64_t sum = 0;
      for (size_t i = 0; i < tbl->size; ++i) {
        sum += tx.Read(Ref<Account>(tbl->at(i)))->balance;
        if (i % 4096 == 0) tx.Poll();
      }
      return sum;
    });
    ASSERT_TRUE(total.ok());
    ASSERT_EQ(*total, expected) << "a snapshot scan saw a mix of states";
    ++scans;
  }
  scanning.store(false);
  JoinAll(writers);
  EXPECT_GT(writes.load(), writes_before + 100) << "writers kept committing during the scans";
  std::printf("%d scans of %zu objects, %llu writer commits\n", scans, n,
              static_cast<unsigned long long>(writes.load()));
}

TEST_F(StmTest, OverwritesKeepMemoryBoundedBecauseOldRevisionsAreFreed) {
  const size_t n = 1000;
  MakeAccounts(n, 0);
  const size_t overwrites = Scaled(10'000'000);
  const size_t per_tx = 10;
  size_t done = 0;
  size_t peak_before = 0;
  size_t peak_after = 0;
  while (done < overwrites) {
    ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                  auto tbl = tx.Read(table());
                  for (size_t k = 0; k < per_tx; ++k)
                    tx.Write(Ref<Account>(tbl->at((done + k) % n)))->balance += 1;
                }).ok());
    done += per_tx;
    if (done % 200'000 == 0) {
      peak_before = std::max(peak_before, GetHeapUsage().old_bytes);
      CollectMajor();
      peak_after = std::max(peak_after, GetHeapUsage().old_bytes);
    }
  }
  CollectMajor();
  const GcStatistics g = GetGcStatistics();
  const size_t live = n * sizeof(Account) + n * sizeof(void*) + sizeof(Table);
  std::printf(
      "old space over %zu overwrites: peak %zu bytes before a collection, %zu after; live %zu; "
      "revisions freed %llu\n",
      overwrites, peak_before, peak_after, live, static_cast<unsigned long long>(g.revisions_freed));
  // Between two collections 20,000 transactions write 200,000 revisions; afterwards only the newest
  // revision of each account survives (chunk granularity: a few chunks).
  EXPECT_LT(peak_after, 4 * live + 4 * kChunkSize) << "old revisions must be freed";
  EXPECT_LT(peak_before, size_t{64} << 20);
  EXPECT_GT(g.revisions_freed, overwrites / 2);
  int64_t total = 0;
  ASSERT_TRUE(stm::ReadOnly([&](SnapshotTx& tx) {
                auto tbl = tx.Read(table());
                for (size_t k = 0; k < n; ++k) total += tx.Read(Ref<Account>(tbl->at(k)))->balance;
              }).ok());
  EXPECT_EQ(total, static_cast<int64_t>(done));
}

// Hot objects: slot 0 is shared: every thread increments its balance (read-modify-write) on even steps
// and overwrites its `writes` field blind (without reading the object) on odd steps, so a blind write
// that committed over a newer revision would lose an increment. Slots 1..4 belong to one thread each and
// are written blind. A collector thread runs major collections every few milliseconds, between a
// write barrier and its commit as often as not (DESIGN 2.3: transaction state is forwarded to the same
// revision, never along the chain).
TEST_F(StmTest, NoUpdateIsLostAcrossCollections) {
  MakeAccounts(5, 0);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> increments{0};
  std::atomic<uint64_t> majors_during{0};
  const size_t per_thread = Scaled(40'000);
  std::vector<int64_t> blind_final(4, 0);
  std::vector<std::thread> threads;
  // Each thread runs at least per_thread transactions, and goes on until 20 major collections have
  // happened while it ran, however fast or slow the machine is.
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      ThreadRegistration r("hot");
      size_t i = 1;
      for (; i <= per_thread || majors_during.load() < 20; ++i) {
        ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                      auto tbl = tx.Read(table());
                      tx.Write(Ref<Account>(tbl->at(1 + t)))->balance =
                          static_cast<int64_t>(i);  // blind write
                      if (i % 2 == 0) {
                        tx.Write(tx.Read(Ref<Account>(tbl->at(0))))->balance += 1;  // RMW
                      } else {
                        tx.Write(Ref<Account>(tbl->at(0)))->writes = static_cast<int64_t>(i);  // blind
                      }
                      if (i % 16 == 1) tx.Poll();  // a collection between the barrier and the commit
                    }).ok());
        if (i % 2 == 0) increments.fetch_add(1);
      }
      blind_final[t] = static_cast<int64_t>(i - 1);
    });
  }
  std::thread collector([&] {
    ThreadRegistration r("collector");
    while (!stop.load()) {
      CollectMajor();
      majors_during.fetch_add(1);
      SafeRegion pause;
      std::this_thread::sleep_for(2ms);
    }
  });
  JoinAll(threads);
  stop.store(true);
  Join(collector);
  ASSERT_TRUE(stm::ReadOnly([&](SnapshotTx& tx) {
                auto tbl = tx.Read(table());
                EXPECT_EQ(tx.Read(Ref<Account>(tbl->at(0)))->balance,
                          static_cast<int64_t>(increments.load()));
                for (int t = 0; t < 4; ++t)
                  EXPECT_EQ(tx.Read(Ref<Account>(tbl->at(1 + t)))->balance, blind_final[t]);
              }).ok());
  EXPECT_GE(majors_during.load(), 20u);
}

TEST_F(StmTest, ChainCompressionAndAutoLocalizationAreExercisedConcurrently) {
  MakeAccounts(4, 0);
  // Build long chains: many commits to the same objects, no collection in between.
  for (int i = 0; i < 2000; ++i) {
    ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                  auto tbl = tx.Read(table());
                  tx.Write(Ref<Account>(tbl->at(i % 4)))->balance += 1;
                }).ok());
  }
  // An old revision of each account, to start chain walks from: the table still references them.
  const stm::StmStatistics before = stm::GetStmStatistics();
  std::vector<std::thread> threads;
  std::atomic<bool> failed{false};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      ThreadRegistration r("compress");
      for (int i = 0; i < 2000; ++i) {
        absl::StatusOr<int64_t> sum = stm::Atomically([&](Tx& tx) {
          auto tbl = tx.Read(table());
          int64_t s = 0;
          for (int rep = 0; rep < 12; ++rep) {  // repeated reads: auto-localization past the threshold
            for (size_t k = 0; k < 4; ++k) s += tx.Read(Ref<Account>(tbl->at(k)))->balance;
          }
          if (i % 8 == 0) tx.Write(Ref<Account>(tbl->at(i % 4)))->balance += 1;
          return s;
        });
        if (!sum.ok()) failed.store(true);
      }
    });
  }
  JoinAll(threads);
  EXPECT_FALSE(failed.load());
  const stm::StmStatistics after = stm::GetStmStatistics();
  EXPECT_GT(after.chains_compressed, before.chains_compressed);
  EXPECT_GT(after.auto_localizations, before.auto_localizations);
  // Chains are acyclic and end in one head with the right total.
  int64_t total = 0;
  ASSERT_TRUE(stm::ReadOnly([&](SnapshotTx& tx) {
                auto tbl = tx.Read(table());
                for (size_t k = 0; k < 4; ++k) total += tx.Read(Ref<Account>(tbl->at(k)))->balance;
              }).ok());
  EXPECT_EQ(total, 2000 + 4 * 2000 / 8);
  for (size_t k = 0; k < 4; ++k) {
    Object* o = RawReference(table().unsafe_raw()->at(k));
    size_t hops = 0;
    while (IsRevisionPointerForTest(o->h_revision.load())) {
      o = reinterpret_cast<Object*>(o->h_revision.load());
      ASSERT_LT(++hops, 100'000u) << "cycle in a revision chain";
    }
    EXPECT_LT(o->h_revision.load(), uint64_t{1} << 63) << "a lock was left behind";
  }
}

// A commit that must wait for an inevitable transaction cancels its locks and blocks in a safe region;
// a major collection may run then and move the heads it will lock. Evacuation order is not address
// order, so the commit must lock in the address order of the *new* addresses (AcquireLocks checks it),
// or two committers could lock in opposite orders and deadlock.
TEST_F(StmTest, ACommitWaitingForAnInevitableTransactionLocksInAddressOrderAfterACollection) {
  const size_t n = 64;
  MakeAccounts(n, 0);
  std::vector<uintptr_t> before(n);
  for (size_t k = 0; k < n; ++k)
    before[k] = reinterpret_cast<uintptr_t>(RawReference(table().unsafe_raw()->at(k)));
  std::atomic<int> phase{0};
  std::thread inevitable([&] {
    ThreadRegistration r("inevitable");
    ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                  tx.BecomeInevitable();
                  phase.store(1);
                  SafeRegion wait;  // lets the collection below run
                  while (phase.load() != 3) std::this_thread::sleep_for(1ms);
                }).ok());
  });
  while (phase.load() != 1) std::this_thread::yield();
  std::thread writer([&] {
    ThreadRegistration r("writer");
    ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                  auto tbl = tx.Read(table());
                  // Read in reverse order, so the read set lists the heads against their address order.
                  for (size_t k = n; k-- > 0;) tx.Write(tx.Read(Ref<Account>(tbl->at(k))))->balance += 1;
                  phase.store(2);  // the commit comes next; it waits for the inevitable transaction
                }).ok());
  });
  while (phase.load() != 2) std::this_thread::yield();
  std::this_thread::sleep_for(100ms);  // the writer is now blocked in its commit
  const uint64_t majors = GetGcStatistics().collections[static_cast<int>(CollectionKind::kMajor)];
  CollectMajor(MajorMode::kCompactEverything);  // moves every head it can
  EXPECT_GT(GetGcStatistics().collections[static_cast<int>(CollectionKind::kMajor)], majors);
  phase.store(3);
  Join(inevitable);
  Join(writer);
  size_t moved = 0;
  for (size_t k = 0; k < n; ++k) {
    moved += reinterpret_cast<uintptr_t>(RawReference(table().unsafe_raw()->at(k))) != before[k] ? 1 : 0;
  }
  EXPECT_GT(moved, n / 2) << "the collection was to move the heads the waiting commit holds";
  ASSERT_TRUE(stm::ReadOnly([&](SnapshotTx& tx) {
                auto tbl = tx.Read(table());
                for (size_t k = 0; k < n; ++k) EXPECT_EQ(tx.Read(Ref<Account>(tbl->at(k)))->balance, 1);
              }).ok());
}

// An immutable object holding a reference to an account: reading through it makes the barriers fix
// up the container's field (seed 000's container fix-up, PossiblyUpdateChain's slot CAS).
struct Holder : Object {
  Field<Account> account;
  static TypeDescriptor Describe() { return TypeDescriptor::Fixed<Holder>("test.Holder", &Holder::account); }
};

// A table of holders (never written after creation).
struct Holders : Object {
  uint64_t size;
  static TypeDescriptor Describe() {
    TypeDescriptor d;
    d.name = "test.Holders";
    d.fixed_size = sizeof(Holders);
    d.tail = TypeDescriptor::Tail::kRefs;
    d.tail_offset = sizeof(Holders);
    return d;
  }
  const Field<Holder>& at(size_t i) const { return reinterpret_cast<const Field<Holder>*>(this + 1)[i]; }
  Field<Holder>& at(size_t i) { return reinterpret_cast<Field<Holder>*>(this + 1)[i]; }
};

// Publishes in `root` a table of `n` holders; holder i names account i % `accounts` of `table` as the
// table names it (its first revision, until a collection collapses the reference).
void PublishHolders(Ref<Table> table, GlobalRoot& root, size_t n, size_t accounts) {
  ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                auto hs = tx.NewWithTail<Holders>(n * sizeof(void*));
                hs->size = n;
                auto tbl = tx.Read(table);
                for (size_t i = 0; i < n; ++i) {
                  auto h = tx.New<Holder>();
                  h.Set(&Holder::account, Ref<Account>(tbl->at(i % accounts)));
                  hs.Set(hs->at(i), Ref<Holder>(h));
                }
                tx.PublishAtCommit(root, Ref<Holders>(hs));
              }).ok());
}

// Thousands of holders name the first revisions of four accounts whose chains then grow to 200
// revisions, with a snapshot live at the 100th: the major collections below, with two collector
// threads, collapse the same four chains from many holders at once (docs/runtime-heap-gc.md 7.3,
// "Parallel tracing": every walk ends at the same revision, carried skip hints are CASed in). Each
// holder must then lead the live snapshot to its revision and a new one to the head, and the verifier
// checks every link and hint after each collection.
// A snapshot transaction held open on a thread of its own: it starts in the constructor (which returns
// once it has), waits in a safe region, and runs `read` when Release() is called, which returns what
// `read` returned.
class ParkedSnapshot {
 public:
  explicit ParkedSnapshot(std::function<size_t(SnapshotTx&)> read) {
    thread_ = std::thread([this, read = std::move(read)] {
      ThreadRegistration r("snapshot");
      ASSERT_TRUE(stm::ReadOnly([&](SnapshotTx& tx) {
                    phase_.store(1);
                    {
                      SafeRegion wait;
                      while (phase_.load() != 2) std::this_thread::sleep_for(1ms);
                    }
                    result_.store(read(tx));
                  }).ok());
    });
    while (phase_.load() != 1) std::this_thread::yield();
  }
  ~ParkedSnapshot() {
    if (thread_.joinable()) Release();
  }
  size_t Release() {
    phase_.store(2);
    Join(thread_);
    return result_.load();
  }

 private:
  std::atomic<int> phase_{0};
  std::atomic<size_t> result_{0};
  std::thread thread_;
};

// CollectionRecord::chains_collapsed counts the references a major collection redirects to a newer
// revision: one per reference, however many revisions it skips. The same holders of an account's first
// revision give the same figure over a chain of 8 revisions and of 32.
TEST_F(StmTest, ChainsCollapsedCountsEachRedirectedReferenceOnceWhateverTheChainsLength) {
  constexpr size_t kHolders = 64;
  auto collapsed_over = [&](int64_t writes) -> uint64_t {
    MakeAccounts(1, 0);
    GlobalRoot holders_root;
    PublishHolders(table(), holders_root, kHolders, 1);
    {
      // A snapshot live during the writes keeps their revisions on the chain uncompressed; it is gone
      // before the collection, which may then collapse every reference to the newest.
      ParkedSnapshot keep([](SnapshotTx&) { return size_t{0}; });
      for (int64_t v = 1; v <= writes; ++v) {
        EXPECT_TRUE(stm::Atomically([&](Tx& tx) {
                      tx.Write(Ref<Account>(tx.Read(table())->at(0)))->balance = v;
                    }).ok());
      }
    }
    CollectMajor(MajorMode::kCompactEverything);
    const uint64_t collapsed = LastRecord().chains_collapsed;
    absl::StatusOr<size_t> reading = stm::ReadOnly([&](SnapshotTx& tx) {
      auto hs = tx.Read(Ref<Holders>::FromRaw(static_cast<Holders*>(holders_root.Load())));
      size_t n = 0;
      for (size_t i = 0; i < kHolders; ++i) {
        n += tx.Read(tx.Read(Ref<Holder>(hs->at(i))), &Holder::account)->balance == writes;
      }
      return n;
    });
    EXPECT_TRUE(reading.ok());
    EXPECT_EQ(reading.value_or(0), kHolders) << "a holder does not lead to the newest revision";
    return collapsed;
  };
  // Besides the holders' references, the table's and the first revision's own link are redirected, and
  // a stale word that keeps an old revision may add one: a few more than kHolders, never per revision.
  for (const int64_t writes : {8, 32}) {
    const uint64_t collapsed = collapsed_over(writes);
    EXPECT_GE(collapsed, kHolders) << "not every holder's reference was redirected";
    EXPECT_LE(collapsed, kHolders + 4)
        << "over a chain of " << writes << " revisions: counted per revision skipped, not per reference";
  }
}

TEST_F(StmTest, ChainsCollapsedByTwoCollectorThreadsAtOnceStayConsistent) {
  constexpr size_t kAccounts = 4;
  const size_t holders = Scaled(8192);
  MakeAccounts(kAccounts, 0);
  GlobalRoot holders_root;
  PublishHolders(table(), holders_root, holders, kAccounts);
  auto all = [&] { return Ref<Holders>::FromRaw(static_cast<Holders*>(holders_root.Load())); };
  auto write_all = [&](int64_t value) {
    ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                  auto tbl = tx.Read(table());
                  for (size_t a = 0; a < kAccounts; ++a) tx.Write(Ref<Account>(tbl->at(a)))->balance = value;
                }).ok());
  };
  // How many holders lead `tx` to accounts whose balance is `expected`.
  auto count_reading = [&](SnapshotTx& tx, int64_t expected) {
    auto hs = tx.Read(all());
    size_t n = 0;
    for (size_t i = 0; i < holders; ++i) {
      n += tx.Read(tx.Read(Ref<Holder>(hs->at(i))), &Holder::account)->balance == expected;
    }
    return n;
  };
  for (int64_t v = 1; v <= 100; ++v) write_all(v);
  ParkedSnapshot reader([&](SnapshotTx& tx) { return count_reading(tx, 100); });
  for (int64_t v = 101; v <= 200; ++v) write_all(v);
  SetCollectorThreads(2);
  for (int i = 0; i < 3; ++i) {
    CollectMajor(i == 1 ? MajorMode::kCompactEverything : MajorMode::kSelective);
    EXPECT_EQ(LastRecord().collector_threads, 2u);
  }
  EXPECT_GT(LastRecord().chains_collapsed + GetGcStatistics().chains_collapsed, 0u);
  EXPECT_EQ(reader.Release(), holders) << "a live snapshot lost the revision it reads through a holder";
  for (int i = 0; i < 2; ++i) CollectMajor(i == 0 ? MajorMode::kCompactEverything : MajorMode::kSelective);
  SetCollectorThreads(0);
  absl::StatusOr<size_t> now = stm::ReadOnly([&](SnapshotTx& tx) { return count_reading(tx, 200); });
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(*now, holders);
}

// The claim race of the parallel evacuation (docs/runtime-heap-gc.md 7.3, "Evacuation races"), the
// losing side: a collector thread finds the collapse target of a reference unclaimed, another thread
// claims and copies it before this one's claim, and this one's claim fails. It must then see the copy
// as the winner made it: the failed claim's read of the flags must synchronise with the winner's
// release of kForwarded. The hook below (gc/test_hooks.h) makes the interleaving happen: the helper
// thread that first finds the target waits before its claim until the collecting thread has copied it
// (the collecting thread, finding it first, waits for the helper to get there). The hook only reads
// and polls relaxed atomics, so it adds no synchronisation of its own. The loser then carries the skip
// hint it passed to the copy (CarryHint reads the copy's commit time and hint): under ThreadSanitizer
// that read races with the winner's memcpy unless the failed claim acquired. The test also checks that
// the interleaving happened and that every holder still leads the live snapshot to its revision.
namespace claim_race {
std::atomic<uint64_t> g_target_time{0};
std::atomic<std::thread::id> g_collecting_thread{};
std::atomic<bool> g_helper_waiting{false};
std::atomic<bool> g_helper_lost_claim{false};

void WaitForTheOtherThread(const Object* o) {
  if (!LayoutOf(o->type()).versioned) return;
  if (static_cast<const VersionedObject*>(o)->h_commit_time.load(std::memory_order_relaxed) !=
      g_target_time.load(std::memory_order_relaxed)) {
    return;
  }
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  if (std::this_thread::get_id() == g_collecting_thread.load(std::memory_order_relaxed)) {
    while (!g_helper_waiting.load(std::memory_order_relaxed) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    return;
  }
  bool expected = false;
  if (!g_helper_waiting.compare_exchange_strong(expected, true, std::memory_order_relaxed)) return;
  while (std::chrono::steady_clock::now() < deadline) {
    if (o->flags(std::memory_order_relaxed) & kForwarded) {
      g_helper_lost_claim.store(true, std::memory_order_relaxed);
      return;
    }
    std::this_thread::yield();
  }
}
}  // namespace claim_race

TEST_F(StmTest, ACollectorThreadThatLosesTheClaimOfARevisionUsesTheWinnersCompleteCopy) {
  const size_t holders = 512;
  constexpr int64_t kBefore = 50;  // writes before the snapshot starts, then as many after it
  bool lost_claim = false;
  // The interleaving needs the helper to have stolen work that reaches the target while the collecting
  // thread waits: on a loaded machine it may not have, so a few attempts, each with a fresh chain.
  for (int attempt = 0; attempt < 5 && !lost_claim; ++attempt) {
    MakeAccounts(1, 0);
    GlobalRoot holders_root;
    PublishHolders(table(), holders_root, holders, 1);
    auto all = [&] { return Ref<Holders>::FromRaw(static_cast<Holders*>(holders_root.Load())); };
    // Each write walks from the account's first revision (through a holder not read before), so that
    // revision's link is compressed up to the horizon and its skip hint moves on past it.
    auto write_via = [&](size_t i, int64_t value) {
      ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                    auto h = tx.Read(Ref<Holder>(tx.Read(all())->at(i)));
                    tx.Write(tx.Read(h, &Holder::account))->balance = value;
                  }).ok());
    };
    for (int64_t v = 1; v <= kBefore; ++v) write_via(static_cast<size_t>(v), v);
    const uint64_t target_time = stm::ThisThreadLastCommitTime();
    ParkedSnapshot reader([&](SnapshotTx& tx) {
      auto hs = tx.Read(all());
      size_t n = 0;
      for (size_t i = kBefore + 1; i < holders; ++i) {
        n += tx.Read(tx.Read(Ref<Holder>(hs->at(i))), &Holder::account)->balance == kBefore;
      }
      return n;
    });
    for (int64_t v = kBefore + 1; v <= 2 * kBefore; ++v) write_via(static_cast<size_t>(v), v);
    // The untouched holders name the first revision, whose hint is past the snapshot: the collection
    // collapses each of them to the revision of the snapshot's time and carries that hint along.
    const auto* first =
        static_cast<const Account*>(RawReference(RawReference(all().unsafe_raw()->at(holders - 1))->account));
    const Object* hint = first->h_newest.load();
    if (hint == nullptr || static_cast<const VersionedObject*>(hint)->h_commit_time.load() <= target_time) {
      reader.Release();
      FAIL() << "the first revision has no skip hint past the snapshot: nothing to carry";
    }
    CollectMinor();
    claim_race::g_target_time.store(target_time);
    claim_race::g_collecting_thread.store(std::this_thread::get_id());
    claim_race::g_helper_waiting.store(false);
    claim_race::g_helper_lost_claim.store(false);
    gc_testing::SetClaimHook(&claim_race::WaitForTheOtherThread);
    SetCollectorThreads(2);
    CollectMajor(MajorMode::kCompactEverything);
    gc_testing::SetClaimHook(nullptr);
    SetCollectorThreads(0);
    EXPECT_GT(LastRecord().chains_collapsed, 0u);
    lost_claim = claim_race::g_helper_lost_claim.load();
    EXPECT_EQ(reader.Release(), holders - kBefore - 1)
        << "a live snapshot lost the revision it reads through a holder";
  }
  EXPECT_TRUE(lost_claim) << "in 5 collections the helper never lost the claim of the collapse target";
}

// A live snapshot keeps the revision it reads through long chains, concurrent chain compression with
// container fix-ups, and major collections (which collapse chains and free old revisions): nothing may
// redirect a reference past the snapshot horizon. Once the snapshot ends, the old revisions go.
TEST_F(StmTest, ALiveSnapshotKeepsItsRevisionThroughCompressionAndMajorCollections) {
  GlobalRoot holder_root;
  ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                auto h = tx.New<Holder>();
                auto a = tx.New<Account>();
                a->balance = 1;
                h.Set(&Holder::account, Ref<Account>(a));
                tx.PublishAtCommit(holder_root, Ref<Holder>(h));
              }).ok());
  auto holder = [&] { return Ref<Holder>::FromRaw(static_cast<Holder*>(holder_root.Load())); };
  auto write = [&](int64_t value) {
    ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                  auto h = tx.Read(holder());
                  tx.Write(tx.Read(h, &Holder::account))->balance = value;
                }).ok());
  };
  const uint64_t compressed_before = stm::GetStmStatistics().chains_compressed;
  for (int64_t v = 2; v <= 100; ++v) write(v);  // the snapshot below starts at the 100th revision
  std::atomic<int> phase{0};
  std::atomic<int64_t> seen_before{-1};
  std::atomic<int64_t> seen_after{-1};
  std::thread reader([&] {
    ThreadRegistration r("snapshot");
    ASSERT_TRUE(stm::ReadOnly([&](SnapshotTx& tx) {
                  seen_before.store(tx.Read(tx.Read(holder()), &Holder::account)->balance);
                  phase.store(1);
                  {
                    SafeRegion wait;  // the snapshot stays live while the others write and collect
                    while (phase.load() != 2) std::this_thread::sleep_for(1ms);
                  }
                  seen_after.store(tx.Read(tx.Read(holder()), &Holder::account)->balance);
                }).ok());
  });
  while (phase.load() != 1) std::this_thread::yield();
  const uint64_t freed_before = GetGcStatistics().revisions_freed;
  for (int64_t v = 101; v <= 300; ++v) write(v);  // 200 revisions newer than the snapshot's
  // Walkers are writers (each bumps its own counter first): only a transaction that writes compresses
  // chains, a read-only one writes no shared memory.
  // The first collection waits for one walk each, so there is a long chain left to compress (the
  // collector would otherwise collapse it up to the horizon first).
  MakeAccounts(2, 0);
  std::atomic<int> first_walks{0};
  std::vector<std::thread> walkers;
  for (int t = 0; t < 2; ++t) {
    walkers.emplace_back([&, t] {
      ThreadRegistration r("walker");
      for (int i = 0; i < 500; ++i) {
        absl::StatusOr<int64_t> v = stm::Atomically([&](Tx& tx) {
          tx.Write(Ref<Account>(tx.Read(table())->at(t)))->writes += 1;
          return tx.Read(tx.Read(holder()), &Holder::account)->balance;
        });
        if (i == 0) first_walks.fetch_add(1);
        ASSERT_TRUE(v.ok());
        ASSERT_EQ(*v, 300);
      }
    });
  }
  while (first_walks.load() < 2) std::this_thread::yield();
  CollectMajor();
  JoinAll(walkers);
  CollectMajor();
  phase.store(2);
  Join(reader);
  EXPECT_EQ(seen_before.load(), 100);
  EXPECT_EQ(seen_after.load(), 100) << "a live snapshot lost the revision it reads";
  EXPECT_GT(stm::GetStmStatistics().chains_compressed, compressed_before) << "walks were to compress";
  // With no snapshot left, a collection collapses the chain and frees the old revisions.
  write(301);
  CollectMajor();
  EXPECT_GE(GetGcStatistics().revisions_freed - freed_before, 150u);
  absl::StatusOr<int64_t> last =
      stm::ReadOnly([&](SnapshotTx& tx) { return tx.Read(tx.Read(holder()), &Holder::account)->balance; });
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(*last, 301);
}

TEST_F(StmTest, ExplicitRetriesDoNotMakeATransactionInevitable) {
  MakeAccounts(1, 0);
  int attempts = 0;
  ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                auto tbl = tx.Read(table());
                tx.Write(Ref<Account>(tbl->at(0)))->balance += 1;
                EXPECT_FALSE(tx.inevitable()) << "attempt " << attempts;
                if (++attempts < 100) tx.Retry();  // e.g. waiting for a condition to change
              }).ok());
  EXPECT_EQ(attempts, 100);
  EXPECT_GE(stm::GetStmStatistics().aborts[static_cast<int>(stm::AbortCause::kExplicit)], 99u);
}

// The progress guarantee makes the 33rd attempt inevitable; a body that then calls Retry() (it waits for
// a condition) must not kill the process: the escalated attempt gives up inevitability and the body runs
// again as an ordinary transaction. A helper commits a conflicting write during each of the first 32
// attempts, so each of them fails validation at commit.
TEST_F(StmTest, RetryInAnAttemptMadeInevitableByTheProgressGuaranteeRunsTheBodyAgain) {
  // Without read validation (REVKV_MUTATION_NO_READ_VALIDATION) the attempts stop aborting and the body
  // waits forever: fail with the test's name instead of at the CTest timeout.
  Watchdog watchdog("retry after escalation", 120s);
  MakeAccounts(2, 0);
  std::atomic<int> requested{0};
  std::atomic<int> conflicts{0};
  std::thread helper([&] {
    ThreadRegistration r("conflict");
    for (int i = 1; i <= stm::kInevitableAfterAborts; ++i) {
      while (requested.load() < i) std::this_thread::yield();
      ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                    auto tbl = tx.Read(table());
                    tx.Write(Ref<Account>(tbl->at(0)))->balance += 1;
                  }).ok());
      conflicts.store(i);
    }
  });
  int attempts = 0;
  int escalated_attempts = 0;
  bool retried_while_inevitable = false;
  ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                const int attempt = ++attempts;
                auto tbl = tx.Read(table());
                const int64_t seen = tx.Read(Ref<Account>(tbl->at(0)))->balance;
                if (attempt <= stm::kInevitableAfterAborts) {
                  requested.store(attempt);  // a conflicting commit after our read
                  while (conflicts.load() < attempt) std::this_thread::yield();
                }
                tx.Write(Ref<Account>(tbl->at(1)))->balance = seen;
                if (tx.inevitable()) {
                  ++escalated_attempts;
                  if (!retried_while_inevitable) {
                    retried_while_inevitable = true;
                    tx.Retry();  // e.g. waiting for a condition to change
                  }
                }
              }).ok());
  Join(helper);
  EXPECT_TRUE(retried_while_inevitable)
      << "attempt " << stm::kInevitableAfterAborts + 1 << " was to be inevitable";
  EXPECT_EQ(escalated_attempts, 1) << "after Retry() the body runs as an ordinary transaction";
  EXPECT_EQ(attempts, stm::kInevitableAfterAborts + 2);
  absl::StatusOr<int64_t> copied =
      stm::ReadOnly([&](SnapshotTx& tx) { return tx.Read(Ref<Account>(tx.Read(table())->at(1)))->balance; });
  ASSERT_TRUE(copied.ok());
  EXPECT_EQ(*copied, stm::kInevitableAfterAborts);
}

// The exception above covers the body only. A commit action runs after the body, with the commit under
// way (the log record half written, say): a Retry() from there must stay fatal in an escalated attempt
// too, not restart a transaction whose irrevocable effect has begun.
TEST_F(StmTest, RetryFromACommitActionOfAnEscalatedAttemptIsFatal) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  MakeAccounts(2, 0);
  EXPECT_DEATH(
      {
        std::atomic<int> requested{0};
        std::atomic<int> conflicts{0};
        std::thread helper([&] {
          ThreadRegistration r("conflict");
          for (int i = 1; i <= stm::kInevitableAfterAborts; ++i) {
            while (requested.load() < i) std::this_thread::yield();
            (void)stm::Atomically([&](Tx& tx) {
              auto tbl = tx.Read(table());
              tx.Write(Ref<Account>(tbl->at(0)))->balance += 1;
            });
            conflicts.store(i);
          }
        });
        helper.detach();
        int attempts = 0;
        (void)stm::Atomically([&](Tx& tx) {
          const int attempt = ++attempts;
          auto tbl = tx.Read(table());
          const int64_t seen = tx.Read(Ref<Account>(tbl->at(0)))->balance;
          if (attempt <= stm::kInevitableAfterAborts) {
            requested.store(attempt);
            while (conflicts.load() < attempt) std::this_thread::yield();
          }
          tx.Write(Ref<Account>(tbl->at(1)))->balance = seen;
          if (tx.inevitable()) tx.SetCommitAction([&tx](uint64_t) { tx.Retry(); });
        });
      },
      "an inevitable transaction cannot abort");
}

#ifdef REVKV_DEBUG_CHECKS
// From the first header lock to the last release a committing thread neither polls, nor enters a safe
// region, nor allocates (a collection would find a locked header; a thread spinning on the lock would
// wait for a stop that waits for it). Debug builds check it; a commit action runs inside that section,
// so one that breaks the rule is caught.
class CommitLockDiscipline : public StmTest {
 protected:
  void CommitWithAction(std::function<void()> forbidden) {
    MakeAccounts(1, 0);
    (void)stm::Atomically([&](Tx& tx) {
      tx.Write(Ref<Account>(tx.Read(table())->at(0)))->balance = 1;
      tx.SetCommitAction([&](uint64_t) { forbidden(); });
    });
  }
};

TEST_F(CommitLockDiscipline, PollingWhileHoldingHeaderLocksAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(CommitWithAction([] { Poll(); }), "Poll\\(\\) on thread .* which holds STM header locks");
}

TEST_F(CommitLockDiscipline, EnteringASafeRegionWhileHoldingHeaderLocksAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(CommitWithAction([] { SafeRegion region; }),
               "entering a safe region on thread .* which holds STM header locks");
}

TEST_F(CommitLockDiscipline, AllocatingWhileHoldingHeaderLocksAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(CommitWithAction([] { (void)NewBytes("x"); }),
               "an allocation on thread .* which holds STM header locks");
}

// The same calls are fine once the commit has released its locks, and so is an aborted commit's thread.
TEST_F(CommitLockDiscipline, TheLocksAreForgottenWhenTheCommitEnds) {
  CommitWithAction([] {});
  Poll();
  { SafeRegion region; }
  EXPECT_TRUE(NewBytes("after").ok());
  const absl::Status failed = stm::Atomically([&](Tx& tx) {
    tx.Write(Ref<Account>(tx.Read(table())->at(0)))->balance = 2;
    tx.Fail(absl::CancelledError("given up"));
  });
  EXPECT_EQ(failed.code(), absl::StatusCode::kCancelled);
  Poll();
  EXPECT_TRUE(NewBytes("after a failure").ok());
}

// No heap access inside a safe region (a collection may be running and moving what would be touched)
// or inside a collection listener (which runs on the collecting thread). Debug builds check it.
TEST_F(StmTest, AllocatingInsideASafeRegionAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        SafeRegion region;
        (void)NewBytes("x");
      },
      "an allocation on thread .* which is in a safe region");
}

TEST_F(StmTest, ABarrierInsideASafeRegionAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  MakeAccounts(1, 5);
  EXPECT_DEATH((void)stm::Atomically([&](Tx& tx) {
                 auto t = tx.Read(table());
                 SafeRegion region;
                 (void)tx.Read(Ref<Account>(t->at(0)))->balance;
               }),
               "a barrier on thread .* which is in a safe region");
}

TEST_F(StmTest, PollingInsideASafeRegionAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        SafeRegion region;
        Poll();
      },
      "Poll\\(\\) on thread .* which is in a safe region");
}

TEST_F(StmTest, AllocatingInACollectionListenerAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        AddCollectionListener([](const CollectionRecord&) { (void)NewBytes("x"); });
        CollectMajor();
      },
      "an allocation on thread .* inside a collection listener");
}
#endif  // REVKV_DEBUG_CHECKS

// Global objects are immutable (seed 000): the heap verifier samples objects as they are published and
// re-checks them, so a byte of a published account changed behind the STM's back (here through a raw
// pointer) stops the process at the next major collection at the latest. With the check switched off
// (no sampling) the process survives and the test fails.
__attribute__((noinline)) void CorruptPublishedAccountsThenCollect(Table* table) {
  for (size_t i = 0; i < table->size; ++i) {
    auto* account = static_cast<Account*>(table->at(i).unsafe_slot()->load(std::memory_order_relaxed));
    account->writes = 12345;  // not a reference slot: the STM never writes a global revision's body
  }
  CollectMajor();
}

TEST_F(StmTest, TheVerifierCatchesAPublishedObjectWhoseBytesChange) {
  ASSERT_TRUE(HeapVerificationEnabled());
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  MakeAccounts(64, 1);
  EXPECT_DEATH(CorruptPublishedAccountsThenCollect(table().unsafe_raw()),
               "heap verifier: a global object's bytes changed after it was published");
  // The same collection passes when nothing was changed.
  CollectMajor();
  EXPECT_EQ(SnapshotTotal(), 64);
}

// kPossiblyOutdated on a head sends every reader's barrier the slow way. A writer that aborts must not
// leave it set once no written copy of the head remains; while another transaction still holds one, the
// flag must stay, since that transaction's ReadPtr taken before its write finds its copy through it
// (RepeatReadBarrier).
TEST_F(StmTest, AnAbortedWriterClearsPossiblyOutdatedUnlessAnotherCopyRemains) {
  MakeAccounts(2, 0);
  auto head = [&](size_t k) { return HeadOf(RawReference(table().unsafe_raw()->at(k))); };
  // Tx::Fail after a write.
  absl::Status s = stm::Atomically([&](Tx& tx) {
    tx.Write(Ref<Account>(tx.Read(table())->at(0)))->balance = 1;
    EXPECT_TRUE(head(0)->HasFlag(kPossiblyOutdated));
    tx.Fail(absl::CancelledError("abandoned"));
  });
  EXPECT_TRUE(absl::IsCancelled(s));
  EXPECT_FALSE(head(0)->HasFlag(kPossiblyOutdated)) << "left set by a failed writer";
  // Retry after a write, then an attempt that does not write.
  int attempts = 0;
  ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                auto tbl = tx.Read(table());
                if (++attempts == 1) {
                  tx.Write(Ref<Account>(tbl->at(0)))->balance = 2;
                  tx.Write(Ref<Account>(tbl->at(0)))->writes = 2;  // the same copy: counted once
                  tx.Retry();
                }
              }).ok());
  EXPECT_FALSE(head(0)->HasFlag(kPossiblyOutdated)) << "left set by a retried writer";

  // Another thread holds a written copy of account 1 while this thread's writer of it fails.
  std::atomic<int> phase{0};
  std::atomic<int64_t> seen{-1};
  std::thread holder([&] {
    ThreadRegistration r("holder");
    ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                  auto tbl = tx.Read(table());
                  stm::ReadPtr<Account> before = tx.Read(Ref<Account>(tbl->at(1)));
                  tx.Write(before)->balance = 5;
                  phase.store(1);
                  while (phase.load() != 2) std::this_thread::yield();
                  seen.store(before->balance);  // through the ReadPtr taken before the write
                }).ok());
  });
  while (phase.load() != 1) std::this_thread::yield();
  s = stm::Atomically([&](Tx& tx) {
    tx.Write(Ref<Account>(tx.Read(table())->at(1)))->balance = 9;
    tx.Fail(absl::CancelledError("abandoned"));
  });
  EXPECT_TRUE(absl::IsCancelled(s));
  EXPECT_TRUE(head(1)->HasFlag(kPossiblyOutdated)) << "cleared while another transaction holds a copy";
  phase.store(2);
  Join(holder);
  EXPECT_EQ(seen.load(), 5) << "a ReadPtr taken before the write must read the transaction's own copy";
}

// Write skew: T reads accounts 0 and 1 and writes 0; meanwhile U reads both and writes 1, and commits
// first. T wrote nothing U wrote, so only validation of T's read set (account 1) can tell that T's
// first attempt read a state that no longer holds; a serial order needs T to run again and see U's write.
// (The bank test cannot catch missing read validation: it writes every object it reads.)
TEST_F(StmTest, ReadSetValidationPreventsWriteSkew) {
  MakeAccounts(2, 1);
  std::atomic<int> phase{0};
  std::thread other([&] {
    ThreadRegistration r("skew");
    while (phase.load() != 1) std::this_thread::yield();
    ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                  auto tbl = tx.Read(table());
                  const int64_t a = tx.Read(Ref<Account>(tbl->at(0)))->balance;
                  const int64_t b = tx.Read(Ref<Account>(tbl->at(1)))->balance;
                  tx.Write(Ref<Account>(tbl->at(1)))->balance = a + b;  // 2
                }).ok());
    phase.store(2);
  });
  int attempts = 0;
  ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                ++attempts;
                auto tbl = tx.Read(table());
                const int64_t a = tx.Read(Ref<Account>(tbl->at(0)))->balance;
                const int64_t b = tx.Read(Ref<Account>(tbl->at(1)))->balance;
                if (phase.load() == 0) {
                  phase.store(1);
                  while (phase.load() != 2) std::this_thread::yield();
                }
                tx.Write(Ref<Account>(tbl->at(0)))->balance = a + b;
              }).ok());
  Join(other);
  EXPECT_EQ(attempts, 2) << "the first attempt read account 1 before the other commit changed it";
  absl::StatusOr<int64_t> a =
      stm::ReadOnly([&](SnapshotTx& tx) { return tx.Read(Ref<Account>(tx.Read(table())->at(0)))->balance; });
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, 3) << "serial order: the other transaction (1 + 1), then this one (1 + 2)";
}

// ValidateDuringTransaction also checks the write set: after a blind write of X (X is not in the read
// set), another commit replaces X and Y; reading Y moves the start time past that commit. Without the
// check the next read of X would find the other commit's revision instead of this transaction's copy.
TEST_F(StmTest, MovingTheStartTimeChecksBlindlyWrittenObjects) {
  MakeAccounts(2, 0);
  std::atomic<int> phase{0};
  std::thread other([&] {
    ThreadRegistration r("other");
    while (phase.load() != 1) std::this_thread::yield();
    ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                  auto tbl = tx.Read(table());
                  tx.Write(Ref<Account>(tbl->at(0)))->balance = 100;
                  tx.Write(Ref<Account>(tbl->at(1)))->balance = 5;
                }).ok());
    phase.store(2);
  });
  int attempts = 0;
  std::vector<int64_t> own_reads;
  ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                ++attempts;
                auto tbl = tx.Read(table());
                tx.Write(Ref<Account>(tbl->at(0)))->writes = 7;  // blind: account 0 is not read
                if (phase.load() == 0) {
                  phase.store(1);
                  while (phase.load() != 2) std::this_thread::yield();
                }
                EXPECT_EQ(tx.Read(Ref<Account>(tbl->at(1)))->balance, 5);  // newer than the start time
                own_reads.push_back(tx.Read(Ref<Account>(tbl->at(0)))->writes);
              }).ok());
  Join(other);
  for (int64_t w : own_reads) EXPECT_EQ(w, 7) << "a read after our own write must see it";
  EXPECT_EQ(attempts, 2);
}

// Two writers lock the same 32 heads, written in opposite orders. AcquireLocks takes heads in address
// order and spins (without giving up) on a head another committer holds, so any other order could
// deadlock (the test would then hang until its timeout).
TEST_F(StmTest, WritersInOppositeOrdersDoNotDeadlock) {
  // A deadlock (REVKV_MUTATION_NO_LOCK_ORDER) fails the test with its name here, not at the CTest timeout.
  Watchdog watchdog("writers in opposite orders", 120s);
  constexpr size_t kObjects = 32;
  MakeAccounts(kObjects, 0);
  const size_t per_thread = Scaled(20'000);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      ThreadRegistration r("order");
      for (size_t i = 0; i < per_thread; ++i) {
        ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                      auto tbl = tx.Read(table());
                      for (size_t k = 0; k < kObjects; ++k) {
                        tx.Write(Ref<Account>(tbl->at(t == 0 ? k : kObjects - 1 - k)))->balance += 1;
                      }
                    }).ok());
      }
    });
  }
  JoinAll(threads);
  absl::StatusOr<int64_t> total = stm::ReadOnly([&](SnapshotTx& tx) {
    auto tbl = tx.Read(table());
    int64_t sum = 0;
    for (size_t k = 0; k < kObjects; ++k) sum += tx.Read(Ref<Account>(tbl->at(k)))->balance;
    return sum;
  });
  ASSERT_TRUE(total.ok());
  EXPECT_EQ(*total, static_cast<int64_t>(2 * kObjects * per_thread));
}

// Two commits that take their locks at the same time, their writes in opposite orders. The interleaving
// is forced, not left to the scheduler (the test above catches a lock-order deadlock only when both of
// its threads happen to be inside AcquireLocks at once, which a loaded machine rarely gives it):
// - both bodies finish their reads and writes first (a body that read a head the other had locked
//   would wait for it instead of committing);
// - the first committer pauses right after its first lock until the second has taken a lock too, or
//   for 200 ms.
// In address order the second committer's first lock is the one the first holds, so it waits and holds
// nothing the first needs. In write order (REVKV_MUTATION_NO_LOCK_ORDER) each ends up holding a lock the
// other waits for, every time, and the watchdog reports the deadlock.
std::atomic<bool> g_second_body_done{false};
std::atomic<bool> g_first_paused{false};
std::atomic<bool> g_second_holds_a_lock{false};
thread_local int t_role = -1;  // 0: the first committer, 1: the second, -1: any other thread

// The lock hook (stm/test_hooks.h): it may not allocate or reach a safepoint, and it does neither.
void PauseTheFirstCommitter(const Object*, size_t index) {
  // Release/acquire pairs below only order these flags; the STM's own locks order the objects.
  if (t_role == 1) {
    g_second_holds_a_lock.store(true, std::memory_order_release);
    return;
  }
  if (t_role != 0 || index != 0 || g_first_paused.load(std::memory_order_relaxed)) return;
  g_first_paused.store(true, std::memory_order_release);
  const auto deadline = std::chrono::steady_clock::now() + 200ms;
  while (!g_second_holds_a_lock.load(std::memory_order_acquire) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
}

TEST_F(StmTest, TwoCommitsLockingOppositeWriteOrdersAtOnceDoNotDeadlock) {
  Watchdog watchdog("two commits locking at once", 60s);
  constexpr size_t kObjects = 32;
  MakeAccounts(kObjects, 0);
  g_second_body_done.store(false);
  g_first_paused.store(false);
  g_second_holds_a_lock.store(false);
  stm::testing::SetLockHook(&PauseTheFirstCommitter);
  std::vector<std::thread> threads;
  for (int role = 0; role < 2; ++role) {
    threads.emplace_back([&, role] {
      ThreadRegistration r("opposite");
      t_role = role;
      bool waited = false;  // only the first attempt waits: a retry commits as it comes
      ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                    auto tbl = tx.Read(table());
                    for (size_t k = 0; k < kObjects; ++k) {
                      tx.Write(Ref<Account>(tbl->at(role == 0 ? k : kObjects - 1 - k)))->balance += 1;
                    }
                    if (waited) return;
                    waited = true;
                    if (role == 0) {  // commit only once the second body has read everything
                      while (!g_second_body_done.load(std::memory_order_acquire)) tx.Poll();
                    } else {  // commit only while the first committer holds its first lock
                      g_second_body_done.store(true, std::memory_order_release);
                      while (!g_first_paused.load(std::memory_order_acquire)) tx.Poll();
                    }
                  }).ok());
    });
  }
  JoinAll(threads);
  stm::testing::SetLockHook(nullptr);
  EXPECT_TRUE(g_first_paused.load());
  absl::StatusOr<int64_t> total = stm::ReadOnly([&](SnapshotTx& tx) {
    auto tbl = tx.Read(table());
    int64_t sum = 0;
    for (size_t k = 0; k < kObjects; ++k) sum += tx.Read(Ref<Account>(tbl->at(k)))->balance;
    return sum;
  });
  ASSERT_TRUE(total.ok());
  EXPECT_EQ(*total, static_cast<int64_t>(2 * kObjects));
}

// Many compressors on one chain at once, with different targets (a writer keeps committing): each walks
// from the first revision, which the table keeps naming, so every walk compresses the same links.
// DESIGN 2.3: a link only ever moves forward, never over a head's time or a lock, and never makes a
// cycle; every read sees the newest committed value or a later one.
TEST_F(StmTest, ConcurrentCompressorsKeepChainsAcyclicAndMovingForward) {
  MakeAccounts(4, 0);
  const size_t commits = Scaled(20'000);
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    ThreadRegistration r("writer");
    for (size_t i = 0; i < commits; ++i) {
      ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                    tx.Write(tx.Read(Ref<Account>(tx.Read(table())->at(0))))->balance += 1;
                  }).ok());
    }
    done.store(true);
  });
  for (int t = 1; t < 4; ++t) {
    threads.emplace_back([&, t] {
      ThreadRegistration r("compressor");
      int64_t last = 0;
      while (!done.load()) {
        absl::StatusOr<int64_t> v = stm::Atomically([&](Tx& tx) {
          auto tbl = tx.Read(table());
          tx.Write(Ref<Account>(tbl->at(t)))->writes += 1;  // a writer: it compresses its walks
          return tx.Read(Ref<Account>(tbl->at(0)))->balance;
        });
        ASSERT_TRUE(v.ok());
        ASSERT_GE(*v, last) << "a read went back in time";
        last = *v;
      }
    });
  }
  JoinAll(threads);
  EXPECT_GT(stm::GetStmStatistics().chains_compressed, 0u);
  Object* o = RawReference(table().unsafe_raw()->at(0));
  size_t hops = 0;
  while (IsRevisionPointerForTest(o->h_revision.load())) {
    o = reinterpret_cast<Object*>(o->h_revision.load());
    ASSERT_LT(++hops, commits + 2) << "cycle in a revision chain";
  }
  EXPECT_LT(o->h_revision.load(), uint64_t{1} << 63) << "a lock was left behind";
  EXPECT_EQ(static_cast<Account*>(o)->balance, static_cast<int64_t>(commits));
}

// ----- chain compression paused between its load and its store ----------------------------------------
//
// One compressor is stopped by the test hook (runtime/stm/test_hooks.h) after it has loaded a link and
// decided to redirect it, and before its store. Meanwhile the test thread commits a newer revision of the
// same object and compresses the same links past the paused compressor's target. DESIGN 2.3: a link only
// ever moves forward, and a compressor never stores over a head's time or a lock; it must notice that
// the link changed (its compare-and-swap fails) and leave it.

// Thrown by the hook when a compressor is about to store over a value that is not a revision pointer
// (a head's commit time or a header lock): the store would lose the head and close a cycle.
struct StoreOverAHead : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::atomic<int> g_pause_state{0};  // 0: not paused yet, 1: paused, 2: resume
thread_local bool t_pause_at_first_compression = false;

void PauseTheFirstCompressionOfThisThread(const Object* /*link*/, uintptr_t loaded,
                                          const Object* /*target*/) {
  if (!IsRevisionPointerForTest(loaded))
    throw StoreOverAHead("a compressor stores over a head's time or lock");
  if (!t_pause_at_first_compression) return;
  t_pause_at_first_compression = false;
  g_pause_state.store(1);
  while (g_pause_state.load() != 2) std::this_thread::yield();
}

Object* NextRevision(Object* o) {
  const uintptr_t v = o->h_revision.load();
  return IsRevisionPointerForTest(v) ? reinterpret_cast<Object*>(v) : nullptr;
}

class PausedCompressionTest : public StmTest {
 protected:
  void SetUp() override {
    StmTest::SetUp();
    g_pause_state.store(0);
    stm::testing::SetCompressionHook(&PauseTheFirstCompressionOfThisThread);
  }
  void TearDown() override {
    stm::testing::SetCompressionHook(nullptr);
    StmTest::TearDown();
  }

  // Account 0 gets revisions rev_[0] -> rev_[1] -> rev_[2] -> rev_[3] (the head); the table keeps naming
  // rev_[0] (reads through a Ref made from a field never fix the field up).
  void BuildChain() {
    MakeAccounts(3, 0);
    rev_[0] = RawReference(table().unsafe_raw()->at(0));
    for (int i = 1; i <= 3; ++i) {  // each commit writes the head directly: no walk, no compression
      ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                    tx.Write(Ref<Account>::FromRaw(static_cast<Account*>(rev_[i - 1])))->balance += 1;
                  }).ok());
      rev_[i] = NextRevision(rev_[i - 1]);
      ASSERT_NE(rev_[i], nullptr);
    }
    for (int i = 0; i < 3; ++i) ASSERT_EQ(NextRevision(rev_[i]), rev_[i + 1]);
    ASSERT_NE(rev_[3], nullptr);
    ASSERT_EQ(NextRevision(rev_[3]), nullptr) << "rev_[3] is the head";
  }
  // Commits to account 0 through the table's reference (rev_[0]): the walk compresses.
  void CommitToAccountZero() {
    ASSERT_TRUE(
        stm::Atomically([&](Tx& tx) { tx.Write(Ref<Account>(tx.Read(table())->at(0)))->balance += 1; }).ok());
  }
  // A writing transaction (so it compresses) that reads account 0 starting from revision `from`.
  void CompressFrom(Object* from) {
    ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                  tx.Write(Ref<Account>(tx.Read(table())->at(2)))->writes += 1;
                  (void)tx.Read(Ref<Account>::FromRaw(static_cast<Account*>(from)))->balance;
                }).ok());
  }

  // Starts the compressor: a writer that reads account 0 from the table, walks rev_[0] -> ... ->
  // rev_[3] and pauses at its first link (rev_[0], loaded rev_[1], target rev_[3]). Returns once it is
  // paused. Its first attempt then fails validation (rev_[3] is superseded); the retry does not read
  // account 0 again, so it cannot repair what the first attempt did to the chain.
  void StartPausedCompressor() {
    compressor_ = std::thread([this] {
      ThreadRegistration r("compressor");
      t_pause_at_first_compression = true;
      int attempts = 0;
      try {
        compressor_status_ = stm::Atomically([&](Tx& tx) {
          auto tbl = tx.Read(table());
          tx.Write(Ref<Account>(tbl->at(1)))->writes += 1;  // a writer: it compresses its walks
          if (++attempts == 1) (void)tx.Read(Ref<Account>(tbl->at(0)))->balance;
        });
      } catch (const StoreOverAHead& e) {
        compressor_error_ = e.what();
      }
    });
    while (g_pause_state.load() != 1) std::this_thread::yield();
  }
  void ResumeCompressor() {
    g_pause_state.store(2);
    Join(compressor_);
  }

  // The chain from rev_[0] is acyclic, its commit times strictly increase, and it ends at a head with an
  // odd time (not a lock) and every commit's effect.
  void ExpectIntactChain(int64_t balance) {
    Object* o = rev_[0];
    uint64_t last_time = 0;
    for (int hops = 0; NextRevision(o) != nullptr; ++hops) {
      ASSERT_LT(hops, 16) << "cycle in the revision chain";
      const uint64_t time = static_cast<VersionedObject*>(o)->h_commit_time.load();
      ASSERT_GT(time, last_time) << "a link points back to an older revision";
      last_time = time;
      o = NextRevision(o);
    }
    EXPECT_LT(o->h_revision.load(), uint64_t{1} << 63) << "a lock was left behind";
    EXPECT_EQ(o->h_revision.load(), static_cast<VersionedObject*>(o)->h_commit_time.load())
        << "the head's time was overwritten";
    EXPECT_EQ(static_cast<Account*>(o)->balance, balance);
  }

  Object* rev_[5] = {};
  std::thread compressor_;
  absl::Status compressor_status_;
  std::string compressor_error_;
};

// The link the paused compressor loaded (rev_[0] -> rev_[1]) is moved past its target (to rev_[4]) while
// it waits; its store would move the link back to rev_[3].
TEST_F(PausedCompressionTest, ACompressorWhoseLinkMovedOnNeverMovesItBack) {
  Watchdog watchdog("paused compression", 60s);
  ASSERT_NO_FATAL_FAILURE(BuildChain());
  StartPausedCompressor();
  CommitToAccountZero();  // compresses rev_[0..2] -> rev_[3], then commits rev_[4]
  rev_[4] = NextRevision(rev_[3]);
  ASSERT_NE(rev_[4], nullptr);
  CompressFrom(rev_[0]);  // rev_[0] -> rev_[3] -> rev_[4]: rev_[0] now names rev_[4]
  ASSERT_EQ(NextRevision(rev_[0]), rev_[4]) << "the setup did not compress rev_[0] past rev_[3]";
  ResumeCompressor();
  EXPECT_EQ(compressor_error_, "");
  EXPECT_TRUE(compressor_status_.ok()) << compressor_status_;
  EXPECT_EQ(NextRevision(rev_[0]), rev_[4]) << "the paused compressor moved the link back";
  ExpectIntactChain(4);
}

// As above, and the next link the compressor would follow (rev_[1]) is also moved to rev_[4], the head:
// a compressor that re-reads links instead of comparing-and-swapping walks past its target and stores
// over the head's time (losing rev_[4] and closing a cycle rev_[3] -> rev_[4] -> rev_[3]).
TEST_F(PausedCompressionTest, ACompressorWhoseLinkMovedPastItsTargetNeverStoresOverTheHead) {
  Watchdog watchdog("paused compression", 60s);
  ASSERT_NO_FATAL_FAILURE(BuildChain());
  StartPausedCompressor();
  CommitToAccountZero();
  rev_[4] = NextRevision(rev_[3]);
  ASSERT_NE(rev_[4], nullptr);
  CompressFrom(rev_[0]);
  CompressFrom(rev_[1]);  // rev_[1] -> rev_[3] -> rev_[4]: rev_[1] now names rev_[4]
  ASSERT_EQ(NextRevision(rev_[1]), rev_[4]) << "the setup did not compress rev_[1] past rev_[3]";
  ResumeCompressor();
  EXPECT_EQ(compressor_error_, "");
  EXPECT_TRUE(compressor_status_.ok()) << compressor_status_;
  EXPECT_EQ(NextRevision(rev_[0]), rev_[4]) << "the paused compressor moved the link back";
  ExpectIntactChain(4);
  // The head still takes commits, and its new revision follows it.
  CommitToAccountZero();
  EXPECT_NE(NextRevision(rev_[4]), nullptr);
  ExpectIntactChain(5);
}

// A major collection that finds a writing transaction's read set holding a superseded revision dooms
// it: its next barrier aborts with kDoomedByGc (it would fail validation at commit anyway).
TEST_F(StmTest, AMajorCollectionDoomsAWriterWhoseReadSetIsOutdated) {
  MakeAccounts(3, 0);
  std::atomic<int> phase{0};
  std::thread other([&] {
    ThreadRegistration r("other");
    while (phase.load() != 1) std::this_thread::yield();
    ASSERT_TRUE(
        stm::Atomically([&](Tx& tx) { tx.Write(Ref<Account>(tx.Read(table())->at(0)))->balance = 10; }).ok());
    phase.store(2);
  });
  const uint64_t doomed_before =
      stm::GetStmStatistics().aborts[static_cast<int>(stm::AbortCause::kDoomedByGc)];
  int attempts = 0;
  ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                ++attempts;
                auto tbl = tx.Read(table());
                const int64_t seen = tx.Read(Ref<Account>(tbl->at(0)))->balance;  // read set
                tx.Write(Ref<Account>(tbl->at(1)))->balance = seen;               // a writer
                if (attempts == 1) {
                  phase.store(1);
                  while (phase.load() != 2) std::this_thread::yield();
                  CollectMajor();
                }
                tx.Read(Ref<Account>(tbl->at(2)));  // the next barrier sees the doom
              }).ok());
  Join(other);
  EXPECT_EQ(attempts, 2);
  EXPECT_EQ(stm::GetStmStatistics().aborts[static_cast<int>(stm::AbortCause::kDoomedByGc)],
            doomed_before + 1);
}

// Tx::Fail in an inevitable transaction ends it cleanly: nothing is published, the time is unchanged,
// and the inevitable marker and mutex are released (the next inevitable transaction commits).
TEST_F(StmTest, FailInAnInevitableTransactionReleasesInevitabilityAndPublishesNothing) {
  MakeAccounts(1, 0);
  const uint64_t time_before = stm::LastCommittedTime();
  absl::Status s = stm::Atomically([&](Tx& tx) {
    tx.Write(Ref<Account>(tx.Read(table())->at(0)))->balance = 1;
    tx.BecomeInevitable();
    ASSERT_TRUE(tx.inevitable());
    tx.Fail(absl::AbortedError("given up"));
  });
  EXPECT_TRUE(absl::IsAborted(s));
  EXPECT_EQ(stm::LastCommittedTime(), time_before);
  std::thread next([&] {
    ThreadRegistration r("next");
    ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                  tx.BecomeInevitable();
                  tx.Write(Ref<Account>(tx.Read(table())->at(0)))->balance += 2;
                }).ok());
  });
  Join(next);
  absl::StatusOr<int64_t> v =
      stm::ReadOnly([&](SnapshotTx& tx) { return tx.Read(Ref<Account>(tx.Read(table())->at(0)))->balance; });
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 2) << "the failed transaction's write must not be published";
  EXPECT_EQ(stm::LastCommittedTime(), time_before + 2);
}

// A commit action runs once, at commit, with the commit time of the transaction, before the new
// revisions are published; it is not run for an attempt that aborts.
TEST_F(StmTest, ACommitActionRunsOnceWithTheCommitTime) {
  MakeAccounts(1, 0);
  int attempts = 0;
  int calls = 0;
  uint64_t action_time = 0;
  int64_t visible_in_action = -1;
  Account* original = static_cast<Account*>(HeadOf(RawReference(table().unsafe_raw()->at(0))));
  ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                tx.Write(Ref<Account>(tx.Read(table())->at(0)))->balance = 5;
                tx.SetCommitAction([&](uint64_t t) {
                  ++calls;
                  action_time = t;
                  // Not yet published: the old head is still the head.
                  visible_in_action = IsRevisionPointerForTest(original->h_revision.load()) ? 1 : 0;
                });
                if (++attempts == 1) tx.Retry();  // an aborted attempt's action never runs
              }).ok());
  EXPECT_EQ(attempts, 2);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(action_time, stm::ThisThreadLastCommitTime());
  EXPECT_EQ(action_time + 1, stm::LastCommittedTime());
  EXPECT_EQ(visible_in_action, 0);
  EXPECT_TRUE(IsRevisionPointerForTest(original->h_revision.load()));
}

TEST_F(StmTest, ATransactionCommitsCorrectlyAfterACollectionInItsBody) {
  MakeAccounts(64, 1);
  ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                auto tbl = tx.Read(table());
                int64_t seen = 0;
                for (size_t k = 0; k < 32; ++k)
                  seen += tx.Read(Ref<Account>(tbl->at(k)))->balance;  // read set
                for (size_t k = 32; k < 64; ++k)
                  tx.Write(Ref<Account>(tbl->at(k)))->balance = seen;  // write set
                CollectMajor();  // moves what only the transaction state references; the body goes on
                for (size_t k = 0; k < 32; ++k) EXPECT_EQ(tx.Read(Ref<Account>(tbl->at(k)))->balance, 1);
                for (size_t k = 32; k < 64; ++k) EXPECT_EQ(tx.Read(Ref<Account>(tbl->at(k)))->balance, seen);
              }).ok());
  CollectMajor();
  ASSERT_TRUE(stm::ReadOnly([&](SnapshotTx& tx) {
                auto tbl = tx.Read(table());
                for (size_t k = 0; k < 32; ++k) EXPECT_EQ(tx.Read(Ref<Account>(tbl->at(k)))->balance, 1);
                for (size_t k = 32; k < 64; ++k) EXPECT_EQ(tx.Read(Ref<Account>(tbl->at(k)))->balance, 32);
              }).ok());
}

}  // namespace
}  // namespace revkv::runtime::testing
