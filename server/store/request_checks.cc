// Request checks (request_checks.h), following etcd 3.4's checkRangeRequest, checkPutRequest,
// checkDeleteRequest, checkTxnRequest, checkRequestOp and checkIntervals.
#include "server/store/request_checks.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "server/store/errors.h"

namespace revkv::server::store {

namespace {

using etcdserverpb::RequestOp;

// An interval [begin, end) of keys where an empty `end` is +infinity (etcd's string-affine intervals;
// note that etcd does not give range_end "\0" a special meaning here).
struct Interval {
  std::string begin;
  std::string end;
  bool ContainsPoint(const std::string& k) const { return begin <= k && (end.empty() || k < end); }
  bool IntersectsFromNul() const { return end.empty() || end > std::string(1, '\0'); }
};

struct IntervalSet {
  std::vector<Interval> items;
  bool Intersects(const std::string& k) const {
    return std::any_of(items.begin(), items.end(), [&](const Interval& i) { return i.ContainsPoint(k); });
  }
  // etcd's Union(other, ["\x00", "")): the intervals of `other` that meet [\0, +inf).
  void UnionFromNul(const IntervalSet& other) {
    for (const Interval& i : other.items) {
      if (i.IntersectsFromNul()) items.push_back(i);
    }
  }
};

absl::Status CheckIntervals(const google::protobuf::RepeatedPtrField<RequestOp>& reqs,
                            std::set<std::string>* puts_out, IntervalSet* dels_out) {
  IntervalSet dels;
  for (const RequestOp& req : reqs) {
    if (req.request_case() != RequestOp::kRequestDeleteRange) continue;
    const auto& d = req.request_delete_range();
    if (!d.range_end().empty()) {
      dels.items.push_back(Interval{d.key(), d.range_end()});
    } else {
      dels.items.push_back(Interval{d.key(), d.key() + std::string(1, '\0')});
    }
  }
  std::set<std::string> puts;
  for (const RequestOp& req : reqs) {
    if (req.request_case() != RequestOp::kRequestTxn) continue;
    std::set<std::string> puts_then, puts_else;
    IntervalSet dels_then, dels_else;
    if (absl::Status s = CheckIntervals(req.request_txn().success(), &puts_then, &dels_then); !s.ok())
      return s;
    if (absl::Status s = CheckIntervals(req.request_txn().failure(), &puts_else, &dels_else); !s.ok())
      return s;
    for (const std::string& k : puts_then) {
      if (puts.count(k) != 0 || dels.Intersects(k)) return errors::DuplicateKey();
      puts.insert(k);
    }
    for (const std::string& k : puts_else) {
      // A key from the other branch is fine: the branches exclude each other.
      if (puts.count(k) != 0 && puts_then.count(k) == 0) return errors::DuplicateKey();
      if (dels.Intersects(k)) return errors::DuplicateKey();
      puts.insert(k);
    }
    dels.UnionFromNul(dels_then);
    dels.UnionFromNul(dels_else);
  }
  for (const RequestOp& req : reqs) {
    if (req.request_case() != RequestOp::kRequestPut) continue;
    const std::string& k = req.request_put().key();
    if (puts.count(k) != 0 || dels.Intersects(k)) return errors::DuplicateKey();
    puts.insert(k);
  }
  if (puts_out != nullptr) puts_out->swap(puts);
  if (dels_out != nullptr) *dels_out = std::move(dels);
  return absl::OkStatus();
}

absl::Status CheckTxnOps(const etcdserverpb::TxnRequest& r, int64_t max_txn_ops);

absl::Status CheckRequestOp(const RequestOp& u, int64_t max_txn_ops) {
  switch (u.request_case()) {
    case RequestOp::kRequestRange:
      return CheckRangeRequest(u.request_range());
    case RequestOp::kRequestPut:
      return CheckPutRequest(u.request_put());
    case RequestOp::kRequestDeleteRange:
      return CheckDeleteRequest(u.request_delete_range());
    case RequestOp::kRequestTxn:
      return CheckTxnOps(u.request_txn(), max_txn_ops);
    default:
      return errors::KeyNotFound();  // an empty operation
  }
}

absl::Status CheckTxnOps(const etcdserverpb::TxnRequest& r, int64_t max_txn_ops) {
  const int64_t opc = std::max({r.compare_size(), r.success_size(), r.failure_size()});
  if (opc > max_txn_ops) return errors::TooManyOps();
  for (const auto& c : r.compare()) {
    if (c.key().empty()) return errors::EmptyKey();
  }
  for (const RequestOp& u : r.success()) {
    if (absl::Status s = CheckRequestOp(u, max_txn_ops - opc); !s.ok()) return s;
  }
  for (const RequestOp& u : r.failure()) {
    if (absl::Status s = CheckRequestOp(u, max_txn_ops - opc); !s.ok()) return s;
  }
  return absl::OkStatus();
}

bool OpsReadOnly(const google::protobuf::RepeatedPtrField<RequestOp>& ops) {
  for (const RequestOp& u : ops) {
    switch (u.request_case()) {
      case RequestOp::kRequestPut:
      case RequestOp::kRequestDeleteRange:
        return false;
      case RequestOp::kRequestTxn:
        if (!IsTxnReadOnly(u.request_txn())) return false;
        break;
      default:
        break;
    }
  }
  return true;
}

}  // namespace

absl::Status CheckRangeRequest(const etcdserverpb::RangeRequest& r) {
  return r.key().empty() ? errors::EmptyKey() : absl::OkStatus();
}

absl::Status CheckPutRequest(const etcdserverpb::PutRequest& r) {
  if (r.key().empty()) return errors::EmptyKey();
  if (r.ignore_value() && !r.value().empty()) return errors::ValueProvided();
  if (r.ignore_lease() && r.lease() != 0) return errors::LeaseProvided();
  return absl::OkStatus();
}

absl::Status CheckDeleteRequest(const etcdserverpb::DeleteRangeRequest& r) {
  return r.key().empty() ? errors::EmptyKey() : absl::OkStatus();
}

absl::Status CheckTxnRequest(const etcdserverpb::TxnRequest& r, int64_t max_txn_ops) {
  if (absl::Status s = CheckTxnOps(r, max_txn_ops); !s.ok()) return s;
  if (absl::Status s = CheckIntervals(r.success(), nullptr, nullptr); !s.ok()) return s;
  return CheckIntervals(r.failure(), nullptr, nullptr);
}

bool IsTxnReadOnly(const etcdserverpb::TxnRequest& r) {
  return OpsReadOnly(r.success()) && OpsReadOnly(r.failure());
}

}  // namespace revkv::server::store
