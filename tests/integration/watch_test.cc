// etcd's Watch service against a real server: the wire answers (also against etcd 3.4, to show the
// expectations are etcd's), etcdctl watch (key, --prefix, --rev, --prev-kv, interactive), python3-etcd3
// watching a prefix, and a shutdown with open watch streams.
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "tests/integration/etcd_calls.h"
#include "tests/integration/etcdctl_support.h"
#include "tests/integration/prometheus_scrape.h"
#include "tests/integration/server_process.h"
#include "tests/integration/watch_client.h"
#include "tests/support/external_tools.h"

namespace revkv::integration {
namespace {

using etcdserverpb::KV;
using etcdserverpb::WatchCreateRequest;
using etcdserverpb::WatchResponse;

class WatchSemantics : public ::testing::TestWithParam<Flavor> {
 protected:
  void SetUp() override {
    if (!FlavorAvailable(GetParam())) REVKV_MISSING_TOOL() << FlavorName(GetParam()) << " is not installed";
    ServerOptions options;
    options.flavor = GetParam();
    // Progress notifications every 300 ms: etcd's flag is experimental, revkv's a plain setting.
    options.extra_flags = {"--max-request-bytes=1024",
                           GetParam() == Flavor::kEtcd ? "--experimental-watch-progress-notify-interval=300ms"
                                                       : "--watch-progress-notify-interval=300ms"};
    server_ = std::make_unique<ServerProcess>(options);
    ASSERT_TRUE(server_->Start());
    channel_ = server_->NewChannel();
    kv_ = KV::NewStub(channel_);
  }
  int64_t Put(const std::string& key, const std::string& value) {
    auto r = Call(kv_.get(), &KV::Stub::Put, PutOf(key, value));
    EXPECT_TRUE(IsOk(r.status)) << "put " << key;
    return r.status.ok() ? r.response.header().revision() : 0;
  }
  WatchResponse ReadOne(WatchClient* w) {
    WatchResponse r;
    EXPECT_TRUE(w->Read(&r)) << "the stream ended";
    return r;
  }

