// The Watch service (watch_service.h).
#include "server/rpc/watch_service.h"

#include <mutex>

namespace revkv::server {

namespace {

using etcdserverpb::WatchRequest;
using etcdserverpb::WatchResponse;

// One Watch stream. Reads requests one at a time and hands them to the hub; writes the stream's queued
// responses one at a time. Finish is called once, when the call is canceled (the client went away, or
// the server shuts down) or a write fails, and only while no write is in flight; OnDone deletes it.
// Thread-safety: thread-safe (gRPC runs its reactions on its threads; the hub calls TryWrite, through
// the stream's on_ready, from the dispatcher or a request's thread).
class WatchReactor final : public grpc::ServerBidiReactor<WatchRequest, WatchResponse> {
 public:
  WatchReactor(ServerState* state, watch::WatchHub* hub) : state_(state), hub_(hub) {
    stream_ = hub_->OpenStream([this] { TryWrite(); });
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;  // the client closed its side (or the call ended): keep sending, as etcd does
    switch (request_.request_union_case()) {
      case WatchRequest::kCreateRequest:
        hub_->Create(stream_.get(), request_.create_request());
        break;
      case WatchRequest::kCancelRequest:
        hub_->Cancel(stream_.get(), request_.cancel_request().watch_id());
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
    StartRead(&request_);
  }

  void OnWriteDone(bool ok) override {
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
    if (resume_reading) StartRead(&request_);
    TryWrite();
  }

  void OnCancel() override {
    bool finish = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      finish_requested_ = true;
      if (!writing_) finish = TakeFinishLocked();
    }
    if (finish) FinishCanceled();
  }

  void OnDone() override {
    hub_->CloseStream(stream_.get());  // no TryWrite after this
    delete this;
  }

 private:
  static constexpr size_t kMaxQueuedBeforeReading = 256;

  // Starts writing the next queued response unless a write is in flight or the call is ending.
  void TryWrite() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (finish_requested_ || writing_) return;
      if (!stream_->Next(&out_)) return;
      writing_ = true;
    }
    state_->FillHeader(out_.mutable_header());
    StartWrite(&out_);
  }

  // True once, for the caller that must call FinishCanceled (with mu_ released).
  bool TakeFinishLocked() {
    if (finished_) return false;
    finished_ = true;
    return true;
  }

  // etcd ends a canceled stream with "etcdserver: watch canceled" (ErrGRPCWatchCanceled). Called with mu_
  // released: OnDone may follow at once and delete this reactor.
  void FinishCanceled() { Finish(grpc::Status(grpc::StatusCode::CANCELLED, "etcdserver: watch canceled")); }

  ServerState* state_;
  watch::WatchHub* hub_;
  std::shared_ptr<watch::WatchStream> stream_;
  WatchRequest request_;  // owned by the read in flight
  WatchResponse out_;     // owned by the write in flight
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
}

WatchService::~WatchService() { Stop(); }

void WatchService::Stop() { hub_->Stop(); }

grpc::ServerBidiReactor<WatchRequest, WatchResponse>* WatchService::Watch(
    grpc::CallbackServerContext* /*context*/) {
  return new WatchReactor(state_, hub_.get());
}

}  // namespace revkv::server
