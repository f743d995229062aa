// The watch hub: etcd's watchers over the event history (event_log.h), grouped in streams.
//
// A stream (one gRPC Watch call) owns watchers and a bounded queue of outgoing responses; the transport
// takes responses from the queue one at a time (Next / WriteDone). A dispatcher thread delivers each
// revision once it is both in the log's contiguous prefix and visible (durable: <= the source's
// visible_revision), so a watcher never sees what a crash can take back. It wakes on the log's listener
// (a revision published) and on a durability callback it requests for the first revision it waits for,
// and on a timer for progress notifications only; it never polls.
//
// As etcd (mvcc/watchable_store.go), watchers are synced or unsynced. The dispatcher hands each new
// revision to every synced watcher whose range it touches, one response per revision. A revision's events
// are encoded once per distinct selection (the events a watcher's range and filters let through, with or
// without prev_kv) in a dispatch round: every watcher that gets the same selection queues a small response
// of its own (header, watch_id) followed by the same shared encoded block (Outgoing), which the transport
// writes as it is; a catch-up response is its own part followed by one shared block per revision. A
// watcher whose stream's queue is full (in bytes or in responses) becomes unsynced at that revision; writers
// are never held back and the queue never grows past its bound (control responses aside). An unsynced watcher
// (that one, or one created with a past start revision) catches up from the history when its stream
// has room, in responses of up to kCatchUpRevisions revisions, and becomes synced again once it reaches
// the dispatched revision. Unsynced watchers at the same revision with the same selection are caught up
// together: a round reads the history and selects each revision's blocks once for the group (Select),
// and each member queues only its own part in front of the shared blocks. A stream whose queue is full
// costs a round nothing for its unsynced watchers, and wakes the dispatcher once the queue has drained to
// half, so that one round catches many of them up at once. A watcher whose next revision is below the
// compaction (EventLog::compacted_to, even if the history still holds it for watchers that keep up) is
// canceled with compact_revision (etcd's answer to a compacted start revision).
//
// Thread-safety: thread-safe. Locks, in order: the hub's mu_, then a stream's mu_ (docs/locks.md). The
// event log's lock and the wake mutex are leaves. Nothing here runs STM transactions or touches the GC
// heap: any thread may call in.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "etcdserverpb/rpc.pb.h"
#include "server/watch/event_log.h"

namespace revkv::server::watch {

// What decides the events a watcher gets and their encoding: its range, its filters and prev_kv. The hub
// keeps one per distinct selection, shared by every watcher with it (WatchHub::Intern): watchers with
// the same interest get equal events from any revisions, so a dispatch round selects and encodes them
// once for all of them, and an idle watcher costs no copy of its range. Immutable but for `watchers`.
struct WatchInterest {
  store::KeyRange range;
  bool no_put = false;
  bool no_delete = false;
  bool prev_kv = false;
  std::string selector;  // all of the above as bytes: the key the hub finds it by
  size_t watchers = 0;   // under the hub's mu_: when it drops to 0 the hub deletes it
};

struct HubOptions {
  size_t stream_max_bytes = 4 << 20;   // queued bytes per stream before its watchers fall behind
  size_t stream_max_responses = 128;   // queued responses per stream (etcd's chanBufLen)
  size_t max_request_bytes = 1572864;  // fragment watchers' responses are split at this size (etcd)
  std::chrono::milliseconds progress_interval{10 * 60 * 1000};  // etcd's default: 10 minutes
};

// What the hub reads from the store; a seam so tests can hold durability back.
struct HubSource {
  EventLog* log = nullptr;
  // The newest revision clients may see (Store::VisibleRevision).
  std::function<int64_t()> visible_revision;
  // Arranges for `wake` to be called once `revision` is visible (or will never be: the log failed);
  // may call it at once. Called by the dispatcher with no lock held.
  std::function<void(int64_t revision, std::function<void()> wake)> on_visible;
};

class WatchHub;

// One queued response as it goes on the wire: `meta` (a WatchResponse: header, watch_id, flags, and for
// control responses and fragments the events too) followed by `events`, blocks each holding the encoded
// `events` field of a WatchResponse for one revision (repeated field 11: per event its tag, length and
// Event), shared between the watchers they go to. Protobuf's wire format lets a message be split so: fields
// may come in any order and the entries of a repeated field concatenate, so meta's encoding followed by the
// blocks parses as the whole response.
struct Outgoing {
  etcdserverpb::WatchResponse meta;
  std::vector<std::shared_ptr<const std::string>> events;  // in revision order; empty: meta is all
  size_t bytes = 0;                                        // meta's and the blocks' size (set by Push)

