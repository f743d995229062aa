// The Lease service (lease_service.h).
#include "server/rpc/lease_service.h"

#include "server/lease/lessor.h"
#include "server/rpc/call.h"
#include "server/rpc/grpc_handoff.h"
#include "server/rpc/identity.h"
#include "server/rpc/status.h"
#include "server/store/errors.h"

namespace revkv::server {

namespace {

using etcdserverpb::LeaseKeepAliveRequest;

// The caller of a unary call, checked to be a user while auth is enabled (revkv's check for the Lease
// methods etcd checks nothing for); the refusal otherwise.
absl::StatusOr<AuthInfo> LeaseCaller(const grpc::ServerContextBase& context, ServerState* state) {
  absl::StatusOr<AuthInfo> who = Identify(context, state);
  if (!who.ok()) return who.status();
  if (absl::Status s = state->engine->store().VisibleAuth()->CheckUser(*who); !s.ok()) return s;
  return who;
}
using etcdserverpb::LeaseKeepAliveResponse;

// One keep-alive stream: read a request, renew, write the answer, read the next; one operation
// outstanding at a time, so the reactor's members need no lock. The stream ends when the client
// closes it or the call is cancelled (the server's shutdown cancels every call).
class KeepAliveReactor final : public grpc::ServerBidiReactor<LeaseKeepAliveRequest, LeaseKeepAliveResponse> {
 public:
  KeepAliveReactor(ServerState* state, grpc::CallbackServerContext* context)
      : state_(state), context_(context) {
    StartGrpcOperation(this, [this] { StartRead(&request_); });
  }

  void OnReadDone(bool ok) override {
    GrpcReaction reaction(this);
    if (!ok) {  // the client closed its side, or the call was cancelled
      StartGrpcOperation(this, [this] { Finish(grpc::Status::OK); });
      return;
    }
    // As etcd: the header is made before the renewal, so its revision is not after the keep-alive.
    response_.Clear();
    state_->FillHeader(response_.mutable_header());
    // VisibleRevision reads only atomics (the runtime's time, the log's durable revision): safe on an
    // unregistered thread.
    response_.mutable_header()->set_revision(state_->engine->store().VisibleRevision());
    response_.set_id(request_.id());
    // While auth is enabled a keep-alive needs a user (revkv's check: etcd checks none), found from the
    // stream's token as it is now and checked against the visible auth state (no heap access).
    if (state_->engine->store().VisibleAuth()->enabled()) {
      absl::StatusOr<AuthInfo> who = Identify(*context_, state_);
      absl::Status allowed = who.ok() ? state_->engine->store().VisibleAuth()->CheckUser(*who) : who.status();
      if (!allowed.ok()) {
        StartGrpcOperation(this, [this, allowed] { Finish(ToGrpc(allowed)); });
        return;
      }
    }
    absl::StatusOr<int64_t> ttl = state_->lessor->Renew(request_.id());
    response_.set_ttl(ttl.ok() ? *ttl : 0);  // etcd answers an unknown lease with TTL 0
    StartGrpcOperation(this, [this] { StartWrite(&response_); });
  }

  void OnWriteDone(bool ok) override {
    GrpcReaction reaction(this);
    if (!ok) {
      StartGrpcOperation(this, [this] { Finish(grpc::Status::CANCELLED); });
      return;
    }
    StartGrpcOperation(this, [this] { StartRead(&request_); });
  }

  void OnDone() override {
    TakeBackFromGrpc(this);
    delete this;
  }

