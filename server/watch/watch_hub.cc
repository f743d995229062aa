// The watch hub (watch_hub.h).
#include "server/watch/watch_hub.h"

#include <algorithm>

namespace revkv::server::watch {

namespace {

constexpr int64_t kInvalidWatchId = -1;  // clientv3.InvalidWatchID

// etcd's mvcc errors, as the created response's cancel_reason.
constexpr char kEmptyRange[] = "mvcc: watcher range is empty";
constexpr char kDuplicateId[] = "mvcc: duplicate watch ID provided on the WatchStream";

void ToEvent(const WatchEvent& e, bool with_prev, mvccpb::Event* out) {
  mvccpb::KeyValue* kv = out->mutable_kv();
  if (e.is_delete) {
    out->set_type(mvccpb::Event::DELETE);
    kv->set_key(e.kv.key);  // etcd's tombstone: the key and the deletion's revision only
    kv->set_mod_revision(e.kv.mod_revision);
  } else {
    out->set_type(mvccpb::Event::PUT);
    store::ToProto(e.kv, false, kv);
  }
  // etcd (v3rpc/watch.go) adds the key-value at mod_revision - 1 to every event but a creation
  // (create_revision == mod_revision); that is the key-value the change replaced.
  const bool creation = !e.is_delete && e.kv.create_revision == e.kv.mod_revision;
  if (with_prev && e.has_prev && !creation) store::ToProto(e.prev, false, out->mutable_prev_kv());
}

// The bytes that decide what a watcher gets and how it is encoded (WatchInterest::selector): the flags,
// then each key length-prefixed, so distinct ranges never give the same bytes.
std::string Selector(const store::KeyRange& range, bool no_put, bool no_delete, bool prev_kv) {
  std::string s;
  auto add = [&s](const std::string& bytes) {
    const uint64_t n = bytes.size();
    s.append(reinterpret_cast<const char*>(&n), sizeof(n));
    s += bytes;
  };
  s.push_back(
      static_cast<char>((range.single ? 1 : 0) | (no_put ? 2 : 0) | (no_delete ? 4 : 0) | (prev_kv ? 8 : 0)));
  add(range.begin);
  add(range.end);
  return s;
}

}  // namespace

// ----- WatchStream ---------------------------------------------------------------------------------------

bool WatchStream::HasRoom() const { return queue_.size() < max_responses_ && bytes_ < max_bytes_; }

etcdserverpb::WatchResponse Outgoing::Assemble() const {
  if (events.empty()) return meta;
  // Parsing the concatenation is what the client does with the bytes the transport writes.
  std::string wire = meta.SerializeAsString();
  for (const auto& block : events) wire += *block;
  etcdserverpb::WatchResponse whole;
  whole.ParseFromString(wire);
  return whole;
}

bool WatchStream::Full() {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_ || queue_.empty() || HasRoom()) return false;
  lagging_ = true;
  return true;
}

bool WatchStream::Push(std::vector<Outgoing> responses, bool force) {
  bool ready = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return true;  // nobody reads any more: as good as delivered
    // An empty queue always takes one response, however large, so a big revision cannot wedge a watcher.
    if (!force && !queue_.empty() && !HasRoom()) {
      lagging_ = true;
      return false;
    }
    for (auto& r : responses) {
      // The bound counts a shared encoding once per response that carries it: what the stream writes.
      r.bytes = r.meta.ByteSizeLong();
      for (const auto& block : r.events) r.bytes += block->size();
      bytes_ += r.bytes;
      queue_.push_back(std::move(r));
    }
    ready = !writing_;
  }
  if (ready && on_ready_) on_ready_();
  return true;
}

bool WatchStream::Push(std::vector<etcdserverpb::WatchResponse> responses, bool force) {
  std::vector<Outgoing> out(responses.size());
  for (size_t i = 0; i < responses.size(); ++i) out[i].meta = std::move(responses[i]);
  return Push(std::move(out), force);
}

bool WatchStream::Next(Outgoing* out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (writing_ || queue_.empty()) return false;
  bytes_ -= queue_.front().bytes;
  *out = std::move(queue_.front());
  queue_.pop_front();
  writing_ = true;
  return true;
}

