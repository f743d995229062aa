// The synchronous Maintenance methods (maintenance_service.h).
#include "server/rpc/maintenance_service.h"

#include <malloc.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "runtime/gc/gc.h"
#include "runtime/heap/heap.h"
#include "runtime/safepoint/safepoint.h"
#include "server/engine/snapshot_file.h"
#include "server/rpc/identity.h"
#include "server/rpc/status.h"
#include "spdlog/spdlog.h"

namespace revkv::server {

namespace {

// The process's resident set in bytes (/proc/self/statm), or 0 if it cannot be read.
uint64_t ResidentBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long long size = 0;
  unsigned long long resident = 0;
  const int n = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  return n == 2 ? resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) : 0;
}

// etcd's authMaintenanceServer: Defragment, Snapshot, Hash and HashKV need the root role while auth is
// enabled (MoveLeader too, in revkv). OK or the refusal.
grpc::Status CheckAdmin(const grpc::ServerContextBase& context, ServerState* state) {
  absl::StatusOr<AuthInfo> who = Identify(context, state);
  if (!who.ok()) return ToGrpc(who.status());
  return ToGrpc(state->engine->store().VisibleAuth()->CheckAdmin(*who));
}

}  // namespace

grpc::Status MaintenanceService::HashKV(grpc::ServerContext* context,
                                        const etcdserverpb::HashKVRequest* request,
                                        etcdserverpb::HashKVResponse* response) {
  if (grpc::Status s = CheckAdmin(*context, state_); !s.ok()) return s;
  runtime::ThreadRegistration registration("maintenance");
  absl::StatusOr<StoreHash> hash = state_->engine->store().HashKV(request->revision());
  if (!hash.ok()) return ToGrpc(hash.status());
  state_->FillHeader(response->mutable_header());
  response->mutable_header()->set_revision(hash->header_revision);
  response->set_hash(hash->hash);
  response->set_compact_revision(hash->compact_revision);
  return grpc::Status::OK;
}

grpc::Status MaintenanceService::Hash(grpc::ServerContext* context, const etcdserverpb::HashRequest*,
                                      etcdserverpb::HashResponse* response) {
  if (grpc::Status s = CheckAdmin(*context, state_); !s.ok()) return s;
  runtime::ThreadRegistration registration("maintenance");
  absl::StatusOr<StoreHash> hash = state_->engine->store().Hash();
  if (!hash.ok()) return ToGrpc(hash.status());
  state_->FillHeader(response->mutable_header());
  response->mutable_header()->set_revision(hash->header_revision);
  response->set_hash(hash->hash);
  return grpc::Status::OK;
}

grpc::Status MaintenanceService::Defragment(grpc::ServerContext* context,
                                            const etcdserverpb::DefragmentRequest*,
                                            etcdserverpb::DefragmentResponse* response) {
  if (grpc::Status s = CheckAdmin(*context, state_); !s.ok()) return s;
  runtime::ThreadRegistration registration("maintenance");
  std::unique_lock<std::mutex> lock(defragment_mu_, std::try_to_lock);
  if (!lock.owns_lock()) {
    runtime::SafeRegion waiting;
    lock.lock();
  }
  spdlog::info("starting defragment");
  const auto start = std::chrono::steady_clock::now();
  const runtime::HeapUsage before = runtime::GetHeapUsage();
  const uint64_t rss_before = ResidentBytes();
  // A compacting major collection copies every live object out of its chunk (only pinned objects stay;
  // the collections the runtime starts by itself evacuate only sparse chunks), so afterwards the free
  // pages are whole; with retention off they all go back to the operating system at the end of the
  // collection. The configured retention applies again from the next one.
  const runtime::HeapOptions& configured = runtime::InitializeRuntime();
  runtime::SetPageRetention(0, false);
  runtime::CollectMajor(runtime::MajorMode::kCompactEverything);
  runtime::SetPageRetention(configured.retained_free_pages, state_->config->evacuation_reserve);
  // What the event history, responses and buffers freed lives in malloc's arenas: give it back too.
  {
    runtime::SafeRegion trimming;
    malloc_trim(0);
  }
  const runtime::HeapUsage after = runtime::GetHeapUsage();
  const uint64_t rss_after = ResidentBytes();
  const auto took =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  spdlog::info(
      "finished defragment in {} ms: heap in use {} -> {} KiB (committed {} -> {} KiB, retained {} -> {} "
      "KiB), "
      "resident {} -> {} KiB",
      took.count(), (before.old_bytes + before.large_bytes) >> 10,
      (after.old_bytes + after.large_bytes) >> 10, before.committed_bytes >> 10, after.committed_bytes >> 10,
      before.retained_bytes >> 10, after.retained_bytes >> 10, rss_before >> 10, rss_after >> 10);
  state_->FillHeader(response->mutable_header());
  response->mutable_header()->set_revision(state_->engine->store().VisibleRevision());
  return grpc::Status::OK;
}

