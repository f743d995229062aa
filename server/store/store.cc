// The store: requests as transactions, revisions, retention, logging, recovery (store.h).
#include "server/store/store.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <random>

#include "absl/strings/str_cat.h"
#include "runtime/safepoint/safepoint.h"
#include "runtime/stm/stm.h"
#include "server/store/apply.h"
#include "server/store/auth_checks.h"
#include "server/store/errors.h"
#include "server/store/lease_table.h"
#include "server/store/meta_state.h"
#include "server/store/quota.h"
#include "server/store/request_checks.h"
#include "server/store/tree.h"
#include "server/wal/crc32c.h"
#include "spdlog/spdlog.h"

namespace revkv::server {

using runtime::Bytes;
using runtime::stm::ReadPtr;
using runtime::stm::Ref;
using runtime::stm::SnapshotTx;
using runtime::stm::Tx;
using runtime::stm::WritePtr;
using store::Applier;
using store::RevisionClock;

namespace {

// Log record payloads: one kind byte, then the request's protobuf encoding.
constexpr char kRecordPut = 'P';
constexpr char kRecordDeleteRange = 'D';
constexpr char kRecordTxn = 'T';
constexpr char kRecordLeaseGrant = 'G';   // a LeaseGrantRequest with the ID and TTL as granted
constexpr char kRecordLeaseRevoke = 'R';  // a LeaseRevokeRequest (by a client or by expiry)
constexpr char kRecordAlarm = 'A';        // an AlarmRequest (ACTIVATE or DEACTIVATE) that changed the alarms
constexpr char kRecordAuth = 'U';         // a revkv.v1.AuthChange (passwords as their bcrypt hashes)

std::atomic<bool> g_store_exists{false};

absl::Status Apply(Applier<Tx>& a, const etcdserverpb::PutRequest& r, etcdserverpb::PutResponse* out) {
  return a.Put(r, out);
}
absl::Status Apply(Applier<Tx>& a, const etcdserverpb::DeleteRangeRequest& r,
                   etcdserverpb::DeleteRangeResponse* out) {
  a.DeleteRange(r, out);
  return absl::OkStatus();
}
absl::Status Apply(Applier<Tx>& a, const etcdserverpb::TxnRequest& r, etcdserverpb::TxnResponse* out) {
  // etcd's order: every compare, then checkRequests(checkPut), then checkRequests(checkRange), then the ops.
  std::vector<bool> path;
  a.ComparePath(r, &path);
  size_t at = 0;
  if (absl::Status s = a.CheckTxnPuts(r, path, &at); !s.ok()) return s;
  at = 0;
  if (absl::Status s = a.CheckTxnRanges(r, path, &at); !s.ok()) return s;
  at = 0;
  absl::Status s = a.Txn(r, path, &at, out);
  out->mutable_header()->set_revision(a.NowRevision());
  return s;
}

absl::Status Apply(Applier<Tx>& a, const etcdserverpb::LeaseGrantRequest& r,
                   etcdserverpb::LeaseGrantResponse* out) {
  return a.LeaseGrant(r, out);
}
absl::Status Apply(Applier<Tx>& a, const etcdserverpb::LeaseRevokeRequest& r,
                   etcdserverpb::LeaseRevokeResponse* out) {
  return a.LeaseRevoke(r, out);
}
absl::Status Apply(Applier<Tx>& a, const etcdserverpb::AlarmRequest& r, etcdserverpb::AlarmResponse* out) {
  return a.Alarm(r, out);
}
absl::Status Apply(Applier<Tx>& a, const revkv::v1::AuthChange& r, revkv::v1::AuthChangeResponse* out) {
  return a.AuthChange(r, out);
}

// The users whose tokens a successful auth change invalidates (etcd's tokenProvider.invalidateUser and
// disable), "" for all (no user has an empty name).
std::vector<std::string> InvalidatedBy(const revkv::v1::AuthChange& change) {
  switch (change.request_case()) {
    case revkv::v1::AuthChange::kUserDelete:
      return {change.user_delete().name()};
    case revkv::v1::AuthChange::kUserChangePassword:
      return {change.user_change_password().name()};
    case revkv::v1::AuthChange::kDisable:
      return {""};
    default:
      return {};
  }
}
}  // namespace

// ----- responses ----------------------------------------------------------------------------------------

namespace store {

void ToProto(const KvRecord& r, bool keys_only, mvccpb::KeyValue* kv) {
  kv->set_key(r.key);
  if (!keys_only) kv->set_value(r.value);
  kv->set_create_revision(r.create_revision);
  kv->set_mod_revision(r.mod_revision);
  kv->set_version(r.version);
  kv->set_lease(r.lease);
}

namespace {
int64_t Patched(int64_t v, int64_t pending, int64_t current) {
  if (v == kPendingRevision) return pending;
  if (v == kCurrentRevision) return current;
  return v;
}
void PatchHeader(etcdserverpb::ResponseHeader* h, int64_t pending, int64_t current) {
  h->set_revision(Patched(h->revision(), pending, current));
}
void PatchKv(mvccpb::KeyValue* kv, int64_t pending, int64_t current) {
  kv->set_mod_revision(Patched(kv->mod_revision(), pending, current));
  kv->set_create_revision(Patched(kv->create_revision(), pending, current));
}
void PatchKv(KvRecord* kv, int64_t pending) {
  if (kv->mod_revision == kPendingRevision) kv->mod_revision = pending;
  if (kv->create_revision == kPendingRevision) kv->create_revision = pending;
}
}  // namespace

void PatchEvents(std::vector<KeyEvent>* events, int64_t pending) {
  for (KeyEvent& e : *events) {
    PatchKv(&e.kv, pending);
    if (e.has_prev) PatchKv(&e.prev, pending);
  }
}

void PatchRevisions(etcdserverpb::LeaseGrantResponse* r, int64_t pending, int64_t current) {
  PatchHeader(r->mutable_header(), pending, current);
}
void PatchRevisions(etcdserverpb::LeaseRevokeResponse* r, int64_t pending, int64_t current) {
  PatchHeader(r->mutable_header(), pending, current);
}
void PatchRevisions(etcdserverpb::AlarmResponse* r, int64_t pending, int64_t current) {
  PatchHeader(r->mutable_header(), pending, current);
}
void PatchRevisions(revkv::v1::AuthChangeResponse* r, int64_t pending, int64_t current) {
  PatchHeader(r->mutable_header(), pending, current);
}
void PatchRevisions(etcdserverpb::RangeResponse* r, int64_t pending, int64_t current) {
  PatchHeader(r->mutable_header(), pending, current);
  for (auto& kv : *r->mutable_kvs()) PatchKv(&kv, pending, current);
}
void PatchRevisions(etcdserverpb::PutResponse* r, int64_t pending, int64_t current) {
  PatchHeader(r->mutable_header(), pending, current);
  if (r->has_prev_kv()) PatchKv(r->mutable_prev_kv(), pending, current);
}
void PatchRevisions(etcdserverpb::DeleteRangeResponse* r, int64_t pending, int64_t current) {
  PatchHeader(r->mutable_header(), pending, current);
  for (auto& kv : *r->mutable_prev_kvs()) PatchKv(&kv, pending, current);
}
void PatchRevisions(etcdserverpb::TxnResponse* r, int64_t pending, int64_t current) {
  PatchHeader(r->mutable_header(), pending, current);
  for (auto& op : *r->mutable_responses()) {
    switch (op.response_case()) {
      case etcdserverpb::ResponseOp::kResponseRange:
        PatchRevisions(op.mutable_response_range(), pending, current);
        break;
      case etcdserverpb::ResponseOp::kResponsePut:
        PatchRevisions(op.mutable_response_put(), pending, current);
        break;
      case etcdserverpb::ResponseOp::kResponseDeleteRange:
        PatchRevisions(op.mutable_response_delete_range(), pending, current);
        break;
      case etcdserverpb::ResponseOp::kResponseTxn:
        PatchRevisions(op.mutable_response_txn(), pending, current);
        break;
      default:
        break;
    }
  }
}

}  // namespace store

// ----- the store -----------------------------------------------------------------------------------------

Store::Store(const StoreOptions& options, Wal* wal) : options_(options), wal_(wal) {}

// The store's root object; call inside a transaction body (the handle then lives on its stack).
Ref<store::StoreRoot> Store::RootRef() const {
  return Ref<store::StoreRoot>::FromRaw(static_cast<store::StoreRoot*>(root_.Load()));
}

Store::~Store() {
  runtime::stm::SetSkipHorizon(0);  // the next store in this process starts with no limit
  g_store_exists.store(false);
}

absl::StatusOr<std::unique_ptr<Store>> Store::Create(const StoreOptions& options, Wal* wal) {
  if (g_store_exists.exchange(true)) {
    return absl::FailedPreconditionError("a store already exists in this process");
  }
  std::unique_ptr<Store> s(new Store(options, wal));
  absl::Status created = runtime::stm::Atomically([&](Tx& tx) {
    auto root = store::NewTree(tx);
    store::NewLeaseTrees(tx, root);
    store::NewMetaState(tx, root);
    tx.PublishAtCommit(s->root_, Ref<store::StoreRoot>(root));
  });
  if (!created.ok()) return created;
  s->next_lease_id_.store(std::random_device{}() | (uint64_t{std::random_device{}()} << 32),
                          std::memory_order_relaxed);
  s->time_base_ = runtime::stm::LastCommittedTime();
  s->visible_auth_ = store::AuthView::Of(store::InitialAuthState());
  // Revision 1 is the empty store: its (empty) events are known, so a watch may start at it.
  s->event_log_ = std::make_unique<watch::EventLog>(0);
  s->event_log_->Publish(1, {});
  s->UpdateRetention();
  return s;
}

uint64_t Store::TimeOf(int64_t revision) const { return RevisionClock{time_base_}.TimeOf(revision); }

int64_t Store::RevisionOfCommitTime(uint64_t commit_time) const {
  return RevisionClock{time_base_}.RevisionOfCommitTime(commit_time);
}

int64_t Store::CommittedRevision() const {
  return static_cast<int64_t>((runtime::stm::LastCommittedTime() - time_base_) / 2) + 1;
}

int64_t Store::ReadCap() const {
  if (wal_ == nullptr) return 0;  // nothing is logged (tests, recovery before AttachWal): all is final
  if (options_.measure_reads_before_durable && !wal_->failed()) return 0;  // measurement only: unsafe
  // Acquire: pairs with the flusher's release store, made after the write(2) (and, with fsync always,
  // the fdatasync) that covers the record; every revision up to it survives a crash. Callers load the
  // committed revision too and read at the smaller of the two, so a record that became durable a
  // moment before its commit was published is not read before it exists. Revision 1 (the empty store)
  // has no record and is always final. Once the log has failed the durable revision never moves again.
  return std::max<int64_t>(1, wal_->durable_revision());
}

int64_t Store::FailureCap() const {
  // failed() is a seq_cst load, and the durable revision never moves once the log has failed (the
  // flusher advances it only before it fails), so this reads its final value.
  if (wal_ == nullptr || !wal_->failed()) return 0;
  return wal_->durable_revision();
}

int64_t Store::VisibleRevision() const {
  const int64_t committed = CommittedRevision();
  const int64_t cap = ReadCap();
  return cap > 0 ? std::min(committed, cap) : committed;
}

int64_t Store::Revision() const {
  const int64_t committed = CommittedRevision();
  const int64_t cap = FailureCap();
  return cap > 0 ? std::min(committed, cap) : committed;
}

int64_t Store::WindowStart(int64_t current) {
  // The oldest revision each window keeps; a revision is kept while it is in either window.
  const bool by_count = options_.history_revisions > 0;
  const bool by_time = options_.history_duration.count() > 0;
  if (!by_count && !by_time) return std::numeric_limits<int64_t>::min();
  int64_t oldest = current;
  if (by_count) oldest = std::min(oldest, current - options_.history_revisions + 1);
  if (by_time) {
    std::lock_guard<std::mutex> lock(history_mu_);
    // The front entry is the newest revision older than the window: still current during it.
    if (!history_times_.empty()) oldest = std::min(oldest, history_times_.front().second);
  }
  return oldest;
}

int64_t Store::OldestReadableRevision() {
  return std::max({compact_revision_.load(std::memory_order_acquire), LoadFloor(), WindowStart(Revision())});
}

void Store::UpdateRetention() {
  const int64_t current = CommittedRevision();
  if (options_.history_duration.count() > 0) {
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard<std::mutex> lock(history_mu_);
    if (history_times_.empty() || history_times_.back().second != current)
      history_times_.emplace_back(now, current);
    while (history_times_.size() > 1 && now - history_times_[1].first > options_.history_duration) {
      history_times_.pop_front();
    }
  }
  int64_t keep_from = std::max(compact_revision_.load(std::memory_order_acquire), WindowStart(current));
  // If the log fails, reads are capped at its durable revision (ReadCap): keep that one readable. It
  // trails the newest revision by the records not yet durable, one group commit's worth.
  if (wal_ != nullptr) keep_from = std::min(keep_from, wal_->durable_revision());
  // Nothing before a loaded checkpoint's revision exists as a revision (those are loading states).
  keep_from = std::max(keep_from, LoadFloor());
  runtime::stm::SetRetainedTime(TimeOf(std::max<int64_t>(1, keep_from)));
  // Reads of the newest state are made at the durable revision (ReadCap): skip hints that point no
  // further serve every one of them (a hint past a reader's time would send it down the chain).
  if (const int64_t cap = ReadCap(); cap > 0) runtime::stm::SetSkipHorizon(TimeOf(cap));
  if (event_log_ != nullptr) event_log_->Trim(keep_from);
}

absl::StatusOr<etcdserverpb::RangeResponse> Store::Range(const etcdserverpb::RangeRequest& request,
                                                         const AuthInfo* who) {
  // A read is checked against the visible auth state, whatever revision it reads (etcd checks the
  // current permissions too).
  if (who != nullptr && auth_enabled_.load(std::memory_order_acquire)) {
    if (absl::Status s = VisibleAuth()->CheckRange(*who, request.key(), request.range_end(), false);
        !s.ok()) {
      return s;
    }
  }
  return RangeAt(request, /*capped=*/true);
}

WalLsn Store::LsnToWaitFor(int64_t read_revision) const {
  const int64_t cap = ReadCap();
  if (cap == 0 || read_revision <= cap) return 0;
  // Every revision up to read_revision was appended to the log inside its commit, before its commit
  // time was published; the read acquired that time, so the appended LSN loaded now (relaxed is
  // enough: it is ordered after the Append by that acquire) covers read_revision's record. It may
  // cover a few later records too: the answer then waits for them as well.
  return wal_->appended_lsn();
}

absl::StatusOr<etcdserverpb::RangeResponse> Store::RangeAt(const etcdserverpb::RangeRequest& request,
                                                           bool capped) {
  if (absl::Status s = store::CheckRangeRequest(request); !s.ok()) return s;
  const int64_t committed = CommittedRevision();
  const int64_t cap = capped ? ReadCap() : 0;
  const int64_t current = cap > 0 ? std::min(committed, cap) : committed;
  const int64_t rev = request.revision();
  if (rev > current) return errors::FutureRevision();
  if (rev > 0 && (rev < CompactRevision() || rev < LoadFloor())) return errors::Compacted();
  // "The newest state" is the state at the durable revision (the cap), not the newest commit.
  const int64_t at = rev > 0 ? rev : (cap > 0 ? current : 0);
  etcdserverpb::RangeResponse out;
  const RevisionClock clock{time_base_};
  absl::Status s = runtime::stm::ReadOnlyAt(at > 0 ? TimeOf(at) : 0, [&](SnapshotTx& tx) {
    out.Clear();
    const int64_t header = at > 0 ? current : static_cast<int64_t>((tx.snapshot_time() - time_base_) / 2) + 1;
    Applier<SnapshotTx> a(tx, RootRef(), clock);
    a.Range(request, header, &out);
  });
  if (absl::IsFailedPrecondition(s)) return errors::Compacted();
  if (absl::IsOutOfRange(s)) return errors::FutureRevision();
  if (!s.ok()) return s;
  return out;
}

template <class Request, class Response>
absl::StatusOr<WriteResult<Response>> Store::Write(const Request& request, char kind, int64_t replay_revision,
                                                   const store::PastRanges* past_ranges, const AuthInfo* who,
                                                   LogWake* wake) {
  const bool replaying = replay_revision != 0;
  std::string payload;
  std::optional<WalReservation> reservation;
  if (wal_ != nullptr && !replaying) {
    payload.reserve(request.ByteSizeLong() + 1);
    payload.push_back(kind);
    request.AppendToString(&payload);
    // A record must fit the log buffer; a larger write is refused whole, before it changes anything.
    if (payload.size() > wal_->max_payload_bytes()) return errors::RequestTooLarge();
    // A batch's records wait for one wake-up at its end; but Reserve blocks while the buffer is full and
    // only the flusher frees it, so the flusher is woken first once the batch holds an eighth of it.
    if (wake != nullptr && wake->pending_bytes > 0 &&
        wake->pending_bytes + payload.size() > wal_->max_payload_bytes() / 8) {
      wal_->Notify();
      wake->pending_bytes = 0;
    }
    absl::StatusOr<WalReservation> r = [&] {
      // Reserve blocks while the log buffer is full, until the flusher (fsync included) frees space;
      // a collection must not wait for that. The payload is off the heap.
      runtime::SafeRegion waiting;
      return wal_->Reserve(payload);
    }();
    if (!r.ok()) return wal_->failed() ? errors::LogFailure(r.status()) : r.status();
    reservation.emplace(std::move(*r));
  }
  store::PastRanges replay_ranges;  // a replayed Txn's Ranges at a revision are not read again
  replay_ranges.replaying = true;
  const RevisionClock clock{time_base_};
  Response response;
  bool changed = false;
  int64_t delta = 0;
  WalLsn lsn = 0;
  int64_t committed_revision = 0;
  std::vector<store::KeyEvent> events;  // the key changes, for the watch history
  absl::Status s = runtime::stm::Atomically([&](Tx& tx) {
    response.Clear();
#ifndef REVKV_MUTATION_WATCH_KEEP_ABORTED_EVENTS  // mutation switch: retried attempts' events stay
    events.clear();                               // an aborted attempt's events never happened
#endif
    // Every write reads the alarms and the auth state first: a change of either that commits meanwhile
    // makes this attempt retry and meet it. A replayed record was admitted when it was first applied.
    if (!replaying) {
      ReadPtr<store::MetaState> meta = store::ReadMeta(tx, RootRef());
      if constexpr (!store::kIgnoresAlarms<Request>) {
        if (absl::Status st = store::AdmitUnderAlarms(meta->alarm_mask, store::QuotaCost(request));
            !st.ok()) {
          tx.Fail(st);
        }
      }
      if (who != nullptr && meta->auth_enabled != 0) {
        absl::StatusOr<std::shared_ptr<const store::AuthView>> view = AuthViewOf(tx, meta);
        if (!view.ok()) tx.Fail(view.status());
        if (absl::Status st = store::CheckAuth(tx, RootRef(), **view, *who, request); !st.ok()) tx.Fail(st);
      }
    }
    Applier<Tx> a(tx, RootRef(), clock);
    a.set_past_ranges(replaying ? &replay_ranges : past_ranges);
    a.set_event_sink(&events);
    if (absl::Status st = Apply(a, request, &response); !st.ok()) tx.Fail(st);
    changed = a.changed();
    delta = a.key_delta();
    if (changed) {
      // Inside the inevitable section: no allocation, no blocking system call.
      tx.SetCommitAction([&](uint64_t commit_time) {
        committed_revision = clock.RevisionOfCommitTime(commit_time);
        if (reservation.has_value()) lsn = wal_->Append(*reservation, committed_revision, payload);
        key_count_.fetch_add(delta, std::memory_order_relaxed);
      });
    }
  });
  if (!s.ok()) return s;
  if (lsn != 0) {
    if (wake != nullptr) {
      wake->pending_bytes += payload.size();  // a payload is never empty (it starts with its kind)
    } else {
      wal_->Notify();
    }
  }
  if (changed) {
    // Exactly once per committed revision, after the commit; writers publish concurrently, so possibly
    // out of revision order (the log orders them). Watchers see it once it is also durable.
    store::PatchEvents(&events, committed_revision);
    event_log_->Publish(committed_revision, std::move(events));
  }
  const uint64_t serialized_at = runtime::stm::ThisThreadLastCommitTime();
  const int64_t read_revision = static_cast<int64_t>((serialized_at - time_base_) / 2) + 1;
  // A write that changed nothing read the newest state, which may hold commits whose records are not
  // durable yet: its answer waits for them, like a write's for its own record.
  const WalLsn wait_lsn = changed || replaying ? lsn : LsnToWaitFor(read_revision);
  if (replaying && committed_revision != replay_revision) {
    return absl::DataLossError(
        absl::StrCat("replaying revision ", replay_revision, " produced revision ", committed_revision));
  }
  WriteResult<Response> result;
  result.revision = changed ? committed_revision : read_revision;
  store::PatchRevisions(&response, committed_revision, read_revision);
  result.response = std::move(response);
  result.lsn = lsn;
  result.wait_lsn = wait_lsn;
  if (changed) UpdateRetention();
  return result;
}

absl::StatusOr<WriteResult<etcdserverpb::PutResponse>> Store::Put(const etcdserverpb::PutRequest& request,
                                                                  const AuthInfo* who) {
  if (absl::Status s = store::CheckPutRequest(request); !s.ok()) return s;
  if (request.ByteSizeLong() > options_.max_request_bytes) return errors::RequestTooLarge();
  if (absl::Status s = CheckQuota(store::QuotaCost(request)); !s.ok()) return s;
  return Write<etcdserverpb::PutRequest, etcdserverpb::PutResponse>(request, kRecordPut, 0, nullptr, who);
}

absl::StatusOr<WriteResult<etcdserverpb::DeleteRangeResponse>> Store::DeleteRange(
    const etcdserverpb::DeleteRangeRequest& request, const AuthInfo* who) {
  if (absl::Status s = store::CheckDeleteRequest(request); !s.ok()) return s;
  // etcd checks the size of every request that goes through raft (Put, DeleteRange, Txn).
  if (request.ByteSizeLong() > options_.max_request_bytes) return errors::RequestTooLarge();
  return Write<etcdserverpb::DeleteRangeRequest, etcdserverpb::DeleteRangeResponse>(
      request, kRecordDeleteRange, 0, nullptr, who);
}

absl::StatusOr<WriteResult<etcdserverpb::TxnResponse>> Store::Txn(const etcdserverpb::TxnRequest& request,
                                                                  TxnReads reads, const AuthInfo* who) {
  return TxnWith(request, reads, who, nullptr);
}

void Store::TxnBatch(const google::protobuf::RepeatedPtrField<etcdserverpb::TxnRequest>& requests,
                     const AuthInfo* who,
                     std::vector<absl::StatusOr<WriteResult<etcdserverpb::TxnResponse>>>* results,
                     uint64_t* wait_lsn) {
  results->clear();
  results->reserve(static_cast<size_t>(requests.size()));
  *wait_lsn = 0;
  LogWake wake;
  for (const etcdserverpb::TxnRequest& request : requests) {
    results->push_back(TxnWith(request, TxnReads::kNewest, who, &wake));
    if (results->back().ok()) *wait_lsn = std::max<uint64_t>(*wait_lsn, results->back()->wait_lsn);
  }
  if (wake.pending_bytes > 0) wal_->Notify();
}

absl::StatusOr<WriteResult<etcdserverpb::TxnResponse>> Store::TxnWith(const etcdserverpb::TxnRequest& request,
                                                                      TxnReads reads, const AuthInfo* who,
                                                                      LogWake* wake) {
  if (absl::Status s = store::CheckTxnRequest(request, options_.max_txn_ops); !s.ok()) return s;
  if (request.ByteSizeLong() > options_.max_request_bytes) return errors::RequestTooLarge();
  const bool read_only = store::IsTxnReadOnly(request);
  if (!read_only) {
    if (absl::Status s = CheckQuota(store::QuotaCost(request)); !s.ok()) return s;
  }
  // Once the log has failed the newest commits will never be durable: every read is at the cap then.
  const bool newest = !read_only || (reads == TxnReads::kNewest && wal_ != nullptr && !wal_->failed());
  // A Txn whose answer waits for the log (a write, or kNewest) may read past revisions up to the newest.
  store::PastRanges past;
  ReadPastRanges(request, /*capped=*/!newest, &past);
  if (!read_only) {
    return Write<etcdserverpb::TxnRequest, etcdserverpb::TxnResponse>(request, kRecordTxn, 0, &past, who,
                                                                      wake);
  }
  // A read-only Txn is checked as a read: against the visible auth state (its compares and Ranges).
  if (who != nullptr && auth_enabled_.load(std::memory_order_acquire)) {
    const std::shared_ptr<const store::AuthView> view = VisibleAuth();
    absl::Status denied;
    absl::Status s = runtime::stm::ReadOnly(
        [&](SnapshotTx& tx) { denied = store::CheckAuth(tx, RootRef(), *view, *who, request); });
    if (!s.ok()) return s;
    if (!denied.ok()) return denied;
  }
  // A Txn that cannot write is a snapshot read: it never aborts and never waits. It reads the state
  // at the durable revision (the cap), as Range does, or the newest one (kNewest; the answer waits).
  WriteResult<etcdserverpb::TxnResponse> result;
  const RevisionClock clock{time_base_};
  const int64_t cap = newest ? 0 : ReadCap();
  const uint64_t read_time = cap > 0 ? TimeOf(std::min(CommittedRevision(), cap)) : 0;
  absl::Status failure;
  absl::Status s = runtime::stm::ReadOnlyAt(read_time, [&](SnapshotTx& tx) {
    result.response.Clear();
    Applier<SnapshotTx> a(tx, RootRef(), clock);
    a.set_past_ranges(&past);
    std::vector<bool> path;
    a.ComparePath(request, &path);
    size_t at = 0;
    failure = a.CheckTxnRanges(request, path, &at);
    if (!failure.ok()) return;
    at = 0;
    failure = a.Txn(request, path, &at, &result.response);
    result.revision = static_cast<int64_t>((tx.snapshot_time() - time_base_) / 2) + 1;
  });
  if (!s.ok()) return s;
  if (!failure.ok()) return failure;
  result.response.mutable_header()->set_revision(result.revision);
  store::PatchRevisions(&result.response, result.revision, result.revision);
  if (newest) result.wait_lsn = LsnToWaitFor(result.revision);
  return result;
}

void Store::ReadPastRanges(const etcdserverpb::TxnRequest& request, bool capped, store::PastRanges* past) {
  for (const auto* ops : {&request.success(), &request.failure()}) {
    for (const etcdserverpb::RequestOp& op : *ops) {
      if (op.request_case() == etcdserverpb::RequestOp::kRequestTxn) {
        ReadPastRanges(op.request_txn(), capped, past);
        continue;
      }
      if (op.request_case() != etcdserverpb::RequestOp::kRequestRange) continue;
      const etcdserverpb::RangeRequest& r = op.request_range();
      if (r.revision() == 0) continue;
      store::PastRange item{&r, absl::OkStatus(), std::nullopt};
      if (r.revision() > 0) {
        // Exactly a Range at that revision: "future" past the current revision (etcd's checkRange,
        // rv.Rev()), "compacted" before the oldest readable one (rv.FirstRev()).
        absl::StatusOr<etcdserverpb::RangeResponse> read = RangeAt(r, capped);
        if (read.ok()) {
          item.response = *std::move(read);
        } else {
          item.status = read.status();
        }
      } else if (r.revision() < OldestReadableRevision()) {
        item.status = errors::Compacted();  // etcd's checkRange: req.Revision < rv.FirstRev()
      }
      past->items.push_back(std::move(item));
    }
  }
}

// ----- leases
// -----------------------------------------------------------------------------------------------

absl::StatusOr<WriteResult<etcdserverpb::LeaseGrantResponse>> Store::LeaseGrant(
    const etcdserverpb::LeaseGrantRequest& request, const AuthInfo* who) {
  // etcd's lessor.Grant: too large a TTL is refused, too small a one raised to the minimum.
  if (request.ttl() > kMaxLeaseTtl) return errors::LeaseTtlTooLarge();
  if (absl::Status s = CheckQuota(store::QuotaCost(request)); !s.ok()) return s;
  etcdserverpb::LeaseGrantRequest granted = request;
  granted.set_ttl(std::max(request.ttl(), kMinLeaseTtl));
  const bool choose = request.id() == 0;
  for (;;) {
    if (choose) {
      // etcd: a positive ID from its request ID generator; here a counter from a random start. Relaxed:
      // only uniqueness matters, and a collision with a granted lease is retried below.
      granted.set_id(static_cast<int64_t>(next_lease_id_.fetch_add(1, std::memory_order_relaxed) &
                                          ((uint64_t{1} << 63) - 1)));
      if (granted.id() == 0) continue;
    }
    auto result = Write<etcdserverpb::LeaseGrantRequest, etcdserverpb::LeaseGrantResponse>(
        granted, kRecordLeaseGrant, 0, nullptr, who);
    if (choose && !result.ok() && result.status() == errors::LeaseExists()) continue;
    return result;
  }
}

absl::StatusOr<WriteResult<etcdserverpb::LeaseRevokeResponse>> Store::LeaseRevoke(
    const etcdserverpb::LeaseRevokeRequest& request, const AuthInfo* who) {
  return Write<etcdserverpb::LeaseRevokeRequest, etcdserverpb::LeaseRevokeResponse>(
      request, kRecordLeaseRevoke, 0, nullptr, who);
}

uint64_t Store::VisibleTime() const {
  const int64_t cap = ReadCap();
  return cap > 0 ? TimeOf(std::min(CommittedRevision(), cap)) : 0;
}

absl::StatusOr<LeaseState> Store::LeaseAt(int64_t id, bool with_keys, bool newest) {
  LeaseState state;
  absl::Status s = runtime::stm::ReadOnlyAt(newest ? 0 : VisibleTime(), [&](SnapshotTx& tx) {
    state.keys.clear();
    state.id = id;
    state.granted_ttl = store::LeaseTtl(tx, RootRef(), id);
    if (state.granted_ttl != 0 && with_keys) state.keys = store::AttachedKeys(tx, RootRef(), id);
    state.revision = static_cast<int64_t>((tx.snapshot_time() - time_base_) / 2) + 1;
  });
  if (!s.ok()) return s;
  if (state.granted_ttl == 0) return errors::LeaseNotFound();
  return state;
}

absl::StatusOr<std::vector<LeaseState>> Store::Leases(bool newest, int64_t* revision) {
  std::vector<LeaseState> leases;
  absl::Status s = runtime::stm::ReadOnlyAt(newest ? 0 : VisibleTime(), [&](SnapshotTx& tx) {
    leases.clear();
    size_t seen = 0;
    store::ForEachLease(tx, RootRef(), [&](int64_t id, int64_t ttl) {
      leases.push_back(LeaseState{id, ttl, {}, 0});
      if (++seen % 4096 == 0) tx.Poll();
      return true;
    });
    if (revision != nullptr) *revision = static_cast<int64_t>((tx.snapshot_time() - time_base_) / 2) + 1;
  });
  if (!s.ok()) return s;
  return leases;
}

absl::StatusOr<etcdserverpb::CompactionResponse> Store::Compact(
    const etcdserverpb::CompactionRequest& request, const AuthInfo* who) {
  if (who != nullptr && auth_enabled_.load(std::memory_order_acquire)) {
    if (absl::Status s = VisibleAuth()->CheckAdmin(*who); !s.ok()) return s;
  }
  // One compaction at a time: its log write, then its effect. Waiting for the lock (another Compact may
  // be writing its record) happens in a safe region.
  std::unique_lock<std::mutex> lock(compact_mu_, std::try_to_lock);
  if (!lock.owns_lock()) {
    runtime::SafeRegion waiting;
    lock.lock();
  }
  // etcd's applierV3Corrupt refuses compactions too.
  if (alarm_mask_.load(std::memory_order_acquire) & store::AlarmBit(etcdserverpb::CORRUPT)) {
    return errors::Corrupt();
  }
  const int64_t current = VisibleRevision();  // a client can name only a revision it may have seen
  const int64_t rev = request.revision();
  if (rev > current) return errors::FutureRevision();
  // Only Compact writes compact_revision_ after recovery, and it holds compact_mu_: a relaxed load
  // would do; acquire pairs with the release below for readers' sake and costs nothing here.
  if (rev <= compact_revision_.load(std::memory_order_acquire)) return errors::Compacted();
  if (compaction_log_) {
    // Durable before it takes effect (etcd replies once the compaction is committed to its log): a
    // crash after the reply never brings compacted revisions back.
    absl::Status logged;
    {
      runtime::SafeRegion io;
      logged = compaction_log_(rev);
    }
    if (!logged.ok()) return errors::LogFailure(logged);
  }
  // Release: a reader that sees the new compact revision also sees what preceded it (the log write).
  compact_revision_.store(rev, std::memory_order_release);
  UpdateRetention();
  etcdserverpb::CompactionResponse out;
  out.mutable_header()->set_revision(current);
  return out;
}

// ----- alarms ------------------------------------------------------------------------------------------

int64_t Store::StoreBytes() const {
  if (options_.store_bytes) return options_.store_bytes();
  const runtime::HeapUsage heap = runtime::GetHeapUsage();
  return static_cast<int64_t>(heap.old_bytes + heap.large_bytes);
}

void Store::RefreshAlarmMask() {
  int64_t mask = 0;
  absl::Status s =
      runtime::stm::ReadOnly([&](SnapshotTx& tx) { mask = store::ReadMeta(tx, RootRef())->alarm_mask; });
  // Release: pairs with the acquire loads of the fast paths (they need no other data, but the order is
  // cheap and keeps the copy monotonic with the commit it was read after).
  if (s.ok()) alarm_mask_.store(mask, std::memory_order_release);
}

absl::StatusOr<WriteResult<etcdserverpb::AlarmResponse>> Store::Alarm(
    const etcdserverpb::AlarmRequest& request, const AuthInfo* who) {
  if (request.action() == etcdserverpb::AlarmRequest::GET) {
    WriteResult<etcdserverpb::AlarmResponse> result;
    std::vector<etcdserverpb::AlarmMember> alarms;
    absl::Status s = runtime::stm::ReadOnlyAt(VisibleTime(), [&](SnapshotTx& tx) {
      alarms = store::ReadAlarms(tx, store::ReadMeta(tx, RootRef()));
      result.revision = static_cast<int64_t>((tx.snapshot_time() - time_base_) / 2) + 1;
    });
    if (!s.ok()) return s;
    if (wal_ != nullptr && wal_->failed()) {
      etcdserverpb::AlarmMember disk;
      disk.set_memberid(options_.member_id);
      disk.set_alarm(errors::IsNoSpace(wal_->failed_status()) ? etcdserverpb::NOSPACE
                                                              : etcdserverpb::CORRUPT);
      const bool present = std::any_of(alarms.begin(), alarms.end(), [&](const etcdserverpb::AlarmMember& a) {
        return a.memberid() == disk.memberid() && a.alarm() == disk.alarm();
      });
      if (!present) alarms.push_back(disk);
    }
    for (const etcdserverpb::AlarmMember& a : alarms) {
      if (request.alarm() == etcdserverpb::NONE || a.alarm() == request.alarm())
        *result.response.add_alarms() = a;
    }
    result.response.mutable_header()->set_revision(result.revision);
    return result;
  }
  absl::StatusOr<WriteResult<etcdserverpb::AlarmResponse>> result =
      Write<etcdserverpb::AlarmRequest, etcdserverpb::AlarmResponse>(request, kRecordAlarm, 0, nullptr, who);
  if (result.ok()) {
    RefreshAlarmMask();
    spdlog::warn("alarm {} {} for member {:x} (revision {})", etcdserverpb::AlarmType_Name(request.alarm()),
                 request.action() == etcdserverpb::AlarmRequest::ACTIVATE ? "raised" : "disarmed",
                 request.memberid(), result->revision);
  }
  return result;
}

std::vector<etcdserverpb::AlarmMember> Store::Alarms() {
  etcdserverpb::AlarmRequest get;
  absl::StatusOr<WriteResult<etcdserverpb::AlarmResponse>> r = Alarm(get);
  if (!r.ok()) return {};
  return {r->response.alarms().begin(), r->response.alarms().end()};
}

absl::Status Store::CheckQuota(int64_t cost) {
  if (cost <= 0) return absl::OkStatus();
  // Fast path: an active alarm refuses at once (the transaction checks again, CORRUPT first as etcd).
  if (absl::Status s = store::AdmitUnderAlarms(alarm_mask_.load(std::memory_order_acquire), cost); !s.ok()) {
    return s;
  }
  if (options_.quota_bytes <= 0) return absl::OkStatus();
  const int64_t used = StoreBytes();
  if (used + cost < options_.quota_bytes) return absl::OkStatus();
  // etcd's quotaAlarmer: the request is refused and the NOSPACE alarm raised (logged, and durable before
  // the refusal is answered, so a client that then lists the alarms sees it).
  spdlog::warn(
      "a request of {} bytes would take the store's {} bytes past the quota of {} bytes; raising NOSPACE",
      cost, used, options_.quota_bytes);
  etcdserverpb::AlarmRequest raise;
  raise.set_action(etcdserverpb::AlarmRequest::ACTIVATE);
  raise.set_memberid(options_.member_id);
  raise.set_alarm(etcdserverpb::NOSPACE);
  absl::StatusOr<WriteResult<etcdserverpb::AlarmResponse>> raised = Alarm(raise);
  if (raised.ok()) (void)WaitDurable(raised->lsn);
  return errors::NoSpace();
}

// ----- auth --------------------------------------------------------------------------------------------

template <class TxT>
absl::StatusOr<std::shared_ptr<const store::AuthView>> Store::AuthViewOf(
    TxT& tx, const ReadPtr<store::MetaState>& meta) {
  const uint64_t revision = static_cast<uint64_t>(meta->auth_revision);
  const bool enabled = meta->auth_enabled != 0;
  {
    std::lock_guard<std::mutex> lock(auth_mu_);
    if (decoded_auth_ != nullptr && decoded_auth_->revision() == revision &&
        decoded_auth_->enabled() == enabled) {
      return decoded_auth_;
    }
  }
  // The bytes and the numbers come from the same revision of the MetaState: a consistent pair, even in an
  // attempt that will abort, so the cache may keep what is decoded here.
  absl::StatusOr<std::shared_ptr<const store::AuthView>> view =
      store::AuthView::Decode(store::KeyAt(tx, meta->auth));
  if (!view.ok()) return view.status();
  std::lock_guard<std::mutex> lock(auth_mu_);
  decoded_auth_ = *view;
  return *view;
}

std::shared_ptr<const store::AuthView> Store::VisibleAuth() const {
  std::lock_guard<std::mutex> lock(auth_mu_);
  return visible_auth_;
}

void Store::SetAuthListener(AuthListener listener) {
  std::lock_guard<std::mutex> lock(auth_mu_);
  auth_listener_ = std::move(listener);
}

void Store::InstallAuth(int64_t revision, std::shared_ptr<const store::AuthView> view,
                        const std::vector<std::string>& invalidated) {
  AuthListener listener;
  {
    std::lock_guard<std::mutex> lock(auth_mu_);
    if (revision > visible_auth_revision_) {
      visible_auth_revision_ = revision;
      visible_auth_ = view;
      // Release: a reader that sees the flag set also sees the view installed before it.
      auth_enabled_.store(view->enabled(), std::memory_order_release);
    }
    listener = auth_listener_;
  }
  if (listener) listener(view, invalidated);
}

void Store::RefreshAuth() {
  std::string bytes;
  int64_t revision = 0;
  absl::Status s = runtime::stm::ReadOnly([&](SnapshotTx& tx) {
    bytes = std::string(store::KeyAt(tx, store::ReadMeta(tx, RootRef())->auth));
    revision = static_cast<int64_t>((tx.snapshot_time() - time_base_) / 2) + 1;
  });
  if (!s.ok()) return;
  absl::StatusOr<std::shared_ptr<const store::AuthView>> view = store::AuthView::Decode(bytes);
  if (view.ok()) InstallAuth(revision, *view, {});
}

absl::StatusOr<WriteResult<revkv::v1::AuthChangeResponse>> Store::AuthChange(
    const revkv::v1::AuthChange& change, const AuthInfo* who) {
  absl::StatusOr<WriteResult<revkv::v1::AuthChangeResponse>> result =
      Write<revkv::v1::AuthChange, revkv::v1::AuthChangeResponse>(change, kRecordAuth, 0, nullptr, who);
  if (!result.ok()) return result;
  // The new state, once its revision is visible: reads, watchers and tokens follow it from then on.
  // (A change that changed nothing reads the state it left, which installs nothing new.)
  std::string bytes;
  int64_t revision = 0;
  absl::Status s = runtime::stm::ReadOnly([&](SnapshotTx& tx) {
    bytes = std::string(store::KeyAt(tx, store::ReadMeta(tx, RootRef())->auth));
    revision = static_cast<int64_t>((tx.snapshot_time() - time_base_) / 2) + 1;
  });
  if (!s.ok()) return result;
  absl::StatusOr<std::shared_ptr<const store::AuthView>> view = store::AuthView::Decode(bytes);
  if (!view.ok()) return result;
  const std::vector<std::string> invalidated = InvalidatedBy(change);
  OnVisible(revision,
            [this, revision, view = *view, invalidated] { InstallAuth(revision, view, invalidated); });
  return result;
}

// ----- hashes ------------------------------------------------------------------------------------------
namespace {

template <class T>
void AppendFixed(std::string* out, T v) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));  // little-endian hosts only (checkpoint_format.h asserts it)
  out->append(bytes, sizeof(T));
}

}  // namespace