bool WatchStream::Next(etcdserverpb::WatchResponse* out) {
  Outgoing o;
  if (!Next(&o)) return false;
  *out = o.Assemble();
  return true;
}

void WatchStream::WriteDone() {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    writing_ = false;
    // A stream whose watchers fell behind wakes the dispatcher once its queue has drained to half, not at
    // the first free slot: then one round catches many of them up together (one history read per group,
    // WatchHub::Select) instead of one watcher per round and a read of its own for each. The rounds for
    // new revisions try the catch-up too, whatever the queue holds.
#ifdef REVKV_MUTATION_WATCH_WAKE_AT_FIRST_ROOM  // mutation switch: woken at the first free slot
    const bool drained = HasRoom();
#else
    const bool drained = queue_.size() <= max_responses_ / 2 && bytes_ <= max_bytes_ / 2;
#endif
    if (lagging_ && drained) {
      lagging_ = false;
      wake = true;
    }
  }
  if (wake) hub_->Wake();
}

size_t WatchStream::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

// ----- WatchHub ------------------------------------------------------------------------------------------

WatchHub::WatchHub(HubSource source, HubOptions options)
    : source_(std::move(source)), options_(options), dispatched_(source_.log->contiguous()) {
  // Nothing is held until the first watcher comes (Create).
  dispatched_ = std::min(dispatched_, source_.visible_revision());
}

WatchHub::~WatchHub() { Stop(); }

void WatchHub::Start() {
  source_.log->SetListener([this] {
    // seq_cst: pairs with the store in Create (see EventLog::contiguous()): if this load misses the
    // first watcher, that watcher's creation sees this publication and wakes the dispatcher itself.
    if (live_watchers_.load(std::memory_order_seq_cst) > 0) Wake();
  });
  thread_ = std::thread([this] { Run(); });
}

void WatchHub::Stop() {
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    stop_ = true;
  }
  wake_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void WatchHub::Wake() {
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    wake_ = true;
  }
  wake_cv_.notify_one();
}

void WatchHub::Run() {
  auto next_tick = std::chrono::steady_clock::now() + options_.progress_interval;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(wake_mu_);
      wake_cv_.wait_until(lock, next_tick, [this] { return wake_ || stop_; });
      if (stop_) return;
      wake_ = false;
    }
    Pass();
    if (std::chrono::steady_clock::now() >= next_tick) {
      ProgressTick();
      next_tick = std::chrono::steady_clock::now() + options_.progress_interval;
    }
  }
}

std::shared_ptr<WatchStream> WatchHub::OpenStream(std::function<void()> on_ready) {
  auto stream = std::make_shared<WatchStream>(this, std::move(on_ready), options_.stream_max_bytes,
                                              options_.stream_max_responses);
  std::lock_guard<std::mutex> lock(mu_);
  streams_[stream.get()] = stream;
  return stream;
}

void WatchHub::CloseStream(WatchStream* stream) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = streams_.find(stream);
  if (it == streams_.end()) return;
  while (!stream->watchers_.empty()) Remove(stream->watchers_.begin()->second.get());
  {
    std::lock_guard<std::mutex> s(stream->mu_);
    stream->closed_ = true;
  }
  stream->on_ready_ = nullptr;  // under mu_: every call of it is made under mu_ too
  streams_.erase(it);
}

void WatchHub::Remove(WatchStream::Watcher* w) {
  synced_.erase(w);
  unsynced_.erase(w);
  Release(w->interest);
  w->stream->watchers_.erase(w->id);  // deletes w
  // seq_cst like the increment in Create; relaxed would do for the decrement (a stale non-zero count
  // costs one needless wake-up), but one order for the variable reads more simply.
  if (live_watchers_.fetch_sub(1, std::memory_order_seq_cst) == 1) {
    source_.log->SetHold(0);  // nobody watches: the history follows the store's window alone
  }
}

