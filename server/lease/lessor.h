// The lessor: lease deadlines, keep-alive and expiry (etcd 3.4's lease/lessor.go, for one member).
//
// The store holds the leases (ID, granted TTL, attached keys: store/lease_table.h) as logged STM state.
// The lessor holds what etcd 3.4 keeps only in memory: each lease's deadline. A grant starts it at the
// granted TTL, a keep-alive (Renew) moves it to now + the granted TTL, and a restart gives every lease
// its full granted TTL again (Recover): keep-alives are not persisted, as in etcd 3.4.
//
// Expiry: a thread registered with the runtime sleeps (in a safe region) until the earliest deadline,
// then revokes the expired leases in batches of `batch` through Store::LeaseRevoke, the path a client's
// LeaseRevoke takes (logged; the attached keys are deleted in the revoke's revision). A lease whose
// deadline passed is not renewed any more (Renew answers NotFound, a keep-alive TTL 0), even before its
// revoke commits. A revoke that fails (the log failed) is retried after `retry`.
//
// Deadlines are in a min-heap with lazy deletion: a renewal pushes a new (deadline, id) and leaves the
// old one, which the expiry pass drops when it finds it no longer matches the lease's deadline.
//
// Thread-safety: thread-safe. Renew, Remaining and Track/Forget are plain C++ under one mutex (leaf lock,
// docs/locks.md) and may be called from any thread, registered or not (gRPC's own threads run
// keep-alives). Grant, Revoke, Recover, Start and ExpireNow run store transactions: registered threads
// only, outside any transaction.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <queue>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "etcdserverpb/rpc.pb.h"
#include "server/store/store.h"

namespace revkv::server {

struct LessorOptions {
  size_t batch = 1000;                       // leases revoked per batch (the lock is released between)
  std::chrono::milliseconds retry{1000};     // after a failed revoke
  std::chrono::milliseconds max_sleep{500};  // the expiry thread wakes at least this often
  // The clock (tests set a fake one and call ExpireNow instead of starting the thread).
  std::function<std::chrono::steady_clock::time_point()> now = [] {
    return std::chrono::steady_clock::now();
  };
};

class Lessor {
 public:
  using Clock = std::chrono::steady_clock;

  // `store` is borrowed and must outlive the lessor.
  Lessor(Store* store, LessorOptions options = {});
  // Stops the expiry thread (Stop).
  ~Lessor();
  Lessor(const Lessor&) = delete;
  Lessor& operator=(const Lessor&) = delete;

  // ----- the Lease API's writes (registered threads) -----
  // Store::LeaseGrant, then the deadline now + the granted TTL. The result as Store::LeaseGrant's; `who`
  // as there (the client, checked while auth is enabled; null: the server itself).
  absl::StatusOr<WriteResult<etcdserverpb::LeaseGrantResponse>> Grant(
      const etcdserverpb::LeaseGrantRequest& r, const AuthInfo* who = nullptr);
  // Store::LeaseRevoke, then the deadline is dropped. The result as Store::LeaseRevoke's.
  absl::StatusOr<WriteResult<etcdserverpb::LeaseRevokeResponse>> Revoke(
      const etcdserverpb::LeaseRevokeRequest& r, const AuthInfo* who = nullptr);
  // Recovery, before serving: every lease of the store's newest state, with its full granted TTL.
  absl::Status Recover();

  // ----- any thread (no STM) -----
  // Keep-alive: moves the deadline to now + the granted TTL and returns the granted TTL. NotFound
  // ("requested lease not found") if the lease is unknown or its deadline has passed.
  absl::StatusOr<int64_t> Renew(int64_t id);
  // Whole seconds left (etcd truncates as int64(Remaining().Seconds())); NotFound as Renew.
  absl::StatusOr<int64_t> Remaining(int64_t id);
  // Starts (or restarts) the deadline of `id` at now + `ttl` seconds / drops it.
  void Track(int64_t id, int64_t ttl);
  void Forget(int64_t id);
  size_t size() const;

  // ----- expiry -----
  // Starts the expiry thread (Stop or the destructor stops it). Returns at once.
  void Start();
  // Stops the expiry thread; returns once it has ended. Idempotent.
  void Stop();
  // One expiry pass on the calling (registered) thread: revokes every lease whose deadline is at or
  // before now, in deadline order, in batches; returns how many were revoked.
  size_t ExpireNow();

 private:
  struct Lease {
    int64_t ttl;
    Clock::time_point deadline;
    bool revoking;  // its deadline passed and an expiry pass took it: never renewed again
  };
  using Deadline = std::pair<Clock::time_point, int64_t>;
  void TrackLocked(int64_t id, int64_t ttl, Clock::time_point now);  // requires mu_
  // Up to `batch` expired leases, earliest first; they stay in `leases_` (so Renew refuses them).
  std::vector<int64_t> TakeExpired(Clock::time_point now);
  void Loop();

  Store* const store_;
  const LessorOptions options_;
  mutable std::mutex mu_;                       // leaf lock: nothing is called while it is held
  absl::flat_hash_map<int64_t, Lease> leases_;  // guarded by mu_
  std::priority_queue<Deadline, std::vector<Deadline>, std::greater<>> deadlines_;  // guarded by mu_
  std::condition_variable wake_;  // with mu_: an earlier deadline, or Stop
  bool stopping_ = false;         // guarded by mu_
  std::thread thread_;
};

}  // namespace revkv::server
