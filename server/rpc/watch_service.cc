// The Watch service (watch_service.h).
#include "server/rpc/watch_service.h"

#include <cstring>
#include <mutex>

#include "server/rpc/grpc_handoff.h"
#include "server/rpc/identity.h"
#include "server/store/errors.h"

namespace revkv::server {

namespace {

using etcdserverpb::WatchRequest;
using etcdserverpb::WatchResponse;

// One Watch stream. Reads requests one at a time and hands them to the hub; writes the stream's queued
// responses one at a time. Finish is called once, when the call is canceled (the client went away, or
// the server shuts down) or a write fails, and only while no write is in flight; OnDone deletes it.
// Thread-safety: thread-safe (gRPC runs its reactions on its threads; the hub calls TryWrite, through
// the stream's on_ready, from the dispatcher or a request's thread).
// etcd's cancel reason for a refused watch: the text of the gRPC error (etcd puts err.Error() there).
std::string CancelReason(const absl::Status& refusal) {
  if (refusal == errors::InvalidAuthToken())
    return "rpc error: code = Unauthenticated desc = etcdserver: invalid auth token";
  if (refusal == errors::UserEmpty())
    return "rpc error: code = InvalidArgument desc = etcdserver: user name is empty";
  return "rpc error: code = PermissionDenied desc = etcdserver: permission denied";
}

// Blocks at least this large go out by reference (a slice holding a reference to the shared block);
// smaller ones are copied into the response's own buffer. A referenced slice costs an allocation, an
// atomic reference count and one more iovec on the socket write: under fan-out (a few hundred bytes per
// revision, catch-up responses of hundreds of revisions) that cost more than the copy.
constexpr size_t kReferencedBlockBytes = 16 * 1024;

// The wire bytes of `out`: its meta (with the header filled in) and then its shared event blocks, in
// runs: consecutive small blocks copied into one slice, large ones referenced.
grpc::ByteBuffer Serialize(watch::Outgoing* out) {
  std::vector<grpc::Slice> slices;
  const size_t meta_bytes = out->meta.ByteSizeLong();
  size_t i = 0;
  bool first = true;
  while (first || i < out->events.size()) {
    // A run of small blocks (after the meta, for the first run) into one buffer.
    size_t run = first ? meta_bytes : 0;
    size_t end = i;
    while (end < out->events.size() && out->events[end]->size() < kReferencedBlockBytes)
      run += out->events[end++]->size();
    if (run > 0) {
      grpc::Slice slice(run);
      auto* p = const_cast<uint8_t*>(slice.begin());
      if (first) p = out->meta.SerializeWithCachedSizesToArray(p);
      for (; i < end; ++i) {
        std::memcpy(p, out->events[i]->data(), out->events[i]->size());
        p += out->events[i]->size();
      }
      slices.push_back(std::move(slice));
    }
    first = false;
    if (i < out->events.size()) {
      auto* hold = new std::shared_ptr<const std::string>(std::move(out->events[i++]));
      // gRPC releases the slice (and so the reference) from whichever thread drops it last; the block is
      // immutable and shared_ptr's count is atomic.
      slices.emplace_back(
          const_cast<char*>((*hold)->data()), (*hold)->size(),
          [](void* p) { delete static_cast<std::shared_ptr<const std::string>*>(p); }, hold);
    }
  }
  if (slices.empty()) slices.emplace_back();  // an empty response (every field default)
  return grpc::ByteBuffer(slices.data(), slices.size());
}

class WatchReactor final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>,
                           public WatchService::Checked {
 public:
  WatchReactor(ServerState* state, WatchService* service, grpc::CallbackServerContext* context)
      : state_(state),
        service_(service),
        hub_(&service->hub()),
        credentials_(CredentialsOf(*context, state)) {
    stream_ = hub_->OpenStream([this] { TryWrite(); });
    service_->Register(this);
    StartGrpcOperation(this, [this] { StartRead(&in_); });
  }

  // Checks every open watcher of the stream against the visible auth state (after an auth change).
  void Revalidate() override {
    const std::shared_ptr<const store::AuthView> view = state_->engine->store().VisibleAuth();
    if (!view->enabled()) return;  // nothing is protected: every open watcher stays
    const absl::StatusOr<AuthInfo> who = Identify(credentials_, state_);
    hub_->CancelRefused(
        stream_.get(),
        [&](const std::string& key, const std::string& range_end) -> std::optional<std::string> {
          if (!who.ok()) return CancelReason(who.status());
          absl::Status s = view->CheckRange(*who, key, range_end, /*write=*/false);
          if (s.ok()) return std::nullopt;
          return CancelReason(s);
        });
  }

  void OnReadDone(bool ok) override {
    GrpcReaction reaction(this);
    if (!ok) return;  // the client closed its side (or the call ended): keep sending, as etcd does
    WatchRequest request;
    // A request that does not parse ends reading, as a typed method's failed read does.
    if (!grpc::SerializationTraits<WatchRequest>::Deserialize(&in_, &request).ok()) return;
    switch (request.request_union_case()) {
      case WatchRequest::kCreateRequest:
        if (absl::Status refused = Permitted(request.create_request()); !refused.ok()) {
          hub_->Refuse(stream_.get(), CancelReason(refused));
        } else {
          hub_->Create(stream_.get(), request.create_request());
        }
        break;
      case WatchRequest::kCancelRequest:
        hub_->Cancel(stream_.get(), request.cancel_request().watch_id());
        break;
      case WatchRequest::kProgressRequest:
        hub_->Progress(stream_.get());
        break;
      default:
        break;  // etcd ignores an empty request
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (finish_requested_) return;
      // Control responses are always queued: stop reading requests while the client does not read
      // its responses, so the queue stays bounded (resumed by OnWriteDone).
      if (stream_->queued() >= kMaxQueuedBeforeReading) {
        read_paused_ = true;
        return;
      }
    }
    StartGrpcOperation(this, [this] { StartRead(&in_); });
  }

  void OnWriteDone(bool ok) override {
    GrpcReaction reaction(this);
    bool resume_reading = false;
    bool finish = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      writing_ = false;
      if (!ok) finish_requested_ = true;
      if (finish_requested_) {
        finish = TakeFinishLocked();
      } else if (read_paused_ && stream_->queued() < kMaxQueuedBeforeReading) {
        read_paused_ = false;
        resume_reading = true;
      }
    }
    if (finish) return FinishCanceled();  // the reactor may be gone once Finish is called
    stream_->WriteDone();
    if (resume_reading) StartGrpcOperation(this, [this] { StartRead(&in_); });
    TryWrite();
  }