const WatchInterest* WatchHub::Intern(store::KeyRange range, bool no_put, bool no_delete, bool prev_kv) {
  std::string selector = Selector(range, no_put, no_delete, prev_kv);
// REVKV_MUTATION_WATCH_INTEREST_NOT_SHARED, a mutation switch: every watcher gets an interest of its own.
#ifndef REVKV_MUTATION_WATCH_INTEREST_NOT_SHARED
  if (auto it = interests_.find(selector); it != interests_.end()) {
    ++it->second->watchers;
    return it->second.get();
  }
#else
  while (interests_.count(selector) != 0) selector.push_back('+');  // a key no other interest has
#endif
  auto interest = std::make_unique<WatchInterest>();
  interest->range = std::move(range);
  interest->no_put = no_put;
  interest->no_delete = no_delete;
  interest->prev_kv = prev_kv;
  interest->selector = std::move(selector);
  interest->watchers = 1;
  const std::string_view key = interest->selector;
  return interests_.emplace(key, std::move(interest)).first->second.get();
}

void WatchHub::Release(const WatchInterest* interest) {
  auto it = interests_.find(interest->selector);
  if (--it->second->watchers == 0) interests_.erase(it);
}

void WatchHub::Create(WatchStream* stream, const etcdserverpb::WatchCreateRequest& request) {
  // etcd's recvLoop normalizes the range: an empty key is "\0" (the smallest key); a range_end of "\0"
  // means every key from `key` on; an empty range_end means the key alone.
  store::KeyRange range;
  range.begin = request.key().empty() ? std::string(1, '\0') : request.key();
  if (request.range_end().empty()) {
    range.single = true;
  } else if (request.range_end() != std::string(1, '\0')) {
    range.end = request.range_end();
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (stream->closed_) return;
  const int64_t visible = std::max(dispatched_, source_.visible_revision());
  etcdserverpb::WatchResponse created;
  created.mutable_header()->set_revision(visible);  // etcd: the store's revision when the watch is made
  created.set_created(true);
  const char* error = nullptr;
  int64_t id = request.watch_id();
  if (!range.single && !range.end.empty() && range.begin >= range.end) {
    error = kEmptyRange;
  } else if (id == 0) {  // etcd's AutoWatchID: the next free id of this stream
    while (stream->watchers_.count(stream->next_id_) != 0) ++stream->next_id_;
    id = stream->next_id_++;
  } else if (stream->watchers_.count(id) != 0) {
    error = kDuplicateId;
  }
  if (error != nullptr) {
    created.set_watch_id(kInvalidWatchId);
    created.set_canceled(true);
    created.set_cancel_reason(error);
    std::vector<etcdserverpb::WatchResponse> one;
    one.push_back(std::move(created));
    stream->Push(std::move(one), /*force=*/true);
    return;
  }
  if (live_watchers_.load(std::memory_order_relaxed) == 0) {  // relaxed: written under mu_ only
    // The first watcher: the dispatcher was idle. Dispatching restarts at what is durable now (nobody
    // was owed the revisions before it), and the history is held from there on.
    dispatched_ = std::max(dispatched_, std::min(source_.log->contiguous(), source_.visible_revision()));
    dispatched_ = std::max(dispatched_, source_.log->first() - 1);
    source_.log->SetHold(dispatched_ + 1);
  }
  // seq_cst: see the listener in Start.
  live_watchers_.fetch_add(1, std::memory_order_seq_cst);
  auto watcher = std::make_unique<WatchStream::Watcher>();
  WatchStream::Watcher* w = watcher.get();
  w->stream = stream;
  w->id = id;
  bool no_put = false;
  bool no_delete = false;
  for (int f : request.filters()) {
    if (f == etcdserverpb::WatchCreateRequest::NOPUT) no_put = true;
    if (f == etcdserverpb::WatchCreateRequest::NODELETE) no_delete = true;
  }
  w->interest = Intern(std::move(range), no_put, no_delete, request.prev_kv());
  w->fragment = request.fragment();
  w->progress_notify = request.progress_notify();
  // etcd: start_revision 0 is "the revision after the store's"; a start after what has been dispatched
  // is served live (synced, skipping earlier revisions), an older one from the history (unsynced).
  w->next = request.start_revision() != 0 ? request.start_revision() : visible + 1;
  stream->watchers_[id] = std::move(watcher);
  created.set_watch_id(id);
  std::vector<etcdserverpb::WatchResponse> one;
  one.push_back(std::move(created));
  stream->Push(std::move(one), /*force=*/true);  // before any event of this watcher (same lock)
  // A start below the compaction is answered by CatchUp (canceled, compact_revision), even when the
  // history still holds the revision for watchers that keep up (the hub's hold).
#ifdef REVKV_MUTATION_WATCH_SERVE_HELD_COMPACTED  // mutation switch: a held compacted start is served
  const bool compacted = false;
#else
  const bool compacted = w->next < source_.log->compacted_to();
#endif
  if (w->next > dispatched_ && !compacted) {
    w->synced = true;
    synced_.insert(w);
  } else {
    unsynced_.insert(w);
  }
  Wake();  // revisions published while nobody watched woke nobody
}

void WatchHub::Cancel(WatchStream* stream, int64_t watch_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = stream->watchers_.find(watch_id);
  if (it == stream->watchers_.end()) return;  // etcd answers nothing for an unknown id
  Remove(it->second.get());
  etcdserverpb::WatchResponse canceled;
  canceled.mutable_header()->set_revision(std::max(dispatched_, source_.visible_revision()));
  canceled.set_watch_id(watch_id);
  canceled.set_canceled(true);
  std::vector<etcdserverpb::WatchResponse> one;
  one.push_back(std::move(canceled));
  stream->Push(std::move(one), /*force=*/true);
}

void WatchHub::Refuse(WatchStream* stream, const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stream->closed_) return;
  etcdserverpb::WatchResponse refused;
  refused.mutable_header()->set_revision(std::max(dispatched_, source_.visible_revision()));
  refused.set_watch_id(kInvalidWatchId);
  refused.set_created(true);
  refused.set_canceled(true);
  refused.set_cancel_reason(reason);
  std::vector<etcdserverpb::WatchResponse> one;
  one.push_back(std::move(refused));
  stream->Push(std::move(one), /*force=*/true);
}

