// Stress test of the snapshot horizon and history retention (runtime/stm/clock.cc, "the horizon
// protocol"; docs/runtime-stm.md section 8): snapshot readers on short-lived threads start and end
// (each new thread's first snapshot must be seen by the horizon scan), the retained time rises,
// writers build revision chains that their walks compress, and major collections collapse chains up to
// the horizon. Every snapshot must read exactly the state its time entitles it to: the state after every
// commit with a time at most its own, and none after. Its own binary: the retained time is process-wide
// and only moves forward, so it would hold back compression in every later test of a shared process.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "runtime/gc/gc.h"
#include "runtime/heap/heap.h"
#include "runtime/safepoint/safepoint.h"
#include "runtime/stm/descriptor.h"  // HorizonUsed: why a past time may be refused
#include "runtime/stm/stm.h"
#include "tests/runtime/test_support.h"

namespace revkv::runtime::testing {
namespace {

using namespace std::chrono_literals;
using stm::Ref;
using stm::SnapshotTx;
using stm::Tx;

struct Account : VersionedObject {
  int64_t balance;
  static TypeDescriptor Describe() { return TypeDescriptor::Fixed<Account>("test.RetentionAccount"); }
};

// An immutable table of references to the accounts. Reads go through Ref(field), which never fixes the
// field up, so every walk starts at an account's first revision and chains stay long enough to compress.
struct Table : Object {
  uint64_t size;
  static TypeDescriptor Describe() {
    TypeDescriptor d;
    d.name = "test.RetentionTable";
    d.fixed_size = sizeof(Table);
    d.tail = TypeDescriptor::Tail::kRefs;
    d.tail_offset = sizeof(Table);
    return d;
  }
  const Field<Account>& at(size_t i) const { return reinterpret_cast<const Field<Account>*>(this + 1)[i]; }
  Field<Account>& at(size_t i) { return reinterpret_cast<Field<Account>*>(this + 1)[i]; }
};

constexpr size_t kAccounts = 32;
constexpr int64_t kInitialBalance = 1000;

struct Transfer {
  uint64_t time;  // its commit time
  uint8_t from;
  uint8_t to;
  int64_t amount;
};

struct Observation {
  uint64_t time;  // the snapshot time
  uint64_t hash;  // of every balance, in account order
};

uint64_t HashOf(const int64_t* balances) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < kAccounts; ++i) {
    h ^= static_cast<uint64_t>(balances[i]);
    h *= 1099511628211ull;
  }
  return h;
}

class RetentionStressTest : public RuntimeTest {
 protected:
  HeapOptions Options() override { return SmallHeapOptions(size_t{1} << 30); }

  Ref<Table> table() const { return Ref<Table>::FromRaw(static_cast<Table*>(table_.Load())); }

  // Reads every balance in one snapshot (at `time`, or the newest if 0) and records what it saw.
  // Returns the status of ReadOnlyAt.
  absl::Status Observe(uint64_t time, std::vector<Observation>& out) {
    absl::StatusOr<Observation> o = stm::ReadOnlyAt(time, [&](SnapshotTx& tx) {
      auto tbl = tx.Read(table());
      int64_t balances[kAccounts];
      int64_t sum = 0;
      for (size_t i = 0; i < kAccounts; ++i) {
        balances[i] = tx.Read(Ref<Account>(tbl->at(i)))->balance;
        sum += balances[i];
      }
      EXPECT_EQ(sum, static_cast<int64_t>(kAccounts) * kInitialBalance)
          << "snapshot at " << tx.snapshot_time() << " mixes revisions of different times";
      return Observation{tx.snapshot_time(), HashOf(balances)};
    });
    if (o.ok()) out.push_back(*o);
    return o.status();
  }

  GlobalRoot table_;
};

