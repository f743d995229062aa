// Applying KV requests inside one transaction, with etcd 3.4's semantics (etcdserver/apply.go and
// mvcc/kvstore_txn.go): Range with its limit, count, filters and sorting; Put with prev_kv,
// ignore_value and ignore_lease; DeleteRange with prev_kv; Txn with compares evaluated first (all
// of them, nested ones included, on the state before the Txn) and then the operations of the taken
// branches in order.
//
// Revisions the transaction cannot know yet are written into responses as markers and replaced
// after the commit (PatchRevisions): kPendingRevision for "the revision this write transaction will
// commit", kCurrentRevision for "the revision this transaction read".
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "etcdserverpb/rpc.pb.h"
#include "revkv/v1/store.pb.h"
#include "server/store/auth_state.h"
#include "server/store/errors.h"
#include "server/store/lease_table.h"
#include "server/store/meta_state.h"
#include "server/store/tree.h"

namespace revkv::server::store {

inline constexpr int64_t kPendingRevision = std::numeric_limits<int64_t>::max();
inline constexpr int64_t kCurrentRevision = std::numeric_limits<int64_t>::max() - 1;

// A key-value copied out of the heap (no heap pointers: it may outlive the transaction).
struct KvRecord {
  std::string key;
  std::string value;
  int64_t create_revision;
  int64_t mod_revision;
  int64_t version;
  int64_t lease;
};

// One key change made by a write, for the watch history (server/watch/event_log.h). `kv` is the
// key-value after a PUT; a DELETE sets only kv.key and kv.mod_revision (etcd's tombstone events). `prev` is
// the key-value before the change, if the key existed. Revisions of this transaction are kPendingRevision
// until the store patches them after the commit (PatchEvents).
struct KeyEvent {
  bool is_delete = false;
  bool has_prev = false;
  KvRecord kv{};
  KvRecord prev{};
};

// Maps runtime commit times to store revisions: revision 1 is the state at `time_base`.
struct RevisionClock {
  uint64_t time_base;
  int64_t RevisionOfCommitTime(uint64_t commit_time) const {
    return static_cast<int64_t>((commit_time + 1 - time_base) / 2) + 1;
  }
  uint64_t TimeOf(int64_t revision) const { return time_base + 2 * static_cast<uint64_t>(revision - 1); }
};

// Parses etcd's (key, range_end) pair: empty end = the key alone; "\0" = every key from `key` on.
inline KeyRange MakeRange(const std::string& key, const std::string& range_end) {
  KeyRange r;
  r.begin = key;
  if (range_end.empty()) {
    r.single = true;
  } else if (range_end != std::string(1, '\0')) {
    r.end = range_end;
  }
  return r;
}

void ToProto(const KvRecord& r, bool keys_only, mvccpb::KeyValue* kv);

// The Ranges of a Txn that name a revision. etcd serves each at its revision; one STM transaction reads
// one state, so the store reads them before the Txn's transaction, each in a snapshot transaction at its
// revision (a past state never changes, so when it is read does not matter), and the Txn copies the
// answers in. etcd's checkRange decides, on the taken path only, which of them fail the Txn.
struct PastRange {
  const etcdserverpb::RangeRequest* request;
  absl::Status status;  // etcd's checkRange: a future or compacted revision fails the whole Txn
  std::optional<etcdserverpb::RangeResponse> response;  // unset: a negative revision, read as "now"
};
struct PastRanges {
  std::vector<PastRange> items;
  bool replaying = false;  // recovery: nothing was read and the responses are dropped; no checks

  const PastRange* Find(const etcdserverpb::RangeRequest* r) const {
    for (const PastRange& p : items) {
      if (p.request == r) return &p;
    }
    return nullptr;
  }
};

template <class TxT>
class Applier {
 public:
  Applier(TxT& tx, Ref<StoreRoot> root, RevisionClock clock) : tx_(tx), root_(root), clock_(clock) {}