absl::StatusOr<uint32_t> Store::HashAt(int64_t revision, bool everything) {
  const RevisionClock clock{time_base_};
  uint32_t crc = 0;
  absl::Status s = runtime::stm::ReadOnlyAt(TimeOf(revision), [&](SnapshotTx& tx) {
    crc = 0;
    std::string buffer;
    auto flush = [&] {
      crc = Crc32cExtend(crc, buffer.data(), buffer.size());
      buffer.clear();
    };
    Applier<SnapshotTx> a(tx, RootRef(), clock);
    store::ForEachInRange(tx, RootRef(), store::MakeRange(std::string(), std::string(1, '\0')),
                          [&](const ReadPtr<store::Entry>& e) {
                            const store::KvRecord r = a.Record(e);
                            AppendFixed<uint32_t>(&buffer, static_cast<uint32_t>(r.key.size()));
                            AppendFixed<uint32_t>(&buffer, static_cast<uint32_t>(r.value.size()));
                            AppendFixed<int64_t>(&buffer, r.create_revision);
                            AppendFixed<int64_t>(&buffer, r.mod_revision);
                            AppendFixed<int64_t>(&buffer, r.version);
                            AppendFixed<int64_t>(&buffer, r.lease);
                            buffer += r.key;
                            buffer += r.value;
                            if (buffer.size() >= (64 << 10)) flush();
                            return true;
                          });
    if (everything) {
      store::ForEachLease(tx, RootRef(), [&](int64_t id, int64_t ttl) {
        AppendFixed<int64_t>(&buffer, id);
        AppendFixed<int64_t>(&buffer, ttl);
        if (buffer.size() >= (64 << 10)) flush();
        return true;
      });
      ReadPtr<store::MetaState> meta = store::ReadMeta(tx, RootRef());
      for (const auto& [kind, field] :
           {std::pair<uint32_t, const runtime::Field<runtime::Bytes>*>{kStateAlarms, &meta->alarms},
            {kStateAuth, &meta->auth}}) {
        const std::string_view bytes = store::KeyAt(tx, *field);
        AppendFixed<uint32_t>(&buffer, kind);
        AppendFixed<uint32_t>(&buffer, static_cast<uint32_t>(bytes.size()));
        buffer.append(bytes);
      }
    }
    flush();
  });
  if (absl::IsFailedPrecondition(s)) return errors::Compacted();
  if (absl::IsOutOfRange(s)) return errors::FutureRevision();
  if (!s.ok()) return s;
  return crc;
}

