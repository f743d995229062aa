// Calls of methods revkv does not serve: gRPC answers them UNIMPLEMENTED with an empty message, which
// tells a user nothing. This interceptor gives every such answer a message saying what revkv does not
// implement and where to read about it, and counts the calls in
// revkv_unimplemented_requests_total{method} (the method when a linked .proto declares it, "other"
// otherwise, so a client inventing names cannot grow the metric without bound).
//
// It sees the status a call ends with (PRE_SEND_STATUS) and changes only UNIMPLEMENTED with no message:
// a served method's own UNIMPLEMENTED answer keeps its message. Calls of the hot, served methods
// (etcdserverpb.KV's, revkv.v1.KV/Pipeline and PipelineBatch) get no interceptor at all.
//
// Thread-safety: thread-safe (gRPC creates an interceptor per call, on its threads).
#pragma once

#include <grpcpp/support/server_interceptor.h>

#include <string>
#include <string_view>

#include "server/ops/metrics.h"

namespace revkv::server {

// The message an unimplemented call is answered with: "revkv does not implement
// /etcdserverpb.Auth/UserAdd (...)". `method` is gRPC's "/package.Service/Method".
std::string UnimplementedMessage(std::string_view method);

class UnimplementedMethods final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  // Registers revkv_unimplemented_requests_total in `registry` (which must outlive this).
  explicit UnimplementedMethods(MetricsRegistry* registry);
  ~UnimplementedMethods() override;

  grpc::experimental::Interceptor* CreateServerInterceptor(grpc::experimental::ServerRpcInfo* info) override;

 private:
  CounterFamily& calls_;
};

}  // namespace revkv::server