  bool changed() const { return changed_; }
  int64_t key_delta() const { return key_delta_; }
  // The answers to the Txn's Ranges at a revision (borrowed; must outlive the Applier). Without them,
  // such a Range is an internal error.
  void set_past_ranges(const PastRanges* past) { past_ranges_ = past; }
  // Where Put and DeleteRange record one KeyEvent per key change, in apply order (borrowed; must outlive
  // the Applier). Null: nothing is recorded. The caller clears it before each attempt of the transaction.
  void set_event_sink(std::vector<KeyEvent>* sink) { sink_ = sink; }

  // The entry as a record; revisions of an entry written by this transaction are pending.
  KvRecord Record(const ReadPtr<Entry>& e, bool with_value = true) {
    const Entry* p = e.get();
    KvRecord r;
    r.key = std::string(p->key());
    if (with_value) r.value = std::string(p->value());
    const bool uncommitted = !p->HasFlag(runtime::kGlobal) && p->HasFlag(runtime::kWritten);
    if (p->mod_revision != 0) {
      r.mod_revision = p->mod_revision;
    } else if (uncommitted) {
      r.mod_revision = kPendingRevision;
    } else {
      r.mod_revision = clock_.RevisionOfCommitTime(p->h_commit_time.load(std::memory_order_relaxed));
    }
    r.create_revision = p->create_revision != 0 ? p->create_revision : r.mod_revision;
    r.version = p->version;
    r.lease = p->lease();
    return r;
  }

  // Range at this transaction's state; `header_revision` is what the response header says.
  void Range(const etcdserverpb::RangeRequest& r, int64_t header_revision, etcdserverpb::RangeResponse* out) {
    const bool filtered = r.min_mod_revision() != 0 || r.max_mod_revision() != 0 ||
                          r.min_create_revision() != 0 || r.max_create_revision() != 0;
    const bool sorted = r.sort_order() != etcdserverpb::RangeRequest::NONE;
    // A limit <= 0 means no limit; with sorting or filters everything is fetched first.
    // One more than the limit tells whether there is `more`; the largest limit already means "all".
    const bool unlimited =
        sorted || filtered || r.limit() <= 0 || r.limit() == std::numeric_limits<int64_t>::max();
    const int64_t fetch_limit = unlimited ? 0 : r.limit() + 1;
    // Values are needed to sort on them even when the response leaves them out.
    const bool with_values = !r.keys_only() || r.sort_target() == etcdserverpb::RangeRequest::VALUE;
    int64_t count = 0;
    std::vector<KvRecord> kvs;
    ForEachInRange(tx_, root_, MakeRange(r.key(), r.range_end()), [&](const ReadPtr<Entry>& e) {
      ++count;
      if (!r.count_only() && (fetch_limit == 0 || static_cast<int64_t>(kvs.size()) < fetch_limit)) {
        kvs.push_back(Record(e, with_values));
      }
      return true;
    });
    const bool by_revision = filtered || r.sort_target() == etcdserverpb::RangeRequest::MOD ||
                             r.sort_target() == etcdserverpb::RangeRequest::CREATE;
    if constexpr (std::is_same_v<TxT, runtime::stm::Tx>) {
      if (by_revision) ResolvePending(&kvs);
    }
    auto prune = [&](auto drop) { kvs.erase(std::remove_if(kvs.begin(), kvs.end(), drop), kvs.end()); };
    if (r.max_mod_revision() != 0)
      prune([&](const KvRecord& k) { return k.mod_revision > r.max_mod_revision(); });
    if (r.min_mod_revision() != 0)
      prune([&](const KvRecord& k) { return k.mod_revision < r.min_mod_revision(); });
    if (r.max_create_revision() != 0) {
      prune([&](const KvRecord& k) { return k.create_revision > r.max_create_revision(); });
    }
    if (r.min_create_revision() != 0) {
      prune([&](const KvRecord& k) { return k.create_revision < r.min_create_revision(); });
    }
    Sort(r, &kvs);
    if (r.limit() > 0 && static_cast<int64_t>(kvs.size()) > r.limit()) {
      kvs.resize(static_cast<size_t>(r.limit()));
      out->set_more(true);
    }
    out->mutable_header()->set_revision(header_revision);
    out->set_count(count);
    for (const KvRecord& k : kvs) ToProto(k, r.keys_only(), out->add_kvs());
  }

