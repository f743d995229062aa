// Coordinator: etcd's server-side Lock and Election services as operations on the store.
//
// etcd 3.4 builds both services from its client recipes (clientv3/concurrency: Mutex, Election) run
// against itself, and so does revkv, on the same keys, so that clients of the services and clients of
// the recipes (`etcdctl lock`, `etcdctl elect`) interoperate:
//   - a lock `name` held with lease L is the key "name/<L in hex>", put with lease L when absent; the
//     holder is the key under "name/" with the lowest create revision; a waiter waits until every key
//     under "name/" created before its own is deleted (waitDeletes), watching the newest of them;
//   - an election `name` works the same way with the candidate's value in its key; Proclaim and Resign
//     act only if the key still has the create revision the leader was elected with.
// Every store call runs on the executor (a thread registered with the runtime); an answer goes out
// only after the state it reflects is durable. Waits are watch subscriptions (EventSource), never
// polling. A wait that is cancelled (the client went away) cleans up as etcd does: Lock deletes its key,
// Campaign resigns.
//
// Thread-safety: thread-safe. Callbacks (`done`, `on_leader`) run on the executor or on the log's
// flusher thread; they must not block.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "server/coord/event_source.h"
#include "server/coord/runtime_executor.h"
#include "server/store/store.h"
#include "v3electionpb/v3election.pb.h"
#include "v3lockpb/v3lock.pb.h"

namespace revkv::server {

// A long operation (Lock, Campaign, Observe) in progress.
class CoordinationOperation {
 public:
  virtual ~CoordinationOperation() = default;
  // The caller has gone: stop waiting and clean up (see Coordinator). The operation's callback is then
  // called with Cancelled if it has not been called yet. Thread-safe; idempotent.
  virtual void Cancel() = 0;
};

class Coordinator {
 public:
  // Grants a lease with the given TTL (seconds) and returns its ID: what Lock and Campaign do for a
  // request without a lease, as etcd's sessions do (60 s, never kept alive).
  using GrantLease = std::function<absl::StatusOr<int64_t>(int64_t ttl_seconds)>;
  template <class Response>
  using Done = std::function<void(absl::StatusOr<Response>)>;

  // What every operation works with: borrowed, all must outlive the coordinator and its operations.
  struct Env {
    Store* store;
    EventSource* events;
    RuntimeExecutor* executor;
    GrantLease grant_lease;  // runs on the executor
  };

  explicit Coordinator(Env env) : env_(std::move(env)) {}

  // ----- v3lockpb.Lock -----
  // Answers once the lock is held (the key and the header of the state in which it is).
  std::shared_ptr<CoordinationOperation> Lock(const v3lockpb::LockRequest& request,
                                              Done<v3lockpb::LockResponse> done);
  void Unlock(const v3lockpb::UnlockRequest& request, Done<v3lockpb::UnlockResponse> done);

  // ----- v3electionpb.Election -----
  // Answers once this candidate leads.
  std::shared_ptr<CoordinationOperation> Campaign(const v3electionpb::CampaignRequest& request,
                                                  Done<v3electionpb::CampaignResponse> done);
  void Proclaim(const v3electionpb::ProclaimRequest& request, Done<v3electionpb::ProclaimResponse> done);
  void Resign(const v3electionpb::ResignRequest& request, Done<v3electionpb::ResignResponse> done);
  void Leader(const v3electionpb::LeaderRequest& request, Done<v3electionpb::LeaderResponse> done);
  // Calls `on_leader` for the current leader and each later one or proclamation, in order, until the
  // subscription ends (`on_end`, once) or is cancelled (then `on_end` gets Cancelled).
  std::shared_ptr<CoordinationOperation> Observe(
      const v3electionpb::LeaderRequest& request,
      std::function<void(const v3electionpb::LeaderResponse&)> on_leader,
      std::function<void(absl::Status)> on_end);

  // The end of the key range of every key starting with `prefix` (etcd's GetPrefixRangeEnd).
  static std::string PrefixEnd(const std::string& prefix);

 private:
  const Env env_;
};

// etcd's messages for the election errors (plain Go errors there: gRPC code UNKNOWN).
namespace errors {
absl::Status ElectionNotLeader();
absl::Status ElectionNoLeader();
absl::Status MissingLeaderKey();
}  // namespace errors

}  // namespace revkv::server