  void OnCancel() override {
    GrpcReaction reaction(this);
    bool finish = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      finish_requested_ = true;
      if (!writing_) finish = TakeFinishLocked();
    }
    if (finish) FinishCanceled();
  }

  void OnDone() override {
    TakeBackFromGrpc(this);
    service_->Unregister(this);        // no Revalidate after this
    hub_->CloseStream(stream_.get());  // no TryWrite after this
    delete this;
  }

 private:
  // etcd's isWatchPermitted: read permission on the watched range for the stream's caller (its token as it
  // is now). etcd normalizes the range first (an empty key is "\0") and then checks a from-key watch as
  // the key alone; revkv checks the whole range [key, end of the key space) (docs/server.md).
  absl::Status Permitted(const etcdserverpb::WatchCreateRequest& r) {
    absl::StatusOr<AuthInfo> who = Identify(credentials_, state_);
    if (!who.ok()) return who.status();
    const std::string key = r.key().empty() ? std::string(1, '\0') : r.key();
    return state_->engine->store().VisibleAuth()->CheckRange(*who, key, r.range_end(), /*write=*/false);
  }

  static constexpr size_t kMaxQueuedBeforeReading = 256;

  // Starts writing the next queued response unless a write is in flight or the call is ending. When more
  // responses are queued behind it, it goes with gRPC's buffer hint: gRPC may keep it in the stream's
  // buffer and send it with the next one (the write completes at once all the same), so a burst, such
  // as one revision for a hundred watchers of the stream, leaves in a few socket writes rather than one
  // per response. The last response of a burst goes without the hint, which sends what is buffered;
  // a hinted response always has a successor, since only this reactor takes from the queue.
  void TryWrite() {
    bool more = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (finish_requested_ || writing_) return;
      if (!stream_->Next(&next_)) return;
      writing_ = true;
#ifndef REVKV_MUTATION_WATCH_NO_BUFFER_HINT  // mutation switch: every response is sent on its own
      more = stream_->queued() > 0;
#endif
    }
    state_->FillHeader(next_.meta.mutable_header());
    out_ = Serialize(&next_);
    next_ = watch::Outgoing();
    // Relaxed: counters for metrics, nothing published through them.
    state_->watch_writes.responses.fetch_add(1, std::memory_order_relaxed);
    grpc::WriteOptions options;
    if (more) {
      options.set_buffer_hint();
      state_->watch_writes.buffered.fetch_add(1, std::memory_order_relaxed);
    }
    StartGrpcOperation(this, [this, options] { StartWrite(&out_, options); });
  }

  // True once, for the caller that must call FinishCanceled (with mu_ released).
  bool TakeFinishLocked() {
    if (finished_) return false;
    finished_ = true;
    return true;
  }

  // etcd ends a canceled stream with "etcdserver: watch canceled" (ErrGRPCWatchCanceled). Called with mu_
  // released: OnDone may follow at once and delete this reactor.
  void FinishCanceled() {
    StartGrpcOperation(
        this, [this] { Finish(grpc::Status(grpc::StatusCode::CANCELLED, "etcdserver: watch canceled")); });
  }

  ServerState* state_;
  WatchService* service_;
  watch::WatchHub* hub_;
  const Credentials credentials_;  // what the stream's call presented (token or certificate name)
  std::shared_ptr<watch::WatchStream> stream_;
  grpc::ByteBuffer in_;   // owned by the read in flight
  watch::Outgoing next_;  // the response being serialized (by the thread that set writing_)
  grpc::ByteBuffer out_;  // owned by the write in flight
  std::mutex mu_;
  bool writing_ = false;           // under mu_: out_ is being written
  bool finish_requested_ = false;  // under mu_
  bool finished_ = false;          // under mu_
  bool read_paused_ = false;       // under mu_
};

}  // namespace