  // Filters and sorting on revisions need this transaction's own revision, which only an inevitable
  // transaction knows before it commits (writes commit one at a time, in order): become inevitable
  // and put the real revision in place of the marker.
  void ResolvePending(std::vector<KvRecord>* kvs) {
    const bool pending = std::any_of(kvs->begin(), kvs->end(), [](const KvRecord& k) {
      return k.mod_revision == kPendingRevision || k.create_revision == kPendingRevision;
    });
    if (!pending) return;
    tx_.BecomeInevitable();
    const int64_t revision = clock_.RevisionOfCommitTime(tx_.start_time() + 1);
    for (KvRecord& k : *kvs) {
      if (k.mod_revision == kPendingRevision) k.mod_revision = revision;
      if (k.create_revision == kPendingRevision) k.create_revision = revision;
    }
  }

  // etcd's checkRequestPut for the Puts of a Txn's taken branches, in order, on the state before the
  // Txn: a Put with ignore_value or ignore_lease needs its key; a lease must exist.
  absl::Status CheckTxnPuts(const etcdserverpb::TxnRequest& t, const std::vector<bool>& path, size_t* at) {
    const bool ok = path[(*at)++];
    for (const auto& op : ok ? t.success() : t.failure()) {
      if (op.request_case() == etcdserverpb::RequestOp::kRequestTxn) {
        if (absl::Status s = CheckTxnPuts(op.request_txn(), path, at); !s.ok()) return s;
        continue;
      }
      if (op.request_case() != etcdserverpb::RequestOp::kRequestPut) continue;
      const etcdserverpb::PutRequest& p = op.request_put();
      if ((p.ignore_value() || p.ignore_lease()) && !Find(tx_, root_, p.key())) return errors::KeyNotFound();
      if (p.lease() != 0 && LeaseTtl(tx_, root_, p.lease()) == 0) return errors::LeaseNotFound();
    }
    return absl::OkStatus();
  }

  // etcd's checkRequests(checkRange) for the Ranges at a revision on the taken path, in order: the first
  // that names a future revision or a compacted one fails the Txn before anything is applied.
  absl::Status CheckTxnRanges(const etcdserverpb::TxnRequest& t, const std::vector<bool>& path, size_t* at) {
    const bool ok = path[(*at)++];
    for (const auto& op : ok ? t.success() : t.failure()) {
      if (op.request_case() == etcdserverpb::RequestOp::kRequestTxn) {
        if (absl::Status s = CheckTxnRanges(op.request_txn(), path, at); !s.ok()) return s;
        continue;
      }
      if (op.request_case() != etcdserverpb::RequestOp::kRequestRange || op.request_range().revision() == 0) {
        continue;
      }
      if (past_ranges_ != nullptr && past_ranges_->replaying) continue;
      const PastRange* past = past_ranges_ != nullptr ? past_ranges_->Find(&op.request_range()) : nullptr;
      if (past == nullptr) return absl::InternalError("revkv: a Range at a revision was not read");
      if (!past->status.ok()) return past->status;
    }
    return absl::OkStatus();
  }

  // The revision a response made now reflects: pending once this transaction changed something.
  int64_t NowRevision() const { return changed_ ? kPendingRevision : kCurrentRevision; }

  // ----- writes: read-write transactions only -----

