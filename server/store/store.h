// revkv store — an etcd-semantics ordered key-value store on the STM heap (public header).
//
// The data is the runtime's global object graph: a B+-tree of heap objects (tree.h) under one
// GlobalRoot. Every request runs as one STM transaction: reads (Range, and Txn without writes) as
// snapshot transactions, which never abort and see one committed state; writes (Put, DeleteRange,
// Txn with writes) as read-write transactions that become inevitable at commit, append their record
// to the commit log inside the inevitable section, and commit. So log order is revision order, and
// one write transaction advances the store revision by exactly one.
//
// Semantics are etcd 3.4's KV API (Range, Put, DeleteRange, Txn, Compact), with its error codes and
// messages (errors.h). Requests and responses are the etcdserverpb messages themselves: they are the
// domain types of an etcd-compatible store, and the RPC layer only deals with the wire.
//
// History: past revisions are the older revisions of the object graph. A revision stays readable while
// it is one of the last `history_revisions` revisions or was committed within the last
// `history_duration` (like etcd's auto-compaction in revision and periodic modes; with both off, until
// an explicit Compact); the store tells the runtime to retain them. Compact(rev) moves the start of
// the window forward; with a compaction log set (SetCompactionLog), it is recorded durably before it
// takes effect. History lives in memory; a restart rebuilds it (server/engine checkpoints the window's
// oldest revision and replays the log after it, so each revision is committed again).
//
// Thread-safety: thread-safe. Every method must be called from a thread registered with the runtime
// and outside any transaction. At most one Store exists in a process at a time (revisions are derived
// from the runtime's global time).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "etcdserverpb/rpc.pb.h"
#include "revkv/v1/store.pb.h"
#include "runtime/gc/gc.h"
#include "runtime/stm/stm.h"
#include "server/store/auth_state.h"
#include "server/wal/wal.h"
#include "server/watch/event_log.h"

namespace revkv::server {

namespace store {
struct StoreRoot;
struct MetaState;
struct PastRanges;
struct TreeShape;
}  // namespace store

struct StoreOptions {
  int64_t max_txn_ops = 128;
  size_t max_request_bytes = 1572864;
  int64_t history_revisions = 10000;              // 0: this window is off
  std::chrono::milliseconds history_duration{0};  // 0: this window is off
  // FOR MEASUREMENT ONLY (the cost of serving reads at the durable revision): reads show commits
  // whose log records are not durable yet, which a crash can take back. Never set it in production.
  bool measure_reads_before_durable = false;
  // This member's ID: the member of the alarms the store raises itself (NOSPACE, the disk's).
  uint64_t member_id = 0;
  // etcd's --quota-backend-bytes: a Put, a Txn with Puts or a LeaseGrant that would take StoreBytes()
  // to this many bytes or more raises the NOSPACE alarm and is refused. 0 or less: no quota.
  int64_t quota_bytes = 0;
  // What the quota measures (tests); null: the heap's bytes in old and large-object space (StoreBytes).
  std::function<int64_t()> store_bytes;
};

// The kinds of the store's state records in a checkpoint (CheckpointStateRecord::kind).
enum StateRecordKind : uint32_t {
  kStateAlarms = 1,  // the active alarms (store/meta_state.h's encoding)
  kStateAuth = 2,    // the auth state (store/auth_state.h's revkv.v1.AuthState)
};

// A committed write: its response, its log record, and the record to wait for before answering.
template <class Response>
struct WriteResult {
  Response response;
  // The write's own record; 0 if the request wrote nothing (e.g. a Txn whose taken branch only reads)
  // or the store has no log.
  uint64_t lsn = 0;
  // The record to wait for before answering: `lsn` for a write. For an answer read from a state that
  // is not durable yet (a write that changed nothing, a TxnReads::kNewest read), the record that makes
  // it durable. 0: answer at once.
  uint64_t wait_lsn = 0;
  int64_t revision = 0;  // the revision the response reflects
};

// Which state a read-only Txn reads. Either way no answer shows a commit before its record is durable.
enum class TxnReads {
  // The state at the log's durable revision: the answer can go out at once (WriteResult::wait_lsn 0).
  kDurable,
  // The newest committed state, so that it sees every write that committed before it, durable or not
  // (a Pipeline stream reads its own earlier writes). WriteResult::wait_lsn names the record to wait
  // for before answering, as for a write; 0 if that state is durable already.
  kNewest,
};

// One key-value as stored, for checkpoints.
struct StoredKeyValue {
  std::string key;
  std::string value;
  int64_t create_revision;
  int64_t mod_revision;
  int64_t version;
  int64_t lease;
};

// A lease as the store holds it: its ID, granted TTL (seconds) and, if asked for, its keys in key order.
// Remaining TTLs are the lessor's (server/lease).
struct LeaseState {
  int64_t id = 0;
  int64_t granted_ttl = 0;
  std::vector<std::string> keys;
  int64_t revision = 0;  // the revision of the state read
};

// A hash of the store's state (etcd's Maintenance/Hash and HashKV).
struct StoreHash {
  uint32_t hash = 0;              // CRC-32C (Castagnoli, as etcd's) of the state's encoding (Store::HashKV)
  int64_t revision = 0;           // the revision whose state was hashed
  int64_t header_revision = 0;    // the visible revision when it was taken (etcd's current revision)
  int64_t compact_revision = -1;  // the compaction, as etcd reports it: -1 while nothing was compacted
};

// etcd 3.4's lease TTL limits: lease.MaxLeaseTTL, and the minimum its server derives from the default
// election timeout (3/2 of 10 ticks of 100 ms, rounded up to whole seconds). Shorter TTLs are raised.
inline constexpr int64_t kMaxLeaseTtl = 9000000000;
inline constexpr int64_t kMinLeaseTtl = 2;

class Store {
 public:
  // Creates an empty store (revision 1). `wal` may be null (nothing is logged); it must outlive the
  // store. Reaches safepoints.
  static absl::StatusOr<std::unique_ptr<Store>> Create(const StoreOptions& options, Wal* wal);
  ~Store();

