// Coordinator (coordinator.h): etcd's Mutex and Election recipes as executor-driven state machines.
//
// Every step of an operation runs on the executor thread, so an operation's state needs no lock: a
// cancellation, a watch delivery or a durability notice arrives on another thread and is posted to the
// executor as the operation's next step. Deliveries of a subscription that was replaced carry an old
// generation number and are ignored.
#include "server/coord/coordinator.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/rpc/grpc_handoff.h"
#include "server/store/errors.h"

namespace revkv::server {

namespace errors {
absl::Status ElectionNotLeader() { return absl::UnknownError("election: not leader"); }
absl::Status ElectionNoLeader() { return absl::UnknownError("election: no leader"); }
absl::Status MissingLeaderKey() { return absl::UnknownError("\"leader\" field must be provided"); }
}  // namespace errors

namespace {

using Env = Coordinator::Env;
using etcdserverpb::Compare;
using etcdserverpb::RangeRequest;
using etcdserverpb::ResponseHeader;
using etcdserverpb::TxnRequest;
using etcdserverpb::TxnResponse;

// The TTL of the lease etcd's session grants when a request names none.
constexpr int64_t kSessionTtlSeconds = 60;

absl::Status Canceled() { return absl::CancelledError("context canceled"); }

// Go's %x of a lease ID, which the recipes put in key names.
std::string LeaseHex(int64_t lease) {
  if (lease < 0) return absl::StrCat("-", absl::StrFormat("%x", -static_cast<uint64_t>(lease)));
  return absl::StrFormat("%x", lease);
}

// Calls `then` on the executor once the log is durable through `wait_lsn` (at once for 0), with the
// error a client would get if it cannot be. Called on the executor.
void AfterDurable(const Env& env, uint64_t wait_lsn, std::function<void(absl::Status)> then) {
  if (wait_lsn == 0 || env.store->wal() == nullptr) {
    then(absl::OkStatus());
    return;
  }
  RuntimeExecutor* executor = env.executor;
  env.store->wal()->OnDurable(wait_lsn, [executor, then = std::move(then)](absl::Status s) mutable {
    executor->Post([then = std::move(then), s = errors::LogFailure(s)] { then(s); });
  });
}

// A store write (Txn, DeleteRange) whose answer is handed to `done` once durable. On the executor.
template <class Response, class Result>
void FinishWhenDurable(const Env& env, absl::StatusOr<Result> result,
                       std::function<void(absl::StatusOr<Response>)> done) {
  if (!result.ok()) {
    done(result.status());
    return;
  }
  auto response = std::make_shared<Response>(std::move(result->response));
  AfterDurable(env, result->wait_lsn, [response, done = std::move(done)](absl::Status s) {
    if (s.ok()) {
      done(std::move(*response));
    } else {
      done(s);
    }
  });
}

void RunTxn(const Env& env, const TxnRequest& request,
            std::function<void(absl::StatusOr<TxnResponse>)> done) {
  FinishWhenDurable<TxnResponse>(env, env.store->Txn(request), std::move(done));
}

void DeleteKey(const Env& env, const std::string& key,
               std::function<void(absl::StatusOr<etcdserverpb::DeleteRangeResponse>)> done) {
  etcdserverpb::DeleteRangeRequest request;
  request.set_key(key);
  FinishWhenDurable<etcdserverpb::DeleteRangeResponse>(env, env.store->DeleteRange(request), std::move(done));
}

// "create_revision(key) == revision" (0: the key does not exist).
void AddCreateCompare(TxnRequest* txn, const std::string& key, int64_t revision) {
  Compare* c = txn->add_compare();
  c->set_key(key);
  c->set_target(Compare::CREATE);
  c->set_result(Compare::EQUAL);
  c->set_create_revision(revision);
}

// clientv3's WithFirstCreate / WithLastCreate on a prefix: the key with the lowest (highest) create
// revision, optionally only among keys created at or before `max_create_revision`.
RangeRequest TopByCreate(const std::string& prefix, bool first, int64_t max_create_revision = 0) {
  RangeRequest r;
  r.set_key(prefix);
  r.set_range_end(Coordinator::PrefixEnd(prefix));
  r.set_sort_target(RangeRequest::CREATE);
  r.set_sort_order(first ? RangeRequest::ASCEND : RangeRequest::DESCEND);
  r.set_limit(1);
  r.set_max_create_revision(max_create_revision);
  return r;
}

bool HasDelete(const std::vector<mvccpb::Event>& events) {
  for (const mvccpb::Event& e : events) {
    if (e.type() == mvccpb::Event::DELETE) return true;
  }
  return false;
}

// clientv3/concurrency's waitDeletes: waits until no key under `prefix` has a create revision <=
// `max_create_revision`, watching the newest such key for its deletion, again and again. Answers with
// the header of the read that found none. Executor only.
class DeleteWaiter : public std::enable_shared_from_this<DeleteWaiter> {
 public:
  using Done = std::function<void(absl::StatusOr<ResponseHeader>)>;
  DeleteWaiter(Env env, std::string prefix, int64_t max_create_revision, Done done)
      : env_(std::move(env)),
        prefix_(std::move(prefix)),
        max_create_revision_(max_create_revision),
        done_(std::move(done)) {}

