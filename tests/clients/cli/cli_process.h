// Test support for the revkv end-to-end tests: a revkv-server child process on free loopback ports with
// a fresh data directory, and runs of the revkv binary with their output captured, either on pipes or
// on a pseudo-terminal (which is what decides between gc watch's plain lines and its live view).
//
// Children are started with fork/exec, die with the test process (PR_SET_PDEATHSIG), and a server is
// stopped by its destructor at the latest (SIGTERM, then SIGKILL), so no test leaves one behind.
#ifndef REVKV_TESTS_CLIENTS_CLI_CLI_PROCESS_H_
#define REVKV_TESTS_CLIENTS_CLI_CLI_PROCESS_H_

#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/support/free_port.h"

namespace revkv::client::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction. Const-safe only.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A loopback TCP port, free a moment ago and never given before in this process (free_port.h).
using ::revkv::test_support::FreePort;

// Where a command's standard streams go.
enum class Attach {
  kPipes,  // stdin from the given text, stdout and stderr on two pipes
  kPty,    // stdin, stdout and stderr on one pseudo-terminal, the child's controlling terminal
};

struct CommandResult {
  int exit_code = -1;  // -1 if killed by a signal or the timeout
  bool timed_out = false;
  std::string out;  // with kPty: everything the command wrote
  std::string err;  // with kPty: empty
  // For failure messages: the exit status and both outputs.
  std::string Describe() const;
};

// Runs `argv` (argv[0] a path) to completion, or until `timeout` (then SIGKILL). `stdin_text` is its
// standard input with kPipes (ignored with kPty). Blocks.
CommandResult RunCommand(const std::vector<std::string>& argv, const std::string& stdin_text = "",
                         Attach attach = Attach::kPipes,
                         std::chrono::seconds timeout = std::chrono::seconds(60));

// One revkv-server child process (REVKV_SERVER_BINARY) with its own ports and data directory. Owner
// thread only.
class TestServer {
 public:
  TestServer();
  // Stops the server if it runs; fails the current test if the server's log holds a sanitizer report
  // (tests/support/sanitizer_reports.h); prints the log if the test has failed.
  ~TestServer();
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;

  // Starts the server and waits (up to 30 s) until Maintenance/Status answers. Fails, with the log, if
  // it exits or is not ready in time (it is then killed).
  ::testing::AssertionResult Start();
  // SIGTERM, then SIGKILL after 10 s; waits until the process is gone.
  void Stop();

  // "127.0.0.1:<port>" of the gRPC port.
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  // Absolute path of the data directory (created by the server).
  std::string data_dir() const { return dir_.path() + "/data"; }
  // A directory the test may use; removed with the data directory.
  const std::string& scratch_dir() const { return dir_.path(); }
  // The server's output so far.
  std::string Log() const;

 private:
  TempDir dir_;
  std::string log_path_;
  int port_;
  int metrics_port_;
  pid_t pid_ = -1;
};

}  // namespace revkv::client::testing

#endif  // REVKV_TESTS_CLIENTS_CLI_CLI_PROCESS_H_
