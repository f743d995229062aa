// Child processes for the revkv end-to-end tests (cli_process.h).
#include "tests/clients/cli/cli_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "tests/support/sanitizer_reports.h"

extern char** environ;

namespace revkv::client::testing {
namespace {

using Clock = std::chrono::steady_clock;

// The three descriptors a child gets as 0, 1 and 2, and whether it gets a controlling terminal.
struct ChildStreams {
  int in;
  int out;
  int err;
  bool terminal;
};

// Forks and execs argv[0]. The child gets SIGKILL when the test process dies, `streams` as its standard
// streams, and no other descriptor of ours (they are all close-on-exec). Returns the pid, or -1.
pid_t ForkExec(const std::vector<std::string>& argv, const ChildStreams& streams) {
  // argv as execve wants it, built before fork: the child may only make async-signal-safe calls.
  std::vector<std::string> args = argv;
  std::vector<char*> pointers;
  for (std::string& a : args) pointers.push_back(a.data());
  pointers.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid != 0) return pid;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // the parent died before prctl
  if (streams.terminal) {
    setsid();
    ioctl(streams.out, TIOCSCTTY, 0);
  }
  if (dup2(streams.in, 0) < 0 || dup2(streams.out, 1) < 0 || dup2(streams.err, 2) < 0) _exit(127);
  execve(pointers[0], pointers.data(), environ);
  _exit(127);
}

// Waits up to `timeout` for `pid` to exit: true with its wait status in *status.
bool WaitForExit(pid_t pid, std::chrono::milliseconds timeout, int* status) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    const pid_t done = waitpid(pid, status, WNOHANG);
    if (done == pid || (done < 0 && errno != EINTR)) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// Reads `fds` until each reports end of file (for a pseudo-terminal's master side: EIO, once the child
// has closed the slave) or until `deadline`; false on timeout.
bool ReadUntilClosed(std::vector<std::pair<int, std::string*>> fds, Clock::time_point deadline) {
  char buffer[4096];
  while (!fds.empty()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    std::vector<pollfd> polls;
    for (const auto& [fd, out] : fds) polls.push_back(pollfd{.fd = fd, .events = POLLIN, .revents = 0});
    const int ready = poll(polls.data(), polls.size(), static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    for (size_t i = polls.size(); i-- > 0;) {
      if (polls[i].revents == 0) continue;
      const ssize_t n = read(fds[i].first, buffer, sizeof(buffer));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        fds.erase(fds.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        fds[i].second->append(buffer, static_cast<size_t>(n));
      }
    }
  }
  return true;
}

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string DescribeWaitStatus(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "wait status " + std::to_string(status);
}

}  // namespace

// ----- TempDir, FreePort -----

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern =
      std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/revkv-cli-test-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    std::perror("mkdtemp");
    std::abort();
  }
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

// ----- RunCommand -----

std::string CommandResult::Describe() const {
  std::ostringstream s;
  s << (timed_out ? "timed out" : "exit status " + std::to_string(exit_code)) << "\n--- stdout ---\n"
    << out << "\n--- stderr ---\n"
    << err << "\n";
  return s.str();
}

