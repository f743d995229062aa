// The naive store (map_store.h).
#include "bench/null_server/map_store.h"

#include <mutex>
#include <set>
#include <vector>

namespace revkv::bench {
namespace {

using etcdserverpb::Compare;

const grpc::Status kEmptyKey(grpc::StatusCode::INVALID_ARGUMENT, "etcdserver: key is not provided");
const grpc::Status kKeyNotFound(grpc::StatusCode::INVALID_ARGUMENT, "etcdserver: key not found");
const grpc::Status kDuplicateKey(grpc::StatusCode::INVALID_ARGUMENT,
                                 "etcdserver: duplicate key given in txn request");
const grpc::Status kFutureRevision(grpc::StatusCode::OUT_OF_RANGE,
                                   "etcdserver: mvcc: required revision is a future revision");
const grpc::Status kCompacted(grpc::StatusCode::OUT_OF_RANGE,
                              "etcdserver: mvcc: required revision has been compacted");

grpc::Status Unimplemented(const char* what) {
  return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, std::string("the naive map store has no ") + what);
}

// The keys [key, range_end) as etcd reads them: one key for an empty range_end, every key from `key`
// for "\0".
struct KeyRange {
  const std::string& key;
  const std::string& range_end;

  bool single() const { return range_end.empty(); }
  bool to_end() const { return range_end.size() == 1 && range_end[0] == '\0'; }
  bool Contains(const std::string& k) const {
    if (single()) return k == key;
    return k >= key && (to_end() || k < range_end);
  }
};

// Visits the entries of `range` in key order until `visit` returns false.
template <class MapT, class Visit>
void ForEachIn(MapT& map, const KeyRange& range, Visit visit) {
  if (range.single()) {
    auto it = map.find(range.key);
    if (it != map.end()) visit(*it);
    return;
  }
  for (auto it = map.lower_bound(range.key); it != map.end() && range.Contains(it->first); ++it) {
    if (!visit(*it)) return;
  }
}

template <class EntryT>
void ToProto(const std::string& key, const EntryT& e, bool keys_only, mvccpb::KeyValue* kv) {
  kv->set_key(key);
  if (!keys_only) kv->set_value(e.value);
  kv->set_create_revision(e.create_revision);
  kv->set_mod_revision(e.mod_revision);
  kv->set_version(e.version);
  kv->set_lease(e.lease);
}

template <class T>
bool CompareResult(Compare::CompareResult result, const T& have, const T& want) {
  switch (result) {
    case Compare::EQUAL:
      return have == want;
    case Compare::GREATER:
      return have > want;
    case Compare::LESS:
      return have < want;
    case Compare::NOT_EQUAL:
      return have != want;
    default:
      return false;
  }
}

bool HasWrite(const google::protobuf::RepeatedPtrField<etcdserverpb::RequestOp>& ops) {
  for (const etcdserverpb::RequestOp& op : ops) {
    if (op.has_request_put() || op.has_request_delete_range()) return true;
  }
  return false;
}

// etcd's checks of one branch before anything runs: no nested txn here, no key put twice, no key both
// put and deleted.
grpc::Status CheckBranch(const google::protobuf::RepeatedPtrField<etcdserverpb::RequestOp>& ops) {
  std::set<std::string> puts;
  for (const etcdserverpb::RequestOp& op : ops) {
    if (op.has_request_txn()) return Unimplemented("nested transactions");
    if (op.has_request_put() && !puts.insert(op.request_put().key()).second) return kDuplicateKey;
  }
  for (const etcdserverpb::RequestOp& op : ops) {
    if (!op.has_request_delete_range()) continue;
    const KeyRange range{op.request_delete_range().key(), op.request_delete_range().range_end()};
    for (const std::string& key : puts) {
      if (range.Contains(key)) return kDuplicateKey;
    }
  }
  return grpc::Status::OK;
}

}  // namespace

int64_t MapStore::Revision() {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return revision_;
}

grpc::Status MapStore::Range(const etcdserverpb::RangeRequest& request,
                             etcdserverpb::RangeResponse* response) {
  std::shared_lock<std::shared_mutex> lock(mu_);
  grpc::Status s = RangeLocked(request, response);
  FillBaselineHeader(revision_, response->mutable_header());
  return s;
}