absl::StatusOr<StoreHash> Store::HashKV(int64_t revision) {
  StoreHash out;
  out.header_revision = VisibleRevision();
  out.compact_revision = compact_revision_.load(std::memory_order_acquire);
  // etcd's HashByRev: a revision at or before the compaction is compacted (unlike Range, which reads the
  // compaction's own revision), one after the current revision is a future one.
  if (revision > 0 && revision <= out.compact_revision) return errors::Compacted();
  if (revision > out.header_revision) return errors::FutureRevision();
  if (revision > 0 && revision < LoadFloor()) return errors::Compacted();
  out.revision = revision > 0 ? revision : out.header_revision;
  absl::StatusOr<uint32_t> hash = HashAt(out.revision, /*everything=*/false);
  if (!hash.ok()) return hash.status();
  out.hash = *hash;
  return out;
}

absl::StatusOr<StoreHash> Store::Hash() {
  StoreHash out;
  out.header_revision = VisibleRevision();
  out.compact_revision = compact_revision_.load(std::memory_order_acquire);
  out.revision = out.header_revision;
  absl::StatusOr<uint32_t> hash = HashAt(out.revision, /*everything=*/true);
  if (!hash.ok()) return hash.status();
  out.hash = *hash;
  return out;
}

// ----- durability -----------------------------------------------------------------------------------------

