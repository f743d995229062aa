// A blocking etcd Watch stream for integration tests.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>

#include "etcdserverpb/rpc.grpc.pb.h"

namespace revkv::integration {

// One Watch stream with a deadline. Thread-safety: one reader thread and one writer thread at most.
class WatchClient {
 public:
  explicit WatchClient(const std::shared_ptr<grpc::Channel>& channel,
                       std::chrono::seconds deadline = std::chrono::seconds(120))
      : stub_(etcdserverpb::Watch::NewStub(channel)) {
    context_.set_deadline(std::chrono::system_clock::now() + deadline);
    stream_ = stub_->Watch(&context_);
  }
  ~WatchClient() {
    context_.TryCancel();
    stream_->Finish();
  }

  bool Create(const etcdserverpb::WatchCreateRequest& create) {
    etcdserverpb::WatchRequest r;
    *r.mutable_create_request() = create;
    return stream_->Write(r);
  }
  bool Create(const std::string& key, const std::string& range_end = "", int64_t start_revision = 0) {
    etcdserverpb::WatchCreateRequest c;
    c.set_key(key);
    c.set_range_end(range_end);
    c.set_start_revision(start_revision);
    return Create(c);
  }
  bool Cancel(int64_t id) {
    etcdserverpb::WatchRequest r;
    r.mutable_cancel_request()->set_watch_id(id);
    return stream_->Write(r);
  }
  bool RequestProgress() {
    etcdserverpb::WatchRequest r;
    r.mutable_progress_request();
    return stream_->Write(r);
  }
  // Blocks until a response arrives; false once the stream has ended (or the deadline passed).
  bool Read(etcdserverpb::WatchResponse* out) { return stream_->Read(out); }
  void Cancel() { context_.TryCancel(); }

 private:
  std::unique_ptr<etcdserverpb::Watch::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<etcdserverpb::WatchRequest, etcdserverpb::WatchResponse>> stream_;
};

}  // namespace revkv::integration