  absl::Status Put(const etcdserverpb::PutRequest& p, etcdserverpb::PutResponse* out) {
    static_assert(std::is_same_v<TxT, runtime::stm::Tx>);
    // A lease must exist; no lease costs no lookup.
    if (p.lease() != 0 && !p.ignore_lease() && LeaseTtl(tx_, root_, p.lease()) == 0) {
      return errors::LeaseNotFound();
    }
    ReadPtr<Entry> old = Find(tx_, root_, p.key());
    if ((p.ignore_value() || p.ignore_lease()) && !old) return errors::KeyNotFound();
    if (old) {
      KvRecord o = Record(old);
      if (p.prev_kv()) ToProto(o, false, out->mutable_prev_kv());
      EntryFields f;
      f.create_revision = o.create_revision == kPendingRevision ? 0 : o.create_revision;
      f.mod_revision = 0;
      f.version = o.version + 1;
      f.lease = p.ignore_lease() ? o.lease : p.lease();
      UpdateEntry(tx_, root_, p.key(), old,
                  p.ignore_value() ? std::nullopt : std::optional<std::string_view>(p.value()), f);
      if (sink_ != nullptr) {
        KeyEvent& ev = sink_->emplace_back();
        ev.kv = KvRecord{o.key,
                         p.ignore_value() ? o.value : p.value(),
                         o.create_revision,
                         kPendingRevision,
                         o.version + 1,
                         f.lease};
        ev.has_prev = true;
        ev.prev = std::move(o);  // the last use of o
      }
      if (f.lease != o.lease) {  // moved to another lease (or to none): the index follows
        if (o.lease != 0) Detach(tx_, root_, o.lease, p.key());
        if (p.lease() != 0) Attach(tx_, root_, p.lease(), p.key());
      }
    } else {
      EntryFields f;
      f.version = 1;
      f.lease = p.lease();
      InsertEntry(tx_, root_, p.key(), p.value(), f);
      if (p.lease() != 0) Attach(tx_, root_, p.lease(), p.key());
      ++key_delta_;
      if (sink_ != nullptr) {
        sink_->emplace_back().kv =
            KvRecord{p.key(), p.value(), kPendingRevision, kPendingRevision, 1, p.lease()};
      }
    }
    changed_ = true;
    out->mutable_header()->set_revision(kPendingRevision);
    return absl::OkStatus();
  }

  void DeleteRange(const etcdserverpb::DeleteRangeRequest& d, etcdserverpb::DeleteRangeResponse* out) {
    static_assert(std::is_same_v<TxT, runtime::stm::Tx>);
    std::vector<KvRecord> doomed;
    ForEachInRange(tx_, root_, MakeRange(d.key(), d.range_end()), [&](const ReadPtr<Entry>& e) {
      doomed.push_back(Record(e, d.prev_kv() || sink_ != nullptr));  // the history keeps the old value
      return true;
    });
    for (const KvRecord& k : doomed) {
      Erase(tx_, root_, k.key);
      if (k.lease != 0) Detach(tx_, root_, k.lease, k.key);
      --key_delta_;
      if (d.prev_kv()) ToProto(k, false, out->add_prev_kvs());
      if (sink_ != nullptr) {
        KeyEvent& ev = sink_->emplace_back();
        ev.is_delete = true;
        ev.kv.key = k.key;
        ev.kv.create_revision = ev.kv.version = ev.kv.lease = 0;
        ev.kv.mod_revision = kPendingRevision;
        ev.has_prev = true;
        ev.prev = k;
      }
    }
    out->set_deleted(static_cast<int64_t>(doomed.size()));
    if (!doomed.empty()) changed_ = true;
    out->mutable_header()->set_revision(NowRevision());
  }

  // ----- leases (lease_table.h) -----

  // etcd's LeaseGrant as applied: "lease already exists" if `g.id()` is granted. The caller has chosen
  // the ID and checked the TTL (Store::LeaseGrant), so the logged request replays as it was applied.
  absl::Status LeaseGrant(const etcdserverpb::LeaseGrantRequest& g, etcdserverpb::LeaseGrantResponse* out) {
    static_assert(std::is_same_v<TxT, runtime::stm::Tx>);
    if (LeaseTtl(tx_, root_, g.id()) != 0) return errors::LeaseExists();
    InsertLease(tx_, root_, g.id(), g.ttl());
    changed_ = true;
    out->set_id(g.id());
    out->set_ttl(g.ttl());
    out->mutable_header()->set_revision(kPendingRevision);
    return absl::OkStatus();
  }