  std::unique_ptr<ServerProcess> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<KV::Stub> kv_;
};

TEST_P(WatchSemantics, CreatedResponsesIdsAndEvents) {
  const int64_t r2 = Put("a", "1");  // revision 2
  WatchClient w(channel_);
  ASSERT_TRUE(w.Create("a"));
  WatchResponse created = ReadOne(&w);
  EXPECT_TRUE(created.created());
  EXPECT_FALSE(created.canceled());
  EXPECT_EQ(created.watch_id(), 0);
  EXPECT_EQ(created.header().revision(), r2);
  ASSERT_TRUE(w.Create("b"));
  EXPECT_EQ(ReadOne(&w).watch_id(), 1);
  WatchCreateRequest chosen;
  chosen.set_key("c");
  chosen.set_watch_id(1);  // taken: etcd's duplicate answer
  ASSERT_TRUE(w.Create(chosen));
  WatchResponse dup = ReadOne(&w);
  EXPECT_TRUE(dup.created());
  EXPECT_TRUE(dup.canceled());
  EXPECT_EQ(dup.watch_id(), -1);
  EXPECT_EQ(dup.cancel_reason(), "mvcc: duplicate watch ID provided on the WatchStream");
  ASSERT_TRUE(w.Create("z", "a"));  // end before key
  WatchResponse empty = ReadOne(&w);
  EXPECT_TRUE(empty.canceled());
  EXPECT_EQ(empty.cancel_reason(), "mvcc: watcher range is empty");

  const int64_t r3 = Put("a", "2");
  WatchResponse ev = ReadOne(&w);
  EXPECT_EQ(ev.watch_id(), 0);
  EXPECT_EQ(ev.header().revision(), r3);
  ASSERT_EQ(ev.events_size(), 1);
  EXPECT_EQ(ev.events(0).type(), mvccpb::Event::PUT);
  EXPECT_EQ(ev.events(0).kv().value(), "2");
  EXPECT_EQ(ev.events(0).kv().create_revision(), r2);
  EXPECT_EQ(ev.events(0).kv().mod_revision(), r3);
  EXPECT_EQ(ev.events(0).kv().version(), 2);
  EXPECT_FALSE(ev.events(0).has_prev_kv());

  ASSERT_TRUE(w.RequestProgress());
  WatchResponse progress = ReadOne(&w);
  EXPECT_EQ(progress.watch_id(), -1);
  EXPECT_EQ(progress.header().revision(), r3);
  EXPECT_EQ(progress.events_size(), 0);
  EXPECT_FALSE(progress.created());

  ASSERT_TRUE(w.Cancel(0));
  WatchResponse canceled = ReadOne(&w);
  EXPECT_TRUE(canceled.canceled());
  EXPECT_EQ(canceled.watch_id(), 0);
  EXPECT_EQ(canceled.header().revision(), r3);
  Put("b", "x");  // watcher 1 is still there; 0 is not
  WatchResponse b = ReadOne(&w);
  EXPECT_EQ(b.watch_id(), 1);
}

TEST_P(WatchSemantics, PastStartRevisionPrevKvAndDeletes) {
  const int64_t r2 = Put("p/1", "a");
  Put("p/2", "b");
  Put("p/1", "c");
  auto del = Call(kv_.get(), &KV::Stub::DeleteRange, DeleteOf("p/", PrefixEnd("p/")));
  ASSERT_TRUE(IsOk(del.status));
  const int64_t r5 = del.response.header().revision();
  WatchClient w(channel_);
  WatchCreateRequest c;
  c.set_key("p/");
  c.set_range_end(PrefixEnd("p/"));
  c.set_start_revision(r2);
  c.set_prev_kv(true);
  ASSERT_TRUE(w.Create(c));
  EXPECT_TRUE(ReadOne(&w).created());
  std::vector<mvccpb::Event> events;
  WatchResponse last;
  while (events.size() < 5) {
    last = ReadOne(&w);
    if (last.events_size() == 0) break;
    for (const auto& e : last.events()) events.push_back(e);
  }
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(last.header().revision(), r5);
  EXPECT_FALSE(events[0].has_prev_kv());  // a creation
  EXPECT_EQ(events[2].prev_kv().value(), "a");
  EXPECT_EQ(events[3].type(), mvccpb::Event::DELETE);
  EXPECT_EQ(events[3].kv().key(), "p/1");
  EXPECT_EQ(events[3].kv().mod_revision(), r5);
  EXPECT_EQ(events[3].kv().create_revision(), 0);
  EXPECT_EQ(events[3].kv().value(), "");
  EXPECT_EQ(events[3].prev_kv().value(), "c");
  EXPECT_EQ(events[4].kv().key(), "p/2");
  EXPECT_EQ(events[4].prev_kv().value(), "b");
}

TEST_P(WatchSemantics, FiltersAndFromKey) {
  WatchClient w(channel_);
  WatchCreateRequest noput;
  noput.set_key("k");
  noput.set_range_end(std::string(1, '\0'));  // every key from "k" on
  noput.add_filters(WatchCreateRequest::NOPUT);
  ASSERT_TRUE(w.Create(noput));
  EXPECT_TRUE(ReadOne(&w).created());
  Put("k1", "v");
  Put("a", "v");  // before "k": not watched
  auto del = Call(kv_.get(), &KV::Stub::DeleteRange, DeleteOf("k1"));
  ASSERT_TRUE(IsOk(del.status));
  WatchResponse r = ReadOne(&w);  // the put was filtered out: nothing was sent for it
  ASSERT_EQ(r.events_size(), 1);
  EXPECT_EQ(r.events(0).type(), mvccpb::Event::DELETE);
  EXPECT_EQ(r.header().revision(), del.response.header().revision());
}

TEST_P(WatchSemantics, CompactedStartRevision) {
  for (int i = 0; i < 5; ++i) Put("k", std::to_string(i));  // revisions 2..6
  etcdserverpb::CompactionRequest compact;
  compact.set_revision(4);
  ASSERT_TRUE(IsOk(Call(kv_.get(), &KV::Stub::Compact, compact).status));
  WatchClient w(channel_);
  ASSERT_TRUE(w.Create("k", "", 3));
  WatchResponse created = ReadOne(&w);
  EXPECT_TRUE(created.created());
  EXPECT_FALSE(created.canceled());
  WatchResponse compacted = ReadOne(&w);
  EXPECT_TRUE(compacted.canceled());
  EXPECT_EQ(compacted.compact_revision(), 4);
  EXPECT_EQ(compacted.watch_id(), 0);
  EXPECT_EQ(compacted.events_size(), 0);
  EXPECT_EQ(compacted.header().revision(), 0);
  // From the compaction's revision on, the history is there.
  ASSERT_TRUE(w.Create("k", "", 4));
  EXPECT_TRUE(ReadOne(&w).created());
  WatchResponse events = ReadOne(&w);
  ASSERT_EQ(events.events_size(), 3);
  EXPECT_EQ(events.events(0).kv().mod_revision(), 4);
}

// etcd splits at max_request_bytes plus 512 KiB (its gRPC overhead allowance): 600 deletions with their
// previous values (about 0.6 MB) make two fragments with --max-request-bytes=1024, the same in both.
TEST_P(WatchSemantics, FragmentSplitsAtMaxRequestBytesPlusOverhead) {
  const std::string value(900, 'v');
  for (int i = 0; i < 600; ++i) Put("f/" + std::to_string(1000 + i), value);
  WatchClient w(channel_);
  WatchCreateRequest c;
  c.set_key("f/");
  c.set_range_end(PrefixEnd("f/"));
  c.set_prev_kv(true);
  c.set_fragment(true);
  ASSERT_TRUE(w.Create(c));
  EXPECT_TRUE(ReadOne(&w).created());
  WatchClient whole(channel_);
  c.set_fragment(false);
  ASSERT_TRUE(whole.Create(c));
  EXPECT_TRUE(ReadOne(&whole).created());
  auto del = Call(kv_.get(), &KV::Stub::DeleteRange, DeleteOf("f/", PrefixEnd("f/")));
  ASSERT_TRUE(IsOk(del.status));
  std::vector<WatchResponse> parts;
  int events = 0;
  while (events < 600) {
    parts.push_back(ReadOne(&w));
    if (parts.back().events_size() == 0) break;
    events += parts.back().events_size();
  }
  ASSERT_EQ(events, 600);
  std::vector<int> sizes;
  for (size_t i = 0; i < parts.size(); ++i) {
    sizes.push_back(parts[i].events_size());
    EXPECT_EQ(parts[i].fragment(), i + 1 < parts.size()) << i;
    EXPECT_EQ(parts[i].header().revision(), del.response.header().revision());
    EXPECT_LT(parts[i].ByteSizeLong(), 1024u + 512 * 1024);
  }
  EXPECT_EQ(sizes, (std::vector<int>{559, 41})) << ::testing::PrintToString(sizes);
  WatchResponse all = ReadOne(&whole);
  EXPECT_EQ(all.events_size(), 600);
  EXPECT_FALSE(all.fragment());
}

// progress_notify: an empty response with the watch id and the current revision every interval, skipped
// once after a response with events.
TEST_P(WatchSemantics, PeriodicProgressNotify) {
  const int64_t r2 = Put("k", "v");
  WatchClient w(channel_);
  WatchCreateRequest c;
  c.set_key("k");
  c.set_progress_notify(true);
  ASSERT_TRUE(w.Create(c));
  EXPECT_TRUE(ReadOne(&w).created());
  const auto start = std::chrono::steady_clock::now();
  WatchResponse progress = ReadOne(&w);
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(progress.watch_id(), 0);
  EXPECT_EQ(progress.events_size(), 0);
  EXPECT_FALSE(progress.created());
  EXPECT_FALSE(progress.canceled());
  EXPECT_EQ(progress.header().revision(), r2);
  EXPECT_LT(waited, std::chrono::seconds(2));
  const int64_t r3 = Put("k", "w");
  WatchResponse ev = ReadOne(&w);
  ASSERT_EQ(ev.events_size(), 1);
  WatchResponse next = ReadOne(&w);
  EXPECT_EQ(next.events_size(), 0);
  EXPECT_EQ(next.header().revision(), r3);
}

INSTANTIATE_TEST_SUITE_P(Servers, WatchSemantics, ::testing::Values(Flavor::kRevkv, Flavor::kEtcd),
                         [](const ::testing::TestParamInfo<Flavor>& p) { return FlavorName(p.param); });

// ----- etcdctl and python3-etcd3 ---------------------------------------------------------------------

class WatchTools : public ::testing::TestWithParam<Flavor> {
 protected:
  void SetUp() override {
    if (!FlavorAvailable(GetParam())) REVKV_MISSING_TOOL() << FlavorName(GetParam()) << " is not installed";
    REVKV_NEED_TOOL(kEtcdctl, "etcd-client");
    ServerOptions options;
    options.flavor = GetParam();
    server_ = std::make_unique<ServerProcess>(options);
    ASSERT_TRUE(server_->Start());
  }
  void Ctl(const std::vector<std::string>& args) {
    CommandResult r = Etcdctl(*server_, args);
    ASSERT_EQ(r.exit_code, 0) << r.Describe();
  }
  // Runs etcdctl watch for `seconds` (then it is killed) and returns what it printed.
  std::string WatchFor(const std::vector<std::string>& args, int seconds = 3) {
    std::vector<std::string> all = {"watch"};
    all.insert(all.end(), args.begin(), args.end());
    return Etcdctl(*server_, all, "", std::chrono::seconds(seconds)).out;
  }

