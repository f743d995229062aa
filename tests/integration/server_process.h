// Integration-test support: a real revkv-server (or, to check that an expectation is etcd's, a real
// etcd 3.4) as a child process on free loopback ports with a fresh data directory; command-line tools
// run to completion with their output captured; plain HTTP/1.1 GETs.
//
// A server is started with fork/exec, its stdout and stderr appended to `<temp dir>/server.log`; it is
// ready once its grpc.health.v1.Health service answers SERVING and (revkv) its ops endpoint answers. The
// child dies with the test process (PR_SET_PDEATHSIG) and is SIGKILLed by the destructor at the latest,
// so no test leaves a server behind. When the current test has failed, the destructor prints the
// server's log.
#pragma once

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "tests/support/free_port.h"

namespace revkv::integration {

// A fresh directory under $TMPDIR (or /tmp), or under `parent` when given, removed with its contents on
// destruction. Thread-safety: const-safe only.
class TempDir {
 public:
  explicit TempDir(const std::string& parent = "");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A loopback TCP port, free a moment ago and never given before in this process (free_port.h).
using ::revkv::test_support::FreePort;

// Which server a ServerProcess runs.
enum class Flavor {
  kRevkv,  // REVKV_SERVER_BINARY
  kEtcd,   // /usr/bin/etcd, the reference the etcd-semantics tests also run against
};
const char* FlavorName(Flavor flavor);
// True if the binary of `flavor` exists. etcd is optional: tests that need it go through
// REVKV_MISSING_TOOL (tests/support/external_tools.h), a skip or, under REVKV_REQUIRE_TOOLS=1, a failure.
bool FlavorAvailable(Flavor flavor);
// For gtest's messages about parameterized tests.
inline void PrintTo(Flavor flavor, std::ostream* out) { *out << FlavorName(flavor); }

struct ServerOptions {
  Flavor flavor = Flavor::kRevkv;
  std::vector<std::string> extra_flags;    // appended to the command line
  std::chrono::seconds start_timeout{30};  // until the health service answers SERVING
  std::chrono::seconds stop_timeout{20};   // from SIGTERM until the process has exited
  // How NewChannel (and so the readiness check) connects: plaintext when null. A server started with
  // TLS flags in extra_flags needs matching TLS credentials here.
  std::shared_ptr<grpc::ChannelCredentials> channel_credentials;
  std::map<std::string, std::string> env;  // added to (overriding) this process's environment
  // revkv: give the ports and data directory with etcd's flags (--listen-client-urls, ...) instead of
  // revkv's.
  bool etcd_flag_names = false;
  // revkv: the host the gRPC port listens on ("0.0.0.0" for every interface); clients still connect to
  // 127.0.0.1.
  std::string listen_host = "127.0.0.1";
};

// One server child process with its ports and data directory, which stay the same across restarts.
// Thread-safety: owner thread only (the channels it hands out are thread-safe).
class ServerProcess {
 public:
  explicit ServerProcess(ServerOptions options = {});
  // SIGKILLs the server if it still runs; fails the current test if revkv-server's log holds a
  // sanitizer report (tests/support/sanitizer_reports.h); prints the log if the test has failed.
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // Starts the server (again, with the same ports and data directory) and waits until it is ready.
  // Fails, with the log, if it exits or is not ready within start_timeout (it is then killed).
  ::testing::AssertionResult Start();
  // Starts the server without waiting for it to be ready: for tests that watch what it does while
  // starting. (It waits for a revkv server to have bound its ports, which it does before recovery.)
  // Then WaitReady() waits as Start does.
  ::testing::AssertionResult Spawn();
  ::testing::AssertionResult WaitReady();
  // SIGTERM; succeeds if the server exits with status 0 within stop_timeout (else it is killed). (etcd
  // re-raises SIGTERM after a clean shutdown: for etcd, that counts as a clean exit.)
  ::testing::AssertionResult Stop();
  // SIGKILL, and waits for the process to be gone.
  ::testing::AssertionResult Kill();
  // True while the child process has not exited.
  bool Running();
  pid_t pid() const { return pid_; }

  // "127.0.0.1:<port>" of the gRPC port.
  std::string address() const;
  int port() const { return port_; }
  int metrics_port() const { return metrics_port_; }
  // Absolute path of the data directory (created by the server).
  std::string data_dir() const { return dir_.path() + "/data"; }
  const std::string& log_path() const { return log_path_; }
  // The server's output so far, across restarts.
  std::string Log() const;
  // A new channel to the gRPC port that reconnects quickly (100 ms backoff), for use across restarts;
  // with options.channel_credentials, or `credentials` when given.
  std::shared_ptr<grpc::Channel> NewChannel(
      std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr) const;

 private:
  std::vector<std::string> CommandLine() const;
  // Waits for the child to exit; true with its wait status, false on timeout.
  bool WaitExit(std::chrono::milliseconds timeout, int* status);
  // One start, not waited for (Spawn: with new ports if the first one's were taken).
  ::testing::AssertionResult SpawnOnce();
  // Waits until the server started after `log_before` (bytes of its log) has bound its ports (false)
  // or has exited because a port was in use (true).
  bool PortTaken(size_t log_before);

  ServerOptions options_;
  TempDir dir_;
  std::string log_path_;
  int port_;
  int metrics_port_;
  int peer_port_;  // etcd only
  pid_t pid_ = -1;
  int starts_ = 0;
};

// Describes a wait status: "exited with status 3", "killed by signal 9 (Killed)".
std::string DescribeWaitStatus(int status);

// The outcome of RunCommand.
struct CommandResult {
  int exit_code = -1;  // -1 if killed by a signal or the timeout
  bool timed_out = false;
  std::string out;
  std::string err;
  // For failure messages: the exit code and both outputs.
  std::string Describe() const;
};

// Runs `argv` (argv[0] is a path) with `stdin_text` on its standard input and `env` added to the
// environment, to completion or until `timeout` (then SIGKILL). Blocks.
CommandResult RunCommand(const std::vector<std::string>& argv, const std::string& stdin_text = "",
                         const std::map<std::string, std::string>& env = {},
                         std::chrono::seconds timeout = std::chrono::seconds(60));

// An HTTP/1.1 response.
struct HttpResponse {
  int status = 0;                              // 0 if the request failed (see `error`)
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string error;
  // The value of header `lower_case_name`, or "" if absent.
  std::string Header(const std::string& lower_case_name) const {
    auto it = headers.find(lower_case_name);
    return it == headers.end() ? "" : it->second;
  }
};

// GET http://127.0.0.1:<port><target> with "Connection: close"; reads until the server closes.
HttpResponse HttpGet(int port, const std::string& target);

}  // namespace revkv::integration
