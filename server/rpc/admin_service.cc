// The Admin service (admin_service.h).
#include "server/rpc/admin_service.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>

#include "runtime/gc/gc.h"
#include "runtime/safepoint/safepoint.h"
#include "runtime/stm/stm.h"
#include "server/rpc/identity.h"
#include "server/rpc/status.h"

namespace revkv::server {

namespace {

uint64_t UnixNanos() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace

void ToProto(const runtime::CollectionRecord& r, ::revkv::v1::GcEvent* out) {
  out->set_kind(static_cast<::revkv::v1::CollectionKind>(r.kind));
  out->set_sequence(r.sequence);
  out->set_start_unix_nanos(r.start_unix_nanos);
  out->set_pause_nanos(r.pause_nanos);
  out->set_time_to_safepoint_nanos(r.time_to_safepoint_nanos);
  out->set_heap_bytes_before(r.heap_bytes_before);
  out->set_heap_bytes_after(r.heap_bytes_after);
  out->set_bytes_copied(r.bytes_copied);
  out->set_bytes_promoted(r.bytes_promoted);
  out->set_objects_copied(r.objects_copied);
  out->set_pinned_objects(r.pinned_objects);
  out->set_pinned_chunks(r.pinned_chunks);
  out->set_pinned_bytes(r.pinned_bytes);
  out->set_revisions_freed(r.revisions_freed);
  out->set_chains_collapsed(r.chains_collapsed);
  out->set_threads(r.threads);
  out->set_reason(r.reason);
  out->set_chunks_evacuated(r.chunks_evacuated);
  out->set_bytes_marked(r.bytes_marked);
  out->set_objects_marked(r.objects_marked);
  out->set_collector_threads(r.collector_threads);
  out->set_objects_scanned(r.objects_scanned);
  for (uint64_t n : r.objects_scanned_by_thread) out->add_objects_scanned_by_thread(n);
  out->set_steals(r.steals);
}

void FillStats(ServerState* state, uint32_t recent_events, ::revkv::v1::GetStatsResponse* out) {
  using runtime::CollectionKind;
  out->set_unix_nanos(UnixNanos());
  const runtime::GcStatistics gc = runtime::GetGcStatistics(std::min<uint32_t>(recent_events, 1024));
  auto* g = out->mutable_gc();
  for (int k = 0; k < runtime::kCollectionKinds; ++k) {
    const runtime::HistogramSnapshot h = runtime::PauseHistogram(static_cast<CollectionKind>(k));
    auto* p = g->add_pauses();
    p->set_kind(static_cast<::revkv::v1::CollectionKind>(k));
    p->set_collections(gc.collections[k]);
    p->set_pause_total_nanos(gc.pause_nanos_total[k]);
    p->set_pause_p50_nanos(h.Quantile(0.5));
    p->set_pause_p99_nanos(h.Quantile(0.99));
    p->set_pause_max_nanos(h.max);
  }
  const runtime::HistogramSnapshot tts = runtime::TimeToSafepointHistogram();
  g->set_time_to_safepoint_p50_nanos(tts.Quantile(0.5));
  g->set_time_to_safepoint_p99_nanos(tts.Quantile(0.99));
  g->set_time_to_safepoint_max_nanos(tts.max);
  g->set_bytes_allocated(gc.bytes_allocated);
  g->set_bytes_copied(gc.bytes_copied);
  g->set_bytes_promoted(gc.bytes_promoted);
  g->set_revisions_freed(gc.revisions_freed);
  g->set_chains_collapsed(gc.chains_collapsed);
  g->set_allocation_failures(gc.allocation_failures);
  g->set_safepoints(gc.safepoints);

  auto* h = out->mutable_heap();
  h->set_max_bytes(gc.heap.max_bytes);
  h->set_committed_bytes(gc.heap.committed_bytes);
  h->set_nursery_bytes(gc.heap.nursery_bytes);
  h->set_old_bytes(gc.heap.old_bytes);
  h->set_large_bytes(gc.heap.large_bytes);
  h->set_pinned_bytes(gc.heap.pinned_bytes);
  h->set_pinned_chunks(gc.heap.pinned_chunks);
  h->set_free_bytes(gc.heap.free_bytes);
  h->set_reserved_bytes(gc.heap.reserved_bytes);

  const runtime::stm::StmStatistics stm = runtime::stm::GetStmStatistics();
  auto* s = out->mutable_stm();
  s->set_commits(stm.write_commits);
  s->set_read_only_commits(stm.commits - stm.write_commits + stm.snapshot_reads);
  s->set_aborts_read_conflict(stm.aborts[static_cast<int>(runtime::stm::AbortCause::kReadConflict)]);
  s->set_aborts_lock(stm.aborts[static_cast<int>(runtime::stm::AbortCause::kLock)]);
  s->set_aborts_validation(stm.aborts[static_cast<int>(runtime::stm::AbortCause::kValidation)]);
  s->set_aborts_doomed_by_gc(stm.aborts[static_cast<int>(runtime::stm::AbortCause::kDoomedByGc)]);
  s->set_retries(stm.retries);
  s->set_inevitable_transactions(stm.inevitable);
  s->set_inevitable_wait_nanos(stm.inevitable_wait_nanos);
  s->set_read_set_p50(stm.read_set_sizes.Quantile(0.5));
  s->set_read_set_p99(stm.read_set_sizes.Quantile(0.99));
  s->set_write_set_p50(stm.write_set_sizes.Quantile(0.5));
  s->set_write_set_p99(stm.write_set_sizes.Quantile(0.99));
  s->set_live_snapshots(stm.live_snapshots);
  s->set_oldest_snapshot_age_nanos(stm.oldest_snapshot_age_nanos);
  s->set_chains_compressed(stm.chains_compressed);
  s->set_chain_hops(stm.chain_hops);
  s->set_skip_hints_taken(stm.skip_hints_taken);
  s->set_skip_hints_set(stm.skip_hints_set);
  s->set_auto_localizations(stm.auto_localizations);
  s->set_global_time(stm.global_time);

  Engine* engine = state->engine;
  auto* st = out->mutable_store();
  st->set_revision(engine->store().VisibleRevision());
  st->set_compact_revision(engine->store().CompactRevision());
  st->set_keys(static_cast<uint64_t>(engine->store().KeyCount()));
  const WalStats wal = engine->wal().stats();
  st->set_wal_bytes(wal.bytes_written);
  st->set_wal_fsyncs(wal.fsyncs);
  st->set_checkpoint_revision(engine->last_checkpoint().revision);
  const absl::Status write = engine->write_status();
  st->set_read_only(!write.ok());
  if (!write.ok()) st->set_read_only_reason(std::string(write.message()));

  for (const runtime::CollectionRecord& r : gc.recent) ToProto(r, out->add_recent());
}

grpc::Status AdminService::CheckAdmin(const grpc::ServerContext& context) {
  // The operator's actions need the root role while auth is enabled; the figures (GetStats, the event
  // stream, ServerInfo) are what /metrics shows anyone and stay open.
  absl::StatusOr<AuthInfo> who = Identify(context, state_);
  if (!who.ok()) return ToGrpc(who.status());
  return ToGrpc(state_->engine->store().VisibleAuth()->CheckAdmin(*who));
}

grpc::Status AdminService::GetStats(grpc::ServerContext*, const ::revkv::v1::GetStatsRequest* request,
                                    ::revkv::v1::GetStatsResponse* response) {
  FillStats(state_, request->recent_events(), response);
  return grpc::Status::OK;
}

grpc::Status AdminService::WatchGcEvents(grpc::ServerContext* context,
                                         const ::revkv::v1::WatchGcEventsRequest* request,
                                         grpc::ServerWriter<::revkv::v1::GcEvent>* writer) {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<::revkv::v1::GcEvent> queue;  // guarded by mu; bounded: a slow client loses the oldest
  unsigned mask = (1u << static_cast<int>(runtime::CollectionKind::kMinor)) |
                  (1u << static_cast<int>(runtime::CollectionKind::kMajor));
  if (request->include_local()) mask |= 1u << static_cast<int>(runtime::CollectionKind::kLocal);
  const int id = runtime::AddCollectionListener(
      [&](const runtime::CollectionRecord& r) {
        ::revkv::v1::GcEvent e;
        ToProto(r, &e);
        std::lock_guard<std::mutex> lock(mu);
        queue.push_back(std::move(e));
        if (queue.size() > 4096) queue.pop_front();
        cv.notify_one();
      },
      mask);
  grpc::Status status = grpc::Status::OK;
  while (!context->IsCancelled()) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, std::chrono::milliseconds(200), [&] { return !queue.empty(); });
    if (queue.empty()) continue;
    ::revkv::v1::GcEvent e = std::move(queue.front());
    queue.pop_front();
    lock.unlock();
    if (!writer->Write(e)) break;
  }
  runtime::RemoveCollectionListener(id);
  return status;
}

