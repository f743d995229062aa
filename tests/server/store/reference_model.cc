// The reference model (reference_model.h), function by function after etcd 3.4's Go sources; each
// section names the Go function it follows.
#include "tests/server/store/reference_model.h"

#include <algorithm>
#include <utility>

namespace revkv::server::reference {

namespace {

using etcdserverpb::Compare;
using etcdserverpb::RangeRequest;
using etcdserverpb::RequestOp;
using Ops = google::protobuf::RepeatedPtrField<RequestOp>;

// ----- errors: etcdserver/api/v3rpc/rpctypes/error.go, as togRPCError maps them -----------------------

absl::Status ErrEmptyKey() { return absl::InvalidArgumentError("etcdserver: key is not provided"); }
absl::Status ErrKeyNotFound() { return absl::InvalidArgumentError("etcdserver: key not found"); }
absl::Status ErrValueProvided() { return absl::InvalidArgumentError("etcdserver: value is provided"); }
absl::Status ErrLeaseProvided() { return absl::InvalidArgumentError("etcdserver: lease is provided"); }
absl::Status ErrTooManyOps() {
  return absl::InvalidArgumentError("etcdserver: too many operations in txn request");
}
absl::Status ErrDuplicateKey() {
  return absl::InvalidArgumentError("etcdserver: duplicate key given in txn request");
}
absl::Status ErrCompacted() {
  return absl::OutOfRangeError("etcdserver: mvcc: required revision has been compacted");
}
absl::Status ErrFutureRev() {
  return absl::OutOfRangeError("etcdserver: mvcc: required revision is a future revision");
}
absl::Status ErrLeaseNotFound() { return absl::NotFoundError("etcdserver: requested lease not found"); }

// ----- request checks: v3rpc/key.go checkRangeRequest ... checkTxnRequest ---------------------------

absl::Status CheckRangeRequest(const RangeRequest& r) {
  return r.key().empty() ? ErrEmptyKey() : absl::OkStatus();
}

absl::Status CheckPutRequest(const etcdserverpb::PutRequest& r) {
  if (r.key().empty()) return ErrEmptyKey();
  if (r.ignore_value() && !r.value().empty()) return ErrValueProvided();
  if (r.ignore_lease() && r.lease() != 0) return ErrLeaseProvided();
  return absl::OkStatus();
}

absl::Status CheckDeleteRequest(const etcdserverpb::DeleteRangeRequest& r) {
  return r.key().empty() ? ErrEmptyKey() : absl::OkStatus();
}

absl::Status CheckTxnRequest(const etcdserverpb::TxnRequest& r, int64_t max_txn_ops);

absl::Status CheckRequestOp(const RequestOp& u, int64_t max_txn_ops) {
  if (u.has_request_range()) return CheckRangeRequest(u.request_range());
  if (u.has_request_put()) return CheckPutRequest(u.request_put());
  if (u.has_request_delete_range()) return CheckDeleteRequest(u.request_delete_range());
  if (u.has_request_txn()) return CheckTxnRequest(u.request_txn(), max_txn_ops);
  return ErrKeyNotFound();  // "empty op / nil entry"
}

absl::Status CheckTxnRequest(const etcdserverpb::TxnRequest& r, int64_t max_txn_ops) {
  int64_t opc = r.compare_size();
  if (opc < r.success_size()) opc = r.success_size();
  if (opc < r.failure_size()) opc = r.failure_size();
  if (opc > max_txn_ops) return ErrTooManyOps();
  for (const Compare& c : r.compare()) {
    if (c.key().empty()) return ErrEmptyKey();
  }
  for (const RequestOp& u : r.success()) {
    if (absl::Status s = CheckRequestOp(u, max_txn_ops - opc); !s.ok()) return s;
  }
  for (const RequestOp& u : r.failure()) {
    if (absl::Status s = CheckRequestOp(u, max_txn_ops - opc); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// ----- checkIntervals, over pkg/adt's string-affine intervals ------------------------------------------

// adt.StringAffineComparable: "" is greater than every other string.
int AffineCompare(const std::string& a, const std::string& b) {
  if (a.empty()) return b.empty() ? 0 : 1;
  if (b.empty()) return -1;
  return a < b ? -1 : (a > b ? 1 : 0);
}

struct Interval {
  std::string begin;
  std::string end;
};

Interval AffinePoint(const std::string& k) { return Interval{k, k + std::string(1, '\0')}; }

// adt.Interval.Compare: 0 when `a` and `b` overlap, -1 when `a` is left of `b`, 1 when right.
int IntervalCompare(const Interval& a, const Interval& b) {
  if (AffineCompare(a.begin, b.begin) < 0 && AffineCompare(a.end, b.begin) <= 0) return -1;
  if (AffineCompare(a.begin, b.end) >= 0) return 1;
  return 0;
}

// The set semantics of adt.IntervalTree that checkIntervals uses.
struct IntervalSet {
  std::vector<Interval> items;
  bool Intersects(const Interval& q) const {
    return std::any_of(items.begin(), items.end(),
                       [&](const Interval& i) { return IntervalCompare(q, i) == 0; });
  }
  // Union(other, within): inserts the intervals of `other` that `within` overlaps (Visit).
  void Union(const IntervalSet& other, const Interval& within) {
    for (const Interval& i : other.items) {
      if (IntervalCompare(within, i) == 0) items.push_back(i);
    }
  }
};

absl::Status CheckIntervals(const Ops& reqs, std::set<std::string>* puts_out, IntervalSet* dels_out) {
  IntervalSet dels;
  for (const RequestOp& req : reqs) {
    if (!req.has_request_delete_range()) continue;
    const auto& d = req.request_delete_range();
    dels.items.push_back(!d.range_end().empty() ? Interval{d.key(), d.range_end()} : AffinePoint(d.key()));
  }
  std::set<std::string> puts;
  for (const RequestOp& req : reqs) {
    if (!req.has_request_txn()) continue;
    std::set<std::string> puts_then;
    std::set<std::string> puts_else;
    IntervalSet dels_then;
    IntervalSet dels_else;
    if (absl::Status s = CheckIntervals(req.request_txn().success(), &puts_then, &dels_then); !s.ok()) {
      return s;
    }
    if (absl::Status s = CheckIntervals(req.request_txn().failure(), &puts_else, &dels_else); !s.ok()) {
      return s;
    }
    for (const std::string& k : puts_then) {
      if (puts.count(k) != 0) return ErrDuplicateKey();
      if (dels.Intersects(AffinePoint(k))) return ErrDuplicateKey();
      puts.insert(k);
    }
    for (const std::string& k : puts_else) {
      if (puts.count(k) != 0 && puts_then.count(k) == 0) return ErrDuplicateKey();
      if (dels.Intersects(AffinePoint(k))) return ErrDuplicateKey();
      puts.insert(k);
    }
    dels.Union(dels_then, Interval{std::string(1, '\0'), ""});
    dels.Union(dels_else, Interval{std::string(1, '\0'), ""});
  }
  for (const RequestOp& req : reqs) {
    if (!req.has_request_put()) continue;
    const std::string& k = req.request_put().key();
    if (puts.count(k) != 0) return ErrDuplicateKey();
    if (dels.Intersects(AffinePoint(k))) return ErrDuplicateKey();
    puts.insert(k);
  }
  *puts_out = std::move(puts);
  *dels_out = std::move(dels);
  return absl::OkStatus();
}

// etcdserver/v3_server.go isTxnReadonly: only Ranges at the top level (a nested Txn counts as a write).
bool IsTxnReadonly(const etcdserverpb::TxnRequest& r) {
  auto ranges_only = [](const Ops& ops) {
    return std::all_of(ops.begin(), ops.end(), [](const RequestOp& u) { return u.has_request_range(); });
  };
  return ranges_only(r.success()) && ranges_only(r.failure());
}

int CompareInt64(int64_t a, int64_t b) { return a < b ? -1 : (a > b ? 1 : 0); }

// apply.go compareKV.
bool CompareKv(const Compare& c, const mvccpb::KeyValue& kv) {
  int result = 0;
  switch (c.target()) {
    case Compare::VALUE: {
      const std::string v = c.target_union_case() == Compare::kValue ? c.value() : std::string();
      result = kv.value() < v ? -1 : (kv.value() > v ? 1 : 0);
      break;
    }
    case Compare::CREATE:
      result = CompareInt64(kv.create_revision(),
                            c.target_union_case() == Compare::kCreateRevision ? c.create_revision() : 0);
      break;
    case Compare::MOD:
      result = CompareInt64(kv.mod_revision(),
                            c.target_union_case() == Compare::kModRevision ? c.mod_revision() : 0);
      break;
    case Compare::VERSION:
      result = CompareInt64(kv.version(), c.target_union_case() == Compare::kVersion ? c.version() : 0);
      break;
    case Compare::LEASE:
      result = CompareInt64(kv.lease(), c.target_union_case() == Compare::kLease ? c.lease() : 0);
      break;
    default:
      break;
  }
  switch (c.result()) {
    case Compare::EQUAL:
      return result == 0;
    case Compare::NOT_EQUAL:
      return result != 0;
    case Compare::GREATER:
      return result > 0;
    case Compare::LESS:
      return result < 0;
    default:
      return true;
  }
}

const Ops& Branch(const etcdserverpb::TxnRequest& t, bool succeeded) {
  return succeeded ? t.success() : t.failure();
}

}  // namespace

std::string PrefixRangeEnd(const std::string& prefix) {
  std::string end = prefix;
  for (size_t i = end.size(); i-- > 0;) {
    if (static_cast<unsigned char>(end[i]) < 0xff) {
      end[i] = static_cast<char>(static_cast<unsigned char>(end[i]) + 1);
      end.resize(i + 1);
      return end;
    }
  }
  return std::string(1, '\0');  // no prefix end: every key from the prefix on
}

// ----- reading: mvcc index Revisions / rangeKeys ---------------------------------------------------------

ReferenceModel::KeySpan ReferenceModel::SpanOf(const std::string& key, const std::string& range_end) {
  KeySpan s;
  s.begin = key;
  if (range_end.empty()) {
    s.single = true;  // end == nil: kvindex.Get(key)
  } else if (range_end == std::string(1, '\0')) {
    s.to_the_end = true;  // mkGteRange: an empty, non-nil end
  } else {
    s.end = range_end;
  }
  return s;
}

std::vector<ReferenceModel::KvPtr> ReferenceModel::Select(const State& state, const KeySpan& span) {
  std::vector<KvPtr> out;
  if (span.single) {
    auto it = state.find(span.begin);
    if (it != state.end()) out.push_back(it->second);
    return out;
  }
  for (auto it = state.lower_bound(span.begin); it != state.end(); ++it) {
    if (!span.to_the_end && !(it->first < span.end)) break;
    out.push_back(it->second);
  }
  return out;
}

std::vector<ReferenceModel::KvPtr> ReferenceModel::SelectAt(int64_t revision, const KeySpan& span) const {
  if (revision == revision_) return Select(current_, span);
  std::vector<KvPtr> out;
  auto visit = [&](const std::vector<std::pair<int64_t, KvPtr>>& versions) {
    // The newest version at or before `revision`.
    auto after =
        std::upper_bound(versions.begin(), versions.end(), revision,
                         [](int64_t rev, const std::pair<int64_t, KvPtr>& v) { return rev < v.first; });
    if (after != versions.begin() && std::prev(after)->second != nullptr) {
      out.push_back(std::prev(after)->second);
    }
  };
  if (span.single) {
    auto it = history_.find(span.begin);
    if (it != history_.end()) visit(it->second);
    return out;
  }
  for (auto it = history_.lower_bound(span.begin); it != history_.end(); ++it) {
    if (!span.to_the_end && !(it->first < span.end)) break;
    visit(it->second);
  }
  return out;
}

int64_t ReferenceModel::OldestReadableRevision() const {
  int64_t oldest = compact_revision_;
  if (options_.history_revisions > 0) oldest = std::max(oldest, revision_ - options_.history_revisions + 1);
  return oldest;
}

// apply.go applierV3backend.Range after txn.Range: limit, filters, sort, truncation, keys_only.
etcdserverpb::RangeResponse ReferenceModel::RangeOver(const std::vector<KvPtr>& found, const RangeRequest& r,
                                                      int64_t header_revision) {
  int64_t limit = r.limit();
  if (r.sort_order() != RangeRequest::NONE || r.min_mod_revision() != 0 || r.max_mod_revision() != 0 ||
      r.min_create_revision() != 0 || r.max_create_revision() != 0) {
    limit = 0;  // fetch everything; sort and truncate afterwards
  }
  if (limit > 0) ++limit;  // one extra for `more`

  // rangeKeys: Count is the number of keys in range; count_only fetches no key-value.
  std::vector<mvccpb::KeyValue> kvs;
  if (!r.count_only()) {
    size_t n = found.size();
    if (limit > 0 && static_cast<size_t>(limit) < n) n = static_cast<size_t>(limit);
    for (size_t i = 0; i < n; ++i) kvs.push_back(*found[i]);
  }

  auto prune = [&](auto prunable) { kvs.erase(std::remove_if(kvs.begin(), kvs.end(), prunable), kvs.end()); };
  if (r.max_mod_revision() != 0) {
    prune([&](const mvccpb::KeyValue& kv) { return kv.mod_revision() > r.max_mod_revision(); });
  }
  if (r.min_mod_revision() != 0) {
    prune([&](const mvccpb::KeyValue& kv) { return kv.mod_revision() < r.min_mod_revision(); });
  }
  if (r.max_create_revision() != 0) {
    prune([&](const mvccpb::KeyValue& kv) { return kv.create_revision() > r.max_create_revision(); });
  }
  if (r.min_create_revision() != 0) {
    prune([&](const mvccpb::KeyValue& kv) { return kv.create_revision() < r.min_create_revision(); });
  }

  RangeRequest::SortOrder order = r.sort_order();
  if (r.sort_target() != RangeRequest::KEY && order == RangeRequest::NONE) order = RangeRequest::ASCEND;
  if (order != RangeRequest::NONE) {
    auto less = [&](const mvccpb::KeyValue& a, const mvccpb::KeyValue& b) {
      switch (r.sort_target()) {
        case RangeRequest::VERSION:
          return a.version() < b.version();
        case RangeRequest::CREATE:
          return a.create_revision() < b.create_revision();
        case RangeRequest::MOD:
          return a.mod_revision() < b.mod_revision();
        case RangeRequest::VALUE:
          return a.value() < b.value();
        default:
          return a.key() < b.key();
      }
    };
    // revkv sorts stably (difference 1): equal targets keep ascending key order either way.
    if (order == RangeRequest::DESCEND) {
      std::stable_sort(kvs.begin(), kvs.end(), [&](const auto& a, const auto& b) { return less(b, a); });
    } else {
      std::stable_sort(kvs.begin(), kvs.end(), less);
    }
  }

  etcdserverpb::RangeResponse out;
  if (r.limit() > 0 && kvs.size() > static_cast<size_t>(r.limit())) {
    kvs.resize(static_cast<size_t>(r.limit()));
    out.set_more(true);
  }
  out.mutable_header()->set_revision(header_revision);
  out.set_count(static_cast<int64_t>(found.size()));
  for (mvccpb::KeyValue& kv : kvs) {
    if (r.keys_only()) kv.clear_value();
    *out.add_kvs() = std::move(kv);
  }
  return out;
}

absl::StatusOr<etcdserverpb::RangeResponse> ReferenceModel::Range(const RangeRequest& r) const {
  if (absl::Status s = CheckRangeRequest(r); !s.ok()) return s;
  // rangeKeys: a future revision first, then "rev <= 0 means now", then compaction.
  int64_t rev = r.revision();
  if (rev > revision_) return ErrFutureRev();
  if (rev <= 0) rev = revision_;
  if (rev < OldestReadableRevision()) return ErrCompacted();
  return RangeOver(SelectAt(rev, SpanOf(r.key(), r.range_end())), r, revision_);
}

// ----- writing: storeTxnWrite put / deleteRange and apply.go Put / DeleteRange ----------------------------

absl::Status ReferenceModel::ApplyPut(const etcdserverpb::PutRequest& p, Write* w,
                                      etcdserverpb::PutResponse* out) const {
  auto it = w->state.find(p.key());
  const KvPtr old = it != w->state.end() ? it->second : nullptr;
  if ((p.ignore_value() || p.ignore_lease()) && old == nullptr) return ErrKeyNotFound();
  if (p.prev_kv() && old != nullptr) *out->mutable_prev_kv() = *old;
  const int64_t rev = w->begin_revision + 1;
  auto kv = std::make_shared<mvccpb::KeyValue>();
  kv->set_key(p.key());
  kv->set_value(p.ignore_value() ? old->value() : p.value());
  kv->set_create_revision(old != nullptr ? old->create_revision() : rev);
  kv->set_mod_revision(rev);
  kv->set_version(old != nullptr ? old->version() + 1 : 1);
  kv->set_lease(p.ignore_lease() ? old->lease() : p.lease());
  w->state[p.key()] = std::move(kv);
  w->touched.insert(p.key());
  w->changed = true;
  out->mutable_header()->set_revision(rev);
  return absl::OkStatus();
}

void ReferenceModel::ApplyDelete(const etcdserverpb::DeleteRangeRequest& d, Write* w,
                                 etcdserverpb::DeleteRangeResponse* out) {
  const std::vector<KvPtr> found = Select(w->state, SpanOf(d.key(), d.range_end()));
  for (const KvPtr& kv : found) {
    if (d.prev_kv()) *out->add_prev_kvs() = *kv;
    w->state.erase(kv->key());
    w->touched.insert(kv->key());
  }
  if (!found.empty()) w->changed = true;
  out->set_deleted(static_cast<int64_t>(found.size()));
  // storeTxnWrite.DeleteRange: the next revision once anything changed, else the current one.
  out->mutable_header()->set_revision(w->changed ? w->begin_revision + 1 : w->begin_revision);
}

void ReferenceModel::Commit(Write* w) {
  const int64_t rev = w->begin_revision + 1;
  for (const std::string& k : w->touched) {
    auto it = w->state.find(k);
    history_[k].emplace_back(rev, it != w->state.end() ? it->second : nullptr);
  }
  current_ = std::move(w->state);
  revision_ = rev;
}

absl::StatusOr<etcdserverpb::PutResponse> ReferenceModel::Put(const etcdserverpb::PutRequest& r) {
  if (absl::Status s = CheckPutRequest(r); !s.ok()) return s;
  // apply.go Put with txn == nil: the lease is looked up first (revkv has none, difference 3).
  if (r.lease() != 0) return ErrLeaseNotFound();
  Write w{current_, {}, false, revision_};
  etcdserverpb::PutResponse out;
  if (absl::Status s = ApplyPut(r, &w, &out); !s.ok()) return s;
  Commit(&w);
  return out;
}

absl::StatusOr<etcdserverpb::DeleteRangeResponse> ReferenceModel::DeleteRange(
    const etcdserverpb::DeleteRangeRequest& r) {
  if (absl::Status s = CheckDeleteRequest(r); !s.ok()) return s;
  Write w{current_, {}, false, revision_};
  etcdserverpb::DeleteRangeResponse out;
  ApplyDelete(r, &w, &out);
  if (w.changed) Commit(&w);
  return out;
}

// ----- Txn: apply.go Txn, compareToPath, applyCompare, checkRequests, applyTxn ---------------------------

bool ReferenceModel::ApplyCompare(const Compare& c) const {
  const std::vector<KvPtr> found = Select(current_, SpanOf(c.key(), c.range_end()));
  if (found.empty()) {
    // "Always fail if comparing a value on a key/keys that doesn't exist".
    if (c.target() == Compare::VALUE) return false;
    return CompareKv(c, mvccpb::KeyValue());
  }
  return std::all_of(found.begin(), found.end(), [&](const KvPtr& kv) { return CompareKv(c, *kv); });
}

void ReferenceModel::CompareToPath(const etcdserverpb::TxnRequest& t, std::vector<bool>* path) const {
  bool ok = true;
  for (const Compare& c : t.compare()) {
    if (!ApplyCompare(c)) {
      ok = false;
      break;
    }
  }
  path->push_back(ok);
  for (const RequestOp& op : Branch(t, ok)) {
    if (op.has_request_txn()) CompareToPath(op.request_txn(), path);
  }
}

// checkRequests(rv, rt, txnPath, a.checkPut): on the state before the Txn, ops of the taken branches in
// order, nested Txns where they stand.
absl::Status ReferenceModel::CheckPutsOnPath(const etcdserverpb::TxnRequest& t, const std::vector<bool>& path,
                                             size_t* at) const {
  const bool ok = path[(*at)++];
  for (const RequestOp& op : Branch(t, ok)) {
    if (op.has_request_txn()) {
      if (absl::Status s = CheckPutsOnPath(op.request_txn(), path, at); !s.ok()) return s;
      continue;
    }
    if (!op.has_request_put()) continue;
    const etcdserverpb::PutRequest& p = op.request_put();
    if ((p.ignore_value() || p.ignore_lease()) && current_.count(p.key()) == 0) return ErrKeyNotFound();
    if (p.lease() != 0) return ErrLeaseNotFound();
  }
  return absl::OkStatus();
}

// checkRequests(..., a.checkRange): a revision past the one before the Txn (rv.Rev()) is a future one,
// one before the oldest readable (rv.FirstRev(); the history window counts as compacted, difference 4)
// is compacted; revision 0 is not checked.
absl::Status ReferenceModel::CheckRangesOnPath(const etcdserverpb::TxnRequest& t,
                                               const std::vector<bool>& path, size_t* at) const {
  const bool ok = path[(*at)++];
  for (const RequestOp& op : Branch(t, ok)) {
    if (op.has_request_txn()) {
      if (absl::Status s = CheckRangesOnPath(op.request_txn(), path, at); !s.ok()) return s;
      continue;
    }
    if (!op.has_request_range() || op.request_range().revision() == 0) continue;
    const int64_t rev = op.request_range().revision();
    if (rev > revision_) return ErrFutureRev();
    if (rev < OldestReadableRevision()) return ErrCompacted();
  }
  return absl::OkStatus();
}

absl::Status ReferenceModel::ApplyTxn(const etcdserverpb::TxnRequest& t, const std::vector<bool>& path,
                                      size_t* at, Write* w, etcdserverpb::TxnResponse* out) const {
  const bool ok = path[(*at)++];
  out->set_succeeded(ok);
  out->mutable_header();  // newTxnResp: nested responses carry an empty header
  for (const RequestOp& op : Branch(t, ok)) {
    etcdserverpb::ResponseOp* r = out->add_responses();
    switch (op.request_case()) {
      case RequestOp::kRequestRange: {
        // storeTxnWrite.Range reads (and reports) the next revision once the Txn changed something;
        // rangeKeys reads at the revision asked for if it is positive (checkRange made sure it is
        // readable and not after the Txn's start, so it never shows the Txn's own writes), else now.
        const int64_t rev = w->changed ? w->begin_revision + 1 : w->begin_revision;
        const auto& rr = op.request_range();
        const KeySpan span = SpanOf(rr.key(), rr.range_end());
        *r->mutable_response_range() =
            RangeOver(rr.revision() > 0 ? SelectAt(rr.revision(), span) : Select(w->state, span), rr, rev);
        break;
      }
      case RequestOp::kRequestPut:
        // Fails only where etcd panics (difference 5).
        if (absl::Status s = ApplyPut(op.request_put(), w, r->mutable_response_put()); !s.ok()) return s;
        break;
      case RequestOp::kRequestDeleteRange:
        ApplyDelete(op.request_delete_range(), w, r->mutable_response_delete_range());
        break;
      case RequestOp::kRequestTxn:
        if (absl::Status s = ApplyTxn(op.request_txn(), path, at, w, r->mutable_response_txn()); !s.ok()) {
          return s;
        }
        break;
      default:
        break;  // unreachable: CheckTxnRequest refuses empty ops
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<etcdserverpb::TxnResponse> ReferenceModel::Txn(const etcdserverpb::TxnRequest& r) {
  // kvServer.Txn: checkTxnRequest, then checkIntervals on each branch.
  if (absl::Status s = CheckTxnRequest(r, options_.max_txn_ops); !s.ok()) return s;
  {
    std::set<std::string> puts;
    IntervalSet dels;
    if (absl::Status s = CheckIntervals(r.success(), &puts, &dels); !s.ok()) return s;
    if (absl::Status s = CheckIntervals(r.failure(), &puts, &dels); !s.ok()) return s;
  }
  // applierV3backend.Txn: every compare on the state before the Txn, then the checks, then the ops.
  std::vector<bool> path;
  CompareToPath(r, &path);
  size_t at = 0;
  if (!IsTxnReadonly(r)) {
    if (absl::Status s = CheckPutsOnPath(r, path, &at); !s.ok()) return s;
  }
  at = 0;
  if (absl::Status s = CheckRangesOnPath(r, path, &at); !s.ok()) return s;

  Write w{current_, {}, false, revision_};
  etcdserverpb::TxnResponse out;
  at = 0;
  if (absl::Status s = ApplyTxn(r, path, &at, &w, &out); !s.ok()) return s;
  out.mutable_header()->set_revision(w.changed ? revision_ + 1 : revision_);
  if (w.changed) Commit(&w);
  return out;
}

// ----- Compact: mvcc updateCompactRev; the header is the current revision (v3_server.go Compact) ---------

absl::StatusOr<etcdserverpb::CompactionResponse> ReferenceModel::Compact(
    const etcdserverpb::CompactionRequest& r) {
  if (r.revision() <= compact_revision_) return ErrCompacted();
  if (r.revision() > revision_) return ErrFutureRev();
  compact_revision_ = r.revision();
  etcdserverpb::CompactionResponse out;
  out.mutable_header()->set_revision(revision_);
  return out;
}

}  // namespace revkv::server::reference
