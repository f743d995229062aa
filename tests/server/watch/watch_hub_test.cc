// The watch hub over an event log with a durability gate the test controls.
#include "server/watch/watch_hub.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <thread>

namespace revkv::server::watch {
namespace {

using etcdserverpb::WatchCreateRequest;
using etcdserverpb::WatchResponse;

WatchEvent Put(const std::string& key, const std::string& value, int64_t rev, int64_t create, int64_t version,
               const WatchEvent* prev = nullptr) {
  WatchEvent e;
  e.kv = store::KvRecord{key, value, create, rev, version, 0};
  if (prev != nullptr) {
    e.has_prev = true;
    e.prev = prev->kv;
  }
  return e;
}
WatchEvent Del(const std::string& key, int64_t rev, const store::KvRecord& prev) {
  WatchEvent e;
  e.is_delete = true;
  e.kv.key = key;
  e.kv.mod_revision = rev;
  e.has_prev = true;
  e.prev = prev;
  return e;
}

// An event log, a visible revision the test moves, and a hub over them. `start`: the hub's dispatcher
// starts at once; else at Start() (a test that sets up watchers before any dispatch round can run).
class Harness {
 public:
  explicit Harness(HubOptions options = HubOptions(), int64_t visible = std::numeric_limits<int64_t>::max(),
                   bool start = true)
      : visible_(visible) {
    HubSource source;
    source.log = &log_;
    // As the store's: never past the newest commit (here: the newest published revision).
    source.visible_revision = [this] { return std::min(visible_.load(), log_.contiguous()); };
    source.on_visible = [this](int64_t revision, std::function<void()> wake) {
      std::lock_guard<std::mutex> lock(mu_);
      if (visible_.load() >= revision) {
        wake();
        return;
      }
      waiting_.emplace_back(revision, std::move(wake));
    };
    hub_ = std::make_unique<WatchHub>(std::move(source), options);
    if (start) hub_->Start();
  }
  void Start() { hub_->Start(); }
  ~Harness() { hub_->Stop(); }

  void SetVisible(int64_t v) {
    std::lock_guard<std::mutex> lock(mu_);
    visible_.store(v);
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (it->first <= v) {
        it->second();
        it = waiting_.erase(it);
      } else {
        ++it;
      }
    }
  }

  EventLog& log() { return log_; }
  WatchHub& hub() { return *hub_; }

 private:
  EventLog log_{0};
  std::atomic<int64_t> visible_;
  std::mutex mu_;
  std::vector<std::pair<int64_t, std::function<void()>>> waiting_;
  std::unique_ptr<WatchHub> hub_;
};

// A stream's reader: takes what the hub queued, when the test says so.
class Reader {
 public:
  explicit Reader(WatchHub* hub) : hub_(hub) {
    stream_ = hub->OpenStream([] {});
  }
  ~Reader() { hub_->CloseStream(stream_.get()); }
  WatchStream* stream() { return stream_.get(); }