  void Start() { Step(); }
  // Stops waiting; `done` is not called.
  void Cancel() {
    finished_ = true;
    subscription_.reset();
  }

 private:
  void Step() {
    if (finished_) return;
    absl::StatusOr<etcdserverpb::RangeResponse> r =
        env_.store->Range(TopByCreate(prefix_, /*first=*/false, max_create_revision_));
    if (!r.ok()) return Finish(r.status());
    if (r->kvs().empty()) return Finish(r->header());
    const uint64_t generation = ++generation_;
    std::weak_ptr<DeleteWaiter> weak = weak_from_this();
    RuntimeExecutor* executor = env_.executor;
    TakeBackFromGrpc(env_.events);  // made before this thread's work reached it (RpcServer::Start)
    absl::StatusOr<std::unique_ptr<EventSubscription>> sub = env_.events->Subscribe(
        r->kvs(0).key(), "", r->header().revision(),
        [weak, executor, generation](const std::vector<mvccpb::Event>& events) {
          if (!HasDelete(events)) return;
          executor->Post([weak, generation] {
            auto self = weak.lock();
            if (self == nullptr || self->finished_ || generation != self->generation_) return;
            self->subscription_.reset();
            self->Step();
          });
        },
        [weak, executor, generation](absl::Status s) {
          executor->Post([weak, generation, s] {
            auto self = weak.lock();
            if (self == nullptr || self->finished_ || generation != self->generation_) return;
            self->Finish(s.ok() ? absl::UnavailableError("lost watcher waiting for delete") : s);
          });
        });
    if (!sub.ok()) return Finish(sub.status());
    subscription_ = std::move(*sub);
  }

  void Finish(absl::StatusOr<ResponseHeader> result) {
    if (finished_) return;
    finished_ = true;
    subscription_.reset();
    done_(std::move(result));
  }

  const Env env_;
  const std::string prefix_;
  const int64_t max_create_revision_;
  const Done done_;
  std::unique_ptr<EventSubscription> subscription_;
  uint64_t generation_ = 0;
  bool finished_ = false;
};

// Shared by Lock, Campaign and Observe: an executor-driven operation that answers once.
template <class Response>
class Run : public CoordinationOperation, public std::enable_shared_from_this<Run<Response>> {
 public:
  Run(Env env, Coordinator::Done<Response> done) : env_(std::move(env)), done_(std::move(done)) {}

  void Cancel() override {
    std::weak_ptr<Run> weak = this->weak_from_this();
    env_.executor->Post([weak] {
      if (auto self = weak.lock(); self != nullptr && !self->finished_) {
        self->canceled_ = true;
        if (self->waiter_ != nullptr) self->waiter_->Cancel();
        self->OnCancel();
        self->Finish(Canceled());
      }
    });
  }

 protected:
  // Cleans up after a cancellation (on the executor); Finish follows.
  virtual void OnCancel() = 0;