grpc::Status MapStore::CheckRangeLocked(const etcdserverpb::RangeRequest& request) {
  if (request.key().empty()) return kEmptyKey;
  if (request.revision() > revision_) return kFutureRevision;
  if (request.revision() > 0 && request.revision() < compact_revision_) return kCompacted;
  if (request.revision() > 0 && request.revision() != revision_) return Unimplemented("history");
  if (request.sort_order() != etcdserverpb::RangeRequest::NONE) return Unimplemented("sorting");
  if (request.min_mod_revision() != 0 || request.max_mod_revision() != 0 ||
      request.min_create_revision() != 0 || request.max_create_revision() != 0) {
    return Unimplemented("revision filters");
  }
  return grpc::Status::OK;
}

grpc::Status MapStore::RangeLocked(const etcdserverpb::RangeRequest& request,
                                   etcdserverpb::RangeResponse* response) {
  if (grpc::Status s = CheckRangeLocked(request); !s.ok()) return s;
  const int64_t limit = request.limit();
  int64_t count = 0;
  ForEachIn(map_, KeyRange{request.key(), request.range_end()}, [&](const Map::value_type& kv) {
    ++count;
    if (!request.count_only() && (limit <= 0 || count <= limit)) {
      ToProto(kv.first, kv.second, request.keys_only(), response->add_kvs());
    }
    return true;
  });
  response->set_count(count);
  response->set_more(limit > 0 && count > limit);
  return grpc::Status::OK;
}

grpc::Status MapStore::Put(const etcdserverpb::PutRequest& request, etcdserverpb::PutResponse* response) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  grpc::Status s = PutLocked(request, revision_ + 1, response);
  if (s.ok()) ++revision_;
  FillBaselineHeader(revision_, response->mutable_header());
  return s;
}

grpc::Status MapStore::PutLocked(const etcdserverpb::PutRequest& request, int64_t revision,
                                 etcdserverpb::PutResponse* response) {
  if (request.key().empty()) return kEmptyKey;
  auto it = map_.find(request.key());
  if ((request.ignore_value() || request.ignore_lease()) && it == map_.end()) return kKeyNotFound;
  if (it == map_.end()) {
    it = map_.emplace(request.key(), Entry{.create_revision = revision}).first;
  } else if (request.prev_kv()) {
    ToProto(it->first, it->second, false, response->mutable_prev_kv());
  }
  Entry& e = it->second;
  if (!request.ignore_value()) e.value = request.value();
  if (!request.ignore_lease()) e.lease = request.lease();
  e.mod_revision = revision;
  ++e.version;
  return grpc::Status::OK;
}

grpc::Status MapStore::DeleteRange(const etcdserverpb::DeleteRangeRequest& request,
                                   etcdserverpb::DeleteRangeResponse* response) {
  if (request.key().empty()) return kEmptyKey;
  std::unique_lock<std::shared_mutex> lock(mu_);
  if (DeleteRangeLocked(request, response) > 0) ++revision_;
  FillBaselineHeader(revision_, response->mutable_header());
  return grpc::Status::OK;
}

int64_t MapStore::DeleteRangeLocked(const etcdserverpb::DeleteRangeRequest& request,
                                    etcdserverpb::DeleteRangeResponse* response) {
  std::vector<std::string> doomed;
  ForEachIn(map_, KeyRange{request.key(), request.range_end()}, [&](const Map::value_type& kv) {
    if (request.prev_kv()) ToProto(kv.first, kv.second, false, response->add_prev_kvs());
    doomed.push_back(kv.first);
    return true;
  });
  for (const std::string& key : doomed) map_.erase(key);
  response->set_deleted(static_cast<int64_t>(doomed.size()));
  return static_cast<int64_t>(doomed.size());
}