  void Drain() {
    WatchResponse r;
    while (stream_->Next(&r)) {
      got_.push_back(r);
      stream_->WriteDone();
    }
  }
  // Drains until `done` holds or 10 s pass.
  bool DrainUntil(const std::function<bool(const std::vector<WatchResponse>&)>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      Drain();
      if (done(got_)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
  }
  // Drains for a while (to show that nothing more comes).
  void DrainFor(std::chrono::milliseconds d) {
    const auto end = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < end) {
      Drain();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  std::vector<WatchResponse>& got() { return got_; }
  // The events for `watch_id`, in order, as (revision, key, type).
  std::vector<mvccpb::Event> Events(int64_t watch_id) const {
    std::vector<mvccpb::Event> out;
    for (const auto& r : got_) {
      if (r.watch_id() != watch_id) continue;
      for (const auto& e : r.events()) out.push_back(e);
    }
    return out;
  }

 private:
  WatchHub* hub_;
  std::shared_ptr<WatchStream> stream_;
  std::vector<WatchResponse> got_;
};

const std::string kFromKey(1, '\0');  // etcd's range_end for "every key from `key` on"

WatchCreateRequest Req(const std::string& key, const std::string& end = "", int64_t start = 0) {
  WatchCreateRequest r;
  r.set_key(key);
  r.set_range_end(end);
  r.set_start_revision(start);
  return r;
}

size_t CountEvents(const std::vector<WatchResponse>& got, int64_t id) {
  size_t n = 0;
  for (const auto& r : got)
    if (r.watch_id() == id) n += r.events_size();
  return n;
}

TEST(WatchHub, CreatedResponseCarriesIdsFromZeroAndTheVisibleRevision) {
  Harness h;
  h.log().Publish(1, {});
  h.log().Publish(2, {Put("a", "1", 2, 2, 1)});
  Reader reader(&h.hub());
  h.hub().Create(reader.stream(), Req("a"));
  h.hub().Create(reader.stream(), Req("b"));
  WatchCreateRequest chosen = Req("c");
  chosen.set_watch_id(7);
  h.hub().Create(reader.stream(), chosen);
  ASSERT_TRUE(reader.DrainUntil([](auto& g) { return g.size() >= 3; }));
  EXPECT_TRUE(reader.got()[0].created());
  EXPECT_EQ(reader.got()[0].watch_id(), 0);
  EXPECT_EQ(reader.got()[1].watch_id(), 1);
  EXPECT_EQ(reader.got()[2].watch_id(), 7);
  EXPECT_FALSE(reader.got()[2].canceled());
}

TEST(WatchHub, DuplicateIdAndEmptyRangeAreRefusedAsEtcd) {
  Harness h;
  Reader reader(&h.hub());
  WatchCreateRequest r = Req("a");
  r.set_watch_id(3);
  h.hub().Create(reader.stream(), r);
  h.hub().Create(reader.stream(), r);
  h.hub().Create(reader.stream(), Req("b", "a"));
  ASSERT_TRUE(reader.DrainUntil([](auto& g) { return g.size() >= 3; }));
  const auto& dup = reader.got()[1];
  EXPECT_TRUE(dup.created());
  EXPECT_TRUE(dup.canceled());
  EXPECT_EQ(dup.watch_id(), -1);
  EXPECT_EQ(dup.cancel_reason(), "mvcc: duplicate watch ID provided on the WatchStream");
  const auto& empty = reader.got()[2];
  EXPECT_TRUE(empty.canceled());
  EXPECT_EQ(empty.watch_id(), -1);
  EXPECT_EQ(empty.cancel_reason(), "mvcc: watcher range is empty");
  EXPECT_EQ(h.hub().watchers(), 1u);
}

TEST(WatchHub, RangesFiltersAndPreviousKeyValues) {
  Harness h;
  h.log().Publish(1, {});
  Reader reader(&h.hub());
  h.hub().Create(reader.stream(), Req("a"));              // 0: single key
  h.hub().Create(reader.stream(), Req("p/", "p0"));       // 1: prefix
  h.hub().Create(reader.stream(), Req("p/2", kFromKey));  // 2: from key on
  WatchCreateRequest noput = Req("p/", "p0");             // 3: deletes only
  noput.add_filters(WatchCreateRequest::NOPUT);
  h.hub().Create(reader.stream(), noput);
  WatchCreateRequest nodel = Req("p/", "p0");  // 4: puts only, with prev_kv
  nodel.add_filters(WatchCreateRequest::NODELETE);
  nodel.set_prev_kv(true);
  h.hub().Create(reader.stream(), nodel);
  WatchCreateRequest all = Req("", kFromKey);  // 5: every key (empty key is "\0")
  all.set_prev_kv(true);
  h.hub().Create(reader.stream(), all);
  ASSERT_TRUE(reader.DrainUntil([](auto& g) { return g.size() >= 6; }));

  const WatchEvent a2 = Put("a", "1", 2, 2, 1);
  const WatchEvent p3 = Put("p/1", "x", 3, 3, 1);
  const WatchEvent p4 = Put("p/1", "y", 4, 3, 2, &p3);
  h.log().Publish(2, {a2});
  h.log().Publish(3, {p3, Put("p/2", "z", 3, 3, 1), Put("q", "q", 3, 3, 1)});
  h.log().Publish(4, {p4});
  h.log().Publish(5, {Del("p/1", 5, p4.kv)});
  ASSERT_TRUE(reader.DrainUntil([](auto& g) { return CountEvents(g, 5) == 6; })) << [&] {
    std::string s;
    for (const auto& r : reader.got()) s += r.ShortDebugString() + "\n";
    return s;
  }();
  reader.DrainFor(std::chrono::milliseconds(50));

  auto keys = [&](int64_t id) {
    std::vector<std::string> out;
    for (const auto& e : reader.Events(id)) {
      out.push_back((e.type() == mvccpb::Event::DELETE ? "-" : "+") + e.kv().key() + "@" +
                    std::to_string(e.kv().mod_revision()));
    }
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(keys(0), (V{"+a@2"}));
  EXPECT_EQ(keys(1), (V{"+p/1@3", "+p/2@3", "+p/1@4", "-p/1@5"}));
  EXPECT_EQ(keys(2), (V{"+p/2@3", "+q@3"}));
  EXPECT_EQ(keys(3), (V{"-p/1@5"}));
  EXPECT_EQ(keys(4), (V{"+p/1@3", "+p/2@3", "+p/1@4"}));
  EXPECT_EQ(keys(5), (V{"+a@2", "+p/1@3", "+p/2@3", "+q@3", "+p/1@4", "-p/1@5"}));

  // One response per revision, all of its events together, header = the revision.
  for (const auto& r : reader.got()) {
    if (r.watch_id() != 1 || r.events_size() == 0) continue;
    for (const auto& e : r.events()) EXPECT_EQ(e.kv().mod_revision(), r.header().revision());
  }
  // prev_kv: none for a creation, the replaced key-value otherwise (deletes too); only if asked.
  const auto ev5 = reader.Events(5);
  EXPECT_FALSE(ev5[0].has_prev_kv());
  EXPECT_EQ(ev5[4].prev_kv().value(), "x");
  EXPECT_EQ(ev5[5].prev_kv().value(), "y");
  EXPECT_EQ(ev5[5].kv().value(), "");  // a delete's kv is the key and its revision only
  EXPECT_EQ(ev5[5].kv().create_revision(), 0);
  for (const auto& e : reader.Events(1)) EXPECT_FALSE(e.has_prev_kv());
}

// A revision's events are encoded once per selection and shared: watchers on different streams that get
// the same events queue the same encoded block; a watcher that wants prev_kv gets a block of its own; the
// block, after each watcher's own part, parses as that watcher's whole response.
TEST(WatchHub, EventsOfARevisionAreEncodedOnceAndSharedBetweenWatchers) {
  Harness h;
  h.log().Publish(1, {});
  std::vector<std::unique_ptr<Reader>> readers;
  for (int i = 0; i < 3; ++i) {
    readers.push_back(std::make_unique<Reader>(&h.hub()));
    h.hub().Create(readers[i]->stream(), Req("p/", "p0"));
  }
  WatchCreateRequest with_prev = Req("p/", "p0");
  with_prev.set_prev_kv(true);
  h.hub().Create(readers[0]->stream(), with_prev);  // watch id 1 on the first stream
  for (auto& r : readers) ASSERT_TRUE(r->DrainUntil([](auto& g) { return !g.empty(); }));
  ASSERT_TRUE(readers[0]->DrainUntil([](auto& g) { return g.size() == 2; }));

  const WatchEvent p2 = Put("p/1", "x", 2, 2, 1);
  const WatchEvent p3 = Put("p/1", "y", 3, 2, 2, &p2);
  h.log().Publish(2, {p2});
  h.log().Publish(3, {p3, Put("q", "other", 3, 3, 1)});
  // Each stream's queued responses, as the transport takes them.
  std::vector<std::vector<Outgoing>> queued(readers.size());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  auto count = [&] { return queued[0].size() + queued[1].size() + queued[2].size(); };
  while (count() < 8 && std::chrono::steady_clock::now() < deadline) {
    for (size_t i = 0; i < readers.size(); ++i) {
      Outgoing o;
      while (readers[i]->stream()->Next(&o)) {
        queued[i].push_back(std::move(o));
        readers[i]->stream()->WriteDone();
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(count(), 8u);  // revisions 2 and 3 for four watchers
  auto of = [&](size_t stream, int64_t id, int64_t revision) -> const Outgoing& {
    for (const Outgoing& o : queued[stream])
      if (o.meta.watch_id() == id && o.meta.header().revision() == revision) return o;
    ADD_FAILURE() << "no response for watcher " << id << " at " << revision << " on stream " << stream;
    static const Outgoing none;
    return none;
  };
  for (int64_t rev : {2, 3}) {
    const Outgoing& first = of(0, 0, rev);
    ASSERT_EQ(first.events.size(), 1u);
    EXPECT_EQ(first.meta.events_size(), 0);  // the events travel in the shared block only
    ASSERT_EQ(of(1, 0, rev).events.size(), 1u);
    ASSERT_EQ(of(2, 0, rev).events.size(), 1u);
    ASSERT_EQ(of(0, 1, rev).events.size(), 1u);
    EXPECT_EQ(of(1, 0, rev).events[0].get(), first.events[0].get());
    EXPECT_EQ(of(2, 0, rev).events[0].get(), first.events[0].get());
    EXPECT_NE(of(0, 1, rev).events[0].get(), first.events[0].get());  // prev_kv: another selection
  }
  EXPECT_EQ(h.hub().encodings(), 4u);  // two revisions, each with and without prev_kv

  // The parts together are the response etcd sends: one event (q is outside the range), prev_kv if asked.
  const WatchResponse plain = of(2, 0, 3).Assemble();
  ASSERT_EQ(plain.events_size(), 1);
  EXPECT_EQ(plain.watch_id(), 0);
  EXPECT_EQ(plain.header().revision(), 3);
  EXPECT_EQ(plain.events(0).kv().value(), "y");
  EXPECT_EQ(plain.events(0).kv().version(), 2);
  EXPECT_FALSE(plain.events(0).has_prev_kv());
  const WatchResponse prev = of(0, 1, 3).Assemble();
  ASSERT_EQ(prev.events_size(), 1);
  EXPECT_EQ(prev.watch_id(), 1);
  EXPECT_EQ(prev.events(0).prev_kv().value(), "x");
  EXPECT_EQ(of(0, 0, 3).bytes, plain.ByteSizeLong());  // the stream's bound counts what is written
}

// Polls `stream` for its next response for up to 10 s (the dispatcher queues it from its own thread).
std::optional<Outgoing> NextWithin10s(WatchStream* stream) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    Outgoing o;
    if (stream->Next(&o)) return o;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// Waits up to 10 s for the hub to reach `done` (read through its own accessors, which take its lock: once
// one holds, the round that made it so is over).
bool HubReaches(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// A watcher catching up from the history shares the blocks the dispatch round encoded: the round that
// dispatches a revision to a synced watcher and catches a lagging watcher up through it encodes the
// revision once for both. The hub shares blocks within a round (docs/watch.md), so the test makes that
// one round: the dispatcher starts once both watchers are in place and the revision is visible. (With the
// dispatcher running, a round between the lagging stream's getting room and the revision's becoming
// visible catches the watcher up to the revision before, alone; that case is the next test.)
TEST(WatchHub, CatchUpSharesTheRoundsEncodedBlocks) {
  HubOptions options;
  options.stream_max_responses = 1;
  Harness h(options, /*visible=*/2, /*start=*/false);
  h.log().Publish(1, {});
  h.log().Publish(2, {Put("p/a", "1", 2, 2, 1)});
  Reader synced(&h.hub());
  h.hub().Create(synced.stream(), Req("p/", "p0"));  // watch id 0, from revision 3: synced
  Reader behind(&h.hub());
  h.hub().Create(behind.stream(), Req("p/", "p0", 2));  // watch id 0, from revision 2: catches up
  ASSERT_EQ(h.hub().dispatched(), 2);
  ASSERT_EQ(h.hub().unsynced(), 1u);
  synced.Drain();  // the created responses (no wake-up: nobody waits for room)
  behind.Drain();
  ASSERT_EQ(synced.got().size(), 1u);
  ASSERT_EQ(behind.got().size(), 1u);
  h.log().Publish(3, {Put("p/b", "2", 3, 3, 1)});
  h.SetVisible(3);
  h.Start();  // its first round dispatches revision 3 and catches the lagging watcher up through it

  const std::optional<Outgoing> mine = NextWithin10s(synced.stream());
  ASSERT_TRUE(mine.has_value());
  ASSERT_EQ(mine->meta.header().revision(), 3);
  ASSERT_EQ(mine->events.size(), 1u);
  const std::optional<Outgoing> caught_up = NextWithin10s(behind.stream());
  ASSERT_TRUE(caught_up.has_value());
  EXPECT_EQ(caught_up->meta.header().revision(), 3);
  EXPECT_EQ(caught_up->meta.events_size(), 0);  // the events travel in the shared blocks only
  ASSERT_EQ(caught_up->events.size(), 2u);      // one block per revision, in revision order
  EXPECT_EQ(caught_up->events[1].get(), mine->events[0].get()) << "revision 3 encoded twice in the round";
  EXPECT_EQ(h.hub().encodings(), 2u);  // revision 2 for the catch-up, revision 3 for both
  std::vector<int64_t> revisions;
  const WatchResponse whole = caught_up->Assemble();
  for (const auto& e : whole.events()) revisions.push_back(e.kv().mod_revision());
  EXPECT_EQ(revisions, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(h.hub().unsynced(), 0u);
}

// The other order of the same events: the lagging stream gets room before the revision is visible, so a
// round catches the watcher up to the dispatched revision alone and it is synced; the new revision then
// finds its one-slot queue full (the catch-up response is still queued), the watcher falls behind at it
// and catches it up in a later round, once the queue has drained. It gets every revision once, in order;
// the later round encodes the revision again (blocks are shared within a round only).
TEST(WatchHub, AWatcherCaughtUpBeforeARevisionIsVisibleGetsItOnceAfterFallingBehindAtIt) {
  HubOptions options;
  options.stream_max_responses = 1;
  Harness h(options, /*visible=*/2, /*start=*/false);
  h.log().Publish(1, {});
  h.log().Publish(2, {Put("p/a", "1", 2, 2, 1)});
  Reader synced(&h.hub());
  h.hub().Create(synced.stream(), Req("p/", "p0"));  // watch id 0, from revision 3: synced
  auto behind = h.hub().OpenStream([] {});
  h.hub().Create(behind.get(), Req("p/", "p0", 2));  // watch id 0, from revision 2: catches up
  synced.Drain();
  Outgoing created;
  ASSERT_TRUE(behind->Next(&created));  // the queue has room; the write stays in flight
  ASSERT_TRUE(created.meta.created());
  h.log().Publish(3, {Put("p/b", "2", 3, 3, 1)});  // not visible yet
  h.Start();  // its first round catches the watcher up to revision 2: it is synced
  ASSERT_TRUE(HubReaches([&] { return h.hub().unsynced() == 0; }));
  EXPECT_EQ(h.hub().dispatched(), 2);
  EXPECT_EQ(behind->queued(), 1u);  // revision 2's response: the queue is full
  h.SetVisible(3);  // a round dispatches revision 3: the synced stream takes it, the full one does not
  ASSERT_TRUE(HubReaches([&] { return h.hub().dispatched() == 3; }));
  EXPECT_EQ(h.hub().unsynced(), 1u) << "a full stream's watcher did not fall behind";
  const std::optional<Outgoing> mine = NextWithin10s(synced.stream());
  ASSERT_TRUE(mine.has_value());
  ASSERT_EQ(mine->meta.header().revision(), 3);

  behind->WriteDone();  // the created response is written: the queue still holds revision 2's
  std::vector<int64_t> revisions;
  for (int i = 0; i < 2; ++i) {
    const std::optional<Outgoing> o = NextWithin10s(behind.get());
    ASSERT_TRUE(o.has_value()) << "response " << i;
    EXPECT_EQ(o->meta.header().revision(), 2 + i);
    ASSERT_EQ(o->events.size(), 1u);
    const WatchResponse whole = o->Assemble();
    for (const auto& e : whole.events()) revisions.push_back(e.kv().mod_revision());
    behind->WriteDone();  // the second WriteDone drains the queue: the dispatcher catches revision 3 up
  }
  EXPECT_EQ(revisions, (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(HubReaches([&] { return h.hub().unsynced() == 0; }));
  Outgoing more;
  EXPECT_FALSE(behind->Next(&more)) << "a revision delivered twice";
  h.hub().CloseStream(behind.get());
}

// The dispatcher must not deliver a revision before it is durable (visible): a crash could take it back.
TEST(WatchHub, RevisionsAreDeliveredOnlyOnceVisible) {
  Harness h(HubOptions(), /*visible=*/1);
  h.log().Publish(1, {});
  Reader reader(&h.hub());
  h.hub().Create(reader.stream(), Req("k"));
  for (int r = 2; r <= 5; ++r) h.log().Publish(r, {Put("k", std::to_string(r), r, 2, r - 1)});
  h.SetVisible(3);
  ASSERT_TRUE(reader.DrainUntil([](auto& g) { return CountEvents(g, 0) >= 2; }));
  reader.DrainFor(std::chrono::milliseconds(100));
  EXPECT_EQ(CountEvents(reader.got(), 0), 2u) << "delivered a revision that is not durable";
  EXPECT_EQ(h.hub().dispatched(), 3);
  h.SetVisible(5);  // the durability callback wakes the dispatcher: no polling
  ASSERT_TRUE(reader.DrainUntil([](auto& g) { return CountEvents(g, 0) == 4; }));
  const auto events = reader.Events(0);
  for (size_t i = 0; i < events.size(); ++i) EXPECT_EQ(events[i].kv().mod_revision(), 2 + int64_t(i));
}

TEST(WatchHub, StartRevisionZeroMeansAfterTheVisibleRevisionAndAPastOneReadsHistory) {
  Harness h;
  h.log().Publish(1, {});
  for (int r = 2; r <= 6; ++r) h.log().Publish(r, {Put("k", std::to_string(r), r, 2, r - 1)});
  Reader reader(&h.hub());
  h.hub().Create(reader.stream(), Req("k"));           // 0: from 7
  h.hub().Create(reader.stream(), Req("k", "", 3));    // 1: from 3
  h.hub().Create(reader.stream(), Req("k", "", 100));  // 2: from 100 (future)
  h.log().Publish(7, {Put("k", "7", 7, 2, 6)});
  ASSERT_TRUE(reader.DrainUntil([](auto& g) { return CountEvents(g, 0) == 1 && CountEvents(g, 1) == 5; }));
  EXPECT_EQ(reader.got()[0].header().revision(), 6);
  const auto from3 = reader.Events(1);
  for (size_t i = 0; i < from3.size(); ++i) EXPECT_EQ(from3[i].kv().mod_revision(), 3 + int64_t(i));
  EXPECT_EQ(CountEvents(reader.got(), 2), 0u);
}

TEST(WatchHub, CompactedStartRevisionIsCanceledWithTheCompactRevision) {
  Harness h;
  h.log().Publish(1, {});
  for (int r = 2; r <= 20; ++r) h.log().Publish(r, {Put("k", "v", r, 2, r - 1)});
  h.log().Trim(10);
  Reader reader(&h.hub());
  h.hub().Create(reader.stream(), Req("k", "", 5));
  h.hub().Create(reader.stream(), Req("k", "", 10));
  ASSERT_TRUE(reader.DrainUntil([](auto& g) { return g.size() >= 4; }));
  EXPECT_TRUE(reader.got()[0].created());
  EXPECT_FALSE(reader.got()[0].canceled());
  bool compacted = false;
  for (const auto& r : reader.got()) {
    if (r.watch_id() == 0 && r.canceled()) {
      compacted = true;
      EXPECT_EQ(r.compact_revision(), 10);
      EXPECT_EQ(r.events_size(), 0);
    }
  }
  EXPECT_TRUE(compacted);
  EXPECT_EQ(CountEvents(reader.got(), 1), 11u);  // revisions 10..20 are still there
  EXPECT_EQ(h.hub().watchers(), 1u);
}

// A compaction while the dispatcher still holds revisions it has not delivered (they are not durable
// yet): the history keeps them for the watchers that are keeping up, but a watcher behind them is told
// the compaction's revision, not the held start, so that resuming there works.
TEST(WatchHub, ACompactedWatcherIsToldTheCompactionNotTheHeldStart) {
  Harness h(HubOptions(), /*visible=*/5);
  h.log().Publish(1, {});
  Reader keeping_up(&h.hub());
  h.hub().Create(keeping_up.stream(), Req("k"));
  for (int r = 2; r <= 20; ++r) h.log().Publish(r, {Put("k", "v", r, 2, r - 1)});
  ASSERT_TRUE(keeping_up.DrainUntil([](auto& g) { return CountEvents(g, 0) >= 4; }));  // 2..5
  h.log().Trim(15);
  EXPECT_LT(h.log().first(), 15) << "the hold keeps what is not dispatched yet";
  Reader behind(&h.hub());
  h.hub().Create(behind.stream(), Req("k", "", 3));
  ASSERT_TRUE(behind.DrainUntil([](auto& g) { return g.size() >= 2; }));
  ASSERT_TRUE(behind.got()[1].canceled());
  EXPECT_EQ(behind.got()[1].compact_revision(), 15);
}

// etcd cancels a watch whose start revision is below the compaction, even if that revision is still
// in the history because the dispatcher holds it for watchers that keep up (not durable yet).
TEST(WatchHub, AStartBelowTheCompactionIsCanceledEvenWhileTheHistoryHoldsIt) {
  Harness h(HubOptions(), /*visible=*/5);
  h.log().Publish(1, {});
  Reader keeping_up(&h.hub());
  h.hub().Create(keeping_up.stream(), Req("k"));
  for (int r = 2; r <= 20; ++r) h.log().Publish(r, {Put("k", "v", r, 2, r - 1)});
  ASSERT_TRUE(keeping_up.DrainUntil([](auto& g) { return CountEvents(g, 0) >= 4; }));  // 2..5
  h.log().Trim(15);
  ASSERT_LE(h.log().first(), 8) << "the hold keeps what is not dispatched yet";
  Reader late(&h.hub());
  h.hub().Create(late.stream(), Req("k", "", 8));   // held, but compacted
  h.hub().Create(late.stream(), Req("k", "", 15));  // the compaction's revision: served
  h.SetVisible(20);
  ASSERT_TRUE(late.DrainUntil([](auto& g) { return CountEvents(g, 1) >= 6; }));
  ASSERT_GE(late.got().size(), 3u);
  bool canceled = false;
  for (const auto& r : late.got()) {
    if (r.watch_id() != 0 || r.created()) continue;
    ASSERT_TRUE(r.canceled()) << r.ShortDebugString();
    EXPECT_EQ(r.compact_revision(), 15);
    canceled = true;
  }
  EXPECT_TRUE(canceled);
  EXPECT_EQ(CountEvents(late.got(), 0), 0u);
  EXPECT_EQ(late.Events(1).front().kv().mod_revision(), 15);
  // The watcher that keeps up still gets every held revision.
  ASSERT_TRUE(keeping_up.DrainUntil([](auto& g) { return CountEvents(g, 0) >= 19; }));
}

// A stream that stops reading: its watcher falls behind (the queue stays bounded, the dispatcher keeps
// going for others), then catches up from the history with every revision exactly once, in order.
TEST(WatchHub, SlowStreamFallsBehindAndCatchesUpWithoutGapsOrDuplicates) {
  const uint32_t seed = std::random_device{}();
  std::printf("seed %u\n", seed);
  std::mt19937 rng(seed);
  HubOptions options;
  options.stream_max_responses = 4;
  options.stream_max_bytes = 1 << 20;
  Harness h(options);
  h.log().Publish(1, {});
  Reader slow(&h.hub());
  Reader fast(&h.hub());
  h.hub().Create(slow.stream(), Req("k/", "k0"));
  h.hub().Create(fast.stream(), Req("k/", "k0"));
  std::atomic<bool> writing{true};
  constexpr int kRevisions = 3000;
  std::thread writer([&] {
    for (int r = 2; r <= kRevisions + 1; ++r) {
      std::vector<WatchEvent> evs;
      const int n = 1 + static_cast<int>(rng() % 3);
      for (int i = 0; i < n; ++i) evs.push_back(Put("k/" + std::to_string(i), "v", r, r, 1));
      h.log().Publish(r, std::move(evs));
    }
    writing = false;
  });
  // The fast reader reads all along; the slow one not at all while the writer runs.
  while (writing) {
    fast.Drain();
    EXPECT_LE(slow.stream()->queued(), 4u + 1);
  }
  writer.join();
  ASSERT_TRUE(
      fast.DrainUntil([&](auto& g) { return !g.empty() && g.back().header().revision() == kRevisions + 1; }));
  EXPECT_GE(h.hub().unsynced(), 1u) << "the slow watcher never fell behind: the test proves nothing";
  ASSERT_TRUE(slow.DrainUntil([&](auto& g) {
    const auto evs = [&] {
      std::vector<int64_t> revs;
      for (const auto& r : g)
        for (const auto& e : r.events()) revs.push_back(e.kv().mod_revision());
      return revs;
    }();
    return !evs.empty() && evs.back() == kRevisions + 1;
  }));
  for (Reader* r : {&slow, &fast}) {
    int64_t last = 1;
    std::map<int64_t, int> per_revision;
    for (const auto& e : r->Events(0)) {
      ASSERT_GE(e.kv().mod_revision(), last) << "out of order (seed " << seed << ")";
      last = e.kv().mod_revision();
      ++per_revision[last];
    }
    ASSERT_EQ(per_revision.size(), static_cast<size_t>(kRevisions)) << "gap (seed " << seed << ")";
    std::vector<std::shared_ptr<const RevisionEvents>> all;
    ASSERT_TRUE(h.log().Read(2, kRevisions + 1, &all));
    for (const auto& b : all) {
      ASSERT_EQ(per_revision[b->revision], static_cast<int>(b->events.size()))
          << "revision " << b->revision << " (seed " << seed << ")";
    }
  }
  EXPECT_EQ(h.hub().unsynced(), 0u);
}

// Nobody watching: the dispatcher is not woken by writes and holds no history; the first watcher
// restarts it at the durable revision.
TEST(WatchHub, IdleWithoutWatchersAndRestartsAtTheFirstOne) {
  Harness h(HubOptions(), /*visible=*/3);
  for (int r = 1; r <= 5; ++r) h.log().Publish(r, {Put("k", "v", r, 1, r)});
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(h.hub().dispatched(), 0);
  h.log().Trim(4);
  EXPECT_EQ(h.log().first(), 4) << "the history was held with nobody watching";
  Reader reader(&h.hub());
  h.hub().Create(reader.stream(), Req("k"));
  EXPECT_EQ(h.hub().dispatched(), 3);
  h.SetVisible(5);
  ASSERT_TRUE(reader.DrainUntil([](auto& g) { return CountEvents(g, 0) == 2; }));
  EXPECT_EQ(reader.Events(0)[0].kv().mod_revision(), 4);
}

TEST(WatchHub, CancelAndProgressRequests) {
  Harness h;
  h.log().Publish(1, {});
  h.log().Publish(2, {Put("k", "v", 2, 2, 1)});
  Reader reader(&h.hub());
  h.hub().Create(reader.stream(), Req("k"));
  ASSERT_TRUE(reader.DrainUntil([](auto& g) { return g.size() == 1; }));
  h.hub().Cancel(reader.stream(), 0);
  h.hub().Cancel(reader.stream(), 42);  // unknown: no answer, as etcd
  h.hub().Progress(reader.stream());
  h.log().Publish(3, {Put("k", "v", 3, 2, 2)});
  reader.DrainFor(std::chrono::milliseconds(100));
  ASSERT_EQ(reader.got().size(), 3u);
  EXPECT_TRUE(reader.got()[1].canceled());
  EXPECT_EQ(reader.got()[1].watch_id(), 0);
  EXPECT_EQ(reader.got()[2].watch_id(), -1);
  EXPECT_EQ(reader.got()[2].header().revision(), 2);
  EXPECT_EQ(reader.got()[2].events_size(), 0);
  EXPECT_EQ(h.hub().watchers(), 0u);
}

TEST(WatchHub, PeriodicProgressNotifySkipsWatchersThatGotEvents) {
  HubOptions options;
  options.progress_interval = std::chrono::milliseconds(100);
  Harness h(options);
  h.log().Publish(1, {});
  Reader reader(&h.hub());
  WatchCreateRequest with = Req("k");
  with.set_progress_notify(true);
  h.hub().Create(reader.stream(), with);      // 0
  h.hub().Create(reader.stream(), Req("j"));  // 1: did not ask
  ASSERT_TRUE(reader.DrainUntil([](auto& g) {
    for (const auto& r : g)
      if (r.watch_id() == 0 && !r.created() && r.events_size() == 0) return true;
    return false;
  }));
  for (const auto& r : reader.got()) EXPECT_FALSE(r.watch_id() == 1 && !r.created());
  EXPECT_EQ(reader.got().back().header().revision(), 1);
}

TEST(WatchHub, FragmentSplitsALargeRevisionAtMaxRequestBytes) {
  HubOptions options;
  options.max_request_bytes = 1000;
  Harness h(options);
  h.log().Publish(1, {});
  Reader reader(&h.hub());
  WatchCreateRequest frag = Req("", kFromKey);
  frag.set_fragment(true);
  h.hub().Create(reader.stream(), frag);               // 0
  h.hub().Create(reader.stream(), Req("", kFromKey));  // 1: whole
  std::vector<WatchEvent> big;
  for (int i = 0; i < 10; ++i) big.push_back(Put("k" + std::to_string(i), std::string(300, 'x'), 2, 2, 1));
  h.log().Publish(2, big);
  ASSERT_TRUE(reader.DrainUntil([](auto& g) { return CountEvents(g, 0) == 10 && CountEvents(g, 1) == 10; }));
  int fragments = 0;
  for (const auto& r : reader.got()) {
    if (r.watch_id() != 0 || r.events_size() == 0) continue;
    ++fragments;
    EXPECT_LT(r.ByteSizeLong(), 1000u + 400);
    EXPECT_EQ(r.header().revision(), 2);
  }
  EXPECT_GE(fragments, 3);
  int fragment_flags = 0;
  for (const auto& r : reader.got())
    if (r.watch_id() == 0 && r.fragment()) ++fragment_flags;
  EXPECT_EQ(fragment_flags, fragments - 1);  // all but the last
  int whole = 0;
  for (const auto& r : reader.got())
    if (r.watch_id() == 1 && r.events_size() > 0) ++whole;
  EXPECT_EQ(whole, 1);
}

// Watchers of a stream at the same revision with the same selection catch up together: one read of the
// history per revision for the group, not one per watcher. The watchers (two groups: plain and prev_kv)
// are all created before the dispatcher starts, and the stream has room for all of them, so its first
// round catches every one of them up.
TEST(WatchHub, WatchersAtOneRevisionCatchUpWithOneHistoryReadPerRevisionPerGroup) {
  constexpr int kWatchers = 32;  // per group
  constexpr int kRevisions = 50;
  HubOptions options;
  options.stream_max_responses = 4 * kWatchers;
  Harness h(options, std::numeric_limits<int64_t>::max(), /*start=*/false);
  h.log().Publish(1, {});
  for (int r = 2; r <= kRevisions + 1; ++r) {
    // Two changes of one key (created before the history starts), so the second has a previous value.
    const WatchEvent first = Put("p/" + std::to_string(r % 7), "a", r, 1, 1);
    h.log().Publish(r,
                    {first, Put("p/" + std::to_string(r % 7), "b", r, 1, 2, &first), Put("q", "x", r, r, 1)});
  }
  Reader reader(&h.hub());
  for (int i = 0; i < 2 * kWatchers; ++i) {
    WatchCreateRequest req = Req("p/", "p0", 2);
    req.set_prev_kv(i % 2 == 1);
    h.hub().Create(reader.stream(), req);
  }
  EXPECT_EQ(h.hub().unsynced(), 2u * kWatchers);
  h.Start();
  ASSERT_TRUE(reader.DrainUntil([&](auto& g) {
    for (int id = 0; id < 2 * kWatchers; ++id)
      if (CountEvents(g, id) < 2u * kRevisions) return false;
    return true;
  }));
  reader.DrainFor(std::chrono::milliseconds(50));
  EXPECT_EQ(h.hub().catch_up_reads(), 2u * kRevisions)
      << "each group (plain, prev_kv) should read each revision once";
  for (int id = 0; id < 2 * kWatchers; ++id) {
    const std::vector<mvccpb::Event> events = reader.Events(id);
    ASSERT_EQ(events.size(), 2u * kRevisions) << "watcher " << id;
    for (int r = 2; r <= kRevisions + 1; ++r) {
      const mvccpb::Event& a = events[2 * (r - 2)];
      const mvccpb::Event& b = events[2 * (r - 2) + 1];
      EXPECT_EQ(a.kv().mod_revision(), r);
      EXPECT_EQ(a.kv().value(), "a");
      EXPECT_EQ(b.kv().value(), "b");
      EXPECT_EQ(b.has_prev_kv(), id % 2 == 1) << "watcher " << id;
    }
  }
  EXPECT_EQ(h.hub().unsynced(), 0u);
}

// Watchers with the same range, filters and prev_kv share one interest (an idle watcher holds no copy
// of its range): the hub keeps one per distinct selection, on any stream, and frees it with its last
// watcher, whether canceled or closed with its stream; refused creates make none. The watchers that
// share it keep getting exactly their events after the others are gone.
TEST(WatchHub, WatchersWithTheSameSelectionShareOneInterestFreedWithItsLastWatcher) {
  Harness h;
  h.log().Publish(1, {});
  Reader a(&h.hub());
  Reader b(&h.hub());
  for (int i = 0; i < 100; ++i) {
    WatchCreateRequest req = Req("p/", "p0");
    req.set_prev_kv(i % 2 == 1);
    h.hub().Create((i < 50 ? a : b).stream(), req);  // ids 0..49 on a, 0..49 on b
  }
  EXPECT_EQ(h.hub().watchers(), 100u);
  EXPECT_EQ(h.hub().interests(), 2u) << "one per selection (prefix, prefix with prev_kv)";
  WatchCreateRequest noput = Req("p/", "p0");
  noput.add_filters(WatchCreateRequest::NOPUT);
  h.hub().Create(b.stream(), noput);       // b: 50
  h.hub().Create(b.stream(), Req("p/1"));  // b: 51, one key of the prefix: another selection
  EXPECT_EQ(h.hub().interests(), 4u);
  h.hub().Create(b.stream(), Req("p/", "p0"));  // b: 52, the plain prefix again
  WatchCreateRequest duplicate = Req("p/9");
  duplicate.set_watch_id(3);  // taken on b
  h.hub().Create(b.stream(), duplicate);
  h.hub().Create(b.stream(), Req("z", "a"));  // an empty range
  EXPECT_EQ(h.hub().watchers(), 103u);
  EXPECT_EQ(h.hub().interests(), 4u) << "a refused create left an interest behind";

  // Cancel every plain prefix watcher but b's 52: the interest stays while one has it.
  for (int id = 0; id < 50; id += 2) {
    h.hub().Cancel(a.stream(), id);
    h.hub().Cancel(b.stream(), id);
  }
  EXPECT_EQ(h.hub().interests(), 4u);
  const WatchEvent first = Put("p/1", "v1", 2, 2, 1);
  h.log().Publish(2, {first});
  h.log().Publish(3, {Del("p/1", 3, first.kv)});
  ASSERT_TRUE(b.DrainUntil([](auto& g) { return CountEvents(g, 52) == 2 && CountEvents(g, 50) == 1; }));
  ASSERT_TRUE(a.DrainUntil([](auto& g) { return CountEvents(g, 1) == 2; }));
  b.DrainFor(std::chrono::milliseconds(50));
  const std::vector<mvccpb::Event> plain = b.Events(52);
  ASSERT_EQ(plain.size(), 2u);
  EXPECT_EQ(plain[0].type(), mvccpb::Event::PUT);
  EXPECT_FALSE(plain[0].has_prev_kv());
  EXPECT_EQ(plain[1].type(), mvccpb::Event::DELETE);
  EXPECT_FALSE(plain[1].has_prev_kv());
  const std::vector<mvccpb::Event> with_prev = a.Events(1);
  ASSERT_EQ(with_prev.size(), 2u);
  EXPECT_TRUE(with_prev[1].has_prev_kv());
  EXPECT_EQ(with_prev[1].prev_kv().value(), "v1");
  ASSERT_EQ(b.Events(50).size(), 1u);  // NOPUT: the delete only
  EXPECT_EQ(b.Events(50)[0].type(), mvccpb::Event::DELETE);
  EXPECT_EQ(b.Events(51).size(), 2u);  // the one key
  EXPECT_EQ(CountEvents(b.got(), 0), 0u) << "a canceled watcher got events";

  h.hub().Cancel(b.stream(), 52);
  EXPECT_EQ(h.hub().interests(), 3u) << "the plain prefix's last watcher is gone, not its interest";
  h.hub().CloseStream(b.stream());
  EXPECT_EQ(h.hub().interests(), 1u) << "b's NOPUT and one-key watchers are gone with their stream";
  h.hub().CloseStream(a.stream());
  EXPECT_EQ(h.hub().interests(), 0u);
  EXPECT_EQ(h.hub().watchers(), 0u);
}

// A stream whose watchers wait for room wakes the dispatcher once its queue has drained to half, not at
// the first free slot, so that one round catches many of them up (together) rather than one per slot;
// and while it has no room, rounds do not read the history for them.
TEST(WatchHub, AStreamWhoseWatchersFellBehindWakesTheDispatcherOnceDrainedToHalf) {
  HubOptions options;
  options.stream_max_responses = 8;
  // Started once everything is in place, so that its first round is the only one until the test drains.
  Harness h(options, std::numeric_limits<int64_t>::max(), /*start=*/false);
  h.log().Publish(1, {});
  for (int r = 2; r <= 5; ++r) h.log().Publish(r, {Put("k", std::to_string(r), r, 2, r - 1)});
  Reader reader(&h.hub());
  for (int i = 0; i < 7; ++i) h.hub().Progress(reader.stream());
  h.hub().Create(reader.stream(), Req("k", "", 2));  // its created response fills the queue: it waits
  ASSERT_EQ(reader.stream()->queued(), 8u);
  ASSERT_EQ(h.hub().unsynced(), 1u);
  ASSERT_EQ(h.hub().dispatched(), 5);
  // The first round dispatches revision 6 and does not read the history for a watcher whose stream has
  // no room for what it would read.
  h.log().Publish(6, {Put("k", "6", 6, 2, 5)});
  h.Start();
  const auto started = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (h.hub().dispatched() != 6 && std::chrono::steady_clock::now() < started)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(h.hub().dispatched(), 6);  // the round is over (dispatched() waits for the hub's lock)
  EXPECT_EQ(h.hub().catch_up_reads(), 0u) << "read the history for a stream without room";
  EXPECT_EQ(reader.stream()->queued(), 8u);
  auto take = [&](int n) {
    for (int i = 0; i < n; ++i) {
      Outgoing o;
      ASSERT_TRUE(reader.stream()->Next(&o));
      reader.stream()->WriteDone();
    }
  };
  take(3);  // 5 queued: room, but more than half
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(reader.stream()->queued(), 5u) << "woken before the queue drained to half";
  EXPECT_EQ(h.hub().unsynced(), 1u);
  EXPECT_EQ(h.hub().catch_up_reads(), 0u);
  take(1);  // 4 queued: half
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (h.hub().unsynced() != 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(h.hub().unsynced(), 0u);
  ASSERT_TRUE(reader.DrainUntil([](auto& g) { return CountEvents(g, 0) == 5; }));
  EXPECT_EQ(h.hub().catch_up_reads(), 5u);  // revisions 2 to 6, once
}

// Grouped catch-up under concurrency: a writer publishes, watchers of several selections join (from now
// or from a past revision) and leave (cancel) on streams read at different speeds (so they fall behind
// and catch up, in groups that form and dissolve), and the history is compacted midway. Every watcher's
// stream is exactly the history of its selection from its start (all of it, or a prefix up to its
// cancel, or up to a compaction that overtook it, which it is told), each revision in one response.
TEST(WatchHub, GroupedCatchUpGivesEveryWatcherExactlyItsHistoryUnderConcurrency) {
  const uint32_t seed = std::random_device{}();
  std::printf("seed %u\n", seed);
  HubOptions options;
  options.stream_max_responses = 6;
  options.stream_max_bytes = 64 << 10;
  Harness h(options);
  h.log().Publish(1, {});
  constexpr int kRevisions = 6000;
  constexpr int kKeys = 12;
  // The whole history as published (the log trims it).
  std::vector<std::vector<WatchEvent>> history(kRevisions + 2);
  std::atomic<int64_t> published{1};
  std::atomic<bool> writing{true};
  // A stream nobody reads until the writer is done, with a watcher the compaction overtakes in every run
  // (whether it overtakes any of the others depends on how far behind the dispatcher and the readers are).
  Reader overtaken(&h.hub());
  constexpr int64_t kOvertakenFrom = kRevisions / 2 - 150;
  std::thread writer([&] {
    std::mt19937 rng(seed);
    std::map<std::string, store::KvRecord> live;
    for (int r = 2; r <= kRevisions + 1; ++r) {
      std::vector<WatchEvent> evs;
      const int n = static_cast<int>(rng() % 4);  // 0: a revision without events
      std::set<std::string> touched;
      for (int i = 0; i < n; ++i) {
        const std::string key = "k/" + std::to_string(rng() % kKeys);
        if (!touched.insert(key).second) continue;
        auto it = live.find(key);
        if (it != live.end() && rng() % 4 == 0) {
          evs.push_back(Del(key, r, it->second));
          live.erase(it);
          continue;
        }
        WatchEvent e;
        e.kv = store::KvRecord{key,
                               "v" + std::to_string(r),
                               it == live.end() ? r : it->second.create_revision,
                               r,
                               it == live.end() ? 1 : it->second.version + 1,
                               0};
        if (it != live.end()) {
          e.has_prev = true;
          e.prev = it->second;
        }
        live[key] = e.kv;
        evs.push_back(e);
      }
      history[r] = evs;
      h.log().Publish(r, std::move(evs));
      published.store(r);
      // A compaction midway: watchers below it are told so.
      if (r == kRevisions / 2) {
        // Progress responses fill the unread stream's queue, so no round catches its watcher up before
        // the compaction (Full): it is still at kOvertakenFrom when the compaction passes it.
        for (size_t i = 0; i < options.stream_max_responses; ++i) h.hub().Progress(overtaken.stream());
        h.hub().Create(overtaken.stream(), Req("k/", "k0", kOvertakenFrom));
        h.log().Trim(r - 100);
      }
      if (r % 8 == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    writing = false;
  });

  struct Made {
    WatchCreateRequest request;
    bool canceled_by_us = false;
  };
  constexpr int kStreams = 4;
  std::vector<std::unique_ptr<Reader>> readers;
  std::vector<std::vector<Made>> made(kStreams);  // by stream, in creation order = watch id
  for (int i = 0; i < kStreams; ++i) readers.push_back(std::make_unique<Reader>(&h.hub()));
  std::vector<std::thread> reading;
  for (int i = 0; i < kStreams; ++i) {
    reading.emplace_back([&, i] {
      std::mt19937 rng(seed + 1 + i);
      while (writing) {
        readers[i]->Drain();
        // Stream 0 reads fast; the others pause now and then, stream 3 for long.
        if (i > 0 && rng() % 8 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(i == 3 ? 20 : 2));
      }
    });
  }
  std::vector<WatchCreateRequest> kinds;
  kinds.push_back(Req("k/", "k0"));
  kinds.push_back(Req("k/1"));
  kinds.push_back(Req("k/2", "k/5"));
  kinds.push_back(Req("k/", "k0"));
  kinds.back().set_prev_kv(true);
  kinds.push_back(Req("k/", "k0"));
  kinds.back().add_filters(WatchCreateRequest::NOPUT);
  kinds.push_back(Req("", kFromKey));
  kinds.back().add_filters(WatchCreateRequest::NODELETE);
  kinds.back().set_prev_kv(true);
  std::mt19937 rng(seed + 100);
  while (writing) {
    const int s = static_cast<int>(rng() % kStreams);
    WatchCreateRequest req = kinds[rng() % kinds.size()];
    const int64_t now = published.load();
    // From now, or from a recent past revision (the same revision often, so groups form).
    if (rng() % 2 == 0)
      req.set_start_revision(std::max<int64_t>(2, now - static_cast<int64_t>(rng() % 3) * 50));
    made[s].push_back(Made{req});
    h.hub().Create(readers[s]->stream(), req);
    if (rng() % 3 == 0 && !made[s].empty()) {
      const int64_t id = static_cast<int64_t>(rng() % made[s].size());
      if (!made[s][id].canceled_by_us) {
        made[s][id].canceled_by_us = true;
        h.hub().Cancel(readers[s]->stream(), id);
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(300));
  }
  writer.join();
  for (auto& t : reading) t.join();
  EXPECT_EQ(h.log().compacted_to(), kRevisions / 2 - 100);
  // Everyone still watching gets to the end: every revision dispatched, nobody behind, every queue read.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  // What the hub had left when the writer stopped, for the message below (slow progress or none).
  const size_t unsynced_at_end = h.hub().unsynced();
  const uint64_t reads_at_end = h.hub().catch_up_reads();
  for (;;) {
    for (auto& r : readers) r->Drain();
    bool idle = h.hub().dispatched() == kRevisions + 1 && h.hub().unsynced() == 0;
    for (auto& r : readers) idle = idle && r->stream()->queued() == 0;
    if (idle) break;
    ASSERT_LT(std::chrono::steady_clock::now(), deadline)
        << "watchers never caught up (seed " << seed << "): dispatched " << h.hub().dispatched() << " of "
        << kRevisions + 1 << ", unsynced " << h.hub().unsynced() << " (" << unsynced_at_end
        << " when the writer stopped), revisions read to catch up since then "
        << h.hub().catch_up_reads() - reads_at_end << ", queued " << readers[0]->stream()->queued() << " "
        << readers[1]->stream()->queued() << " " << readers[2]->stream()->queued() << " "
        << readers[3]->stream()->queued();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  auto expected_event = [](const WatchCreateRequest& req, const WatchEvent& e) -> std::optional<std::string> {
    store::KeyRange range;
    range.begin = req.key();
    if (req.range_end().empty()) {
      range.single = true;
    } else if (req.range_end() != kFromKey) {
      range.end = req.range_end();
    }
    if (!range.Contains(e.kv.key)) return std::nullopt;
    for (int f : req.filters()) {
      if (f == WatchCreateRequest::NOPUT && !e.is_delete) return std::nullopt;
      if (f == WatchCreateRequest::NODELETE && e.is_delete) return std::nullopt;
    }
    std::string out = (e.is_delete ? "D " : "P ") + e.kv.key + " " + std::to_string(e.kv.mod_revision);
    if (!e.is_delete) out += " " + e.kv.value;
    const bool creation = !e.is_delete && e.kv.create_revision == e.kv.mod_revision;
    if (req.prev_kv() && e.has_prev && !creation) out += " prev " + e.prev.value;
    return out;
  };
  auto got_event = [](const mvccpb::Event& e) {
    const bool del = e.type() == mvccpb::Event::DELETE;
    std::string out = (del ? "D " : "P ") + e.kv().key() + " " + std::to_string(e.kv().mod_revision());
    if (!del) out += " " + e.kv().value();
    if (e.has_prev_kv()) out += " prev " + e.prev_kv().value();
    return out;
  };
  size_t watchers = 0, checked_events = 0, told_compacted = 0;
  for (int s = 0; s < kStreams; ++s) {
    for (int64_t id = 0; id < static_cast<int64_t>(made[s].size()); ++id) {
      const WatchCreateRequest& req = made[s][id].request;
      int64_t start = req.start_revision();
      std::vector<std::string> got;
      std::set<int64_t> seen_revisions;  // a revision's events come in one response
      int64_t compact_revision = 0;
      bool canceled = false;
      for (const auto& r : readers[s]->got()) {
        if (r.watch_id() != id) continue;
        if (r.created()) {
          ASSERT_FALSE(r.canceled());
          if (start == 0) start = r.header().revision() + 1;
          continue;
        }
        if (r.canceled()) {
          canceled = true;
          compact_revision = r.compact_revision();
          continue;
        }
        ASSERT_FALSE(canceled) << "events after the cancel (seed " << seed << ")";
        std::set<int64_t> here;
        for (const auto& e : r.events()) {
          got.push_back(got_event(e));
          here.insert(e.kv().mod_revision());
        }
        for (int64_t rev : here)
          ASSERT_TRUE(seen_revisions.insert(rev).second)
              << "revision " << rev << " split over responses (seed " << seed << ")";
      }
      ASSERT_GT(start, 0);
      // The history of its selection from its start, up to where it stopped.
      const int64_t upto = seen_revisions.empty() ? start - 1 : *seen_revisions.rbegin();
      const int64_t end = canceled ? upto : kRevisions + 1;
      std::vector<std::string> want;
      for (int64_t r = start; r <= end; ++r)
        for (const WatchEvent& e : history[r])
          if (auto x = expected_event(req, e)) want.push_back(*x);
      ASSERT_EQ(got, want) << "stream " << s << " watcher " << id << " from " << start << " (seed " << seed
                           << ")";
      if (compact_revision != 0) {
        ++told_compacted;
        EXPECT_FALSE(made[s][id].canceled_by_us && compact_revision == 0);
        EXPECT_GT(compact_revision, upto) << "told of a compaction below what it was sent";
      } else if (!made[s][id].canceled_by_us) {
        EXPECT_FALSE(canceled);
      }
      ++watchers;
      checked_events += got.size();
    }
  }
  std::printf(
      "%zu watchers, %zu events checked, %zu told of the compaction, %llu revisions read to catch up\n",
      watchers, checked_events, told_compacted, static_cast<unsigned long long>(h.hub().catch_up_reads()));
  EXPECT_GT(h.hub().catch_up_reads(), 0u) << "nobody caught up: the test proves nothing";
  EXPECT_GE(watchers, 20u) << "too few watchers joined while the writer wrote";
  // The watcher on the unread stream: created, then told of the compaction, and nothing in between.
  ASSERT_TRUE(overtaken.DrainUntil([](auto& g) {
    for (const auto& r : g)
      if (r.watch_id() == 0 && r.canceled()) return true;
    return false;
  })) << "the compaction overtook a watcher and did not tell it (seed "
      << seed << ")";
  std::vector<WatchResponse> its;
  for (const auto& r : overtaken.got())
    if (r.watch_id() == 0) its.push_back(r);
  ASSERT_EQ(its.size(), 2u) << "seed " << seed;
  EXPECT_TRUE(its[0].created());
  EXPECT_FALSE(its[0].canceled());
  EXPECT_TRUE(its[1].canceled());
  EXPECT_EQ(its[1].compact_revision(), kRevisions / 2 - 100);
  EXPECT_EQ(its[1].events_size(), 0);
}

}  // namespace
}  // namespace revkv::server::watch