  // Posts `step` to the executor with this operation kept alive.
  void Post(std::function<void(Run*)> step) {
    std::shared_ptr<Run> self = this->shared_from_this();
    env_.executor->Post([self, step = std::move(step)] { step(self.get()); });
  }

  void WaitDeletes(const std::string& prefix, int64_t max_create_revision, DeleteWaiter::Done done) {
    waiter_ = std::make_shared<DeleteWaiter>(env_, prefix, max_create_revision, std::move(done));
    waiter_->Start();
  }

  void Finish(absl::StatusOr<Response> result) {
    if (finished_) return;
    finished_ = true;
    waiter_.reset();
    done_(std::move(result));
  }

  const Env env_;
  bool finished_ = false;
  bool canceled_ = false;
  std::shared_ptr<DeleteWaiter> waiter_;

 private:
  const Coordinator::Done<Response> done_;
};

// clientv3/concurrency's Mutex.Lock, as etcd's v3lock server runs it.
class LockRun final : public Run<v3lockpb::LockResponse> {
 public:
  LockRun(Env env, v3lockpb::LockRequest request, Coordinator::Done<v3lockpb::LockResponse> done)
      : Run(std::move(env), std::move(done)), request_(std::move(request)) {}

  void Start() {
    Post([](Run* run) { static_cast<LockRun*>(run)->Begin(); });
  }

 private:
  void Begin() {
    if (finished_) return;
    int64_t lease = request_.lease();
    if (lease == 0) {
      absl::StatusOr<int64_t> granted = env_.grant_lease(kSessionTtlSeconds);
      if (!granted.ok()) return Finish(granted.status());
      lease = *granted;
    }
    prefix_ = request_.name() + "/";
    key_ = prefix_ + LeaseHex(lease);
    TxnRequest txn;
    AddCreateCompare(&txn, key_, 0);
    etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
    put->set_key(key_);
    put->set_lease(lease);
    *txn.add_success()->mutable_request_range() = TopByCreate(prefix_, /*first=*/true);
    txn.add_failure()->mutable_request_range()->set_key(key_);
    *txn.add_failure()->mutable_request_range() = TopByCreate(prefix_, /*first=*/true);
    std::shared_ptr<Run> self = shared_from_this();
    RunTxn(env_, txn, [self](absl::StatusOr<TxnResponse> r) { static_cast<LockRun*>(self.get())->OnTxn(r); });
    key_written_ = true;  // the Txn has committed (or failed and changed nothing): a cancel deletes the key
  }

  void OnTxn(const absl::StatusOr<TxnResponse>& r) {
    if (finished_) return;
    if (!r.ok()) return Finish(r.status());
    int64_t my_revision = r->header().revision();
    if (!r->succeeded()) my_revision = r->responses(0).response_range().kvs(0).create_revision();
    const auto& owner = r->responses(1).response_range().kvs();
    if (owner.empty() || owner[0].create_revision() == my_revision) return Answer(r->header());
    std::shared_ptr<Run> self = shared_from_this();
    WaitDeletes(prefix_, my_revision - 1, [self](absl::StatusOr<ResponseHeader> waited) {
      auto* run = static_cast<LockRun*>(self.get());
      if (waited.ok()) return run->Answer(*waited);
      // As etcd's Mutex: a failed wait gives the key back.
      DeleteKey(run->env_, run->key_, [](auto) {});
      run->Finish(waited.status());
    });
  }

  void Answer(const ResponseHeader& header) {
    v3lockpb::LockResponse response;
    *response.mutable_header() = header;
    response.set_key(key_);
    Finish(std::move(response));
  }

  void OnCancel() override {
    if (key_written_) DeleteKey(env_, key_, [](auto) {});
  }

  const v3lockpb::LockRequest request_;
  std::string prefix_;
  std::string key_;
  bool key_written_ = false;
};

// clientv3/concurrency's Election.Campaign, as etcd's v3election server runs it.
class CampaignRun final : public Run<v3electionpb::CampaignResponse> {
 public:
  CampaignRun(Env env, v3electionpb::CampaignRequest request,
              Coordinator::Done<v3electionpb::CampaignResponse> done)
      : Run(std::move(env), std::move(done)), request_(std::move(request)) {}