void Store::OnVisible(int64_t revision, std::function<void()> callback) {
  if (wal_ == nullptr || wal_->failed() || VisibleRevision() >= revision) {
    callback();
    return;
  }
  // Every revision up to `revision` appended its record inside its commit, before the commit time was
  // published; the caller learnt of `revision` through that commit (an acquire), so the appended LSN
  // loaded now covers it (it may cover later records too: the callback then comes a little later).
  wal_->OnDurable(wal_->appended_lsn(), [cb = std::move(callback)](absl::Status) { cb(); });
}

absl::Status Store::WaitDurable(uint64_t lsn) {
  if (lsn == 0 || wal_ == nullptr) return absl::OkStatus();
  absl::Status s;
  {
    runtime::SafeRegion waiting;  // the flusher may take a while; a collection must not wait for it
    s = wal_->WaitDurable(lsn);
  }
  return errors::LogFailure(s);
}

absl::Status Store::ForEachAt(int64_t revision, const std::function<void(const StoredKeyValue&)>& visit,
                              int64_t* snapshot_revision,
                              const std::function<void(int64_t id, int64_t ttl)>* visit_lease,
                              const std::function<void(uint32_t kind, std::string_view bytes)>* visit_state) {
  const int64_t current = Revision();
  if (revision > current) return errors::FutureRevision();
  if (revision > 0 && (revision < CompactRevision() || revision < LoadFloor())) return errors::Compacted();
  if (revision <= 0 && FailureCap() > 0) revision = current;  // the last durable state
  const RevisionClock clock{time_base_};
  absl::Status s = runtime::stm::ReadOnlyAt(revision > 0 ? TimeOf(revision) : 0, [&](SnapshotTx& tx) {
    if (snapshot_revision != nullptr)
      *snapshot_revision = static_cast<int64_t>((tx.snapshot_time() - time_base_) / 2) + 1;
    Applier<SnapshotTx> a(tx, RootRef(), clock);
    store::ForEachInRange(
        tx, RootRef(), store::MakeRange(std::string(), std::string(1, '\0')),
        [&](const ReadPtr<store::Entry>& e) {
          const store::KvRecord r = a.Record(e);
          visit(StoredKeyValue{r.key, r.value, r.create_revision, r.mod_revision, r.version, r.lease});
          return true;
        });
    if (visit_lease != nullptr) {
      size_t seen = 0;
      store::ForEachLease(tx, RootRef(), [&](int64_t id, int64_t ttl) {
        (*visit_lease)(id, ttl);
        if (++seen % 4096 == 0) tx.Poll();
        return true;
      });
    }
    if (visit_state != nullptr) {
      ReadPtr<store::MetaState> meta = store::ReadMeta(tx, RootRef());
      const std::string_view alarms = store::KeyAt(tx, meta->alarms);
      if (!alarms.empty()) (*visit_state)(kStateAlarms, alarms);
      const std::string_view auth = store::KeyAt(tx, meta->auth);
      if (!auth.empty()) (*visit_state)(kStateAuth, auth);
    }
  });
  if (absl::IsFailedPrecondition(s)) return errors::Compacted();
  return s;
}