  // etcd's LeaseRevoke as applied: every attached key is deleted (DeleteRange, which detaches it) and
  // the lease removed, all in this transaction, so in one revision. "requested lease not found" if
  // `r.id()` is not granted.
  absl::Status LeaseRevoke(const etcdserverpb::LeaseRevokeRequest& r,
                           etcdserverpb::LeaseRevokeResponse* out) {
    static_assert(std::is_same_v<TxT, runtime::stm::Tx>);
    if (LeaseTtl(tx_, root_, r.id()) == 0) return errors::LeaseNotFound();
    for (const std::string& key : AttachedKeys(tx_, root_, r.id())) {
      etcdserverpb::DeleteRangeRequest d;
      d.set_key(key);
      etcdserverpb::DeleteRangeResponse ignored;
      DeleteRange(d, &ignored);
    }
    EraseLease(tx_, root_, r.id());
    changed_ = true;
    out->mutable_header()->set_revision(kPendingRevision);
    return absl::OkStatus();
  }

  // ----- alarms (meta_state.h) -----

  // etcd's alarm store (etcdserver/api/v3alarm) as applied: ACTIVATE adds the (member, type) pair and
  // answers it (the existing one if it was active: nothing changes); DEACTIVATE removes it and answers
  // it (nothing, and no change, if it was not active). GET is a read (Store::Alarm).
  absl::Status Alarm(const etcdserverpb::AlarmRequest& r, etcdserverpb::AlarmResponse* out) {
    static_assert(std::is_same_v<TxT, runtime::stm::Tx>);
    ReadPtr<MetaState> meta = ReadMeta(tx_, root_);
    std::vector<etcdserverpb::AlarmMember> alarms = ReadAlarms(tx_, meta);
    etcdserverpb::AlarmMember m;
    m.set_memberid(r.memberid());
    m.set_alarm(r.alarm());
    auto at = std::find_if(alarms.begin(), alarms.end(), [&](const etcdserverpb::AlarmMember& a) {
      return a.memberid() == m.memberid() && a.alarm() == m.alarm();
    });
    switch (r.action()) {
      case etcdserverpb::AlarmRequest::ACTIVATE:
        if (at != alarms.end()) {
          *out->add_alarms() = *at;
          break;
        }
        alarms.insert(
            std::upper_bound(alarms.begin(), alarms.end(), m,
                             [](const etcdserverpb::AlarmMember& a, const etcdserverpb::AlarmMember& b) {
                               return std::make_pair(static_cast<int>(a.alarm()), a.memberid()) <
                                      std::make_pair(static_cast<int>(b.alarm()), b.memberid());
                             }),
            m);
        WriteAlarms(tx_, meta, alarms);
        changed_ = true;
        *out->add_alarms() = m;
        break;
      case etcdserverpb::AlarmRequest::DEACTIVATE:
        if (at == alarms.end()) break;
        alarms.erase(at);
        WriteAlarms(tx_, meta, alarms);
        changed_ = true;
        *out->add_alarms() = m;
        break;
      default:
        return absl::InvalidArgumentError("revkv: an alarm GET is not a write");
    }
    out->mutable_header()->set_revision(NowRevision());
    return absl::OkStatus();
  }

  // ----- auth (auth_state.h) -----

  // An auth change as etcd's auth store applies it; writes the MetaState only if the state changed.
  absl::Status AuthChange(const revkv::v1::AuthChange& r, revkv::v1::AuthChangeResponse* out) {
    static_assert(std::is_same_v<TxT, runtime::stm::Tx>);
    ReadPtr<MetaState> meta = ReadMeta(tx_, root_);
    const std::string_view bytes = KeyAt(tx_, meta->auth);
    revkv::v1::AuthState state = InitialAuthState();
    if (!bytes.empty() && !state.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
      return absl::DataLossError("the auth state does not decode");
    }
    bool changed = false;
    std::vector<std::string> invalidated;
    if (absl::Status s = ApplyAuthChange(r, &state, &changed, &invalidated); !s.ok()) return s;
    if (changed) {
      WriteAuth(tx_, meta, EncodeAuthState(state), static_cast<int64_t>(state.revision()), state.enabled());
      changed_ = true;
    }
    out->mutable_header()->set_revision(NowRevision());
    return absl::OkStatus();
  }