  // ----- the KV API -----
  // `who` is the client a request comes from (server/rpc/identity.h), checked against the auth state
  // while authentication is enabled (store/auth_checks.h: a write inside its transaction, a read against
  // the visible auth state before it reads); null: the server itself (recovery, lease expiry, the
  // coordination recipes, which check their callers themselves), never checked.
  absl::StatusOr<etcdserverpb::RangeResponse> Range(const etcdserverpb::RangeRequest& request,
                                                    const AuthInfo* who = nullptr);
  absl::StatusOr<WriteResult<etcdserverpb::PutResponse>> Put(const etcdserverpb::PutRequest& request,
                                                             const AuthInfo* who = nullptr);
  absl::StatusOr<WriteResult<etcdserverpb::DeleteRangeResponse>> DeleteRange(
      const etcdserverpb::DeleteRangeRequest& request, const AuthInfo* who = nullptr);
  absl::StatusOr<WriteResult<etcdserverpb::TxnResponse>> Txn(const etcdserverpb::TxnRequest& request,
                                                             TxnReads reads = TxnReads::kDurable,
                                                             const AuthInfo* who = nullptr);
  // Runs each of `requests`, in order, as Txn(request, TxnReads::kNewest, who) would: each its own
  // transaction and, if it writes, its own revision; a failing request fails alone and changes nothing.
  // `results` gets one entry per request. The log's flusher is woken once, after the last request (and
  // before that only when the batch's records would otherwise take an eighth of the log buffer), so
  // the batch's records are written and synced together rather than the first alone. `*wait_lsn` is
  // the largest WriteResult::wait_lsn of the batch: once it is durable, every answer may go out.
  void TxnBatch(const google::protobuf::RepeatedPtrField<etcdserverpb::TxnRequest>& requests,
                const AuthInfo* who,
                std::vector<absl::StatusOr<WriteResult<etcdserverpb::TxnResponse>>>* results,
                uint64_t* wait_lsn);
  // Compact needs the root role while authentication is enabled (etcd checks nothing: docs/server.md).
  absl::StatusOr<etcdserverpb::CompactionResponse> Compact(const etcdserverpb::CompactionRequest& request,
                                                           const AuthInfo* who = nullptr);

