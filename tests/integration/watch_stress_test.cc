// Watch under load against a real server: writers (multi-key Txns, deletes) and many watchers (prefixes,
// a single key, a from-key range, one deliberately slow stream), across a Compact: every watcher's event
// stream equals the acknowledged writes in its range, in revision order, with no gap and no duplicate.
// A Compact that overtakes a watcher which fell behind cancels it with compact_revision (etcd's answer).
// And across a SIGKILL: a watcher resuming from its last seen revision + 1 gets exactly the acknowledged
// events after it. Seeded; the seed is printed (REVKV_SEED=<n> reruns it).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "tests/integration/etcd_calls.h"
#include "tests/integration/server_process.h"
#include "tests/integration/watch_client.h"

namespace revkv::integration {
namespace {

using etcdserverpb::KV;
using etcdserverpb::WatchCreateRequest;
using etcdserverpb::WatchResponse;

uint32_t Seed() {
  const char* env = std::getenv("REVKV_SEED");
  const uint32_t seed =
      env != nullptr ? static_cast<uint32_t>(std::strtoul(env, nullptr, 10)) : std::random_device{}();
  std::printf("seed %u (REVKV_SEED=%u reruns it)\n", seed, seed);
  return seed;
}

// A channel of its own (its own HTTP/2 connection): a stream that stops reading holds up only its
// own connection's flow-control window.
std::shared_ptr<grpc::Channel> OwnChannel(const ServerProcess& server, int id) {
  grpc::ChannelArguments args;
  args.SetInt("revkv.test.channel", id);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(server.address(), grpc::InsecureChannelCredentials(), args);
}

struct Ev {
  int64_t revision;
  bool is_delete;
  std::string key;
  std::string value;
  bool operator==(const Ev& o) const {
    return revision == o.revision && is_delete == o.is_delete && key == o.key && value == o.value;
  }
};
std::ostream& operator<<(std::ostream& os, const Ev& e) {
  return os << (e.is_delete ? "-" : "+") << e.key << "@" << e.revision << "(" << e.value.size() << "B)";
}

Ev FromProto(const mvccpb::Event& e) {
  return Ev{e.kv().mod_revision(), e.type() == mvccpb::Event::DELETE, e.kv().key(), e.kv().value()};
}

// etcd's range semantics for a watcher.
struct Range {
  std::string key;
  std::string end;  // "" = the key alone; "\0" = from key on
  bool Contains(const std::string& k) const {
    if (end.empty()) return k == key;
    if (end == std::string(1, '\0')) return k >= key;
    return k >= key && k < end;
  }
};

// Reads a watch stream in a thread until it sees revision `stop_at` (set later) or the stream ends.
class Collector {
 public:
  Collector(std::shared_ptr<grpc::Channel> channel, Range range, int64_t start, std::chrono::seconds pause)
      : client_(std::move(channel)), range_(std::move(range)) {
    WatchCreateRequest c;
    c.set_key(range_.key);
    c.set_range_end(range_.end);
    c.set_start_revision(start);
    EXPECT_TRUE(client_.Create(c));
    WatchResponse created;
    EXPECT_TRUE(client_.Read(&created));
    EXPECT_TRUE(created.created());
    thread_ = std::thread([this, pause] {
      std::this_thread::sleep_for(pause);  // a slow client: reads nothing for a while
      WatchResponse r;
      while (client_.Read(&r)) {
        std::lock_guard<std::mutex> lock(mu_);
        if (r.canceled()) {
          canceled_ = r;
          break;
        }
        for (const auto& e : r.events()) events_.push_back(FromProto(e));
        if (!events_.empty() && stop_at_ > 0 && events_.back().revision >= stop_at_) break;
      }
      done_ = true;
    });
  }
  ~Collector() {
    client_.Cancel();
    if (thread_.joinable()) thread_.join();
  }
  // Waits until the collector has seen `revision` (or 90 s).
  bool WaitFor(int64_t revision) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_at_ = revision;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
    while (std::chrono::steady_clock::now() < deadline) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!events_.empty() && events_.back().revision >= revision) return true;
        if (done_) return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  // Waits until the stream has ended (or 30 s).
  bool WaitDone() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (done_) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  std::vector<Ev> events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  const Range& range() const { return range_; }