  // ----- Txn -----

  // The branch taken at every level, in etcd's order (compareToPath), on the current state.
  void ComparePath(const etcdserverpb::TxnRequest& t, std::vector<bool>* path) {
    const bool ok =
        std::all_of(t.compare().begin(), t.compare().end(), [&](const auto& c) { return Compare(c); });
    path->push_back(ok);
    for (const auto& op : ok ? t.success() : t.failure()) {
      if (op.request_case() == etcdserverpb::RequestOp::kRequestTxn) ComparePath(op.request_txn(), path);
    }
  }

  // Applies the ops along `path` from position *at. Returns an error for a failed Put check.
  absl::Status Txn(const etcdserverpb::TxnRequest& t, const std::vector<bool>& path, size_t* at,
                   etcdserverpb::TxnResponse* out) {
    const bool ok = path[(*at)++];
    out->set_succeeded(ok);
    out->mutable_header();
    for (const auto& op : ok ? t.success() : t.failure()) {
      etcdserverpb::ResponseOp* r = out->add_responses();
      switch (op.request_case()) {
        case etcdserverpb::RequestOp::kRequestRange: {
          const PastRange* past = nullptr;
          if (op.request_range().revision() != 0) {
            if (past_ranges_ == nullptr)
              return absl::InternalError("revkv: a Range at a revision was not read");
            if (past_ranges_->replaying) break;  // the response is dropped
            past = past_ranges_->Find(&op.request_range());
            if (past == nullptr || !past->status.ok()) {
              return absl::InternalError("revkv: a Range at a revision was not read or not checked");
            }
          }
          if (past != nullptr && past->response.has_value()) {
            // As etcd's rangeKeys: the key-values at the revision asked for, the header at this Txn's.
            *r->mutable_response_range() = *past->response;
            r->mutable_response_range()->mutable_header()->set_revision(NowRevision());
          } else {
            // No revision, or a negative one: etcd's rangeKeys reads the Txn's own state then.
            Range(op.request_range(), NowRevision(), r->mutable_response_range());
          }
          break;
        }
        case etcdserverpb::RequestOp::kRequestPut:
          if constexpr (std::is_same_v<TxT, runtime::stm::Tx>) {
            if (absl::Status s = Put(op.request_put(), r->mutable_response_put()); !s.ok()) return s;
          }
          break;
        case etcdserverpb::RequestOp::kRequestDeleteRange:
          if constexpr (std::is_same_v<TxT, runtime::stm::Tx>) {
            DeleteRange(op.request_delete_range(), r->mutable_response_delete_range());
          }
          break;
        case etcdserverpb::RequestOp::kRequestTxn:
          if (absl::Status s = Txn(op.request_txn(), path, at, r->mutable_response_txn()); !s.ok()) return s;
          break;
        default:
          break;
      }
    }
    return absl::OkStatus();
  }

 private:
  bool Compare(const etcdserverpb::Compare& c) {
    bool any = false;
    bool all = true;
    ForEachInRange(tx_, root_, MakeRange(c.key(), c.range_end()), [&](const ReadPtr<Entry>& e) {
      any = true;
      if (!CompareKv(c, Record(e, c.target() == etcdserverpb::Compare::VALUE))) {
        all = false;
        return false;
      }
      return true;
    });
    if (!any) {
      if (c.target() == etcdserverpb::Compare::VALUE) return false;  // no value to compare with
      return CompareKv(c, KvRecord{"", "", 0, 0, 0, 0});
    }
    return all;
  }