absl::StatusOr<store::TreeShape> Store::Shape() {
  return runtime::stm::ReadOnly([&](SnapshotTx& tx) { return store::MeasureShape(tx, RootRef()); });
}

absl::Status Store::LoadEntries(const std::vector<StoredKeyValue>& batch, int64_t revision) {
  // Check the whole batch before inserting any of it: a checkpoint whose CRC holds but whose content
  // cannot be a store at `revision` (a writer's bug) is refused, and recovery falls back.
  std::string_view last = load_last_key_;
  for (size_t i = 0; i < batch.size(); ++i) {
    const StoredKeyValue& kv = batch[i];
    const uint64_t index = load_count_ + i;
    if (index > 0 && kv.key <= last) {
      return absl::DataLossError(absl::StrCat("checkpoint entry ", index,
                                              " is not after the entry before it "
                                              "(keys must ascend and be unique)"));
    }
    if (kv.create_revision < 1 || kv.create_revision > kv.mod_revision || kv.mod_revision > revision ||
        kv.version < 1) {
      return absl::DataLossError(absl::StrCat(
          "checkpoint entry ", index, " has create revision ", kv.create_revision, ", mod revision ",
          kv.mod_revision, ", version ", kv.version, " in a checkpoint of revision ", revision));
    }
    last = kv.key;
  }
  // Each batch is one transaction and takes a step of the runtime's time; FinishLoad moves revision 1's
  // time (time_base_) so that the checkpoint's revision comes after all of them, however many there were.
  absl::Status s = runtime::stm::Atomically([&](Tx& tx) {
    Ref<store::StoreRoot> root = RootRef();
    for (const StoredKeyValue& item : batch) {
      store::EntryFields f;
      f.create_revision = item.create_revision;
      f.mod_revision = item.mod_revision;
      f.version = item.version;
      f.lease = item.lease;
      store::InsertEntry(tx, root, item.key, item.value, f);
      if (item.lease != 0) store::Attach(tx, root, item.lease, item.key);
    }
  });
  if (!s.ok()) return s;
  if (!batch.empty()) load_last_key_ = batch.back().key;
  load_count_ += batch.size();
  key_count_.fetch_add(static_cast<int64_t>(batch.size()), std::memory_order_relaxed);
  return absl::OkStatus();
}