  // ----- leases (etcd's Lease API; expiry and keep-alive are the lessor's, server/lease) -----
  // Grants a lease: the request's ID, or one chosen here (positive, unused) if it is 0; the TTL checked
  // as etcd's lessor.Grant ("too large lease TTL", OutOfRange) and raised to kMinLeaseTtl. Logged (the
  // record holds the ID and TTL granted) and committed as one revision that changes no key. "lease
  // already exists" (FailedPrecondition) for a granted ID.
  absl::StatusOr<WriteResult<etcdserverpb::LeaseGrantResponse>> LeaseGrant(
      const etcdserverpb::LeaseGrantRequest& request, const AuthInfo* who = nullptr);
  // Revokes a lease: deletes every key attached to it and the lease, in one logged revision.
  // "requested lease not found" (NotFound) for an unknown lease.
  absl::StatusOr<WriteResult<etcdserverpb::LeaseRevokeResponse>> LeaseRevoke(
      const etcdserverpb::LeaseRevokeRequest& request, const AuthInfo* who = nullptr);
  // The lease `id` (with its keys if `with_keys`) at the visible revision, or at the newest commit if
  // `newest` (recovery, the lessor). NotFound ("requested lease not found") if it is not granted there.
  absl::StatusOr<LeaseState> LeaseAt(int64_t id, bool with_keys, bool newest = false);
  // Every lease (without keys), in ID order, at the visible revision or the newest commit; the
  // revision read in *revision if set.
  absl::StatusOr<std::vector<LeaseState>> Leases(bool newest = false, int64_t* revision = nullptr);

  // ----- alarms (etcd's Maintenance/Alarm) -----
  // GET: the active alarms of type `request.alarm()` (every type for NONE) at the visible revision,
  // ordered by type then member, the disk's alarm included (a failed log: NOSPACE for a full disk,
  // CORRUPT for another error; it is not stored and clears only with a restart). ACTIVATE and
  // DEACTIVATE: a logged write of the (memberID, alarm) pair, answered with it, or with nothing for a
  // DEACTIVATE of an inactive pair (then nothing is written, as when activating an active one).
  // While NOSPACE is active, Puts, Txns with Puts and LeaseGrants are refused with etcd's "database
  // space exceeded"; while CORRUPT is, every write but alarms (and auth) with "corrupt cluster".
  absl::StatusOr<WriteResult<etcdserverpb::AlarmResponse>> Alarm(const etcdserverpb::AlarmRequest& request,
                                                                 const AuthInfo* who = nullptr);
  // The active alarms of every type at the visible revision, the disk's included (Status's errors).
  std::vector<etcdserverpb::AlarmMember> Alarms();
  // The types of the stored alarms active in the newest state, as bits (1 << AlarmType); the disk's alarm
  // is not among them (Engine::write_status has it). Any thread, registered with the runtime or not;
  // never blocks (acquire: pairs with RefreshAlarmMask's release).
  int64_t AlarmMask() const { return alarm_mask_.load(std::memory_order_acquire); }
  // What the quota measures: the heap's bytes in old and large-object space (chunks holding committed
  // objects: the store, its history, and garbage until the next major collection), or
  // StoreOptions::store_bytes. Never blocks.
  int64_t StoreBytes() const;

  // ----- auth (etcd's Auth service; store/auth_state.h) -----
  // A logged auth change (a user's password as its bcrypt hash), applied as etcd's auth store applies it,
  // with its errors; `who` needs the root role while auth is enabled. A change that changes nothing
  // (AuthEnable when enabled, a role granted twice) writes nothing.
  absl::StatusOr<WriteResult<revkv::v1::AuthChangeResponse>> AuthChange(const revkv::v1::AuthChange& change,
                                                                        const AuthInfo* who = nullptr);
  // The auth state at the visible revision (never null).
  std::shared_ptr<const store::AuthView> VisibleAuth() const;
  // Called with each new auth state once it is visible (a change's revision durable), with the users whose
  // tokens it invalidates ("": all). Runs on the log's flusher or the calling thread: it must be quick
  // and never touch the heap. Set before serving; replaces any earlier one.
  using AuthListener = std::function<void(const std::shared_ptr<const store::AuthView>& view,
                                          const std::vector<std::string>& invalidated)>;
  void SetAuthListener(AuthListener listener);
  // Reads the newest auth state and makes it the visible one at once (recovery; the Auth service after a
  // change is durable, so that the change is in effect before it is answered). Tells the listener.
  void RefreshAuth();

