// A real revkv-server's start, signals and log as an operator meets them:
//  - with --log-format=json every line it writes (its own, gRPC's, the configuration dump) is one JSON
//    object, through a start, requests, a SIGHUP and a shutdown;
//  - both ports answer while a big store is recovered: /healthz 503 with the progress, gRPC UNAVAILABLE
//    saying it is recovering, /metrics up with revkv_recovering 1; systemd hears STATUS= and
//    EXTEND_TIMEOUT_USEC= during recovery, READY=1 after it and STOPPING=1 at SIGTERM;
//  - SIGTERM during recovery ends the process at once, and the next start recovers everything;
//  - SIGHUP neither kills nor disturbs a running server.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "server/checkpoint/checkpoint.h"
#include "server/wal/file_system.h"
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

// A data directory holding one checkpoint of `entries` keys (written directly with the production
// writer: fast, and no runtime in this process), so that the server's recovery takes a while.
constexpr int64_t kBigStoreEntries = 1'500'000;
constexpr int64_t kBigStoreRevision = kBigStoreEntries / 100 + 1;

std::string KeyOf(int64_t i) {
  std::string digits = std::to_string(i);
  return "key-" + std::string(12 - digits.size(), '0') + digits;
}

void WriteBigStore(const std::string& data_dir) {
  auto writer = server::CheckpointWriter::Open(server::DefaultFileSystem(), data_dir + "/checkpoints",
                                               kBigStoreRevision, 0);
  ASSERT_TRUE(writer.ok()) << writer.status();
  for (int64_t i = 0; i < kBigStoreEntries; ++i) {
    const std::string key = KeyOf(i);
    const int64_t revision = i / 100 + 2;
    ASSERT_TRUE(
        (*writer)->Add(server::CheckpointEntry{key, "v" + std::to_string(i), revision, revision, 1, 0}).ok());
  }
  auto info = (*writer)->Finish();
  ASSERT_TRUE(info.ok()) << info.status();
}

// A datagram socket standing in for systemd's notification socket: collects what the server sends.
class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path) : path_(path) {
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
    bound_ = fd_ >= 0 && bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    timeval timeout{0, 100000};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    reader_ = std::thread([this] {
      char buffer[4096];
      while (!stop_.load()) {
        const ssize_t n = recv(fd_, buffer, sizeof(buffer), 0);
        if (n <= 0) continue;
        std::lock_guard<std::mutex> lock(mu_);
        messages_.emplace_back(buffer, static_cast<size_t>(n));
      }
    });
  }
  ~NotifySocket() {
    stop_ = true;
    reader_.join();
    close(fd_);
    unlink(path_.c_str());
  }
  bool bound() const { return bound_; }
  std::vector<std::string> messages() {
    std::lock_guard<std::mutex> lock(mu_);
    return messages_;
  }
  // The index of the first message containing `text` at or after `from`; -1 if none.
  int Find(const std::string& text, int from = 0) {
    const std::vector<std::string> all = messages();
    for (int i = from; i < static_cast<int>(all.size()); ++i) {
      if (Contains(all[static_cast<size_t>(i)], text)) return i;
    }
    return -1;
  }

 private:
  const std::string path_;
  int fd_ = -1;
  bool bound_ = false;
  std::atomic<bool> stop_{false};
  std::thread reader_;
  std::mutex mu_;
  std::vector<std::string> messages_;
};

