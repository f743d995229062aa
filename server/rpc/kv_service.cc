// The etcd services (kv_service.h).
#include "server/rpc/kv_service.h"

#include <chrono>
#include <memory>
#include <optional>
#include <type_traits>

#include "runtime/gc/gc.h"
#include "runtime/safepoint/safepoint.h"
#include "server/coord/runtime_executor.h"
#include "server/rpc/call.h"
#include "server/rpc/grpc_handoff.h"
#include "server/rpc/identity.h"
#include "server/rpc/status.h"

namespace revkv::server {

namespace {

using etcdserverpb::KV;

// The caller of `call`, or the refusal it is finished with (then nullopt).
template <class Call, class Response>
std::optional<AuthInfo> Caller(Call* call, ServerState* state) {
  absl::StatusOr<AuthInfo> who = Identify(call->context(), state);
  if (!who.ok()) {
    call->Finish(Response(), ToGrpc(who.status()));
    return std::nullopt;
  }
  return *std::move(who);
}

// An alarm as etcd's Status lists it: the Go text form of its AlarmMember ("memberID:1 alarm:NOSPACE ").
std::string AlarmText(const etcdserverpb::AlarmMember& a) {
  return "memberID:" + std::to_string(a.memberid()) + " alarm:" + etcdserverpb::AlarmType_Name(a.alarm()) +
         " ";
}

}  // namespace

// The reactor of one Range. Finish hands the call to gRPC, which calls OnDone once it is done with the
// call, on any thread; both hand-offs are stated for ThreadSanitizer (grpc_handoff.h): the response,
// written here (possibly on a scan executor), is destroyed by gRPC after OnDone.
class RangeReactor final : public grpc::ServerUnaryReactor {
 public:
  void Answer(const grpc::Status& status) {
    StartGrpcOperation(this, [&] { Finish(status); });
  }
  void OnDone() override { DeleteReactorFromGrpc(this); }
};

KvService::KvService(ServerState* state) : state_(state) {}

void KvService::StartServing(std::vector<RuntimeExecutor*> scans) {
  metrics_ = &state_->ForMethod("Range");
  scans_ = std::move(scans);
  HandOverToGrpc(this);  // read on gRPC's threads, some of which exist already (grpc_handoff.h)
}

grpc::ServerUnaryReactor* KvService::Range(grpc::CallbackServerContext* context,
                                           const etcdserverpb::RangeRequest* request,
                                           etcdserverpb::RangeResponse* response) {
  TakeBackFromGrpc(this);  // what StartServing set
  const auto start = std::chrono::steady_clock::now();
  // Relaxed, as the workers' calls count themselves (call.h); Shutdown waits for the count to fall.
  state_->requests_in_flight.fetch_add(1, std::memory_order_relaxed);
  auto* reactor = new RangeReactor();
  if (!request->range_end().empty() && !scans_.empty()) {
    // Relaxed: only spreads the scans over the executors.
    RuntimeExecutor* scan = scans_[next_scan_.fetch_add(1, std::memory_order_relaxed) % scans_.size()];
    // gRPC keeps the context, request and response until the reactor finishes.
    if (scan->Post([this, context, request, response, reactor, start] {
          Answer(context, *request, response, reactor, start);
        })) {
      return reactor;
    }
  }
  Answer(context, *request, response, reactor, start);
  return reactor;
}

void KvService::Answer(grpc::CallbackServerContext* context, const etcdserverpb::RangeRequest& request,
                       etcdserverpb::RangeResponse* response, RangeReactor* reactor,
                       std::chrono::steady_clock::time_point start) {
  grpc::Status status = [&] {
    runtime::HeapVisit visit("grpc-callback");
    absl::StatusOr<AuthInfo> who = Identify(*context, state_);
    if (!who.ok()) return ToGrpc(who.status());
    absl::StatusOr<etcdserverpb::RangeResponse> r = state_->engine->store().Range(request, &*who);
    if (!r.ok()) return ToGrpc(r.status());
    *response = *std::move(r);
    state_->FillHeader(response->mutable_header());
    return grpc::Status::OK;
  }();
  metrics_->Record(start, static_cast<int>(status.error_code()));
  reactor->Answer(status);
  // Release: a shutdown that reads zero sees every answer handed to gRPC (server_state.h).
  state_->requests_in_flight.fetch_sub(1, std::memory_order_release);
}

void PostEtcdCalls(EtcdServices* services, grpc::ServerCompletionQueue* cq, ServerState* state) {
  using namespace etcdserverpb;  // NOLINT: the message names read better unqualified here
  auto* kv = &services->kv;
  PostUnary<KvService, PutRequest, PutResponse>(
      kv, &KvService::RequestPut, cq, state, "Put", [state](auto* call) {
        const std::optional<AuthInfo> who =
            Caller<std::remove_pointer_t<decltype(call)>, PutResponse>(call, state);
        if (who.has_value()) FinishWrite(call, state, state->engine->store().Put(call->request(), &*who));
      });
  PostUnary<KvService, DeleteRangeRequest, DeleteRangeResponse>(
      kv, &KvService::RequestDeleteRange, cq, state, "DeleteRange", [state](auto* call) {
        const std::optional<AuthInfo> who =
            Caller<std::remove_pointer_t<decltype(call)>, DeleteRangeResponse>(call, state);
        if (who.has_value())
          FinishWrite(call, state, state->engine->store().DeleteRange(call->request(), &*who));
      });
  PostUnary<KvService, TxnRequest, TxnResponse>(
      kv, &KvService::RequestTxn, cq, state, "Txn", [state](auto* call) {
        const std::optional<AuthInfo> who =
            Caller<std::remove_pointer_t<decltype(call)>, TxnResponse>(call, state);
        if (who.has_value()) {
          FinishWrite(call, state, state->engine->store().Txn(call->request(), TxnReads::kDurable, &*who));
        }
      });
  PostUnary<KvService, CompactionRequest, CompactionResponse>(
      kv, &KvService::RequestCompact, cq, state, "Compact", [state](auto* call) {
        const std::optional<AuthInfo> who =
            Caller<std::remove_pointer_t<decltype(call)>, CompactionResponse>(call, state);
        if (!who.has_value()) return;
        absl::StatusOr<CompactionResponse> r = state->engine->store().Compact(call->request(), &*who);
        if (!r.ok()) return call->Finish(CompactionResponse(), ToGrpc(r.status()));
        state->FillHeader(r->mutable_header());
        call->Finish(*r, grpc::Status::OK);
      });

  auto* maintenance = &services->maintenance;
  PostUnary<AsyncMaintenanceBase, StatusRequest, StatusResponse>(
      maintenance, &AsyncMaintenanceBase::RequestStatus, cq, state, "Status", [state](auto* call) {
        StatusResponse r;
        Store& store = state->engine->store();
        state->FillHeader(r.mutable_header());
        r.mutable_header()->set_revision(store.VisibleRevision());
        r.set_version(std::string(kServerVersion));
        const runtime::HeapUsage heap = runtime::GetHeapUsage();
        r.set_dbsize(static_cast<int64_t>(heap.committed_bytes));
        r.set_dbsizeinuse(static_cast<int64_t>(heap.old_bytes + heap.large_bytes));
        r.set_leader(state->config->member_id);
        r.set_raftindex(static_cast<uint64_t>(store.VisibleRevision()));
        r.set_raftterm(1);
        r.set_raftappliedindex(static_cast<uint64_t>(store.VisibleRevision()));
        // etcd lists every active alarm here (its text form); the log's own message follows a disk error.
        for (const AlarmMember& a : store.Alarms()) r.add_errors(AlarmText(a));
        if (absl::Status w = state->engine->write_status(); !w.ok()) r.add_errors(std::string(w.message()));
        call->Finish(r, grpc::Status::OK);
      });
  PostUnary<AsyncMaintenanceBase, AlarmRequest, AlarmResponse>(
      maintenance, &AsyncMaintenanceBase::RequestAlarm, cq, state, "Alarm", [state](auto* call) {
        // etcd's alarm store: GET reads, ACTIVATE and DEACTIVATE are logged writes (store.h). etcd's
        // answer has no header.
        const std::optional<AuthInfo> who =
            Caller<std::remove_pointer_t<decltype(call)>, AlarmResponse>(call, state);
        if (!who.has_value()) return;
        FinishWrite(call, state, state->engine->store().Alarm(call->request(), &*who), /*with_header=*/false);
      });

  auto* cluster = &services->cluster;
  PostUnary<ClusterService, MemberListRequest, MemberListResponse>(
      cluster, &ClusterService::RequestMemberList, cq, state, "MemberList", [state](auto* call) {
        MemberListResponse r;
        state->FillHeader(r.mutable_header());
        r.mutable_header()->set_revision(state->engine->store().VisibleRevision());
        Member* m = r.add_members();
        m->set_id(state->config->member_id);
        m->set_name(state->config->name);
        for (const std::string& url : state->config->AdvertisedClientUrls()) m->add_clienturls(url);
        call->Finish(r, grpc::Status::OK);
      });
}

}  // namespace revkv::server