  // ----- hashes (etcd's Maintenance/HashKV and Hash) -----
  // The hash of every key-value at `revision` (0: the visible one), in key order: for each, its key
  // length and value length (u32), create and mod revision, version and lease (i64), all little-endian,
  // then the key and the value (the checkpoint's entry encoding). It depends only on that state, so
  // members holding the same history agree, before and after a restart, and a restored snapshot hashes
  // as its revision did. etcd's answers: "compacted" for a revision at or before the compaction (or
  // before the oldest readable one), "future" past the visible one. A snapshot read: writers continue.
  absl::StatusOr<StoreHash> HashKV(int64_t revision);
  // The hash of the whole state at the visible revision: the key-values as HashKV, then every lease (ID
  // and granted TTL, i64) in ID order, then every state record (kind and length as u32, then its
  // bytes): alarms and auth. etcd hashes its whole backend.
  absl::StatusOr<StoreHash> Hash();

  // Blocks (in a safe region) until the write's log record is durable: OK, or the error a client gets
  // for it (errors::LogFailure: etcd's "database space exceeded" for a full disk, Unavailable otherwise).
  // OK at once for lsn 0 (nothing was logged).
  absl::Status WaitDurable(uint64_t lsn);

  // ----- state -----
  // The newest revision clients may see (every response header): the log's durable revision. Commits
  // after it have no durable record yet, so a crash could take them back (docs/store.md). The newest
  // committed one if the store has no log.
  int64_t VisibleRevision() const;
  // The newest committed revision (checkpoints, recovery); once the log has failed, the last durable
  // one (later commits will not survive a restart). Not for response headers: see VisibleRevision.
  int64_t Revision() const;
  // The revision compacted to (reads of older ones fail); 0 while nothing has been compacted.
  int64_t CompactRevision() const {
    return std::max<int64_t>(0, compact_revision_.load(std::memory_order_acquire));
  }
  int64_t KeyCount() const { return key_count_.load(std::memory_order_relaxed); }
  // The B+-tree's shape in the newest state (walks every node).
  absl::StatusOr<store::TreeShape> Shape();
  // The oldest revision a read can name: the compaction's, the start of the history window, or the
  // revision of the checkpoint the store was loaded from, whichever is newest.
  int64_t OldestReadableRevision();
  // The runtime time after the commit of `revision`, and back.
  uint64_t TimeOf(int64_t revision) const;
  int64_t RevisionOfCommitTime(uint64_t commit_time) const;

  // ----- watch -----
  // The event history: every committed write revision's key changes (store/apply.h captures them, Write
  // publishes them after the commit, replays included), trimmed with the readable window. Lives as long
  // as the store.
  watch::EventLog& events() { return *event_log_; }
  // Calls `callback` once `revision` (<= Revision()) is visible, or at once if it already is or never will
  // be (the log has failed). Runs it on the log's flusher thread or on the calling thread; it must be
  // quick. Any thread; never blocks.
  void OnVisible(int64_t revision, std::function<void()> callback);