std::string AllMessages(NotifySocket& socket) {
  std::string text;
  for (const std::string& m : socket.messages()) text += "[" + m + "]\n";
  return text;
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

TEST(Startup, BothPortsAnswerWhileABigStoreRecoversAndSystemdHearsOfIt) {
  TempDir socket_dir;
  NotifySocket notify(socket_dir.path() + "/notify");
  ASSERT_TRUE(notify.bound());
  ServerOptions options;
  options.env = {{"NOTIFY_SOCKET", socket_dir.path() + "/notify"}};
  options.start_timeout = std::chrono::seconds(120);
  options.extra_flags = {"--max-heap=2GiB"};
  ServerProcess server(options);
  WriteBigStore(server.data_dir());
  ASSERT_TRUE(server.Spawn());

  auto kv = KV::NewStub(server.NewChannel());
  std::string healthz_bodies, unavailable_message, metrics_while_recovering;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline && server.Running()) {
    const HttpResponse health = HttpGet(server.metrics_port(), "/healthz");
    if (health.status == 200) break;
    if (health.status == 503 && !Contains(healthz_bodies, health.body)) healthz_bodies += health.body;
    if (health.status == 503 && !Contains(unavailable_message, "recovering")) {
      auto context = ContextWithDeadline(std::chrono::seconds(5));
      etcdserverpb::RangeResponse response;
      const grpc::Status s = kv->Range(context.get(), RangeOf("key-000000000001"), &response);
      unavailable_message = StatusText(s);
    }
    if (health.status == 503 && metrics_while_recovering.empty()) {
      metrics_while_recovering = HttpGet(server.metrics_port(), "/metrics").body;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(server.WaitReady());

  EXPECT_TRUE(Contains(healthz_bodies, "recovering: loading checkpoint checkpoint-")) << healthz_bodies;
  EXPECT_TRUE(Contains(healthz_bodies, " of 1500000 entries (")) << healthz_bodies;
  EXPECT_TRUE(Contains(unavailable_message, "14 \"revkv-server is recovering its data ("))
      << unavailable_message;
  EXPECT_TRUE(Contains(metrics_while_recovering, "\nrevkv_recovering 1\n")) << metrics_while_recovering;
  EXPECT_TRUE(Contains(metrics_while_recovering, "revkv_recovery_progress_ratio"));

  // Recovered: everything is there and served.
  const Reply<etcdserverpb::RangeResponse> last =
      Call(kv.get(), &KV::Stub::Range, RangeOf(KeyOf(kBigStoreEntries - 1)));
  ASSERT_TRUE(IsOk(last.status));
  ASSERT_EQ(last.response.kvs_size(), 1);
  EXPECT_EQ(HttpGet(server.metrics_port(), "/healthz").status, 200);
  EXPECT_TRUE(Contains(HttpGet(server.metrics_port(), "/metrics").body, "\nrevkv_recovering 0\n"));
  EXPECT_TRUE(Contains(server.Log(), "recovery: loading checkpoint checkpoint-"))
      << "no progress line in the log";

  // systemd: progress while recovering (extending the start timeout), then READY=1; STOPPING=1 at SIGTERM.
  const int extend = notify.Find("EXTEND_TIMEOUT_USEC=");
  // READY=1 follows gRPC's SERVING by a moment (the recovering server lets its clients go first).
  const auto ready_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (notify.Find("READY=1") < 0 && std::chrono::steady_clock::now() < ready_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const int ready = notify.Find("READY=1");
  EXPECT_GE(extend, 0) << AllMessages(notify);
  EXPECT_GE(ready, 0) << AllMessages(notify);
  EXPECT_LT(extend, ready) << AllMessages(notify);
  EXPECT_GE(notify.Find("STATUS=recovering: "), 0) << AllMessages(notify);
  EXPECT_TRUE(Contains(notify.messages()[static_cast<size_t>(ready)], "STATUS=serving on "))
      << AllMessages(notify);
  ASSERT_TRUE(server.Stop());
  EXPECT_GT(notify.Find("STOPPING=1", ready), ready) << AllMessages(notify);
}

TEST(Startup, SigtermDuringRecoveryEndsTheProcessAtOnceAndLosesNothing) {
  ServerOptions options;
  options.start_timeout = std::chrono::seconds(120);
  ServerProcess server(options);
  WriteBigStore(server.data_dir());
  ASSERT_TRUE(server.Spawn());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  int status = 0;
  while ((status = HttpGet(server.metrics_port(), "/healthz").status) != 503 &&
         std::chrono::steady_clock::now() < deadline) {
    ASSERT_NE(status, 200) << "recovery ended before the test could interrupt it";
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(status, 503);
  const auto sent = std::chrono::steady_clock::now();
  ASSERT_TRUE(server.Stop());  // SIGTERM, and exit status 0
  EXPECT_LT(std::chrono::steady_clock::now() - sent, std::chrono::seconds(3));
  EXPECT_TRUE(Contains(server.Log(), "SIGTERM during recovery")) << server.Log();

  ASSERT_TRUE(server.Start());
  auto kv = KV::NewStub(server.NewChannel());
  etcdserverpb::RangeRequest all = RangeOf("key-");
  all.set_range_end("key.");
  all.set_count_only(true);
  const Reply<etcdserverpb::RangeResponse> counted = Call(kv.get(), &KV::Stub::Range, all);
  ASSERT_TRUE(IsOk(counted.status));
  EXPECT_EQ(counted.response.count(), kBigStoreEntries);
  EXPECT_EQ(counted.response.header().revision(), kBigStoreRevision);
}

// A configuration error is reported in the log format asked for: with --log-format=json (on the command
// line, in REVKV_LOG_FORMAT or in the --config file) the message naming the bad flag is one JSON object
// too, and the exit status stays 2.
TEST(Startup, AConfigurationErrorIsOneJsonLineWhenJsonWasAskedFor) {
  TempDir dir;
  const std::string toml = dir.path() + "/revkv.toml";
  std::ofstream(toml) << "log_format = \"json\"\n";
  struct Case {
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    std::string named;  // what the message must name
  };
  const std::vector<Case> cases = {
      {{"--log-format=json", "--max-heap=lots"}, {}, "--max-heap"},
      {{"--log-format", "json", "--no-such-flag"}, {}, "--no-such-flag"},
      {{"--max-heap=lots"}, {{"REVKV_LOG_FORMAT", "json"}}, "--max-heap"},
      {{"--config", toml, "--max-heap=lots"}, {}, "--max-heap"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv = {REVKV_SERVER_BINARY, "--data-dir=" + dir.path() + "/data"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    const CommandResult r = RunCommand(argv, "", c.env, std::chrono::seconds(30));
    SCOPED_TRACE(::testing::PrintToString(c.args));
    EXPECT_EQ(r.exit_code, 2) << r.Describe();
    int lines = 0;
    bool named = false;
    for (const std::string& line : ServerLines(r.err)) {
      ++lines;
      const nlohmann::json entry = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (!entry.is_object() || !entry.contains("msg") || !entry["msg"].is_string()) {
        ADD_FAILURE() << "not a JSON log line: " << line;
        continue;
      }
      EXPECT_EQ(entry.value("level", ""), "error") << line;
      named = named || Contains(entry["msg"].get<std::string>(), c.named);
    }
    EXPECT_GE(lines, 1) << r.Describe();
    EXPECT_TRUE(named) << r.Describe();
  }
}

// With --log-level=fatal (etcd's most severe level) the server logs nothing while it runs well, and the
// reason it stops on a start-up failure still reaches the log.
TEST(Startup, AtTheFatalLevelTheReasonForStoppingIsStillLogged) {
  TempDir dir;
  const std::string not_a_directory = dir.path() + "/file";
  std::ofstream(not_a_directory) << "not a data directory\n";
  const CommandResult r =
      RunCommand({REVKV_SERVER_BINARY, "--data-dir=" + not_a_directory, "--listen=127.0.0.1:0",
                  "--metrics-listen=", "--log-format=json", "--log-level=fatal"},
                 "", {}, std::chrono::seconds(30));
  EXPECT_EQ(r.exit_code, 1) << r.Describe();
  const std::vector<std::string> lines = ServerLines(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.Describe();
  const nlohmann::json entry = nlohmann::json::parse(lines[0], nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(entry.is_object()) << lines[0];
  EXPECT_EQ(entry.value("level", ""), "critical") << lines[0];
  EXPECT_TRUE(Contains(entry.value("msg", ""), not_a_directory)) << lines[0];
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

// The test harness itself: a port FreePort picked can be taken before the server binds it (another
// test's server, an outgoing connection). A first start that fails for that is retried on new ports.
// A socket listening on `port` (of 127.0.0.1), or -1.
int TakePort(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 || listen(fd, 1) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

TEST(ServerProcessHarness, AFirstStartWhosePortWasTakenMeanwhileGetsNewPorts) {
  ServerProcess server;
  const int taken = server.metrics_port();
  const int fd = TakePort(taken);
  ASSERT_GE(fd, 0);
  EXPECT_TRUE(server.Start());
  EXPECT_NE(server.metrics_port(), taken);
  EXPECT_NE(server.Log().find("Address already in use"), std::string::npos) << server.Log();
  close(fd);
}

// The same for a start the test does not wait for (Spawn), as the tests that interrupt recovery use.
TEST(ServerProcessHarness, ASpawnWhosePortWasTakenMeanwhileGetsNewPorts) {
  ServerProcess server;
  const int taken = server.port();
  const int fd = TakePort(taken);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(server.Spawn());
  EXPECT_NE(server.port(), taken);
  EXPECT_TRUE(server.WaitReady());
  EXPECT_NE(server.Log().find("Address already in use"), std::string::npos) << server.Log();
  close(fd);
}

}  // namespace
}  // namespace revkv::integration