  void Start() {
    Post([](Run* run) { static_cast<CampaignRun*>(run)->Begin(); });
  }

 private:
  void Begin() {
    if (finished_) return;
    lease_ = request_.lease();
    if (lease_ == 0) {
      absl::StatusOr<int64_t> granted = env_.grant_lease(kSessionTtlSeconds);
      if (!granted.ok()) return Finish(granted.status());
      lease_ = *granted;
    }
    prefix_ = request_.name() + "/";
    key_ = prefix_ + LeaseHex(lease_);
    TxnRequest txn;
    AddCreateCompare(&txn, key_, 0);
    etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
    put->set_key(key_);
    put->set_value(request_.value());
    put->set_lease(lease_);
    txn.add_failure()->mutable_request_range()->set_key(key_);
    std::shared_ptr<Run> self = shared_from_this();
    RunTxn(env_, txn,
           [self](absl::StatusOr<TxnResponse> r) { static_cast<CampaignRun*>(self.get())->OnTxn(r); });
  }

  void OnTxn(const absl::StatusOr<TxnResponse>& r) {
    if (finished_) return;
    if (!r.ok()) return Finish(r.status());
    header_ = r->header();
    revision_ = r->header().revision();
    elected_ = true;
    if (!r->succeeded()) {
      const mvccpb::KeyValue& kv = r->responses(0).response_range().kvs(0);
      revision_ = kv.create_revision();
      if (kv.value() != request_.value()) {
        // Already a candidate with another value: proclaim the new one (as etcd's Campaign does).
        TxnRequest proclaim = ProclaimTxn(key_, revision_, lease_, request_.value());
        std::shared_ptr<Run> self = shared_from_this();
        return RunTxn(env_, proclaim, [self](absl::StatusOr<TxnResponse> p) {
          auto* run = static_cast<CampaignRun*>(self.get());
          if (run->finished_) return;
          if (p.ok() && p->succeeded()) return run->Wait();
          run->Resign();
          run->Finish(p.ok() ? errors::ElectionNotLeader() : p.status());
        });
      }
    }
    Wait();
  }

  void Wait() {
    std::shared_ptr<Run> self = shared_from_this();
    WaitDeletes(prefix_, revision_ - 1, [self](absl::StatusOr<ResponseHeader> waited) {
      auto* run = static_cast<CampaignRun*>(self.get());
      if (!waited.ok()) return run->Finish(waited.status());  // etcd keeps the key then
      v3electionpb::CampaignResponse response;
      *response.mutable_header() = run->header_;
      v3electionpb::LeaderKey* leader = response.mutable_leader();
      leader->set_name(run->request_.name());
      leader->set_key(run->key_);
      leader->set_rev(run->revision_);
      leader->set_lease(run->lease_);
      run->Finish(std::move(response));
    });
  }

  void Resign() {
    TxnRequest txn;
    AddCreateCompare(&txn, key_, revision_);
    txn.add_success()->mutable_request_delete_range()->set_key(key_);
    RunTxn(env_, txn, [](auto) {});
  }

  void OnCancel() override {
    if (elected_) Resign();
  }

 public:
  // "If the key still has the leader's create revision, put the value with the leader's lease."
  static TxnRequest ProclaimTxn(const std::string& key, int64_t revision, int64_t lease,
                                const std::string& value) {
    TxnRequest txn;
    AddCreateCompare(&txn, key, revision);
    etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
    put->set_key(key);
    put->set_value(value);
    put->set_lease(lease);
    return txn;
  }