  // ----- durability -----
  // Visits every key-value of the state at `revision` (0: newest), in key order, from one snapshot
  // (writers keep going), then, if `visit_lease` is set, every lease (ID, granted TTL) of the same
  // state in ID order, then, if `visit_state` is set, the state records (StateRecordKind, bytes) of the
  // same state that are not empty. Fails like Range at a past revision.
  absl::Status ForEachAt(
      int64_t revision, const std::function<void(const StoredKeyValue&)>& visit, int64_t* snapshot_revision,
      const std::function<void(int64_t id, int64_t ttl)>* visit_lease = nullptr,
      const std::function<void(uint32_t kind, std::string_view bytes)>* visit_state = nullptr);
  // Recovery from a checkpoint of `revision`, before any other request: LoadEntries inserts a batch of
  // key-values in one transaction; they must come in strictly ascending key order across all batches,
  // with 1 <= create_revision <= mod_revision <= revision and version >= 1, else DataLoss naming the
  // entry (nothing of the batch is inserted). The number of entries per revision does not matter.
  // FinishLoad then makes `revision` the current revision and the oldest readable one, and restores
  // `compact_revision` (<= revision; 0: nothing compacted).
  absl::Status LoadEntries(const std::vector<StoredKeyValue>& batch, int64_t revision);
  // Recovery from a checkpoint, after its entries and before FinishLoad: a batch of leases (ID, granted
  // TTL), in strictly ascending ID order across batches, IDs not 0, TTLs in 1..kMaxLeaseTtl, else
  // DataLoss (nothing of the batch is inserted). The keys loaded with a lease were attached to it.
  absl::Status LoadLeases(const std::vector<std::pair<int64_t, int64_t>>& batch);
  // Recovery from a checkpoint, after its leases and before FinishLoad: one state record. DataLoss for
  // an unknown kind or bytes that do not decode (nothing is changed).
  absl::Status LoadState(uint32_t kind, std::string_view bytes);
  absl::Status FinishLoad(int64_t revision, int64_t compact_revision);
  // Recovery, after the log is replayed: the compaction recorded by the compaction log. DataLoss if it
  // is past the current revision (the log lost records the compaction was acknowledged after).
  absl::Status RestoreCompaction(int64_t compact_revision);
  // Compact calls `log(revision)` before a compaction takes effect, serialized (one at a time, in
  // increasing revisions) and in a safe region; an error fails the Compact, which then changes nothing.
  // Set before any request (recovery does it).
  void SetCompactionLog(std::function<absl::Status(int64_t)> log) { compaction_log_ = std::move(log); }
  // Recovery: re-applies a logged write, which must produce exactly `revision`. Nothing is logged.
  absl::Status Replay(int64_t revision, std::string_view payload);
  // Starts logging writes to `wal` (after recovery). `wal` must outlive the store.
  void AttachWal(Wal* wal) { wal_ = wal; }
  Wal* wal() const { return wal_; }

 private:
  Store(const StoreOptions& options, Wal* wal);
  // When a write wakes the log's flusher: at once (no LogWake), or once for a batch (Store::TxnBatch).
  struct LogWake {
    uint64_t pending_bytes = 0;  // bytes of this batch's records appended since the flusher was woken
  };
  template <class Request, class Response>
  absl::StatusOr<WriteResult<Response>> Write(const Request& request, char kind, int64_t replay_revision,
                                              const store::PastRanges* past_ranges = nullptr,
                                              const AuthInfo* who = nullptr, LogWake* wake = nullptr);
  absl::StatusOr<WriteResult<etcdserverpb::TxnResponse>> TxnWith(const etcdserverpb::TxnRequest& request,
                                                                 TxnReads reads, const AuthInfo* who,
                                                                 LogWake* wake);
  // The auth view of `meta` (decoded once per auth state, cached). DataLoss if its bytes do not decode.
  template <class TxT>
  absl::StatusOr<std::shared_ptr<const store::AuthView>> AuthViewOf(
      TxT& tx, const runtime::stm::ReadPtr<store::MetaState>& meta);
  // Installs `view`, the auth state committed at `revision`, as the visible one (if newer) and tells the
  // listener.
  void InstallAuth(int64_t revision, std::shared_ptr<const store::AuthView> view,
                   const std::vector<std::string>& invalidated);