WatchService::WatchService(ServerState* state) : state_(state) {
  Store* store = &state->engine->store();
  watch::HubSource source;
  source.log = &store->events();
  source.visible_revision = [store] { return store->VisibleRevision(); };
  source.on_visible = [store](int64_t revision, std::function<void()> wake) {
    store->OnVisible(revision, std::move(wake));
  };
  watch::HubOptions options;
  // etcd splits fragmenting watchers' responses at max_request_bytes plus its gRPC overhead allowance
  // (512 KiB, the same slack the receive limit has).
  options.max_request_bytes = state->config->max_request_bytes + size_t{512} * 1024;
  options.progress_interval =
      std::chrono::milliseconds(absl::ToInt64Milliseconds(state->config->watch_progress_notify_interval));
  hub_ = std::make_unique<watch::WatchHub>(std::move(source), options);
  hub_->Start();
  revalidator_ = std::thread([this] { RevalidationLoop(); });
}

WatchService::~WatchService() { Stop(); }

void WatchService::Stop() {
  {
    std::lock_guard<std::mutex> lock(revalidate_mu_);
    stopping_ = true;
  }
  revalidate_cv_.notify_all();
  if (revalidator_.joinable()) revalidator_.join();
  hub_->Stop();
}

void WatchService::AuthChanged() {
  {
    std::lock_guard<std::mutex> lock(revalidate_mu_);
    revalidate_ = true;
  }
  revalidate_cv_.notify_one();
}

void WatchService::Register(Checked* stream) {
  std::lock_guard<std::mutex> lock(streams_mu_);
  streams_.insert(stream);
}

void WatchService::Unregister(Checked* stream) {
  std::lock_guard<std::mutex> lock(streams_mu_);
  streams_.erase(stream);
}

void WatchService::RevalidationLoop() {
  // Not registered with the runtime: revalidation reads the visible auth state and the token table
  // (plain memory) and calls into the hub, never the heap.
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(revalidate_mu_);
      revalidate_cv_.wait(lock, [this] { return revalidate_ || stopping_; });
      if (stopping_) return;
      revalidate_ = false;
    }
    std::lock_guard<std::mutex> lock(streams_mu_);
    for (Checked* stream : streams_) stream->Revalidate();
  }
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* WatchService::Watch(
    grpc::CallbackServerContext* context) {
  return new WatchReactor(state_, this, context);
}

}  // namespace revkv::server
