// A reference model of etcd 3.4's KV API for model-based tests of the store.
//
// The model is written from etcd's Go sources, not from server/store, and shares no code with it:
// etcdserver/api/v3rpc/key.go (request checks, checkIntervals), etcdserver/apply.go (Range, Put,
// DeleteRange, Txn, compareToPath, applyCompare, checkRequests, newTxnResp), mvcc/kvstore_txn.go
// (rangeKeys, storeTxnWrite's revisions), mvcc/kvstore.go (updateCompactRev) and pkg/adt (the interval
// semantics checkIntervals relies on). State is plain std::map: the current key-values, and for every
// key the list of its versions by revision, so any past revision can be read back.
//
// Where revkv intentionally differs from etcd, the model follows revkv's documented behaviour:
//  1. Sorting is stable (etcd uses Go's unstable sort.Sort): key-values with equal sort targets stay in
//     ascending key order, and DESCEND reverses only the comparison, not the order of equal targets.
//  2. (None any more: a Range with a revision inside a Txn is served at that revision, as etcd does,
//     after etcd's checkRange on the taken path. revkv used to refuse it.)
//  3. revkv grants no leases, so a Put with a lease (not ignore_lease) is always NotFound "etcdserver:
//     requested lease not found", as etcd answers for a lease it never granted; every key's lease is 0.
//  4. History retention (history_revisions = H > 0): a read below revision current - H + 1 is
//     "required revision has been compacted", as if the window's start were compacted; an explicit
//     Compact still compares with the last explicit compaction only.
// And where etcd itself has no defined answer (it panics), the model picks one:
//  5. A Put with ignore_value / ignore_lease inside a Txn passes etcd's checkRequestPut when its key
//     exists before the Txn, but an earlier op of the same Txn can delete it with a range_end "\0"
//     delete (checkIntervals does not see those); etcd then panics ("unexpected error during txn").
//     The model fails the whole Txn with "etcdserver: key not found" and changes nothing.
// Not modelled: request size limits (tests keep requests small), leases, watches, auth, headers'
// cluster_id / member_id / raft_term (always 0).
//
// Thread-safety: owner thread only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "etcdserverpb/rpc.pb.h"

namespace revkv::server::reference {

class ReferenceModel {
 public:
  using KvPtr = std::shared_ptr<const mvccpb::KeyValue>;
  using State = std::map<std::string, KvPtr>;  // key -> its key-value (never null)

  struct Options {
    int64_t max_txn_ops = 128;      // etcd's --max-txn-ops
    int64_t history_revisions = 0;  // 0: every revision stays readable until Compact (see 4. above)
  };

  explicit ReferenceModel(const Options& options) : options_(options) {}

  // The KV API. Each returns etcd's response, or its error with etcd's gRPC code and message.
  absl::StatusOr<etcdserverpb::RangeResponse> Range(const etcdserverpb::RangeRequest& r) const;
  absl::StatusOr<etcdserverpb::PutResponse> Put(const etcdserverpb::PutRequest& r);
  absl::StatusOr<etcdserverpb::DeleteRangeResponse> DeleteRange(const etcdserverpb::DeleteRangeRequest& r);
  absl::StatusOr<etcdserverpb::TxnResponse> Txn(const etcdserverpb::TxnRequest& r);
  absl::StatusOr<etcdserverpb::CompactionResponse> Compact(const etcdserverpb::CompactionRequest& r);

  // The newest revision (1 for an empty store, +1 per write that changed something).
  int64_t Revision() const { return revision_; }
  // etcd's compactMainRev: -1 until the first successful Compact.
  int64_t CompactRevision() const { return compact_revision_; }
  // The oldest revision a Range can read.
  int64_t OldestReadableRevision() const;
  // The current key-values, in key order.
  const State& Current() const { return current_; }

 private:
  // A half-open key interval as etcd's mvcc index reads it (after mkGteRange).
  struct KeySpan {
    std::string begin;
    std::string end;          // exclusive; unused when `single` or `to_the_end`
    bool single = false;      // range_end empty: `begin` alone
    bool to_the_end = false;  // range_end "\0": every key >= begin
  };
  // The working state of one write: a copy of the current state plus the keys it touched.
  struct Write {
    State state;
    std::set<std::string> touched;
    bool changed = false;  // etcd's len(tw.changes) != 0
    int64_t begin_revision = 0;
  };

  static KeySpan SpanOf(const std::string& key, const std::string& range_end);
  static std::vector<KvPtr> Select(const State& state, const KeySpan& span);
  std::vector<KvPtr> SelectAt(int64_t revision, const KeySpan& span) const;
  static etcdserverpb::RangeResponse RangeOver(const std::vector<KvPtr>& found,
                                               const etcdserverpb::RangeRequest& r, int64_t header_revision);

  absl::Status ApplyPut(const etcdserverpb::PutRequest& p, Write* w, etcdserverpb::PutResponse* out) const;
  static void ApplyDelete(const etcdserverpb::DeleteRangeRequest& d, Write* w,
                          etcdserverpb::DeleteRangeResponse* out);
  absl::Status ApplyTxn(const etcdserverpb::TxnRequest& t, const std::vector<bool>& path, size_t* at,
                        Write* w, etcdserverpb::TxnResponse* out) const;
  void Commit(Write* w);

  // Txn evaluation steps, in etcd's order.
  void CompareToPath(const etcdserverpb::TxnRequest& t, std::vector<bool>* path) const;
  bool ApplyCompare(const etcdserverpb::Compare& c) const;
  absl::Status CheckPutsOnPath(const etcdserverpb::TxnRequest& t, const std::vector<bool>& path,
                               size_t* at) const;
  absl::Status CheckRangesOnPath(const etcdserverpb::TxnRequest& t, const std::vector<bool>& path,
                                 size_t* at) const;

  const Options options_;
  int64_t revision_ = 1;
  int64_t compact_revision_ = -1;
  State current_;
  // key -> (revision, key-value or null for a delete), by ascending revision.
  std::map<std::string, std::vector<std::pair<int64_t, KvPtr>>> history_;
};

// etcd's clientv3.GetPrefixRangeEnd: the range_end covering every key with this prefix.
std::string PrefixRangeEnd(const std::string& prefix);

}  // namespace revkv::server::reference