 private:
  const v3electionpb::CampaignRequest request_;
  int64_t lease_ = 0;
  std::string prefix_;
  std::string key_;
  ResponseHeader header_;
  int64_t revision_ = 0;
  bool elected_ = false;  // the candidate key is ours: a cancel resigns
};

// clientv3/concurrency's Election.observe, as etcd's v3election server runs it: the current leader,
// then every put to its key, until it is deleted; then the next leader, and so on.
class ObserveRun final : public CoordinationOperation, public std::enable_shared_from_this<ObserveRun> {
 public:
  ObserveRun(Env env, std::string name, std::function<void(const v3electionpb::LeaderResponse&)> on_leader,
             std::function<void(absl::Status)> on_end)
      : env_(std::move(env)),
        prefix_(std::move(name) + "/"),
        on_leader_(std::move(on_leader)),
        on_end_(std::move(on_end)) {}

  void Start() {
    std::shared_ptr<ObserveRun> self = shared_from_this();
    env_.executor->Post([self] { self->Step(); });
  }

  void Cancel() override {
    std::weak_ptr<ObserveRun> weak = weak_from_this();
    env_.executor->Post([weak] {
      if (auto self = weak.lock()) self->End(Canceled());
    });
  }

 private:
  // Reads the leader; with none, waits for the first put under the prefix.
  void Step() {
    if (ended_) return;
    absl::StatusOr<etcdserverpb::RangeResponse> r = env_.store->Range(TopByCreate(prefix_, /*first=*/true));
    if (!r.ok()) return End(r.status());
    if (r->kvs().empty()) {
      return Subscribe(prefix_, Coordinator::PrefixEnd(prefix_), r->header().revision(),
                       [](ObserveRun* self, const std::vector<mvccpb::Event>& events) {
                         for (const mvccpb::Event& e : events) {
                           if (e.type() != mvccpb::Event::PUT) continue;
                           ResponseHeader header;
                           header.set_revision(e.kv().mod_revision());
                           return self->Follow(header, e.kv());
                         }
                       });
    }
    Follow(r->header(), r->kvs(0));
  }

  // Reports `kv` as the leader, then follows its key until it is deleted.
  void Follow(const ResponseHeader& header, const mvccpb::KeyValue& kv) {
    Emit(header, kv);
    Subscribe(kv.key(), "", header.revision() + 1,
              [](ObserveRun* self, const std::vector<mvccpb::Event>& events) {
                for (const mvccpb::Event& e : events) {
                  if (e.type() == mvccpb::Event::DELETE) {
                    self->subscription_.reset();
                    return self->Step();
                  }
                  ResponseHeader h;
                  h.set_revision(self->env_.store->VisibleRevision());
                  self->Emit(h, e.kv());
                }
              });
  }

  void Emit(const ResponseHeader& header, const mvccpb::KeyValue& kv) {
    v3electionpb::LeaderResponse response;
    *response.mutable_header() = header;
    *response.mutable_kv() = kv;
    on_leader_(response);
  }

  using Handler = void (*)(ObserveRun*, const std::vector<mvccpb::Event>&);
  void Subscribe(const std::string& key, const std::string& range_end, int64_t start, Handler handler) {
    subscription_.reset();
    const uint64_t generation = ++generation_;
    std::weak_ptr<ObserveRun> weak = weak_from_this();
    RuntimeExecutor* executor = env_.executor;
    TakeBackFromGrpc(env_.events);  // made before this thread's work reached it (RpcServer::Start)
    absl::StatusOr<std::unique_ptr<EventSubscription>> sub = env_.events->Subscribe(
        key, range_end, start,
        [weak, executor, generation, handler](const std::vector<mvccpb::Event>& events) {
          executor->Post([weak, generation, handler, events] {
            auto self = weak.lock();
            if (self == nullptr || self->ended_ || generation != self->generation_) return;
            handler(self.get(), events);
          });
        },
        [weak, executor, generation](absl::Status s) {
          executor->Post([weak, generation, s] {
            auto self = weak.lock();
            if (self == nullptr || generation != self->generation_) return;
            self->End(s);
          });
        });
    if (!sub.ok()) return End(sub.status());
    subscription_ = std::move(*sub);
  }

  void End(absl::Status status) {
    if (ended_) return;
    ended_ = true;
    subscription_.reset();
    on_end_(std::move(status));
  }

