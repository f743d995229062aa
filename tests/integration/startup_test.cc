// A real revkv-server's log and signals as an operator meets them:
//  - with --log-format=json every line it writes (its own, gRPC's, the configuration dump) is one JSON
//    object, through a start, requests, a SIGHUP and a shutdown;
//  - SIGHUP neither kills nor disturbs a running server.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "tests/integration/etcd_calls.h"
#include "tests/integration/server_process.h"

namespace revkv::integration {
namespace {

using etcdserverpb::KV;

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// The server's own lines of its log (the fixture writes "==== start #n: ..." banners between starts).
std::vector<std::string> ServerLines(const std::string& log) {
  std::vector<std::string> lines;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with("==== start #")) lines.push_back(line);
  }
  return lines;
}

TEST(Startup, EveryLogLineIsOneJsonObject) {
  ServerOptions options;
  options.extra_flags = {"--log-format=json", "--log-level=debug"};
  // gRPC's own messages, plenty of them: each must come through the server's log in its format.
  options.env = {{"GRPC_VERBOSITY", "DEBUG"}, {"GRPC_TRACE", "api"}};
  ServerProcess server(options);
  ASSERT_TRUE(server.Start());
  auto kv = KV::NewStub(server.NewChannel());
  ASSERT_TRUE(IsOk(Call(kv.get(), &KV::Stub::Put, PutOf("k", "a \"quoted\"\nvalue")).status));
  ASSERT_TRUE(IsOk(Call(kv.get(), &KV::Stub::Range, RangeOf("k")).status));
  EXPECT_FALSE(Call(kv.get(), &KV::Stub::Put, PutOf("", "v")).status.ok());
  ASSERT_EQ(kill(server.pid(), SIGHUP), 0);
  ASSERT_TRUE(IsOk(Call(kv.get(), &KV::Stub::Put, PutOf("k2", "v")).status));
  ASSERT_TRUE(server.Stop());

  int grpc_lines = 0, config_lines = 0, lines = 0;
  bool sighup = false, bye = false;
  for (const std::string& line : ServerLines(server.Log())) {
    ++lines;
    nlohmann::json entry;
    try {
      entry = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      ADD_FAILURE() << "not JSON (" << e.what() << "): " << line;
      continue;
    }
    ASSERT_TRUE(entry.is_object()) << line;
    for (const char* field : {"time", "level", "logger", "msg"}) {
      ASSERT_TRUE(entry.contains(field) && entry[field].is_string())
          << "no string \"" << field << "\": " << line;
    }
    const std::string msg = entry["msg"];
    if (entry["logger"] == "grpc") ++grpc_lines;
    if (Contains(msg, "starting with") && Contains(msg, "max-heap")) ++config_lines;
    sighup = sighup || Contains(msg, "SIGHUP");
    bye = bye || Contains(msg, "bye");
  }
  EXPECT_GT(lines, 10);
  EXPECT_GT(grpc_lines, 0) << "gRPC's own messages did not reach the server's log";
  EXPECT_EQ(config_lines, 1) << "the configuration dump is one JSON line";
  EXPECT_TRUE(sighup);
  EXPECT_TRUE(bye);
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