  std::unique_ptr<ServerProcess> server_;
};

TEST_P(WatchTools, EtcdctlWatchKeyFromRevision) {
  Ctl({"put", "foo", "bar"});  // 2
  Ctl({"put", "other", "x"});  // 3
  Ctl({"put", "foo", "baz"});  // 4
  Ctl({"del", "foo"});         // 5
  EXPECT_EQ(WatchFor({"--rev=2", "foo"}), "PUT\nfoo\nbar\nPUT\nfoo\nbaz\nDELETE\nfoo\n\n");
}

TEST_P(WatchTools, EtcdctlWatchPrefixWithPrevKv) {
  Ctl({"put", "p/a", "1"});
  Ctl({"put", "q", "x"});
  Ctl({"put", "p/a", "2"});
  EXPECT_EQ(WatchFor({"--rev=2", "--prefix", "--prev-kv", "p/"}), "PUT\np/a\n1\nPUT\np/a\n1\np/a\n2\n");
}

TEST_P(WatchTools, EtcdctlWatchSeesALivePut) {
  std::string out;
  std::thread watcher([&] { out = WatchFor({"live"}, 4); });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  Ctl({"put", "live", "now"});
  watcher.join();
  EXPECT_EQ(out, "PUT\nlive\nnow\n");
}

TEST_P(WatchTools, EtcdctlInteractiveWatch) {
  Ctl({"put", "i/1", "one"});
  Ctl({"put", "j", "two"});
  // etcdctl watch -i reads watch commands on stdin and stops at its end: keep it open for a while.
  // Each watch prints its events line by line from its own goroutine, so two replays started together
  // can interleave their lines (seen against etcd): the second command waits for the first's replay.
  CommandResult r = RunCommand(
      {"/bin/sh", "-c",
       "(printf 'watch --rev=2 i/1\\n'; sleep 1; printf 'watch --rev=2 --prefix j\\n'; sleep 2) | " +
           std::string(kEtcdctl) + " --endpoints=" + server_->address() + " watch -i"},
      "", {{"ETCDCTL_API", "3"}}, std::chrono::seconds(20));
  EXPECT_NE(r.out.find("PUT\ni/1\none\n"), std::string::npos) << r.Describe();
  EXPECT_NE(r.out.find("PUT\nj\ntwo\n"), std::string::npos) << r.Describe();
}

TEST_P(WatchTools, Python3Etcd3WatchesAPrefix) {
  REVKV_NEED_TOOL("/usr/bin/python3", "python3");
  const std::string script = R"PY(
import sys, threading, time, etcd3
host, port = sys.argv[1].split(':')
c = etcd3.client(host=host, port=int(port))
events, cancel = c.watch_prefix('py/')
def write():
    time.sleep(0.5)
    c.put('py/a', '1')
    c.put('other', 'x')
    c.put('py/b', '2')
    c.delete('py/a')
threading.Thread(target=write).start()
seen = []
for ev in events:
    seen.append('%s %s %s' % (type(ev).__name__, ev.key.decode(), ev.value.decode()))
    if len(seen) == 3:
        cancel()
print('\n'.join(seen))
)PY";
  CommandResult r =
      RunCommand({"/usr/bin/python3", "-c", script, server_->address()}, "", {}, std::chrono::seconds(30));
  if (r.err.find("No module named 'etcd3'") != std::string::npos) {
    REVKV_MISSING_TOOL() << "python3-etcd3 is not installed";
  }
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, "PutEvent py/a 1\nPutEvent py/b 2\nDeleteEvent py/a \n") << r.Describe();
}