 private:
  WatchClient client_;
  Range range_;
  std::mutex mu_;
  std::vector<Ev> events_;
  std::optional<WatchResponse> canceled_;
  int64_t stop_at_ = 0;
  bool done_ = false;
  std::thread thread_;
};

TEST(WatchStress, EveryWatcherSeesExactlyTheAcknowledgedWritesInItsRange) {
  const uint32_t seed = Seed();
  ServerProcess server;
  ASSERT_TRUE(server.Start());
  auto writer_channel = OwnChannel(server, 0);
  auto kv = KV::NewStub(writer_channel);
  auto first = Call(kv.get(), &KV::Stub::Range, RangeOf("any"));
  ASSERT_TRUE(IsOk(first.status));
  const int64_t start = first.response.header().revision() + 1;

  const std::string from_key(1, '\0');
  std::vector<Range> ranges = {{"c/", "c0"},   {"c/", "c0"},   {"c/", "c0"}, {"c/", "c0"},
                               {"c/1", "c/2"}, {"c/1", "c/2"}, {"c/0", ""},  {"c/5", from_key}};
  std::vector<std::unique_ptr<Collector>> collectors;
  std::vector<std::shared_ptr<grpc::Channel>> channels = {OwnChannel(server, 1), OwnChannel(server, 2)};
  for (size_t i = 0; i < ranges.size(); ++i) {
    collectors.push_back(
        std::make_unique<Collector>(channels[i % 2], ranges[i], start, std::chrono::seconds(0)));
  }
  // The slow one stops reading for 4 s on a connection of its own: its server-side queue fills and it
  // falls behind, then catches up from the history.
  collectors.push_back(
      std::make_unique<Collector>(OwnChannel(server, 3), Range{"c/", "c0"}, start, std::chrono::seconds(4)));

  constexpr int kWriters = 4;
  constexpr int kOpsPerWriter = 400;
  std::mutex acked_mu;
  std::map<int64_t, std::vector<Ev>> acked;  // revision -> its events, in apply order
  std::atomic<int> done_ops{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < kWriters; ++t) {
    writers.emplace_back([&, t] {
      std::mt19937 rng(seed + t);
      auto stub = KV::NewStub(writer_channel);
      auto key = [&] { return "c/" + std::to_string(rng() % 20); };
      for (int i = 0; i < kOpsPerWriter; ++i, ++done_ops) {
        const int kind = static_cast<int>(rng() % 100);
        std::vector<Ev> events;
        int64_t revision = 0;
        if (kind < 25) {  // a delete of one key, which may not exist
          const std::string k = key();
          auto r = Call(stub.get(), &KV::Stub::DeleteRange, DeleteOf(k));
          ASSERT_TRUE(IsOk(r.status));
          if (r.response.deleted() == 0) continue;  // no revision
          revision = r.response.header().revision();
          events.push_back(Ev{revision, true, k, ""});
        } else {  // a Txn: puts of 1-3 distinct keys, sometimes a delete of another one
          etcdserverpb::TxnRequest txn;
          std::set<std::string> keys;
          const int puts = 1 + static_cast<int>(rng() % 3);
          while (static_cast<int>(keys.size()) < puts) keys.insert(key());
          std::vector<std::string> order(keys.begin(), keys.end());
          std::shuffle(order.begin(), order.end(), rng);
          for (const std::string& k : order) {
            const std::string value(1000 + rng() % 3000, static_cast<char>('a' + rng() % 26));
            *txn.add_success() = OpOf(PutOf(k, value));
            events.push_back(Ev{0, false, k, value});
          }
          std::string doomed;
          if (kind >= 85) {
            do doomed = key();
            while (keys.count(doomed) != 0);
            *txn.add_success() = OpOf(DeleteOf(doomed));
          }
          auto r = Call(stub.get(), &KV::Stub::Txn, txn);
          ASSERT_TRUE(IsOk(r.status));
          revision = r.response.header().revision();
          if (!doomed.empty() && r.response.responses(puts).response_delete_range().deleted() > 0) {
            events.push_back(Ev{0, true, doomed, ""});
          }
          for (Ev& e : events) e.revision = revision;
        }
        std::lock_guard<std::mutex> lock(acked_mu);
        ASSERT_TRUE(acked.emplace(revision, std::move(events)).second) << "revision " << revision << " twice";
      }
    });
  }
  // Half-way, a compaction to the watchers' start: the history before it goes, theirs stays.
  while (done_ops < kWriters * kOpsPerWriter / 2) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  etcdserverpb::CompactionRequest compact;
  compact.set_revision(start);
  ASSERT_TRUE(IsOk(Call(kv.get(), &KV::Stub::Compact, compact).status));
  for (auto& w : writers) w.join();
  ASSERT_FALSE(HasFatalFailure()) << "seed " << seed;

  // A last write that every watcher's range holds.
  etcdserverpb::TxnRequest last;
  for (const char* k : {"c/0", "c/1", "c/5"}) *last.add_success() = OpOf(PutOf(k, "last"));
  auto lr = Call(kv.get(), &KV::Stub::Txn, last);
  ASSERT_TRUE(IsOk(lr.status));
  const int64_t final_revision = lr.response.header().revision();
  for (const char* k : {"c/0", "c/1", "c/5"})
    acked[final_revision].push_back(Ev{final_revision, false, k, "last"});

  // Every revision from the start to the end is an acknowledged write of this test: the history.
  ASSERT_EQ(acked.begin()->first, start);
  ASSERT_EQ(acked.rbegin()->first, final_revision);
  ASSERT_EQ(static_cast<int64_t>(acked.size()), final_revision - start + 1) << "seed " << seed;

  for (size_t i = 0; i < collectors.size(); ++i) {
    Collector& c = *collectors[i];
    ASSERT_TRUE(c.WaitFor(final_revision))
        << "watcher " << i << " did not reach " << final_revision << " (seed " << seed << ")";
    std::vector<Ev> expected;
    for (const auto& [rev, evs] : acked) {
      for (const Ev& e : evs) {
        if (c.range().Contains(e.key)) expected.push_back(e);
      }
    }
    const std::vector<Ev> got = c.events();
    ASSERT_EQ(got.size(), expected.size()) << "watcher " << i << " (seed " << seed << ")";
    for (size_t j = 0; j < got.size(); ++j) {
      ASSERT_EQ(got[j], expected[j]) << "watcher " << i << ", event " << j << " (seed " << seed << ")";
    }
  }

  // A watch from before the compaction is told where the history starts.
  WatchClient late(writer_channel);
  ASSERT_TRUE(late.Create("c/", "c0", start - 1));
  WatchResponse r;
  ASSERT_TRUE(late.Read(&r));
  EXPECT_TRUE(r.created());
  ASSERT_TRUE(late.Read(&r));
  EXPECT_TRUE(r.canceled());
  EXPECT_EQ(r.compact_revision(), start);
}

// A watcher that reads nothing falls behind; a Compact past its position then cancels it with
// compact_revision, after a gap-free prefix of the history; resuming there gives the rest.
TEST(WatchStress, ACompactionOvertakingASlowWatcherCancelsItAfterAGapFreePrefix) {
  ServerProcess server;
  ASSERT_TRUE(server.Start());
  auto writer_channel = OwnChannel(server, 0);
  auto kv = KV::NewStub(writer_channel);
  auto first = Call(kv.get(), &KV::Stub::Range, RangeOf("any"));
  ASSERT_TRUE(IsOk(first.status));
  const int64_t start = first.response.header().revision() + 1;
  WatchClient slow(OwnChannel(server, 1));
  ASSERT_TRUE(slow.Create("s/", "s0", start));
  WatchResponse r;
  ASSERT_TRUE(slow.Read(&r));
  ASSERT_TRUE(r.created());
  // 12 MB of events, far past what the connection and the stream's queue can hold unread.
  std::mutex mu;
  std::map<int64_t, std::string> acked;  // revision -> key
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&, t] {
      auto stub = KV::NewStub(OwnChannel(server, 10 + t));
      for (int i = 0; i < 750; ++i) {
        const std::string key = "s/" + std::to_string(t) + "/" + std::to_string(i % 10);
        auto reply = Call(stub.get(), &KV::Stub::Put, PutOf(key, std::string(4096, 'x')));
        ASSERT_TRUE(IsOk(reply.status));
        std::lock_guard<std::mutex> lock(mu);
        acked[reply.response.header().revision()] = key;
      }
    });
  }
  for (auto& w : writers) w.join();
  ASSERT_FALSE(HasFatalFailure());
  const int64_t last = acked.rbegin()->first;
  ASSERT_EQ(static_cast<int64_t>(acked.size()), last - start + 1);
  etcdserverpb::CompactionRequest compact;
  compact.set_revision(last);
  ASSERT_TRUE(IsOk(Call(kv.get(), &KV::Stub::Compact, compact).status));

  int64_t next = start;
  bool canceled = false;
  while (!canceled && slow.Read(&r)) {
    for (const auto& e : r.events()) {
      ASSERT_EQ(e.kv().mod_revision(), next) << "gap or duplicate";
      ASSERT_EQ(e.kv().key(), acked[next]);
      ++next;
    }
    if (r.canceled()) {
      canceled = true;
      EXPECT_EQ(r.compact_revision(), last);
      EXPECT_EQ(r.events_size(), 0);
    }
  }
  ASSERT_TRUE(canceled) << "the watcher never fell behind (it saw up to " << next - 1 << ")";
  EXPECT_LT(next, last);
  // From the compaction's revision the history is there.
  ASSERT_TRUE(slow.Create("s/", "s0", last));
  ASSERT_TRUE(slow.Read(&r));
  EXPECT_TRUE(r.created());
  ASSERT_TRUE(slow.Read(&r));
  ASSERT_EQ(r.events_size(), 1);
  EXPECT_EQ(r.events(0).kv().mod_revision(), last);
}