  static bool CompareKv(const etcdserverpb::Compare& c, const KvRecord& kv) {
    int result = 0;
    auto cmp = [](int64_t a, int64_t b) { return a < b ? -1 : (a > b ? 1 : 0); };
    switch (c.target()) {
      case etcdserverpb::Compare::VALUE: {
        const std::string& v =
            c.target_union_case() == etcdserverpb::Compare::kValue ? c.value() : std::string();
        const int r = kv.value.compare(v);
        result = r < 0 ? -1 : (r > 0 ? 1 : 0);
        break;
      }
      case etcdserverpb::Compare::CREATE:
        result =
            cmp(kv.create_revision,
                c.target_union_case() == etcdserverpb::Compare::kCreateRevision ? c.create_revision() : 0);
        break;
      case etcdserverpb::Compare::MOD:
        result = cmp(kv.mod_revision,
                     c.target_union_case() == etcdserverpb::Compare::kModRevision ? c.mod_revision() : 0);
        break;
      case etcdserverpb::Compare::VERSION:
        result = cmp(kv.version, c.target_union_case() == etcdserverpb::Compare::kVersion ? c.version() : 0);
        break;
      case etcdserverpb::Compare::LEASE:
        result = cmp(kv.lease, c.target_union_case() == etcdserverpb::Compare::kLease ? c.lease() : 0);
        break;
      default:
        break;
    }
    switch (c.result()) {
      case etcdserverpb::Compare::EQUAL:
        return result == 0;
      case etcdserverpb::Compare::NOT_EQUAL:
        return result != 0;
      case etcdserverpb::Compare::GREATER:
        return result > 0;
      case etcdserverpb::Compare::LESS:
        return result < 0;
      default:
        return true;
    }
  }

  // etcd sorts with Go's unstable sort; we sort stably, so equal targets stay in key order.
  static void Sort(const etcdserverpb::RangeRequest& r, std::vector<KvRecord>* kvs) {
    auto order = r.sort_order();
    if (r.sort_target() != etcdserverpb::RangeRequest::KEY && order == etcdserverpb::RangeRequest::NONE) {
      order = etcdserverpb::RangeRequest::ASCEND;
    }
    if (order == etcdserverpb::RangeRequest::NONE) return;
    auto less = [&](const KvRecord& a, const KvRecord& b) {
      switch (r.sort_target()) {
        case etcdserverpb::RangeRequest::VERSION:
          return a.version < b.version;
        case etcdserverpb::RangeRequest::CREATE:
          return a.create_revision < b.create_revision;
        case etcdserverpb::RangeRequest::MOD:
          return a.mod_revision < b.mod_revision;
        case etcdserverpb::RangeRequest::VALUE:
          return a.value < b.value;
        default:
          return a.key < b.key;
      }
    };
    if (order == etcdserverpb::RangeRequest::DESCEND) {
      std::stable_sort(kvs->begin(), kvs->end(),
                       [&](const KvRecord& a, const KvRecord& b) { return less(b, a); });
    } else {
      std::stable_sort(kvs->begin(), kvs->end(), less);
    }
  }

  TxT& tx_;
  Ref<StoreRoot> root_;
  RevisionClock clock_;
  const PastRanges* past_ranges_ = nullptr;
  std::vector<KeyEvent>* sink_ = nullptr;
  bool changed_ = false;
  int64_t key_delta_ = 0;
};

// Replace the revision markers in a response (and its nested responses) once the revisions are known.
void PatchRevisions(etcdserverpb::RangeResponse* r, int64_t pending, int64_t current);
void PatchRevisions(etcdserverpb::PutResponse* r, int64_t pending, int64_t current);
void PatchRevisions(etcdserverpb::DeleteRangeResponse* r, int64_t pending, int64_t current);
void PatchRevisions(etcdserverpb::TxnResponse* r, int64_t pending, int64_t current);
// Replace kPendingRevision in captured events with the committed revision.
void PatchEvents(std::vector<KeyEvent>* events, int64_t pending);
void PatchRevisions(etcdserverpb::LeaseGrantResponse* r, int64_t pending, int64_t current);
void PatchRevisions(etcdserverpb::LeaseRevokeResponse* r, int64_t pending, int64_t current);
void PatchRevisions(etcdserverpb::AlarmResponse* r, int64_t pending, int64_t current);
void PatchRevisions(revkv::v1::AuthChangeResponse* r, int64_t pending, int64_t current);

}  // namespace revkv::server::store