absl::Status Store::LoadLeases(const std::vector<std::pair<int64_t, int64_t>>& batch) {
  std::optional<int64_t> last = load_last_lease_;
  for (const auto& [id, ttl] : batch) {
    if (id == 0 || ttl < 1 || ttl > kMaxLeaseTtl || (last.has_value() && id <= *last)) {
      return absl::DataLossError(absl::StrCat("checkpoint lease ", id, " with TTL ", ttl,
                                              " (IDs must ascend, not be 0, and TTLs be in 1..", kMaxLeaseTtl,
                                              ")"));
    }
    last = id;
  }
  absl::Status s = runtime::stm::Atomically([&](Tx& tx) {
    for (const auto& [id, ttl] : batch) store::InsertLease(tx, RootRef(), id, ttl);
  });
  if (!s.ok()) return s;
  load_last_lease_ = last;
  return absl::OkStatus();
}

absl::Status Store::LoadState(uint32_t kind, std::string_view bytes) {
  switch (kind) {
    case kStateAlarms: {
      std::vector<etcdserverpb::AlarmMember> alarms;
      if (!store::DecodeAlarms(bytes, &alarms)) {
        return absl::DataLossError("checkpoint alarm record does not decode (or is not ordered)");
      }
      absl::Status s = runtime::stm::Atomically(
          [&](Tx& tx) { store::WriteAlarms(tx, store::ReadMeta(tx, RootRef()), alarms); });
      if (!s.ok()) return s;
      RefreshAlarmMask();
      return absl::OkStatus();
    }
    case kStateAuth: {
      revkv::v1::AuthState state;
      if (!state.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) || state.revision() < 1) {
        return absl::DataLossError("checkpoint auth record does not decode");
      }
      // Stored as encoded here, so that a checkpoint of it has the same bytes.
      const std::string encoded = store::EncodeAuthState(state);
      absl::Status s = runtime::stm::Atomically([&](Tx& tx) {
        store::WriteAuth(tx, store::ReadMeta(tx, RootRef()), encoded, static_cast<int64_t>(state.revision()),
                         state.enabled());
      });
      if (!s.ok()) return s;
      RefreshAuth();
      return absl::OkStatus();
    }
    default:
      return absl::DataLossError(absl::StrCat("checkpoint state record of unknown kind ", kind));
  }
}