  // Range at the durable revision (`capped`), or at the newest committed one (for a Txn whose answer
  // waits for the log anyway).
  absl::StatusOr<etcdserverpb::RangeResponse> RangeAt(const etcdserverpb::RangeRequest& request, bool capped);
  // Reads the Ranges of `request` that name a revision, each at its revision (store/apply.h); a
  // revision after the durable one is "future" if `capped`.
  void ReadPastRanges(const etcdserverpb::TxnRequest& request, bool capped, store::PastRanges* past);
  // The record to wait for before answering from the state at `read_revision`: 0 if it is durable.
  WalLsn LsnToWaitFor(int64_t read_revision) const;
  // The runtime time of the visible revision (0: the newest, when reads are not capped).
  uint64_t VisibleTime() const;
  // The newest committed revision; the revision client reads are capped at: the log's durable
  // revision (0: no cap, the store has no log); and the cap of Revision(): the durable revision once
  // the log has failed (0 while it works).
  int64_t CommittedRevision() const;
  int64_t ReadCap() const;
  int64_t FailureCap() const;
  // The oldest revision either history window keeps (before the compaction is applied).
  int64_t WindowStart(int64_t current);
  void UpdateRetention();
  // The quota check of a request that costs `cost` bytes (store/quota.h): OK, or NoSpace once the NOSPACE
  // alarm is active or raised here (logged and durable before it returns).
  absl::Status CheckQuota(int64_t cost);
  // The hash of the state at `revision` (> 0): the key-values, and with `everything` the leases and state
  // records too. Fails like a Range at that revision.
  absl::StatusOr<uint32_t> HashAt(int64_t revision, bool everything);
  // Reloads alarm_mask_ from the newest state.
  void RefreshAlarmMask();
  runtime::stm::Ref<store::StoreRoot> RootRef() const;
  // Relaxed: FinishLoad writes it during recovery, before the store is handed to other threads (which
  // orders it before their reads); it never changes afterwards.
  int64_t LoadFloor() const { return load_floor_.load(std::memory_order_relaxed); }

  const StoreOptions options_;
  Wal* wal_;
  runtime::GlobalRoot root_;
  std::mutex history_mu_;
  std::deque<std::pair<std::chrono::steady_clock::time_point, int64_t>>
      history_times_;  // guarded by history_mu_
  // The runtime time of revision 1: written at creation and by FinishLoad, before any request (the
  // store is handed to other threads only after recovery), then read-only.
  uint64_t time_base_ = 0;
  // Recovery state, owned by the recovering thread before any request: the oldest readable revision
  // after a load (the states before it are not revisions anyone wrote), the last key loaded (keys must
  // ascend) and the entries loaded. load_floor_ is read-only afterwards, like time_base_.
  std::atomic<int64_t> load_floor_{std::numeric_limits<int64_t>::min()};  // nothing loaded: no floor
  std::string load_last_key_;
  uint64_t load_count_ = 0;
  std::optional<int64_t> load_last_lease_;               // the last lease ID loaded (IDs must ascend)
  std::function<absl::Status(int64_t)> compaction_log_;  // set before any request, then read-only
  std::mutex compact_mu_;                                // serializes Compact (its log write and its effect)
  std::atomic<int64_t> compact_revision_{-1};  // as etcd: nothing compacted yet (Compact 0 succeeds)
  std::atomic<int64_t> key_count_{0};
  std::unique_ptr<watch::EventLog> event_log_;  // set in Create, never replaced
  std::atomic<uint64_t> next_lease_id_{1};      // the next server-chosen lease ID (before masking)
  // A copy of the newest state's MetaState::alarm_mask, for refusals outside transactions (the quota's
  // fast path, Compact). Written after every alarm change (RefreshAlarmMask: release), read with
  // acquire; the transactions themselves read the MetaState, so a stale copy only delays a refusal.
  std::atomic<int64_t> alarm_mask_{0};
  // Auth: the visible state (and the revision whose commit made it) and the listener, under auth_mu_; the
  // last state decoded by a transaction (a cache keyed by auth revision and enabled flag), under
  // auth_mu_ too. auth_enabled_ mirrors visible_auth_->enabled() (release/acquire) so reads skip the
  // lock while authentication is off.
  mutable std::mutex auth_mu_;
  std::shared_ptr<const store::AuthView> visible_auth_;  // under auth_mu_
  int64_t visible_auth_revision_ = 0;                    // under auth_mu_
  AuthListener auth_listener_;                           // under auth_mu_
  std::shared_ptr<const store::AuthView> decoded_auth_;  // under auth_mu_
  std::atomic<bool> auth_enabled_{false};
};

}  // namespace revkv::server