  const Env env_;
  const std::string prefix_;
  const std::function<void(const v3electionpb::LeaderResponse&)> on_leader_;
  const std::function<void(absl::Status)> on_end_;
  std::unique_ptr<EventSubscription> subscription_;
  uint64_t generation_ = 0;
  bool ended_ = false;
};

}  // namespace

std::string Coordinator::PrefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    if (static_cast<unsigned char>(end.back()) < 0xff) {
      end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every byte 0xff (or empty): to the end of the key space
}

std::shared_ptr<CoordinationOperation> Coordinator::Lock(const v3lockpb::LockRequest& request,
                                                         Done<v3lockpb::LockResponse> done) {
  auto run = std::make_shared<LockRun>(env_, request, std::move(done));
  run->Start();
  return run;
}

void Coordinator::Unlock(const v3lockpb::UnlockRequest& request, Done<v3lockpb::UnlockResponse> done) {
  env_.executor->Post([env = env_, key = request.key(), done = std::move(done)] {
    DeleteKey(env, key, [done](absl::StatusOr<etcdserverpb::DeleteRangeResponse> r) {
      if (!r.ok()) return done(r.status());
      v3lockpb::UnlockResponse response;
      *response.mutable_header() = r->header();
      done(std::move(response));
    });
  });
}

std::shared_ptr<CoordinationOperation> Coordinator::Campaign(const v3electionpb::CampaignRequest& request,
                                                             Done<v3electionpb::CampaignResponse> done) {
  auto run = std::make_shared<CampaignRun>(env_, request, std::move(done));
  run->Start();
  return run;
}

void Coordinator::Proclaim(const v3electionpb::ProclaimRequest& request,
                           Done<v3electionpb::ProclaimResponse> done) {
  if (!request.has_leader()) return done(errors::MissingLeaderKey());
  env_.executor->Post([env = env_, request, done = std::move(done)] {
    const v3electionpb::LeaderKey& l = request.leader();
    RunTxn(env, CampaignRun::ProclaimTxn(l.key(), l.rev(), l.lease(), request.value()),
           [done](absl::StatusOr<TxnResponse> r) {
             if (!r.ok()) return done(r.status());
             if (!r->succeeded()) return done(errors::ElectionNotLeader());
             v3electionpb::ProclaimResponse response;
             *response.mutable_header() = r->header();
             done(std::move(response));
           });
  });
}

void Coordinator::Resign(const v3electionpb::ResignRequest& request,
                         Done<v3electionpb::ResignResponse> done) {
  if (!request.has_leader()) return done(errors::MissingLeaderKey());
  env_.executor->Post([env = env_, request, done = std::move(done)] {
    TxnRequest txn;
    AddCreateCompare(&txn, request.leader().key(), request.leader().rev());
    txn.add_success()->mutable_request_delete_range()->set_key(request.leader().key());
    RunTxn(env, txn, [done](absl::StatusOr<TxnResponse> r) {
      if (!r.ok()) return done(r.status());
      v3electionpb::ResignResponse response;
      *response.mutable_header() = r->header();
      done(std::move(response));
    });
  });
}

void Coordinator::Leader(const v3electionpb::LeaderRequest& request,
                         Done<v3electionpb::LeaderResponse> done) {
  env_.executor->Post([env = env_, prefix = request.name() + "/", done = std::move(done)] {
    absl::StatusOr<etcdserverpb::RangeResponse> r = env.store->Range(TopByCreate(prefix, /*first=*/true));
    if (!r.ok()) return done(r.status());
    if (r->kvs().empty()) return done(errors::ElectionNoLeader());
    v3electionpb::LeaderResponse response;
    *response.mutable_header() = r->header();
    *response.mutable_kv() = r->kvs(0);
    done(std::move(response));
  });
}

std::shared_ptr<CoordinationOperation> Coordinator::Observe(
    const v3electionpb::LeaderRequest& request,
    std::function<void(const v3electionpb::LeaderResponse&)> on_leader,
    std::function<void(absl::Status)> on_end) {
  auto run = std::make_shared<ObserveRun>(env_, request.name(), std::move(on_leader), std::move(on_end));
  run->Start();
  return run;
}

}  // namespace revkv::server