void WatchHub::CancelRefused(
    WatchStream* stream,
    const std::function<std::optional<std::string>(const std::string& key, const std::string& range_end)>&
        refuse) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stream->closed_) return;
  std::vector<std::pair<int64_t, std::string>> canceled;
  for (const auto& [id, w] : stream->watchers_) {
    const store::KeyRange& range = w->interest->range;
    const std::string range_end =
        range.single ? std::string() : (range.end.empty() ? std::string(1, '\0') : range.end);
    if (std::optional<std::string> reason = refuse(range.begin, range_end))
      canceled.emplace_back(id, *reason);
  }
  const int64_t revision = std::max(dispatched_, source_.visible_revision());
  for (auto& [id, reason] : canceled) {
    Remove(stream->watchers_.at(id).get());
    etcdserverpb::WatchResponse response;
    response.mutable_header()->set_revision(revision);
    response.set_watch_id(id);
    response.set_canceled(true);
    response.set_cancel_reason(std::move(reason));
    std::vector<etcdserverpb::WatchResponse> one;
    one.push_back(std::move(response));
    stream->Push(std::move(one), /*force=*/true);
  }
}

void WatchHub::Progress(WatchStream* stream) {
  std::lock_guard<std::mutex> lock(mu_);
  etcdserverpb::WatchResponse progress;
  // Every event up to the dispatched revision has been queued for the stream's synced watchers.
  progress.mutable_header()->set_revision(dispatched_);
  progress.set_watch_id(kInvalidWatchId);
  std::vector<etcdserverpb::WatchResponse> one;
  one.push_back(std::move(progress));
  stream->Push(std::move(one), /*force=*/true);
}