TEST_F(RetentionStressTest, EverySnapshotReadsExactlyTheStateOfItsTime) {
  Watchdog watchdog("retention stress", 600s);
  ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                auto t = tx.NewWithTail<Table>(kAccounts * sizeof(void*));
                t->size = kAccounts;
                for (size_t i = 0; i < kAccounts; ++i) {
                  auto a = tx.New<Account>();
                  a->balance = kInitialBalance;
                  t.Set(t->at(i), Ref<Account>(a));
                }
                tx.PublishAtCommit(table_, Ref<Table>(t));
              }).ok());
  const uint64_t created = stm::LastCommittedTime();
  const uint64_t seed = TestSeed();
  // Writers run until the readers have taken enough snapshots on enough threads (and for a minimum time),
  // so that every kind of snapshot overlaps the writes, the retention changes and the collections.
  std::atomic<uint64_t> reader_threads{0};
  const auto min_duration = std::chrono::milliseconds(Scaled(2'000));
  const uint64_t min_reader_threads = Scaled(300);
  constexpr int kWriters = 2;

  std::atomic<int> writers_running{kWriters};
  std::vector<std::vector<Transfer>> transfers(kWriters);
  std::mutex observations_mu;
  std::vector<Observation> observations;
  std::atomic<uint64_t> refused{0};  // past times refused because retention or the horizon passed them
  std::atomic<uint64_t> past_reads{0};
  std::vector<std::thread> threads;

  // Writers: transfers between random accounts, each walk from the first revision (compressing).
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      ThreadRegistration r("writer");
      std::mt19937_64 rng(seed + static_cast<uint64_t>(w));
      const auto start = std::chrono::steady_clock::now();
      while (std::chrono::steady_clock::now() - start < min_duration ||
             reader_threads.load() < min_reader_threads) {
        const auto from = static_cast<uint8_t>(rng() % kAccounts);
        const auto to = static_cast<uint8_t>((from + 1 + rng() % (kAccounts - 1)) % kAccounts);
        const auto amount = static_cast<int64_t>(rng() % 100);
        ASSERT_TRUE(stm::Atomically([&](Tx& tx) {
                      auto tbl = tx.Read(table());
                      tx.Write(Ref<Account>(tbl->at(from)))->balance -= amount;
                      tx.Write(Ref<Account>(tbl->at(to)))->balance += amount;
                    }).ok());
        transfers[w].push_back(Transfer{stm::ThisThreadLastCommitTime(), from, to, amount});
      }
      writers_running.fetch_sub(1);
    });
  }

  // Retention: raises the retained time behind the clock by a varying lag (it only moves forward).
  threads.emplace_back([&] {
    ThreadRegistration r("retention");
    std::mt19937_64 rng(seed + 100);
    while (writers_running.load() > 0) {
      const uint64_t latest = stm::LastCommittedTime();
      const uint64_t lag = 2 * (rng() % 64);
      stm::SetRetainedTime(std::max(created, latest > lag ? latest - lag : created));
      SafeRegion region;  // a collection need not wait for our sleep
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 500));
    }
  });

  // The collector: major collections collapse chains up to the horizon and free what it passed.
  threads.emplace_back([&] {
    ThreadRegistration r("collector");
    while (writers_running.load() > 0) {
      CollectMajor();
      SafeRegion region;
      std::this_thread::sleep_for(2ms);
    }
  });

  // Readers: each spawner starts short-lived threads (new threads' first snapshots) that take a few
  // snapshots, at the newest time or at a past time within the retained history.
  for (int s = 0; s < 2; ++s) {
    threads.emplace_back([&, s] {
      ThreadRegistration r("spawner");
      std::mt19937_64 rng(seed + 200 + static_cast<uint64_t>(s));
      while (writers_running.load() > 0) {
        const uint64_t reader_seed = rng();
        std::thread reader([&, reader_seed] {
          ThreadRegistration rr("reader");
          std::mt19937_64 rrng(reader_seed);
          std::vector<Observation> mine;
          const int snapshots = 1 + static_cast<int>(rrng() % 3);
          for (int i = 0; i < snapshots; ++i) {
            if (rrng() % 2 == 0) {
              ASSERT_TRUE(Observe(0, mine).ok());
              continue;
            }
            // The retained time first: it is set at or below a commit time, so the newest commit time
            // read after it is not below it (read the other way round, the retention thread may raise
            // it past the `latest` read first, and the range below would wrap).
            const uint64_t oldest = std::max(created, stm::RetainedTime());
            const uint64_t latest = stm::LastCommittedTime();
            ASSERT_LE(oldest, latest) << "the retained time passed the newest commit time";
            const uint64_t time = oldest + rrng() % (latest - oldest + 1);
            const absl::Status st = Observe(time, mine);
            if (st.ok()) {
              past_reads.fetch_add(1);
            } else {
              // Refused only if the history was given up meanwhile (retention or a collapse passed it).
              ASSERT_TRUE(absl::IsFailedPrecondition(st)) << st;
              ASSERT_TRUE(time < stm::RetainedTime() || time < stm::HorizonUsed())
                  << "time " << time << " refused although retained from " << stm::RetainedTime() << ": "
                  << st;
              refused.fetch_add(1);
            }
          }
          std::lock_guard<std::mutex> lock(observations_mu);
          observations.insert(observations.end(), mine.begin(), mine.end());
        });
        Join(reader);
        reader_threads.fetch_add(1);
      }
    });
  }
  JoinAll(threads);

  // Replay the transfers in commit-time order; each snapshot must match the state after the last
  // commit at or before its time.
  std::vector<Transfer> all;
  for (auto& v : transfers) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end(), [](const Transfer& a, const Transfer& b) { return a.time < b.time; });
  for (size_t i = 1; i < all.size(); ++i)
    ASSERT_LT(all[i - 1].time, all[i].time) << "two commits share a time";
  std::sort(observations.begin(), observations.end(),
            [](const Observation& a, const Observation& b) { return a.time < b.time; });
  int64_t balances[kAccounts];
  std::fill(balances, balances + kAccounts, kInitialBalance);
  size_t next = 0;
  size_t mismatches = 0;
  for (const Observation& o : observations) {
    while (next < all.size() && all[next].time <= o.time) {
      balances[all[next].from] -= all[next].amount;
      balances[all[next].to] += all[next].amount;
      ++next;
    }
    if (HashOf(balances) != o.hash && ++mismatches <= 5) {
      ADD_FAILURE() << "the snapshot at " << o.time << " did not read the state after the commits up to it ("
                    << next << " of " << all.size() << ")";
    }
  }
  EXPECT_EQ(mismatches, 0u);
  std::printf(
      "%zu snapshots (%llu at past times, %llu refused) on %llu reader threads; %zu transfers; "
      "%llu compressions\n",
      observations.size(), static_cast<unsigned long long>(past_reads.load()),
      static_cast<unsigned long long>(refused.load()), static_cast<unsigned long long>(reader_threads.load()),
      all.size(), static_cast<unsigned long long>(stm::GetStmStatistics().chains_compressed));
  EXPECT_GT(past_reads.load(), 0u);
  EXPECT_GT(stm::GetStmStatistics().chains_compressed, 0u);
}

}  // namespace
}  // namespace revkv::runtime::testing