grpc::Status MapStore::CheckOpsLocked(
    const google::protobuf::RepeatedPtrField<etcdserverpb::RequestOp>& ops) {
  for (const etcdserverpb::RequestOp& op : ops) {
    if (op.has_request_range()) {
      if (grpc::Status s = CheckRangeLocked(op.request_range()); !s.ok()) return s;
    } else if (op.has_request_put()) {
      const etcdserverpb::PutRequest& put = op.request_put();
      if (put.key().empty()) return kEmptyKey;
      if ((put.ignore_value() || put.ignore_lease()) && !map_.contains(put.key())) return kKeyNotFound;
    } else if (op.has_request_delete_range()) {
      if (op.request_delete_range().key().empty()) return kEmptyKey;
    }
  }
  return grpc::Status::OK;
}

bool MapStore::CompareLocked(const Compare& compare) {
  auto it = map_.find(compare.key());
  const Entry absent;
  const Entry& e = it == map_.end() ? absent : it->second;
  switch (compare.target()) {
    case Compare::VERSION:
      return CompareResult(compare.result(), e.version, compare.version());
    case Compare::CREATE:
      return CompareResult(compare.result(), e.create_revision, compare.create_revision());
    case Compare::MOD:
      return CompareResult(compare.result(), e.mod_revision, compare.mod_revision());
    case Compare::VALUE:
      // etcd: a value compare on a missing key always fails (an empty value could not be told apart).
      if (it == map_.end()) return false;
      return CompareResult(compare.result(), e.value, compare.value());
    case Compare::LEASE:
      return CompareResult(compare.result(), e.lease, compare.lease());
    default:
      return false;
  }
}

grpc::Status MapStore::Txn(const etcdserverpb::TxnRequest& request, etcdserverpb::TxnResponse* response) {
  for (const Compare& c : request.compare()) {
    if (c.key().empty()) return kEmptyKey;
    if (!c.range_end().empty()) return Unimplemented("compares over a range");
  }
  for (const auto* branch : {&request.success(), &request.failure()}) {
    if (grpc::Status s = CheckBranch(*branch); !s.ok()) return s;
  }
  const bool writes = HasWrite(request.success()) || HasWrite(request.failure());
  std::shared_lock<std::shared_mutex> shared(mu_, std::defer_lock);
  std::unique_lock<std::shared_mutex> exclusive(mu_, std::defer_lock);
  if (writes) {
    exclusive.lock();
  } else {
    shared.lock();
  }
  bool succeeded = true;
  for (const Compare& c : request.compare()) succeeded = succeeded && CompareLocked(c);
  response->set_succeeded(succeeded);
  const auto& ops = succeeded ? request.success() : request.failure();
  // etcd checks every op of the taken branch against the state before the txn, then applies them all:
  // a txn that fails changes nothing.
  if (grpc::Status s = CheckOpsLocked(ops); !s.ok()) return s;
  const int64_t revision = revision_ + 1;  // what this txn commits as, if it changes anything
  bool changed = false;
  for (const etcdserverpb::RequestOp& op : ops) {
    etcdserverpb::ResponseOp* out = response->add_responses();
    if (op.has_request_range()) {
      etcdserverpb::RangeResponse* r = out->mutable_response_range();
      RangeLocked(op.request_range(), r).IgnoreError();  // checked above
      FillBaselineHeader(changed ? revision : revision_, r->mutable_header());
    } else if (op.has_request_put()) {
      etcdserverpb::PutResponse* r = out->mutable_response_put();
      PutLocked(op.request_put(), revision, r).IgnoreError();  // checked above
      changed = true;
      FillBaselineHeader(revision, r->mutable_header());
    } else if (op.has_request_delete_range()) {
      etcdserverpb::DeleteRangeResponse* r = out->mutable_response_delete_range();
      if (DeleteRangeLocked(op.request_delete_range(), r) > 0) changed = true;
      FillBaselineHeader(revision, r->mutable_header());
    }
  }
  if (changed) revision_ = revision;
  FillBaselineHeader(revision_, response->mutable_header());
  return grpc::Status::OK;
}

grpc::Status MapStore::Compact(const etcdserverpb::CompactionRequest& request,
                               etcdserverpb::CompactionResponse* response) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  if (request.revision() > revision_) return kFutureRevision;
  if (request.revision() <= compact_revision_) return kCompacted;
  compact_revision_ = request.revision();
  FillBaselineHeader(revision_, response->mutable_header());
  return grpc::Status::OK;
}

}  // namespace revkv::bench