CommandResult RunCommand(const std::vector<std::string>& argv, const std::string& stdin_text, Attach attach,
                         std::chrono::seconds timeout) {
  CommandResult result;
  int parent_ends[2] = {-1, -1};  // stdout, stderr (kPty: the master side, and none)
  ChildStreams streams{};
  std::vector<int> child_ends;
  if (attach == Attach::kPipes) {
    // Standard input from a memory file: nothing to pump while the child runs.
    const int in = memfd_create("stdin", MFD_CLOEXEC);
    int out[2];
    int err[2];
    if (in < 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
      result.err = std::string("memfd_create/pipe2: ") + std::strerror(errno);
      return result;
    }
    (void)!write(in, stdin_text.data(), stdin_text.size());
    lseek(in, 0, SEEK_SET);
    streams = {.in = in, .out = out[1], .err = err[1], .terminal = false};
    parent_ends[0] = out[0];
    parent_ends[1] = err[0];
    child_ends = {in, out[1], err[1]};
  } else {
    int master = -1;
    int slave = -1;
    winsize size{.ws_row = 40, .ws_col = 100, .ws_xpixel = 0, .ws_ypixel = 0};
    if (openpty(&master, &slave, nullptr, nullptr, &size) != 0) {
      result.err = std::string("openpty: ") + std::strerror(errno);
      return result;
    }
    fcntl(master, F_SETFD, FD_CLOEXEC);
    fcntl(slave, F_SETFD, FD_CLOEXEC);
    streams = {.in = slave, .out = slave, .err = slave, .terminal = true};
    parent_ends[0] = master;
    child_ends = {slave};
  }
  const pid_t pid = ForkExec(argv, streams);
  for (int fd : child_ends) close(fd);
  if (pid < 0) {
    result.err = std::string("fork: ") + std::strerror(errno);
  } else {
    std::vector<std::pair<int, std::string*>> reads = {{parent_ends[0], &result.out}};
    if (parent_ends[1] >= 0) reads.emplace_back(parent_ends[1], &result.err);
    const bool finished = ReadUntilClosed(reads, Clock::now() + timeout);
    int status = 0;
    if (!finished || !WaitForExit(pid, std::chrono::seconds(10), &status)) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      result.timed_out = true;
    } else if (WIFEXITED(status)) {
      result.exit_code = WEXITSTATUS(status);
    }
  }
  for (int fd : parent_ends) {
    if (fd >= 0) close(fd);
  }
  return result;
}

// ----- TestServer -----

TestServer::TestServer()
    : log_path_(dir_.path() + "/server.log"), port_(FreePort()), metrics_port_(FreePort()) {}

TestServer::~TestServer() {
  Stop();
  if (const std::string report = test_support::FirstSanitizerReport(Log()); !report.empty()) {
    ADD_FAILURE() << "the server's log (" << log_path_ << ") holds a sanitizer report:\n" << report;
  }
  if (::testing::Test::HasFailure()) {
    std::cerr << "---- revkv-server log (" << log_path_ << ") ----\n" << Log() << "---- end of log ----\n";
  }
}

std::string TestServer::Log() const { return ReadWholeFile(log_path_); }

::testing::AssertionResult TestServer::Start() {
  if (pid_ > 0) return ::testing::AssertionFailure() << "the server already runs (pid " << pid_ << ")";
  const std::vector<std::string> argv = {REVKV_SERVER_BINARY, "--listen=" + address(),
                                         "--metrics-listen=127.0.0.1:" + std::to_string(metrics_port_),
                                         "--data-dir=" + data_dir()};
  const int log = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  const int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (log < 0 || null < 0) return ::testing::AssertionFailure() << "cannot open " << log_path_;
  pid_ = ForkExec(argv, {.in = null, .out = log, .err = log, .terminal = false});
  close(log);
  close(null);
  if (pid_ < 0) return ::testing::AssertionFailure() << "fork: " << std::strerror(errno);

  // Ready once etcd's Maintenance/Status answers.
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 100);
  auto maintenance = etcdserverpb::Maintenance::NewStub(
      grpc::CreateCustomChannel(address(), grpc::InsecureChannelCredentials(), args));
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  std::string last_error;
  while (Clock::now() < deadline) {
    int status = 0;
    if (WaitForExit(pid_, std::chrono::milliseconds(0), &status)) {
      pid_ = -1;
      return ::testing::AssertionFailure()
             << "revkv-server " << DescribeWaitStatus(status) << " while starting; its log:\n"
             << Log();
    }
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
    context.set_wait_for_ready(true);
    etcdserverpb::StatusResponse response;
    const grpc::Status s = maintenance->Status(&context, etcdserverpb::StatusRequest(), &response);
    if (s.ok()) return ::testing::AssertionSuccess();
    last_error = s.error_message();
  }
  Stop();
  return ::testing::AssertionFailure()
         << "revkv-server not ready after 30 s (last: " << last_error << "); its log:\n"
         << Log();
}

void TestServer::Stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  int status = 0;
  if (!WaitForExit(pid_, std::chrono::seconds(10), &status)) {
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
  }
  pid_ = -1;
}

}  // namespace revkv::client::testing
