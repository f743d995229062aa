// The etcd services (kv_service.h).
#include "server/rpc/kv_service.h"

#include <memory>
#include <optional>
#include <type_traits>

#include "runtime/gc/gc.h"
#include "server/rpc/call.h"
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

void PostEtcdCalls(EtcdServices* services, grpc::ServerCompletionQueue* cq, ServerState* state) {
  using namespace etcdserverpb;  // NOLINT: the message names read better unqualified here
  auto* kv = &services->kv;
  PostUnary<KV::AsyncService, RangeRequest, RangeResponse>(
      kv, &KV::AsyncService::RequestRange, cq, state, "Range", [state](auto* call) {
        const std::optional<AuthInfo> who =
            Caller<std::remove_pointer_t<decltype(call)>, RangeResponse>(call, state);
        if (!who.has_value()) return;
        absl::StatusOr<RangeResponse> r = state->engine->store().Range(call->request(), &*who);
        if (!r.ok()) return call->Finish(RangeResponse(), ToGrpc(r.status()));
        state->FillHeader(r->mutable_header());
        call->Finish(*r, grpc::Status::OK);
      });
  PostUnary<KV::AsyncService, PutRequest, PutResponse>(
      kv, &KV::AsyncService::RequestPut, cq, state, "Put", [state](auto* call) {
        const std::optional<AuthInfo> who =
            Caller<std::remove_pointer_t<decltype(call)>, PutResponse>(call, state);
        if (who.has_value()) FinishWrite(call, state, state->engine->store().Put(call->request(), &*who));
      });
  PostUnary<KV::AsyncService, DeleteRangeRequest, DeleteRangeResponse>(
      kv, &KV::AsyncService::RequestDeleteRange, cq, state, "DeleteRange", [state](auto* call) {
        const std::optional<AuthInfo> who =
            Caller<std::remove_pointer_t<decltype(call)>, DeleteRangeResponse>(call, state);
        if (who.has_value())
          FinishWrite(call, state, state->engine->store().DeleteRange(call->request(), &*who));
      });
  PostUnary<KV::AsyncService, TxnRequest, TxnResponse>(
      kv, &KV::AsyncService::RequestTxn, cq, state, "Txn", [state](auto* call) {
        const std::optional<AuthInfo> who =
            Caller<std::remove_pointer_t<decltype(call)>, TxnResponse>(call, state);
        if (who.has_value()) {
          FinishWrite(call, state, state->engine->store().Txn(call->request(), TxnReads::kDurable, &*who));
        }
      });
  PostUnary<KV::AsyncService, CompactionRequest, CompactionResponse>(
      kv, &KV::AsyncService::RequestCompact, cq, state, "Compact", [state](auto* call) {
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