absl::Status Store::FinishLoad(int64_t revision, int64_t compact_revision) {
  if (revision < 1 || compact_revision < 0 || compact_revision > revision) {
    return absl::DataLossError(
        absl::StrCat("checkpoint of revision ", revision, " with compact revision ", compact_revision));
  }
  // Revision `revision` is the state now: the time after the last loading transaction, or later. Moving
  // time_base_ (instead of requiring the loading transactions to fit below the revision's time) makes
  // the load independent of how many keys one revision wrote. Every entry loaded carries explicit
  // revisions, so no revision is ever derived from the loading transactions' commit times.
  const uint64_t target = std::max(runtime::stm::LastCommittedTime(), TimeOf(revision)) & ~uint64_t{1};
  runtime::stm::AdvanceGlobalTime(target);
  time_base_ = target - 2 * static_cast<uint64_t>(revision - 1);
  // The states between the loading transactions are not revisions anyone wrote: nothing older than
  // the checkpoint is readable. The compaction is restored as it was (etcd: -1 while none was made).
  // Relaxed: written before the store is handed to other threads (LoadFloor).
  load_floor_.store(revision, std::memory_order_relaxed);
  event_log_->Reset(revision);  // the loaded revisions' events are not known: history starts after it
  compact_revision_.store(compact_revision > 0 ? compact_revision : -1, std::memory_order_release);
  UpdateRetention();
  return absl::OkStatus();
}