grpc::Status MaintenanceService::Snapshot(grpc::ServerContext* context, const etcdserverpb::SnapshotRequest*,
                                          grpc::ServerWriter<etcdserverpb::SnapshotResponse>* writer) {
  if (grpc::Status s = CheckAdmin(*context, state_); !s.ok()) return s;
  absl::StatusOr<CheckpointInfo> image;
  {
    runtime::ThreadRegistration registration("snapshot");
    image = state_->engine->WriteSnapshotImage();
  }
  if (!image.ok()) {
    spdlog::error("snapshot failed: {}", image.status().ToString());
    return ToGrpc(image.status());
  }
  FileSystem* fs = DefaultFileSystem();
  struct RemoveImage {
    FileSystem* fs;
    std::string path;
    ~RemoveImage() { (void)fs->Remove(path); }
  } remove_image{fs, image->path};
  absl::StatusOr<std::unique_ptr<ReadableFile>> file = fs->OpenReadable(image->path);
  if (!file.ok()) return ToGrpc(file.status());
  const uint64_t total =
      SnapshotStreamBytes(image->bytes) - kSnapshotChecksumBytes;  // as etcd: not the checksum
  spdlog::info("sending a snapshot of revision {} to a client: {} bytes ({} keys)", image->revision, total,
               image->entry_count);
  const auto start = std::chrono::steady_clock::now();
  SnapshotHasher hasher;
  uint64_t sent = 0;
  etcdserverpb::SnapshotResponse response;
  auto send = [&](std::string_view blob) {
    hasher.Update(blob);
    sent += blob.size();
    response.set_remaining_bytes(total - sent);
    response.set_blob(std::string(blob));
    return writer->Write(response);
  };
  std::string buffer(32 * 1024, '\0');  // etcd's snapshotSendBufferSize
  for (uint64_t at = 0; at < image->bytes;) {
    if (context->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "snapshot canceled");
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buffer.size(), image->bytes - at));
    absl::StatusOr<size_t> got = (*file)->ReadAt(at, buffer.data(), want);
    if (!got.ok()) return ToGrpc(got.status());
    if (*got == 0) return grpc::Status(grpc::StatusCode::INTERNAL, "snapshot image ended early");
    if (!send(std::string_view(buffer.data(), *got))) {
      return grpc::Status(grpc::StatusCode::CANCELLED, "the client stopped reading the snapshot");
    }
    at += *got;
  }
  if (!send(SnapshotPaddingAndTrailer(image->bytes))) {
    return grpc::Status(grpc::StatusCode::CANCELLED, "the client stopped reading the snapshot");
  }
  // The SHA-256 of everything sent, in a last message of its own (etcd's layout).
  response.set_remaining_bytes(0);
  response.set_blob(hasher.Finish());
  if (!writer->Write(response)) return grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
  spdlog::info("sent the snapshot of revision {} ({} bytes) in {} ms", image->revision,
               total + kSnapshotChecksumBytes,
               std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start)
                   .count());
  return grpc::Status::OK;
}

grpc::Status MaintenanceService::MoveLeader(grpc::ServerContext* context,
                                            const etcdserverpb::MoveLeaderRequest* request,
                                            etcdserverpb::MoveLeaderResponse*) {
  if (grpc::Status s = CheckAdmin(*context, state_); !s.ok()) return s;
  // etcd: the transferee must be a member (ErrBadLeaderTransferee); leadership to the leader itself is
  // done at once, and etcd answers without a header.
  if (request->targetid() != state_->config->member_id) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "etcdserver: bad leader transferee");
  }
  return grpc::Status::OK;
}

}  // namespace revkv::server