std::vector<etcdserverpb::WatchResponse> WatchHub::Build(const WatchStream::Watcher& w,
                                                         const std::vector<const WatchEvent*>& events,
                                                         int64_t header_revision) const {
  std::vector<etcdserverpb::WatchResponse> out;
  etcdserverpb::WatchResponse r;
  r.mutable_header()->set_revision(header_revision);
  r.set_watch_id(w.id);
  const WatchInterest& interest = *w.interest;
  for (const WatchEvent* e : events) {
    if (e->is_delete ? interest.no_delete : interest.no_put) continue;
    ToEvent(*e, interest.prev_kv, r.add_events());
  }
  if (r.events_size() == 0) return out;  // etcd sends nothing when every event is filtered out
  const size_t limit = options_.max_request_bytes;
  if (!w.fragment || r.events_size() < 2 || r.ByteSizeLong() < limit) {
    out.push_back(std::move(r));
    return out;
  }
  // etcd's sendFragments: fill each fragment until adding an event would reach the limit (a fragment
  // holds at least one event); every fragment but the last says fragment = true.
  etcdserverpb::WatchResponse cur;
  cur.mutable_header()->set_revision(header_revision);
  cur.set_watch_id(w.id);
  cur.set_fragment(true);
  for (auto& ev : *r.mutable_events()) {
    *cur.add_events() = std::move(ev);
    if (cur.events_size() > 1 && cur.ByteSizeLong() >= limit) {
      mvccpb::Event last = std::move(*cur.mutable_events(cur.events_size() - 1));
      cur.mutable_events()->RemoveLast();
      out.push_back(cur);
      cur.clear_events();
      *cur.add_events() = std::move(last);
    }
  }
  cur.set_fragment(false);
  out.push_back(std::move(cur));
  return out;
}

std::shared_ptr<const std::string> WatchHub::Block(const WatchStream::Watcher& w,
                                                   const std::shared_ptr<const RevisionEvents>& revision,
                                                   EncodingCache* cache, size_t* count) {
  const RevisionEvents& b = *revision;
  // The selection: usually every event of the revision (a fan-out on one prefix), kept without indices.
  const WatchInterest& interest = *w.interest;
  auto selects = [&interest](const WatchEvent& e) {
    return !(e.is_delete ? interest.no_delete : interest.no_put) && interest.range.Contains(e.kv.key);
  };
  size_t selected = 0;
  for (const WatchEvent& e : b.events) selected += selects(e) ? 1 : 0;
  if (selected == 0) return nullptr;
  const bool all = selected == b.events.size();
  std::vector<uint32_t> selection;
  if (!all) {
    for (uint32_t i = 0; i < b.events.size(); ++i)
      if (selects(b.events[i])) selection.push_back(i);
  }
  *count += selected;
  CachedRevision& cached = (*cache)[&b];
  if (cached.pin == nullptr) cached.pin = revision;
  std::vector<CachedBlock>& blocks = cached.blocks;
#ifdef REVKV_MUTATION_WATCH_ENCODE_PER_WATCHER  // mutation switch: every watcher encodes its own events
  blocks.clear();
#endif
  for (const CachedBlock& c : blocks) {
    if (c.prev_kv == interest.prev_kv && c.all == all && (all || c.selection == selection)) return c.block;
  }
  // A WatchResponse with only events encodes as exactly its events field.
  etcdserverpb::WatchResponse events_only;
  if (all) {
    for (const WatchEvent& e : b.events) ToEvent(e, interest.prev_kv, events_only.add_events());
  } else {
    for (uint32_t i : selection) ToEvent(b.events[i], interest.prev_kv, events_only.add_events());
  }
  CachedBlock c;
  c.prev_kv = interest.prev_kv;
  c.all = all;
  c.selection = std::move(selection);
  c.block = std::make_shared<const std::string>(events_only.SerializeAsString());
  ++encodings_;
  blocks.push_back(std::move(c));
  return blocks.back().block;
}