grpc::Status AdminService::Collect(grpc::ServerContext* context, const ::revkv::v1::CollectRequest*,
                                   ::revkv::v1::CollectResponse* response) {
  if (grpc::Status s = CheckAdmin(*context); !s.ok()) return s;
  runtime::ThreadRegistration registration("admin");
  runtime::CollectMajor();
  const runtime::GcStatistics gc = runtime::GetGcStatistics(1);
  if (!gc.recent.empty()) ToProto(gc.recent.back(), response->mutable_event());
  return grpc::Status::OK;
}

grpc::Status AdminService::Checkpoint(grpc::ServerContext* context, const ::revkv::v1::CheckpointRequest*,
                                      ::revkv::v1::CheckpointResponse* response) {
  if (grpc::Status s = CheckAdmin(*context); !s.ok()) return s;
  runtime::ThreadRegistration registration("admin");
  absl::StatusOr<CheckpointStats> s = state_->engine->Checkpoint();
  if (!s.ok()) return ToGrpc(s.status());
  response->set_revision(s->revision);
  response->set_path(s->path);
  response->set_bytes(s->bytes);
  response->set_duration_nanos(static_cast<uint64_t>(std::chrono::nanoseconds(s->duration).count()));
  return grpc::Status::OK;
}

grpc::Status AdminService::ServerInfo(grpc::ServerContext*, const ::revkv::v1::ServerInfoRequest*,
                                      ::revkv::v1::ServerInfoResponse* response) {
  const ServerConfig& c = *state_->config;
  response->set_version(std::string(kServerVersion));
  response->set_start_unix_nanos(state_->start_unix_nanos);
  response->set_data_dir(c.data_dir);
  response->set_listen_address(c.listen);
  response->set_metrics_address(c.metrics_listen);
  response->set_fsync_mode(std::string(FsyncModeName(c.fsync)));
  response->set_worker_threads(static_cast<uint32_t>(c.workers));
  response->set_max_heap_bytes(c.max_heap);
  response->set_member_id(c.member_id);
  response->set_cluster_id(c.cluster_id);
  return grpc::Status::OK;
}

}  // namespace revkv::server
