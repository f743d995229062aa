// The gRPC surface of a real revkv-server beyond the KV calls: grpc.health.v1.Health answers SERVING;
// server reflection lists every service and describes etcd's and revkv's; etcd's Watch, Lease, Lock and
// Election (on gRPC's callback API) are served beside the completion-queue services, and Auth on gRPC's
// synchronous threads; methods revkv does not implement answer UNIMPLEMENTED at once.
//
// Reflection: Debian ships neither grpc_cli nor the C++ reflection client
// (ProtoReflectionDescriptorDatabase), so the test speaks the reflection protocol itself through stubs
// generated from a wire-identical copy of reflection.proto (proto/grpc/reflection/v1alpha/).
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "google/protobuf/descriptor.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "tests/integration/etcd_calls.h"
#include "tests/integration/server_process.h"

namespace revkv::integration {
namespace {

using grpc::reflection::v1alpha::ServerReflection;
using grpc::reflection::v1alpha::ServerReflectionRequest;
using grpc::reflection::v1alpha::ServerReflectionResponse;

class Services : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start());
    channel_ = server_.NewChannel();
  }

  // Sends each request on one reflection stream and returns the answers, in order.
  std::vector<ServerReflectionResponse> Reflect(const std::vector<ServerReflectionRequest>& requests) {
    auto stub = ServerReflection::NewStub(channel_);
    auto context = ContextWithDeadline();
    auto stream = stub->ServerReflectionInfo(context.get());
    std::vector<ServerReflectionResponse> responses;
    for (const ServerReflectionRequest& request : requests) {
      ServerReflectionResponse response;
      if (!stream->Write(request) || !stream->Read(&response)) break;
      responses.push_back(response);
    }
    stream->WritesDone();
    EXPECT_TRUE(IsOk(stream->Finish()));
    EXPECT_EQ(responses.size(), requests.size());
    return responses;
  }

  // The file descriptor that defines `symbol`, as the server's reflection describes it.
  google::protobuf::FileDescriptorProto FileContaining(const std::string& symbol) {
    ServerReflectionRequest request;
    request.set_file_containing_symbol(symbol);
    std::vector<ServerReflectionResponse> responses = Reflect({request});
    google::protobuf::FileDescriptorProto file;
    if (responses.empty()) return file;
    const ServerReflectionResponse& r = responses[0];
    EXPECT_TRUE(r.has_file_descriptor_response()) << r.ShortDebugString();
    if (!r.has_file_descriptor_response() || r.file_descriptor_response().file_descriptor_proto_size() == 0) {
      return file;
    }
    // The first file is the one that defines the symbol; its dependencies follow.
    EXPECT_TRUE(file.ParseFromString(r.file_descriptor_response().file_descriptor_proto(0)));
    return file;
  }

  // Calls each method (a full path, "/package.Service/Method") with an empty request, all at once, with a
  // `timeout` deadline each; returns their statuses in order.
  std::vector<grpc::Status> CallEmpty(const std::vector<std::string>& methods, std::chrono::seconds timeout) {
    grpc::GenericStub stub(channel_);
    grpc::CompletionQueue cq;
    struct PendingCall {
      grpc::ClientContext context;
      grpc::ByteBuffer response;
      grpc::Status status;
      std::unique_ptr<grpc::ClientAsyncResponseReader<grpc::ByteBuffer>> reader;
    };
    std::vector<std::unique_ptr<PendingCall>> calls;
    grpc::Slice empty("");
    const grpc::ByteBuffer request(&empty, 1);
    for (const std::string& method : methods) {
      auto call = std::make_unique<PendingCall>();
      call->context.set_deadline(std::chrono::system_clock::now() + timeout);
      call->reader = stub.PrepareUnaryCall(&call->context, method, request, &cq);
      call->reader->StartCall();
      call->reader->Finish(&call->response, &call->status, call.get());
      calls.push_back(std::move(call));
    }
    for (size_t i = 0; i < calls.size(); ++i) {
      void* tag = nullptr;
      bool ok = false;
      EXPECT_TRUE(cq.Next(&tag, &ok));
    }
    cq.Shutdown();
    std::vector<grpc::Status> statuses;
    for (const auto& call : calls) statuses.push_back(call->status);
    return statuses;
  }

  ServerProcess server_;
  std::shared_ptr<grpc::Channel> channel_;
};

std::vector<std::string> MethodNames(const google::protobuf::FileDescriptorProto& file,
                                     const std::string& service) {
  std::vector<std::string> names;
  for (const auto& s : file.service()) {
    if (s.name() != service) continue;
    for (const auto& m : s.method()) names.push_back(m.name());
  }
  return names;
}

