// Test support: child processes (revkv-bench, etcd), free loopback ports and temporary directories.
#ifndef REVKV_TESTS_CLIENTS_BENCH_PROCESS_H_
#define REVKV_TESTS_CLIENTS_BENCH_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/support/free_port.h"

namespace revkv::client::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction.
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

struct ProcessResult {
  int exit_code = -1;  // -1 when killed by a signal or the timeout
  bool timed_out = false;
  std::string out;
  std::string err;
};

// Runs `argv` to completion (killing it after `timeout`) and returns its exit code and output.
ProcessResult RunProcess(const std::vector<std::string>& argv, std::chrono::seconds timeout);

// A child process running in the background with stdout and stderr sent to `log_path`; stopped (SIGTERM,
// then SIGKILL after five seconds) on destruction.
class BackgroundProcess {
 public:
  BackgroundProcess(const std::vector<std::string>& argv, const std::string& log_path);
  ~BackgroundProcess();
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  bool started() const { return pid_ > 0; }
  bool Running();  // false once it has exited
  void Stop();
  std::string Log() const;

 private:
  pid_t pid_ = -1;
  std::string log_path_;
};

}  // namespace revkv::client::testing

#endif  // REVKV_TESTS_CLIENTS_BENCH_PROCESS_H_