 private:
  ServerState* const state_;
  grpc::CallbackServerContext* const context_;
  LeaseKeepAliveRequest request_;
  LeaseKeepAliveResponse response_;
};

}  // namespace

grpc::ServerBidiReactor<LeaseKeepAliveRequest, LeaseKeepAliveResponse>* LeaseService::LeaseKeepAlive(
    grpc::CallbackServerContext* context) {
  return new KeepAliveReactor(state_, context);
}

void PostLeaseCalls(LeaseService* service, grpc::ServerCompletionQueue* cq, ServerState* state) {
  using namespace etcdserverpb;  // NOLINT: the message names read better unqualified here
  PostUnary<LeaseService, LeaseGrantRequest, LeaseGrantResponse>(
      service, &LeaseService::RequestLeaseGrant, cq, state, "LeaseGrant", [state](auto* call) {
        absl::StatusOr<AuthInfo> who = Identify(call->context(), state);
        if (!who.ok()) return call->Finish(LeaseGrantResponse(), ToGrpc(who.status()));
        FinishWrite(call, state, state->lessor->Grant(call->request(), &*who));
      });
  PostUnary<LeaseService, LeaseRevokeRequest, LeaseRevokeResponse>(
      service, &LeaseService::RequestLeaseRevoke, cq, state, "LeaseRevoke", [state](auto* call) {
        absl::StatusOr<AuthInfo> who = Identify(call->context(), state);
        if (!who.ok()) return call->Finish(LeaseRevokeResponse(), ToGrpc(who.status()));
        FinishWrite(call, state, state->lessor->Revoke(call->request(), &*who));
      });
  PostUnary<LeaseService, LeaseTimeToLiveRequest, LeaseTimeToLiveResponse>(
      service, &LeaseService::RequestLeaseTimeToLive, cq, state, "LeaseTimeToLive", [state](auto* call) {
        const LeaseTimeToLiveRequest& request = call->request();
        absl::StatusOr<AuthInfo> who = LeaseCaller(call->context(), state);
        if (!who.ok()) return call->Finish(LeaseTimeToLiveResponse(), ToGrpc(who.status()));
        LeaseTimeToLiveResponse r;
        state->FillHeader(r.mutable_header());
        r.set_id(request.id());
        absl::StatusOr<LeaseState> lease = state->engine->store().LeaseAt(request.id(), request.keys());
        absl::StatusOr<int64_t> remaining =
            lease.ok() ? state->lessor->Remaining(request.id()) : absl::StatusOr<int64_t>(lease.status());
        if (!lease.ok() && !absl::IsNotFound(lease.status())) {
          return call->Finish(LeaseTimeToLiveResponse(), ToGrpc(lease.status()));
        }
        if (!remaining.ok()) {
          // etcd's v3rpc: an unknown lease (or one expired, being revoked) is TTL -1, not an error.
          r.mutable_header()->set_revision(state->engine->store().VisibleRevision());
          r.set_ttl(-1);
          return call->Finish(r, grpc::Status::OK);
        }
        r.mutable_header()->set_revision(lease->revision);
        r.set_ttl(*remaining);
        r.set_grantedttl(lease->granted_ttl);
        // The keys are shown only to a user who may read each of them (etcd 3.4.26's fix; 3.4.23 shows
        // them to anyone).
        const std::shared_ptr<const store::AuthView> view = state->engine->store().VisibleAuth();
        for (const std::string& key : lease->keys) {
          if (absl::Status s = view->CheckRange(*who, key, std::string_view(), false); !s.ok()) {
            return call->Finish(LeaseTimeToLiveResponse(), ToGrpc(s));
          }
          r.add_keys(key);
        }
        call->Finish(r, grpc::Status::OK);
      });
  PostUnary<LeaseService, LeaseLeasesRequest, LeaseLeasesResponse>(
      service, &LeaseService::RequestLeaseLeases, cq, state, "LeaseLeases", [state](auto* call) {
        absl::StatusOr<AuthInfo> who = LeaseCaller(call->context(), state);
        if (!who.ok()) return call->Finish(LeaseLeasesResponse(), ToGrpc(who.status()));
        int64_t revision = 0;
        absl::StatusOr<std::vector<LeaseState>> leases = state->engine->store().Leases(false, &revision);
        if (!leases.ok()) return call->Finish(LeaseLeasesResponse(), ToGrpc(leases.status()));
        LeaseLeasesResponse r;
        state->FillHeader(r.mutable_header());
        r.mutable_header()->set_revision(revision);
        for (const LeaseState& l : *leases) r.add_leases()->set_id(l.id);
        call->Finish(r, grpc::Status::OK);
      });
}

}  // namespace revkv::server