absl::Status Store::RestoreCompaction(int64_t compact_revision) {
  const int64_t current = CommittedRevision();
  if (compact_revision > current) {
    return absl::DataLossError(absl::StrCat("a compaction at revision ", compact_revision,
                                            " was acknowledged, but the recovered store ends at revision ",
                                            current));
  }
  // Recovery runs before any request: no Compact races with this. 0 is "no compaction recorded": etcd's
  // compaction stays -1 then (HashKV reports it, and a Compact to 0 succeeds, as on a fresh etcd).
  if (compact_revision > 0 && compact_revision > compact_revision_.load(std::memory_order_acquire)) {
    compact_revision_.store(compact_revision, std::memory_order_release);
  }
  UpdateRetention();
  return absl::OkStatus();
}

absl::Status Store::Replay(int64_t revision, std::string_view payload) {
  if (payload.empty()) return absl::DataLossError("empty log record");
  const std::string_view body = payload.substr(1);
  absl::Status s;
  switch (payload[0]) {
    case kRecordPut: {
      etcdserverpb::PutRequest r;
      if (!r.ParseFromArray(body.data(), static_cast<int>(body.size())))
        return absl::DataLossError("bad put record");
      s = Write<etcdserverpb::PutRequest, etcdserverpb::PutResponse>(r, kRecordPut, revision).status();
      break;
    }
    case kRecordDeleteRange: {
      etcdserverpb::DeleteRangeRequest r;
      if (!r.ParseFromArray(body.data(), static_cast<int>(body.size())))
        return absl::DataLossError("bad delete record");
      s = Write<etcdserverpb::DeleteRangeRequest, etcdserverpb::DeleteRangeResponse>(r, kRecordDeleteRange,
                                                                                     revision)
              .status();
      break;
    }
    case kRecordTxn: {
      etcdserverpb::TxnRequest r;
      if (!r.ParseFromArray(body.data(), static_cast<int>(body.size())))
        return absl::DataLossError("bad txn record");
      s = Write<etcdserverpb::TxnRequest, etcdserverpb::TxnResponse>(r, kRecordTxn, revision).status();
      break;
    }
    case kRecordLeaseGrant: {
      etcdserverpb::LeaseGrantRequest r;
      if (!r.ParseFromArray(body.data(), static_cast<int>(body.size())))
        return absl::DataLossError("bad lease grant record");
      s = Write<etcdserverpb::LeaseGrantRequest, etcdserverpb::LeaseGrantResponse>(r, kRecordLeaseGrant,
                                                                                   revision)
              .status();
      break;
    }
    case kRecordLeaseRevoke: {
      etcdserverpb::LeaseRevokeRequest r;
      if (!r.ParseFromArray(body.data(), static_cast<int>(body.size())))
        return absl::DataLossError("bad lease revoke record");
      s = Write<etcdserverpb::LeaseRevokeRequest, etcdserverpb::LeaseRevokeResponse>(r, kRecordLeaseRevoke,
                                                                                     revision)
              .status();
      break;
    }
    case kRecordAlarm: {
      etcdserverpb::AlarmRequest r;
      if (!r.ParseFromArray(body.data(), static_cast<int>(body.size())))
        return absl::DataLossError("bad alarm record");
      s = Write<etcdserverpb::AlarmRequest, etcdserverpb::AlarmResponse>(r, kRecordAlarm, revision).status();
      if (s.ok()) RefreshAlarmMask();
      break;
    }
    case kRecordAuth: {
      revkv::v1::AuthChange r;
      if (!r.ParseFromArray(body.data(), static_cast<int>(body.size())))
        return absl::DataLossError("bad auth record");
      s = Write<revkv::v1::AuthChange, revkv::v1::AuthChangeResponse>(r, kRecordAuth, revision).status();
      if (s.ok()) RefreshAuth();
      break;
    }
    default:
      return absl::DataLossError("unknown log record kind");
  }
  return s;
}

}  // namespace revkv::server