INSTANTIATE_TEST_SUITE_P(Servers, WatchTools, ::testing::Values(Flavor::kRevkv, Flavor::kEtcd),
                         [](const ::testing::TestParamInfo<Flavor>& p) { return FlavorName(p.param); });

// After a restart the history is rebuilt from the log: checkpoints are taken at the history window's
// oldest revision and the log after it is replayed, so a watch from any revision after it gets every
// event again, as from etcd's backend.
TEST(WatchRestart, HistoryIsRebuiltAfterARestart) {
  ServerOptions options;
  options.extra_flags = {"--checkpoint-interval=10"};
  ServerProcess server(options);
  ASSERT_TRUE(server.Start());
  {
    auto kv = KV::NewStub(server.NewChannel());
    for (int i = 0; i < 25; ++i) {
      ASSERT_TRUE(IsOk(Call(kv.get(), &KV::Stub::Put, PutOf("r", std::to_string(i))).status));
    }
  }
  ASSERT_TRUE(server.Stop());
  ASSERT_TRUE(server.Start());
  WatchClient w(server.NewChannel());
  ASSERT_TRUE(w.Create("r", "", 2));
  WatchResponse r;
  ASSERT_TRUE(w.Read(&r));
  EXPECT_TRUE(r.created());
  int64_t next = 2;
  while (next <= 26 && w.Read(&r)) {
    ASSERT_FALSE(r.canceled()) << r.ShortDebugString();
    for (const auto& e : r.events()) {
      EXPECT_EQ(e.kv().mod_revision(), next);
      EXPECT_EQ(e.kv().value(), std::to_string(next - 2));
      ++next;
    }
  }
  EXPECT_EQ(next, 27);
}

