// The gRPC port's listener: it binds at once (port 0 picks one; a busy port is refused with a clear
// message), closes connections while no server takes them, refuses them after Close, and hands the
// port from one gRPC server to the next without a moment in which calls fail for another reason: a
// client calling in a loop meets the first server's answer, then the second's, and nothing else.
#include "server/rpc/grpc_listener.h"

#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <thread>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "server/rpc/recovering_server.h"

namespace revkv::server {
namespace {

// Connects to 127.0.0.1:port; returns the socket or -1.
int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

grpc::Status Range(etcdserverpb::KV::Stub* kv) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  context.set_wait_for_ready(true);
  etcdserverpb::RangeRequest request;
  request.set_key("k");
  etcdserverpb::RangeResponse response;
  return kv->Range(&context, request, &response);
}

std::shared_ptr<grpc::Channel> Channel(int port) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 20);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 50);
  return grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials(),
                                   args);
}

TEST(GrpcListener, BindsAFreePortAndRefusesABusyOneClearly) {
  absl::StatusOr<std::unique_ptr<GrpcListener>> first = GrpcListener::Bind("127.0.0.1:0");
  ASSERT_TRUE(first.ok()) << first.status();
  const int port = (*first)->port();
  ASSERT_GT(port, 0);
  const std::string address = "127.0.0.1:" + std::to_string(port);
  absl::StatusOr<std::unique_ptr<GrpcListener>> second = GrpcListener::Bind(address);
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(absl::IsUnavailable(second.status()));
  EXPECT_EQ(second.status().message(), "cannot listen for gRPC on " + address + ": Address already in use");
  // The wildcard address conflicts with it too.
  EXPECT_FALSE(GrpcListener::Bind("0.0.0.0:" + std::to_string(port)).ok());
  EXPECT_FALSE(GrpcListener::Bind("no-such-host.invalid:0").ok());
}

TEST(GrpcListener, ClosesConnectionsNobodyTakesAndRefusesConnectionsAfterClose) {
  absl::StatusOr<std::unique_ptr<GrpcListener>> listener = GrpcListener::Bind("127.0.0.1:0");
  ASSERT_TRUE(listener.ok()) << listener.status();
  const int port = (*listener)->port();
  const int fd = Connect(port);
  ASSERT_GE(fd, 0);
  char byte;
  EXPECT_EQ(read(fd, &byte, 1), 0) << "accepted and closed: the client reads end-of-file";
  close(fd);
  (*listener)->Close();
  EXPECT_EQ(Connect(port), -1) << "refused once closed";
}

TEST(GrpcListener, HandsThePortFromOneServerToTheNextWithoutFailingACall) {
  absl::StatusOr<std::unique_ptr<GrpcListener>> listener = GrpcListener::Bind("127.0.0.1:0");
  ASSERT_TRUE(listener.ok()) << listener.status();
  TlsConfig plaintext;
  auto first = RecoveringServer::Start(plaintext, listener->get(), [] { return std::string("first"); });
  ASSERT_TRUE(first.ok()) << first.status();
  auto kv = etcdserverpb::KV::NewStub(Channel((*listener)->port()));
  const grpc::Status before = Range(kv.get());
  EXPECT_EQ(before.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(before.error_message(),
            "revkv-server is recovering its data (first); it serves once recovery ends: retry shortly");

  // Calls in a loop across the switch: every answer is one of the two servers' own.
  std::atomic<bool> stop{false};
  std::map<std::string, int> answers;
  std::thread caller([&] {
    while (!stop.load()) ++answers[Range(kv.get()).error_message()];
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto second = RecoveringServer::Start(plaintext, listener->get(), [] { return std::string("second"); });
  ASSERT_TRUE(second.ok()) << second.status();
  (*first)->Retire();  // its clients reconnect, to the second
  std::this_thread::sleep_for(RecoveringServer::kMaxConnectionAge * 2);
  stop = true;
  caller.join();
  int first_answers = 0, second_answers = 0;
  for (const auto& [message, count] : answers) {
    if (message.find("(first)") != std::string::npos) {
      first_answers += count;
    } else if (message.find("(second)") != std::string::npos) {
      second_answers += count;
    } else {
      ADD_FAILURE() << count << " call(s) answered \"" << message << "\"";
    }
  }
  EXPECT_GT(first_answers, 0);
  EXPECT_GT(second_answers, 0);
  first->reset();
  (*listener)->Close();
}

}  // namespace
}  // namespace revkv::server