  // The whole response (tests; the transport writes meta and events as they are).
  etcdserverpb::WatchResponse Assemble() const;
};

// One stream's queue of outgoing responses and its watchers. Created by WatchHub::OpenStream.
// Thread-safety: thread-safe (Next and WriteDone from the transport; the rest from the hub).
class WatchStream {
 public:
  explicit WatchStream(WatchHub* hub, std::function<void()> on_ready, size_t max_bytes, size_t max_responses)
      : hub_(hub), on_ready_(std::move(on_ready)), max_bytes_(max_bytes), max_responses_(max_responses) {}

  // The transport: takes the next response to write into *out if no write is in flight; true if it did
  // (the caller writes it and then calls WriteDone). Never blocks.
  bool Next(Outgoing* out);
  // As above, assembled into one message (tests).
  bool Next(etcdserverpb::WatchResponse* out);
  // The transport: the write Next handed out is done. Wakes the dispatcher if watchers of this stream
  // fell behind and there is room again.
  void WriteDone();
  // Queued responses and bytes (tests, metrics).
  size_t queued() const;

 private:
  friend class WatchHub;
  // One watcher; every field under the hub's mu_.
  struct Watcher {
    WatchStream* stream = nullptr;
    int64_t id = 0;
    // Its range, filters and prev_kv, shared with every watcher that has the same (the hub's, counted;
    // set at creation).
    const WatchInterest* interest = nullptr;
    bool fragment = false;
    bool progress_notify = false;
    bool progress_due = true;  // etcd's progress[id]: cleared by an events response, set by each tick
    bool synced = false;
    // Synced: the first revision it wants (earlier ones are skipped). Unsynced: the next to catch up.
    int64_t next = 0;
  };

  // Under hub mu_: queues `responses` (all or none). `force`: control responses, always queued. False if
  // the queue is full (and not forced). Calls on_ready_ if the transport may be idle.
  bool Push(std::vector<Outgoing> responses, bool force);
  bool Push(std::vector<etcdserverpb::WatchResponse> responses, bool force);
  bool HasRoom() const;  // under mu_
  // Under hub mu_: true if Push would refuse a response now (and then WriteDone wakes the hub once the
  // queue has drained), so a catch-up need not read and select what it could not queue.
  bool Full();

  WatchHub* hub_;
  std::function<void()> on_ready_;  // called under hub mu_, never under this mu_
  const size_t max_bytes_;
  const size_t max_responses_;
  mutable std::mutex mu_;
  std::deque<Outgoing> queue_;  // under mu_
  size_t bytes_ = 0;            // under mu_
  bool writing_ = false;        // under mu_: a response handed out by Next
  bool lagging_ = false;        // under mu_: a watcher waits for room (wake on drain)
  // Under the hub's mu_:
  std::map<int64_t, std::unique_ptr<Watcher>> watchers_;
  int64_t next_id_ = 0;  // etcd: server-chosen ids start at 0
  bool closed_ = false;
};

class WatchHub {
 public:
  WatchHub(HubSource source, HubOptions options);
  ~WatchHub();  // Stop()s
  WatchHub(const WatchHub&) = delete;
  WatchHub& operator=(const WatchHub&) = delete;

  // Starts and stops the dispatcher thread. Stop is idempotent; streams stay open but get no more events.
  void Start();
  void Stop();

  // A new stream. `on_ready` is called (under the hub's lock, from any thread) when a response was
  // queued; it should call WatchStream::Next. The hub keeps the stream until CloseStream.
  std::shared_ptr<WatchStream> OpenStream(std::function<void()> on_ready);
  // Removes the stream's watchers; no on_ready call happens after it returns.
  void CloseStream(WatchStream* stream);