const WatchHub::Selection* WatchHub::Select(
    const WatchStream::Watcher& w, int64_t from, int64_t to,
    const std::span<const std::shared_ptr<const RevisionEvents>>* known, Round* round) {
#if defined(REVKV_MUTATION_WATCH_CATCH_UP_ALONE) || defined(REVKV_MUTATION_WATCH_ENCODE_PER_WATCHER)
  round->selections.clear();  // mutation switches: every watcher reads, selects (and encodes) on its own
#endif
  const SelectionKey key{w.interest, from, to};
  auto it = round->selections.find(key);
  if (it != round->selections.end()) return it->second.get();
  auto selection = std::make_unique<Selection>();
  if (known != nullptr) {
    selection->batches.assign(known->begin(), known->end());
  } else {
    if (!source_.log->Read(from, to, &selection->batches)) return nullptr;  // trimmed: compacted for w
    catch_up_reads_ += selection->batches.size();
  }
  for (const auto& b : selection->batches) {
    if (b->events.empty()) continue;
    if (std::shared_ptr<const std::string> block = Block(w, b, &round->blocks, &selection->count)) {
      selection->bytes += block->size();
      selection->blocks.push_back(std::move(block));
    }
  }
  return round->selections.emplace(key, std::move(selection)).first->second.get();
}

std::vector<Outgoing> WatchHub::Respond(const WatchStream::Watcher& w, const Selection& selection,
                                        int64_t header_revision) const {
  std::vector<Outgoing> out;
  if (selection.count == 0) return out;  // etcd sends nothing when every event is filtered out
  Outgoing o;
  o.meta.mutable_header()->set_revision(header_revision);
  o.meta.set_watch_id(w.id);
  if (w.fragment && selection.count >= 2 &&
      o.meta.ByteSizeLong() + selection.bytes >= options_.max_request_bytes) {
    std::vector<const WatchEvent*> mine;
    for (const auto& b : selection.batches) {
      for (const WatchEvent& e : b->events) {
        if (w.interest->range.Contains(e.kv.key)) mine.push_back(&e);
      }
    }
    for (auto& r : Build(w, mine, header_revision)) {
      out.emplace_back();
      out.back().meta = std::move(r);
    }
    return out;
  }
  o.events = selection.blocks;  // the shared blocks: a reference each, no copy of their bytes
  out.push_back(std::move(o));
  return out;
}

void WatchHub::Pass() {
  std::function<void()> durable_request;
  int64_t durable_revision = 0;
  // The round's encoded blocks and selections, shared by the synced watchers and the catch-ups.
  Round round;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Nobody watches: nothing to deliver and nothing to hold (the first watcher restarts dispatching).
    if (live_watchers_.load(std::memory_order_relaxed) == 0) return;  // relaxed: written under mu_ only
    const int64_t contiguous = source_.log->contiguous();
#ifdef REVKV_MUTATION_WATCH_IGNORE_DURABLE  // mutation switch: deliver revisions before they are durable
    const int64_t target = contiguous;
#else
    const int64_t target = std::min(contiguous, source_.visible_revision());
#endif
    if (target > dispatched_) {
      std::vector<std::shared_ptr<const RevisionEvents>> batches;
      // The log holds every revision after dispatched_ (SetHold), so this read cannot fail.
      source_.log->Read(dispatched_ + 1, target, &batches);
      for (size_t k = 0; k < batches.size(); ++k) {
        const auto& b = batches[k];
        if (b->events.empty() || synced_.empty()) continue;
        std::vector<WatchStream::Watcher*> fell_behind;
        const std::span<const std::shared_ptr<const RevisionEvents>> one(&batches[k], 1);
        for (WatchStream::Watcher* w : synced_) {
          if (b->revision < w->next) continue;
          std::vector<Outgoing> responses =
              Respond(*w, *Select(*w, b->revision, b->revision, &one, &round), b->revision);
          if (responses.empty()) continue;
#ifdef REVKV_MUTATION_WATCH_NO_FALL_BEHIND  // mutation switch: a slow stream's queue grows without bound
          const bool force = true;
#else
          const bool force = false;
#endif
          if (w->stream->Push(std::move(responses), force)) {
            w->progress_due = false;
          } else {
#ifdef REVKV_MUTATION_WATCH_SKIP_ON_FALL_BEHIND  // mutation switch: the revision that did not fit is lost
            w->next = b->revision + 1;
#else
            w->next = b->revision;  // catches up from here, from the history
#endif
            fell_behind.push_back(w);
          }
        }
        for (WatchStream::Watcher* w : fell_behind) {
          w->synced = false;
          synced_.erase(w);
          unsynced_.insert(w);
        }
      }
      dispatched_ = target;
      source_.log->SetHold(dispatched_ + 1);
    }
    if (contiguous > dispatched_ && durable_wait_ <= dispatched_) {
      // Published but not durable yet: ask once to be woken when the next revision is.
      durable_wait_ = dispatched_ + 1;
      durable_revision = durable_wait_;
      durable_request = [this] { Wake(); };
    }
    std::vector<WatchStream::Watcher*> lagging(unsynced_.begin(), unsynced_.end());
    for (WatchStream::Watcher* w : lagging) CatchUp(w, &round);
  }
  if (durable_request) source_.on_visible(durable_revision, std::move(durable_request));
}