// A revision that many watchers of one stream get is a burst of responses: those with more queued behind
// them go with gRPC's buffer hint, so that gRPC may send them together, and every watcher still gets its
// event at once (the last response of a burst goes without the hint and sends what is buffered).
TEST(WatchBuffering, ABurstForManyWatchersOfOneStreamIsWrittenWithTheBufferHint) {
  constexpr int kWatchers = 100;
  constexpr int kPuts = 5;
  ServerProcess server;
  ASSERT_TRUE(server.Start());
  WatchClient w(server.NewChannel());
  for (int i = 0; i < kWatchers; ++i) ASSERT_TRUE(w.Create("b/", "b0"));
  WatchResponse r;
  for (int i = 0; i < kWatchers; ++i) {
    ASSERT_TRUE(w.Read(&r));
    ASSERT_TRUE(r.created());
  }
  const double responses_before = ScrapeValue(server.metrics_port(), "revkv_watch_responses_total");
  const double buffered_before = ScrapeValue(server.metrics_port(), "revkv_watch_responses_buffered_total");
  auto kv = KV::NewStub(server.NewChannel());
  for (int put = 0; put < kPuts; ++put) {
    auto p = Call(kv.get(), &KV::Stub::Put, PutOf("b/k", std::to_string(put)));
    ASSERT_TRUE(IsOk(p.status));
    std::set<int64_t> got;
    while (got.size() < static_cast<size_t>(kWatchers)) {
      ASSERT_TRUE(w.Read(&r)) << "put " << put << ": " << got.size() << " watchers got it";
      ASSERT_EQ(r.events_size(), 1) << r.ShortDebugString();
      EXPECT_EQ(r.events(0).kv().mod_revision(), p.response.header().revision());
      EXPECT_TRUE(got.insert(r.watch_id()).second) << "twice for watcher " << r.watch_id();
    }
  }
  const double responses =
      ScrapeValue(server.metrics_port(), "revkv_watch_responses_total") - responses_before;
  const double buffered =
      ScrapeValue(server.metrics_port(), "revkv_watch_responses_buffered_total") - buffered_before;
  EXPECT_EQ(responses, kPuts * kWatchers);
  // Each burst's first response is taken as soon as it is queued, before the others are; the rest queue
  // behind the write in flight, and all but the last of them go with the hint.
  EXPECT_GE(buffered, kPuts * kWatchers / 2) << "of " << responses << " responses";
  EXPECT_LT(buffered, responses) << "a burst's last response went with the hint";
}

// SIGTERM with watch streams open: the server ends them and exits at once, not after a grace period.
TEST(WatchShutdown, OpenStreamsDoNotHoldUpShutdown) {
  ServerProcess server;
  ASSERT_TRUE(server.Start());
  auto channel = server.NewChannel();
  std::vector<std::unique_ptr<WatchClient>> watches;
  for (int i = 0; i < 4; ++i) {
    watches.push_back(std::make_unique<WatchClient>(channel));
    ASSERT_TRUE(watches.back()->Create("k" + std::to_string(i)));
    WatchResponse r;
    ASSERT_TRUE(watches.back()->Read(&r));
  }
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(server.Stop());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  WatchResponse r;
  EXPECT_FALSE(watches[0]->Read(&r));  // the stream has ended
}

}  // namespace
}  // namespace revkv::integration