  // etcd's handling of a WatchCreateRequest (as normalized by etcd's recvLoop): queues the created
  // response (canceled with etcd's reason for a duplicate id or an empty range) and starts the watcher.
  void Create(WatchStream* stream, const etcdserverpb::WatchCreateRequest& request);
  // etcd's WatchCancelRequest: queues the canceled response; nothing for an unknown id (as etcd).
  void Cancel(WatchStream* stream, int64_t watch_id);
  // etcd's WatchProgressRequest: queues a response with watch_id -1 and the dispatched revision.
  void Progress(WatchStream* stream);
  // etcd's answer to a WatchCreateRequest its caller may not make (auth): queues a response created and
  // canceled, with watch id -1 and `reason`, at the visible revision; starts no watcher.
  void Refuse(WatchStream* stream, const std::string& reason);
  // Cancels every watcher of `stream` that `refuse` refuses (it answers the cancel reason, or nullopt to
  // keep the watcher), each with a canceled response carrying the reason: a permission revoked after a
  // watch was made ends it (revkv; etcd checks only at creation). `refuse` gets the watcher's range in
  // etcd's request form (key, range_end: empty for one key, "\0" for every key from `key` on) and runs
  // under the hub's lock: it must be quick and must not call into the hub.
  void CancelRefused(WatchStream* stream,
                     const std::function<std::optional<std::string>(const std::string& key,
                                                                    const std::string& range_end)>& refuse);

  // Wakes the dispatcher (a revision was published or became durable, or a stream has room). Never blocks
  // for long (a leaf mutex).
  void Wake();

  // The newest revision delivered to synced watchers.
  int64_t dispatched() const;
  // Event encodings made for synced watchers so far (a revision's selection shared by many watchers is
  // encoded once).
  uint64_t encodings() const;
  // Watchers now (all streams) and how many of them are unsynced.
  size_t watchers() const;
  size_t unsynced() const;
  // Revisions read from the history for catching up so far: one read per revision for every group of
  // unsynced watchers at the same revision with the same selection, not one per watcher.
  uint64_t catch_up_reads() const;
  // Distinct interests (range, filters, prev_kv) among the watchers now: one per selection, however
  // many watchers share it.
  size_t interests() const;

  static constexpr int64_t kCatchUpRevisions = 1000;  // etcd's watchBatchMaxRevs

