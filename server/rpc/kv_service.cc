// The etcd services (kv_service.h).
#include "server/rpc/kv_service.h"

#include <memory>

#include "runtime/gc/gc.h"
#include "server/rpc/call.h"
#include "server/rpc/status.h"

namespace revkv::server {

namespace {

using etcdserverpb::KV;

}  // namespace

void PostEtcdCalls(EtcdServices* services, grpc::ServerCompletionQueue* cq, ServerState* state) {
  using namespace etcdserverpb;  // NOLINT: the message names read better unqualified here
  auto* kv = &services->kv;
  PostUnary<KV::AsyncService, RangeRequest, RangeResponse>(
      kv, &KV::AsyncService::RequestRange, cq, state, "Range", [state](auto* call) {
        absl::StatusOr<RangeResponse> r = state->engine->store().Range(call->request());
        if (!r.ok()) return call->Finish(RangeResponse(), ToGrpc(r.status()));
        state->FillHeader(r->mutable_header());
        call->Finish(*r, grpc::Status::OK);
      });
  PostUnary<KV::AsyncService, PutRequest, PutResponse>(
      kv, &KV::AsyncService::RequestPut, cq, state, "Put",
      [state](auto* call) { FinishWrite(call, state, state->engine->store().Put(call->request())); });
  PostUnary<KV::AsyncService, DeleteRangeRequest, DeleteRangeResponse>(
      kv, &KV::AsyncService::RequestDeleteRange, cq, state, "DeleteRange",
      [state](auto* call) { FinishWrite(call, state, state->engine->store().DeleteRange(call->request())); });
  PostUnary<KV::AsyncService, TxnRequest, TxnResponse>(
      kv, &KV::AsyncService::RequestTxn, cq, state, "Txn",
      [state](auto* call) { FinishWrite(call, state, state->engine->store().Txn(call->request())); });
  PostUnary<KV::AsyncService, CompactionRequest, CompactionResponse>(
      kv, &KV::AsyncService::RequestCompact, cq, state, "Compact", [state](auto* call) {
        absl::StatusOr<CompactionResponse> r = state->engine->store().Compact(call->request());
        if (!r.ok()) return call->Finish(CompactionResponse(), ToGrpc(r.status()));
        state->FillHeader(r->mutable_header());
        call->Finish(*r, grpc::Status::OK);
      });

  auto* maintenance = &services->maintenance;
  PostUnary<MaintenanceService, StatusRequest, StatusResponse>(
      maintenance, &MaintenanceService::RequestStatus, cq, state, "Status", [state](auto* call) {
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
        if (absl::Status w = state->engine->write_status(); !w.ok()) r.add_errors(std::string(w.message()));
        call->Finish(r, grpc::Status::OK);
      });
  PostUnary<MaintenanceService, AlarmRequest, AlarmResponse>(
      maintenance, &MaintenanceService::RequestAlarm, cq, state, "Alarm", [state](auto* call) {
        // A disk error that stopped writes is reported as etcd's NOSPACE alarm when the disk is full
        // and as CORRUPT otherwise; activating or deactivating alarms by hand is not supported.
        AlarmResponse r;
        state->FillHeader(r.mutable_header());
        r.mutable_header()->set_revision(state->engine->store().VisibleRevision());
        if (absl::Status w = state->engine->write_status(); !w.ok()) {
          AlarmMember* m = r.add_alarms();
          m->set_memberid(state->config->member_id);
          m->set_alarm(errors::IsNoSpace(w) ? NOSPACE : CORRUPT);
        }
        call->Finish(r, grpc::Status::OK);
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
        const std::string scheme = state->config->tls.enabled() ? "https://" : "http://";
        m->add_clienturls(scheme + state->config->listen);
        call->Finish(r, grpc::Status::OK);
      });
}

}  // namespace revkv::server