void WatchHub::CatchUp(WatchStream::Watcher* w, Round* round) {
  for (;;) {
    // compacted_to() >= first(): below first() the events are gone; between the two they are held
    // for watchers that keep up, but compacted for this one (etcd answers by the compaction).
    if (w->next < source_.log->compacted_to()) {
      // etcd: a watcher whose next revision was compacted away gets compact_revision and is canceled.
      // The header revision stays 0, as etcd's (its WatchResponse carries no revision then).
      etcdserverpb::WatchResponse compacted;
      compacted.mutable_header()->set_revision(0);
      compacted.set_watch_id(w->id);
      // The compaction's revision, not a start the hold keeps for watchers that are keeping up.
      compacted.set_compact_revision(source_.log->compacted_to());
      compacted.set_canceled(true);
      std::vector<etcdserverpb::WatchResponse> one;
      one.push_back(std::move(compacted));
      w->stream->Push(std::move(one), /*force=*/true);
      Remove(w);
      return;
    }
    if (w->next > dispatched_) break;
#ifndef REVKV_MUTATION_WATCH_READ_WHEN_FULL  // mutation switch: a full stream's watchers read anyway
    if (w->stream->Full()) return;           // WriteDone wakes us; reading now would be for nothing
#endif
    const int64_t last = std::min(dispatched_, w->next + kCatchUpRevisions - 1);
    // The watchers at w->next with w's selector share one read of the history and one selection (a
    // group: whoever of them the round reaches first makes it; members join and leave as their `next`
    // moves, so a group is nothing but the key).
    const Selection* selection = Select(*w, w->next, last, nullptr, round);
    if (selection == nullptr) continue;  // trimmed meanwhile: compacted above
    std::vector<Outgoing> responses = Respond(*w, *selection, last);
    if (!responses.empty()) {
      if (!w->stream->Push(std::move(responses), /*force=*/false)) return;  // WriteDone wakes us
      w->progress_due = false;
    }
    w->next = last + 1;
  }
  w->synced = true;
  unsynced_.erase(w);
  synced_.insert(w);
}

void WatchHub::ProgressTick() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [ptr, stream] : streams_) {
    for (auto& [id, w] : stream->watchers_) {
      if (!w->progress_notify) continue;
      // etcd: a watcher that got events since the last tick is skipped once; only synced watchers
      // get a progress notification, and a full stream drops it.
      if (w->progress_due && w->synced) {
        etcdserverpb::WatchResponse progress;
        progress.mutable_header()->set_revision(dispatched_);
        progress.set_watch_id(id);
        std::vector<etcdserverpb::WatchResponse> one;
        one.push_back(std::move(progress));
        stream->Push(std::move(one), /*force=*/false);
      }
      w->progress_due = true;
    }
  }
}

int64_t WatchHub::dispatched() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dispatched_;
}

uint64_t WatchHub::encodings() const {
  std::lock_guard<std::mutex> lock(mu_);
  return encodings_;
}

size_t WatchHub::watchers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return synced_.size() + unsynced_.size();
}

size_t WatchHub::interests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return interests_.size();
}

uint64_t WatchHub::catch_up_reads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return catch_up_reads_;
}

size_t WatchHub::unsynced() const {
  std::lock_guard<std::mutex> lock(mu_);
  return unsynced_.size();
}

}  // namespace revkv::server::watch
