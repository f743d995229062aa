// A real revkv-server's signals as an operator meets them: SIGHUP neither kills nor disturbs a running
// server.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <string>
#include <thread>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "tests/integration/etcd_calls.h"
#include "tests/integration/server_process.h"

namespace revkv::integration {
namespace {

using etcdserverpb::KV;

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST(Signals, SighupNeitherKillsNorDisturbsTheServer) {
  ServerProcess server;
  ASSERT_TRUE(server.Start());
  auto kv = KV::NewStub(server.NewChannel());
  ASSERT_TRUE(IsOk(Call(kv.get(), &KV::Stub::Put, PutOf("before", "v")).status));
  for (int i = 0; i < 3; ++i) ASSERT_EQ(kill(server.pid(), SIGHUP), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_TRUE(server.Running());
  const Reply<etcdserverpb::PutResponse> after = Call(kv.get(), &KV::Stub::Put, PutOf("after", "v"));
  ASSERT_TRUE(IsOk(after.status));
  EXPECT_EQ(after.response.header().revision(), 3);
  EXPECT_TRUE(Contains(server.Log(), "SIGHUP: nothing to reload or reopen")) << server.Log();
  ASSERT_TRUE(server.Stop());  // and a clean shutdown afterwards (exit status 0)
}

}  // namespace
}  // namespace revkv::integration