// SIGKILL during writes with a watcher attached; after the restart a watcher resuming from its last
// seen revision + 1 gets exactly the acknowledged events after it, and what it saw before the crash
// is still the history (nothing a watcher saw was taken back).
TEST(WatchStress, ResumingAfterACrashGivesExactlyTheAcknowledgedEvents) {
  const uint32_t seed = Seed();
  ServerProcess server;
  ASSERT_TRUE(server.Start());
  auto channel = OwnChannel(server, 1);
  auto kv = KV::NewStub(channel);
  auto first = Call(kv.get(), &KV::Stub::Range, RangeOf("any"));
  ASSERT_TRUE(IsOk(first.status));
  const int64_t start = first.response.header().revision() + 1;

  auto watch_channel = OwnChannel(server, 2);
  auto before = std::make_unique<Collector>(watch_channel, Range{"x/", "x0"}, start, std::chrono::seconds(0));
  std::mutex acked_mu;
  std::map<int64_t, Ev> acked;
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (int t = 0; t < 3; ++t) {
    writers.emplace_back([&, t] {
      auto stub = KV::NewStub(OwnChannel(server, 10 + t));
      std::mt19937 rng(seed + t);
      for (int i = 0; !stop; ++i) {
        const std::string key = "x/" + std::to_string(t) + "/" + std::to_string(rng() % 50);
        const std::string value = std::to_string(t) + "-" + std::to_string(i);
        auto context = ContextWithDeadline(std::chrono::milliseconds(2000));
        etcdserverpb::PutResponse response;
        grpc::Status s = stub->Put(context.get(), PutOf(key, value), &response);
        if (!s.ok()) return;  // the server is gone
        std::lock_guard<std::mutex> lock(acked_mu);
        acked.emplace(response.header().revision(), Ev{response.header().revision(), false, key, value});
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500 + seed % 1000));
  ASSERT_TRUE(server.Kill());
  stop = true;
  for (auto& w : writers) w.join();
  ASSERT_TRUE(before->WaitDone());  // its stream ended with the server
  const std::vector<Ev> seen = before->events();
  before.reset();
  // Before the crash: one event per revision (each write is one put), no gap, all acknowledged ones.
  for (size_t i = 0; i < seen.size(); ++i) {
    ASSERT_EQ(seen[i].revision, start + static_cast<int64_t>(i)) << "seed " << seed;
  }
  const int64_t last_seen = seen.empty() ? start - 1 : seen.back().revision;
  std::printf("acknowledged %zu writes, the watcher saw up to revision %lld\n", acked.size(),
              static_cast<long long>(last_seen));

  ASSERT_TRUE(server.Start());
  auto channel2 = OwnChannel(server, 3);
  auto kv2 = KV::NewStub(channel2);
  auto now = Call(kv2.get(), &KV::Stub::Range, RangeOf("any"));
  ASSERT_TRUE(IsOk(now.status));
  const int64_t recovered = now.response.header().revision();
  ASSERT_FALSE(acked.empty());
  ASSERT_GE(recovered, acked.rbegin()->first) << "an acknowledged write was lost (seed " << seed << ")";
  ASSERT_GE(recovered, last_seen) << "a revision a watcher saw was taken back (seed " << seed << ")";

  // Resuming from last seen + 1: exactly the revisions after it, the acknowledged ones as written.
  Collector after(channel2, Range{"x/", "x0"}, last_seen + 1, std::chrono::seconds(0));
  if (recovered > last_seen) {
    ASSERT_TRUE(after.WaitFor(recovered)) << "seed " << seed;
  }
  const std::vector<Ev> resumed = after.events();
  ASSERT_EQ(static_cast<int64_t>(resumed.size()), recovered - last_seen) << "seed " << seed;
  for (size_t i = 0; i < resumed.size(); ++i) {
    ASSERT_EQ(resumed[i].revision, last_seen + 1 + static_cast<int64_t>(i)) << "seed " << seed;
  }
  for (const auto& [rev, ev] : acked) {
    if (rev <= last_seen) {
      ASSERT_EQ(seen[static_cast<size_t>(rev - start)], ev) << "seed " << seed;
    } else {
      ASSERT_EQ(resumed[static_cast<size_t>(rev - last_seen - 1)], ev) << "seed " << seed;
    }
  }
  // And the history from the start is what the first watcher saw, then what the second one did.
  Collector all(channel2, Range{"x/", "x0"}, start, std::chrono::seconds(0));
  ASSERT_TRUE(all.WaitFor(recovered)) << "seed " << seed;
  std::vector<Ev> both = seen;
  both.insert(both.end(), resumed.begin(), resumed.end());
  ASSERT_EQ(all.events(), both) << "seed " << seed;
}

}  // namespace
}  // namespace revkv::integration