 private:
  // A dispatch round's encoded blocks of one revision, by selection.
  struct CachedBlock {
    bool prev_kv = false;
    bool all = false;                 // every event of the revision (then `selection` is empty)
    std::vector<uint32_t> selection;  // else the indices of the events
    std::shared_ptr<const std::string> block;
  };
  struct CachedRevision {
    std::shared_ptr<const RevisionEvents> pin;  // keeps the key's address from being reused in the round
    std::vector<CachedBlock> blocks;
  };
  // A dispatch round's encoded blocks, by revision (the log's batch).
  using EncodingCache = std::unordered_map<const RevisionEvents*, CachedRevision>;
  // What the watchers with one interest get from the revisions [from, to] (a group: every watcher of the
  // round with that interest that is at `from` and goes to `to`): the shared blocks, one per revision
  // with events for them, in revision order, and how many events they hold.
  struct Selection {
    std::vector<std::shared_ptr<const RevisionEvents>> batches;  // the revisions (for fragments)
    std::vector<std::shared_ptr<const std::string>> blocks;
    size_t count = 0;  // events in the blocks
    size_t bytes = 0;  // the blocks' size
  };
  struct SelectionKey {
    // Interned: equal interests are the same object. A round runs under the hub's lock from start to
    // end and makes no interest (only Create does), so an interest deleted during the round (its last
    // watcher compacted) cannot have its address reused by another while the round's keys name it.
    const WatchInterest* interest = nullptr;
    int64_t from = 0;
    int64_t to = 0;
    bool operator==(const SelectionKey& o) const {
#ifdef REVKV_MUTATION_WATCH_GROUP_IGNORES_SELECTOR  // mutation switch: watchers of other ranges share
      return from == o.from && to == o.to;
#else
      return from == o.from && to == o.to && interest == o.interest;
#endif
    }
  };
  struct SelectionKeyHash {
    size_t operator()(const SelectionKey& k) const {
#ifdef REVKV_MUTATION_WATCH_GROUP_IGNORES_SELECTOR
      const size_t h = 0;
#else
      const size_t h = std::hash<const WatchInterest*>()(k.interest);
#endif
      return h ^ (std::hash<int64_t>()(k.from) * 0x9e3779b97f4a7c15ULL) ^ std::hash<int64_t>()(k.to << 17);
    }
  };
  // A dispatch round's state shared by its watchers (dropped after the round: the queued responses hold
  // the blocks they need).
  struct Round {
    EncodingCache blocks;  // encoded blocks by revision and selection
    std::unordered_map<SelectionKey, std::unique_ptr<Selection>, SelectionKeyHash> selections;
  };
  void Run();
  void Pass();          // one dispatch round: new revisions to synced watchers, then catch-up
  void ProgressTick();  // periodic progress notifications
  void CatchUp(WatchStream::Watcher* w, Round* round);  // requires mu_
  void Remove(WatchStream::Watcher* w);                 // requires mu_; deletes it
  // The interest with this range, these filters and prev_kv, counted for one more watcher (made if no
  // watcher has it); Release uncounts it and deletes it with its last watcher. Require mu_.
  const WatchInterest* Intern(store::KeyRange range, bool no_put, bool no_delete, bool prev_kv);
  void Release(const WatchInterest* interest);
  // The encoded block of the events of revision `b` that `w` gets (from *cache, or made and added there);
  // null if none passes its range and filters. Adds the number of events to *count.
  std::shared_ptr<const std::string> Block(const WatchStream::Watcher& w,
                                           const std::shared_ptr<const RevisionEvents>& revision,
                                           EncodingCache* cache, size_t* count);
  // What `w` gets from the revisions [from, to], shared by every watcher of the round with its selector
  // at `from` going to `to`: made by the first of them (from `known`, the batches of exactly those
  // revisions, or else read from the history) and found by the others. Null if the history no longer
  // holds `from` (compacted for `w`). Requires mu_.
  const Selection* Select(const WatchStream::Watcher& w, int64_t from, int64_t to,
                          const std::span<const std::shared_ptr<const RevisionEvents>>* known, Round* round);
  // The responses for `w` of `selection`, with header revision `header_revision`: its own part and the
  // shared blocks, or Build's fragments if it asked for fragments and the response reaches the limit;
  // empty if no event passes.
  std::vector<Outgoing> Respond(const WatchStream::Watcher& w, const Selection& selection,
                                int64_t header_revision) const;
  // The responses (fragments, if the watcher asked) for `events` of a watcher; empty if none pass.
  std::vector<etcdserverpb::WatchResponse> Build(const WatchStream::Watcher& w,
                                                 const std::vector<const WatchEvent*>& events,
                                                 int64_t header_revision) const;

  const HubSource source_;
  const HubOptions options_;
  mutable std::mutex mu_;
  std::map<WatchStream*, std::shared_ptr<WatchStream>> streams_;  // under mu_
  std::set<WatchStream::Watcher*> synced_;                        // under mu_
  std::set<WatchStream::Watcher*> unsynced_;                      // under mu_
  int64_t dispatched_;                                            // under mu_
  int64_t durable_wait_ = 0;     // under mu_: the revision a durability wake-up was asked for
  uint64_t encodings_ = 0;       // under mu_
  uint64_t catch_up_reads_ = 0;  // under mu_
  // The watchers' interests, by their selector bytes (the key views the interest's own string).
  std::unordered_map<std::string_view, std::unique_ptr<WatchInterest>> interests_;  // under mu_
  // Watchers in all streams; written under mu_, read by publishers without it (the log's listener wakes
  // the dispatcher only when there is a watcher, so a write costs no thread wake-up when nobody watches).
  std::atomic<size_t> live_watchers_{0};

  std::mutex wake_mu_;  // leaf: guards wake_ and stop_ for the condition variable
  std::condition_variable wake_cv_;
  bool wake_ = false;  // under wake_mu_
  bool stop_ = false;  // under wake_mu_
  std::thread thread_;
};

}  // namespace revkv::server::watch
