// Messages and counts for unimplemented methods (unimplemented_methods.h).
#include "server/rpc/unimplemented_methods.h"

#include <google/protobuf/descriptor.h>

#include "absl/strings/str_cat.h"
#include "server/rpc/grpc_handoff.h"

namespace revkv::server {
namespace {

// "/pkg.Service/Method" -> "pkg.Service.Method" as the descriptor pool names it; "" if malformed.
std::string FullMethodName(std::string_view method) {
  if (method.size() < 4 || method.front() != '/') return "";
  std::string name(method.substr(1));
  const size_t slash = name.find('/');
  if (slash == std::string::npos || name.find('/', slash + 1) != std::string::npos) return "";
  name[slash] = '.';
  return name;
}

bool Declared(std::string_view method) {
  const std::string name = FullMethodName(method);
  return !name.empty() &&
         google::protobuf::DescriptorPool::generated_pool()->FindMethodByName(name) != nullptr;
}

class Interceptor final : public grpc::experimental::Interceptor {
 public:
  // Made on one of gRPC's threads, run and destroyed on others, in gRPC's order (grpc_handoff.h).
  Interceptor(std::string method, CounterFamily* calls) : method_(std::move(method)), calls_(calls) {
    HandOverToGrpc(this);
  }
  ~Interceptor() override { TakeBackFromGrpc(this); }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    GrpcReaction reaction(this);
    if (methods->QueryInterceptionHookPoint(grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status status = methods->GetSendStatus();
      if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED && status.error_message().empty()) {
        methods->ModifySendStatus(
            grpc::Status(grpc::StatusCode::UNIMPLEMENTED, UnimplementedMessage(method_)));
        calls_->WithLabels({Declared(method_) ? std::string_view(method_) : std::string_view("other")})
            .Increment();
      }
    }
    methods->Proceed();
  }

 private:
  const std::string method_;
  CounterFamily* const calls_;
};

}  // namespace

std::string UnimplementedMessage(std::string_view method_view) {
  const std::string method(method_view);
  const std::string kGuide = "see docs/migration-from-etcd.md";
  if (!Declared(method)) {
    return absl::StrCat("unknown method ", method, ": revkv serves etcd 3.4's v3 API and revkv.v1 (", kGuide,
                        ")");
  }
  if (method.starts_with("/etcdserverpb.Cluster/Member")) {
    return absl::StrCat("revkv does not implement ", method,
                        ": revkv is a single-member store, its membership cannot change (", kGuide, ")");
  }
  return absl::StrCat("revkv does not implement ", method, " (", kGuide, ")");
}

UnimplementedMethods::UnimplementedMethods(MetricsRegistry* registry)
    : calls_(
          registry->AddCounterFamily("revkv_unimplemented_requests_total",
                                     "gRPC calls of methods revkv does not implement, by method (\"other\": "
                                     "a method no known .proto declares).",
                                     {"method"})) {
  // gRPC calls CreateServerInterceptor on its own threads, which may have been started before this
  // object (grpc_handoff.h: the order is gRPC's, invisible to ThreadSanitizer).
  HandOverToGrpc(this);
}

// gRPC destroys the factory with its server, after the last CreateServerInterceptor (gRPC's order).
UnimplementedMethods::~UnimplementedMethods() { TakeBackFromGrpc(this); }

grpc::experimental::Interceptor* UnimplementedMethods::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  TakeBackFromGrpc(this);
  CounterFamily* const calls = &calls_;
  HandOverToGrpc(this);  // for the next call, on any thread, and for the destructor
  const std::string_view method = info->method() != nullptr ? info->method() : "";
  // The hot methods, all served: no interceptor, no cost there.
  static constexpr std::string_view kServedHot[] = {
      "/etcdserverpb.KV/Range",       "/etcdserverpb.KV/Put",     "/etcdserverpb.KV/Txn",
      "/etcdserverpb.KV/DeleteRange", "/etcdserverpb.KV/Compact", "/revkv.v1.KV/Pipeline",
      "/revkv.v1.KV/PipelineBatch"};
  for (std::string_view served : kServedHot) {
    if (method == served) return nullptr;
  }
  return new Interceptor(std::string(method), calls);
}

}  // namespace revkv::server
