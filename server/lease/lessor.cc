// The lessor (lessor.h): deadlines, keep-alive and expiry.
#include "server/lease/lessor.h"

#include <algorithm>

#include "runtime/safepoint/safepoint.h"
#include "server/store/errors.h"

namespace revkv::server {

Lessor::Lessor(Store* store, LessorOptions options) : store_(store), options_(std::move(options)) {}

Lessor::~Lessor() { Stop(); }

absl::StatusOr<WriteResult<etcdserverpb::LeaseGrantResponse>> Lessor::Grant(
    const etcdserverpb::LeaseGrantRequest& r, const AuthInfo* who) {
  auto result = store_->LeaseGrant(r, who);
  if (result.ok()) Track(result->response.id(), result->response.ttl());
  return result;
}

absl::StatusOr<WriteResult<etcdserverpb::LeaseRevokeResponse>> Lessor::Revoke(
    const etcdserverpb::LeaseRevokeRequest& r, const AuthInfo* who) {
  auto result = store_->LeaseRevoke(r, who);
  if (result.ok() || absl::IsNotFound(result.status())) Forget(r.id());
  return result;
}

absl::Status Lessor::Recover() {
  auto leases = store_->Leases(/*newest=*/true);
  if (!leases.ok()) return leases.status();
  std::lock_guard<std::mutex> lock(mu_);
  const Clock::time_point now = options_.now();
  for (const LeaseState& l : *leases) TrackLocked(l.id, l.granted_ttl, now);
  wake_.notify_all();
  return absl::OkStatus();
}

void Lessor::TrackLocked(int64_t id, int64_t ttl, Clock::time_point now) {
  const Clock::time_point deadline = now + std::chrono::seconds(ttl);
  const bool earliest = deadlines_.empty() || deadline < deadlines_.top().first;
  leases_[id] = Lease{ttl, deadline, false};
  deadlines_.emplace(deadline, id);
  if (earliest) wake_.notify_all();
}

void Lessor::Track(int64_t id, int64_t ttl) {
  std::lock_guard<std::mutex> lock(mu_);
  TrackLocked(id, ttl, options_.now());
}

void Lessor::Forget(int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  leases_.erase(id);  // its heap entries are dropped when they come up
}

size_t Lessor::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return leases_.size();
}

absl::StatusOr<int64_t> Lessor::Renew(int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  const Clock::time_point now = options_.now();
  auto it = leases_.find(id);
  // etcd's Renew of an expired lease waits for its revoke and answers "not found": so does this, at once.
  if (it == leases_.end() || it->second.revoking || it->second.deadline <= now)
    return errors::LeaseNotFound();
  it->second.deadline = now + std::chrono::seconds(it->second.ttl);
  deadlines_.emplace(it->second.deadline, id);
  return it->second.ttl;
}

absl::StatusOr<int64_t> Lessor::Remaining(int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  const Clock::time_point now = options_.now();
  auto it = leases_.find(id);
  if (it == leases_.end() || it->second.revoking || it->second.deadline <= now)
    return errors::LeaseNotFound();
  return std::chrono::duration_cast<std::chrono::seconds>(it->second.deadline - now).count();
}

std::vector<int64_t> Lessor::TakeExpired(Clock::time_point now) {
  std::vector<int64_t> expired;
  std::lock_guard<std::mutex> lock(mu_);
  while (!deadlines_.empty() && deadlines_.top().first <= now && expired.size() < options_.batch) {
    const auto [deadline, id] = deadlines_.top();
    deadlines_.pop();
    auto it = leases_.find(id);
    if (it == leases_.end() || it->second.deadline != deadline) continue;  // revoked or renewed since
    it->second.revoking = true;
    expired.push_back(id);
  }
  return expired;
}

size_t Lessor::ExpireNow() {
  size_t revoked = 0;
  for (;;) {
    const Clock::time_point now = options_.now();
    std::vector<int64_t> batch = TakeExpired(now);
    if (batch.empty()) return revoked;
    for (int64_t id : batch) {
      etcdserverpb::LeaseRevokeRequest r;
      r.set_id(id);
      auto result = store_->LeaseRevoke(r);
      if (result.ok() || absl::IsNotFound(result.status())) {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = leases_.find(id);
        // A lease granted again under the same ID after this pass took it is not revoking.
        if (it != leases_.end() && it->second.revoking) leases_.erase(it);
        if (result.ok()) ++revoked;
        continue;
      }
      // The log failed (or the heap is exhausted): try again later; Renew keeps refusing it meanwhile.
      std::lock_guard<std::mutex> lock(mu_);
      auto it = leases_.find(id);
      if (it != leases_.end() && it->second.revoking) {
        it->second.deadline = now + options_.retry;
        deadlines_.emplace(it->second.deadline, id);
      }
    }
  }
}

void Lessor::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void Lessor::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    wake_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void Lessor::Loop() {
  runtime::ThreadRegistration registration("lessor");
  for (;;) {
    {
      runtime::SafeRegion waiting;  // sleeping: a collection must not wait for this thread
      std::unique_lock<std::mutex> lock(mu_);
      const Clock::time_point now = options_.now();
      Clock::time_point until = now + options_.max_sleep;
      if (!deadlines_.empty()) until = std::min(until, deadlines_.top().first);
      if (!stopping_ && until > now) wake_.wait_until(lock, until);
      if (stopping_) return;
    }
    ExpireNow();
  }
}

}  // namespace revkv::server