TEST_F(Services, HealthCheckAnswersServing) {
  auto health = grpc::health::v1::Health::NewStub(channel_);
  auto reply =
      Call(health.get(), &grpc::health::v1::Health::Stub::Check, grpc::health::v1::HealthCheckRequest());
  ASSERT_TRUE(IsOk(reply.status));
  EXPECT_EQ(reply.response.status(), grpc::health::v1::HealthCheckResponse::SERVING);
}

TEST_F(Services, ReflectionListsEveryServedService) {
  ServerReflectionRequest list;
  list.set_list_services("*");
  std::vector<ServerReflectionResponse> responses = Reflect({list});
  ASSERT_EQ(responses.size(), 1u);
  ASSERT_TRUE(responses[0].has_list_services_response()) << responses[0].ShortDebugString();
  std::vector<std::string> names;
  for (const auto& s : responses[0].list_services_response().service()) names.push_back(s.name());
  for (const char* expected :
       {"etcdserverpb.KV", "etcdserverpb.Watch", "etcdserverpb.Lease", "etcdserverpb.Maintenance",
        "etcdserverpb.Cluster", "etcdserverpb.Auth", "v3lockpb.Lock", "v3electionpb.Election", "revkv.v1.KV",
        "revkv.v1.Admin", "grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end())
        << expected << " is not listed; listed: " << ::testing::PrintToString(names);
  }
  for (const char* absent : {"etcdserverpb.NoSuchService"}) {
    EXPECT_EQ(std::find(names.begin(), names.end(), absent), names.end()) << absent << " is listed";
  }
}

TEST_F(Services, ReflectionDescribesEtcdAndRevkvServices) {
  const google::protobuf::FileDescriptorProto etcd = FileContaining("etcdserverpb.KV");
  EXPECT_EQ(etcd.name(), "etcdserverpb/rpc.proto");
  EXPECT_EQ(etcd.package(), "etcdserverpb");
  EXPECT_EQ(MethodNames(etcd, "KV"),
            (std::vector<std::string>{"Range", "Put", "DeleteRange", "Txn", "Compact"}));

  const google::protobuf::FileDescriptorProto admin = FileContaining("revkv.v1.Admin");
  EXPECT_EQ(admin.name(), "revkv/v1/admin.proto");
  EXPECT_EQ(MethodNames(admin, "Admin"),
            (std::vector<std::string>{"GetStats", "WatchGcEvents", "Collect", "Checkpoint", "ServerInfo"}));

  const google::protobuf::FileDescriptorProto pipeline = FileContaining("revkv.v1.KV");
  EXPECT_EQ(MethodNames(pipeline, "KV"), (std::vector<std::string>{"Pipeline", "PipelineBatch"}));

  ServerReflectionRequest unknown;
  unknown.set_file_containing_symbol("etcdserverpb.NoSuchService");
  std::vector<ServerReflectionResponse> responses = Reflect({unknown});
  ASSERT_EQ(responses.size(), 1u);
  ASSERT_TRUE(responses[0].has_error_response()) << responses[0].ShortDebugString();
  EXPECT_EQ(responses[0].error_response().error_code(), static_cast<int>(grpc::StatusCode::NOT_FOUND));
}

TEST_F(Services, UnknownMethodsAndServicesAnswerUnimplemented) {
  const std::vector<std::string> methods = {
      "/etcdserverpb.Lease/NoSuchMethod", "/etcdserverpb.Watch/NoSuchMethod",
      "/etcdserverpb.Auth/NoSuchMethod",  "/etcdserverpb.NoSuchService/Authenticate",
      "/etcdserverpb.KV/NoSuchMethod",    "/revkv.v1.Admin/NoSuchMethod",
      "/v3lockpb.Lock/NoSuchMethod",
  };
  const std::vector<grpc::Status> statuses = CallEmpty(methods, std::chrono::seconds(10));
  for (size_t i = 0; i < methods.size(); ++i) {
    EXPECT_EQ(statuses[i].error_code(), grpc::StatusCode::UNIMPLEMENTED)
        << methods[i] << ": " << StatusText(statuses[i]);
  }
  // The server is unaffected.
  auto kv = etcdserverpb::KV::NewStub(channel_);
  EXPECT_TRUE(IsOk(Call(kv.get(), &etcdserverpb::KV::Stub::Put, PutOf("k", "v")).status));
}

// gRPC's own answer for a method nobody serves is UNIMPLEMENTED with an empty message. revkv says what
// it does not implement (and why, where it can), and counts such calls by method: a declared method by
// its name, anything else as "other" (so invented names cannot grow the metric without bound).
TEST_F(Services, UnimplementedMethodsSayWhatRevkvDoesNotImplementAndAreCounted) {
  const std::vector<std::string> methods = {
      "/etcdserverpb.Cluster/MemberAdd",
      "/etcdserverpb.Cluster/MemberAdd",
      "/etcdserverpb.Cluster/MemberPromote",
      "/etcdserverpb.KV/NoSuchMethod",
      "/no.such.Service/Method",
  };
  const std::vector<grpc::Status> statuses = CallEmpty(methods, std::chrono::seconds(10));
  for (size_t i = 0; i < methods.size(); ++i) {
    EXPECT_EQ(statuses[i].error_code(), grpc::StatusCode::UNIMPLEMENTED) << methods[i];
  }
  EXPECT_EQ(statuses[0].error_message(),
            "revkv does not implement /etcdserverpb.Cluster/MemberAdd: revkv is a single-member store, its "
            "membership cannot change (see docs/migration-from-etcd.md)");
  EXPECT_EQ(
      statuses[2].error_message(),
      "revkv does not implement /etcdserverpb.Cluster/MemberPromote: revkv is a single-member store, its "
      "membership cannot change (see docs/migration-from-etcd.md)");
  EXPECT_EQ(statuses[3].error_message(),
            "unknown method /etcdserverpb.KV/NoSuchMethod: revkv serves etcd 3.4's v3 API and revkv.v1 (see "
            "docs/migration-from-etcd.md)");
  EXPECT_NE(statuses[4].error_message().find("unknown method /no.such.Service/Method"), std::string::npos);

  const HttpResponse metrics = HttpGet(server_.metrics_port(), "/metrics");
  ASSERT_EQ(metrics.status, 200) << metrics.error;
  for (const std::string sample :
       {"revkv_unimplemented_requests_total{method=\"/etcdserverpb.Cluster/MemberAdd\"} 2\n",
        "revkv_unimplemented_requests_total{method=\"/etcdserverpb.Cluster/MemberPromote\"} 1\n",
        "revkv_unimplemented_requests_total{method=\"other\"} 2\n"}) {
    EXPECT_NE(metrics.body.find(sample), std::string::npos) << sample << metrics.body;
  }
}

// Watch runs on gRPC's callback API, the other services on completion queues, in one grpc::Server: a
// watch stream sees a Put made through KV on the same channel, and KV keeps answering meanwhile.
TEST_F(Services, WatchIsServedBesideTheCompletionQueueServices) {
  auto watch = etcdserverpb::Watch::NewStub(channel_);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  auto stream = watch->Watch(&context);
  etcdserverpb::WatchRequest create;
  create.mutable_create_request()->set_key("watched");
  ASSERT_TRUE(stream->Write(create));
  etcdserverpb::WatchResponse response;
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_TRUE(response.created()) << response.ShortDebugString();
  auto kv = etcdserverpb::KV::NewStub(channel_);
  ASSERT_TRUE(IsOk(Call(kv.get(), &etcdserverpb::KV::Stub::Put, PutOf("watched", "v")).status));
  ASSERT_TRUE(stream->Read(&response));
  ASSERT_EQ(response.events_size(), 1) << response.ShortDebugString();
  EXPECT_EQ(response.events(0).kv().key(), "watched");
  EXPECT_EQ(response.events(0).kv().value(), "v");
  context.TryCancel();
}

// Cluster is served (MemberList); its other methods are declared in rpc.proto but not implemented (a
// single member has no membership to change). A client such as `etcdctl member add` must be told so at
// once, not left waiting for an answer that never comes.
TEST_F(Services, UnservedMethodsOfServedEtcdServicesAnswerUnimplemented) {
  const std::vector<std::string> methods = {
      "/etcdserverpb.Cluster/MemberAdd",
      "/etcdserverpb.Cluster/MemberRemove",
      "/etcdserverpb.Cluster/MemberUpdate",
      "/etcdserverpb.Cluster/MemberPromote",
  };
  const std::vector<grpc::Status> statuses = CallEmpty(methods, std::chrono::seconds(5));
  for (size_t i = 0; i < methods.size(); ++i) {
    EXPECT_EQ(statuses[i].error_code(), grpc::StatusCode::UNIMPLEMENTED)
        << methods[i] << ": " << StatusText(statuses[i]);
  }
}

}  // namespace
}  // namespace revkv::integration
