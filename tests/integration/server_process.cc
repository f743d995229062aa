// Child processes, ports and HTTP for the integration tests (server_process.h).
#include "tests/integration/server_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "tests/support/sanitizer_reports.h"

extern char** environ;

namespace revkv::integration {
namespace {

// Debian's absl updates a lock-order graph at every absl::Mutex acquisition (gRPC's mutexes are absl's)
// to report potential deadlocks. Its library is not built with ThreadSanitizer, so TSan sees the graph's
// updates from two of a test's client threads as a race in GraphCycles. Off in the test processes, as
// it is in revkv-server, revkv-bench and the null server; revkv's own locks are checked by TSan.
const bool kMutexDeadlockDetectionOff = [] {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return true;
}();

constexpr char kEtcdBinary[] = "/usr/bin/etcd";
constexpr size_t kLogTailBytes = 64 * 1024;  // how much of a log a failure message shows

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string Tail(const std::string& text, size_t bytes) {
  if (text.size() <= bytes) return text;
  return "[... " + std::to_string(text.size() - bytes) + " bytes cut ...]\n" +
         text.substr(text.size() - bytes);
}

// argv/envp as the NUL-terminated arrays execve wants. Built before fork: after fork, in the child of a
// multithreaded process, only async-signal-safe calls are allowed.
class CStrings {
 public:
  explicit CStrings(const std::vector<std::string>& strings) : strings_(strings) {
    for (std::string& s : strings_) pointers_.push_back(s.data());
    pointers_.push_back(nullptr);
  }
  char** get() { return pointers_.data(); }

 private:
  std::vector<std::string> strings_;
  std::vector<char*> pointers_;
};

// The environment of this process, plus (overriding) `extra`.
std::vector<std::string> Environment(const std::map<std::string, std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const std::string name = entry.substr(0, entry.find('='));
    if (extra.count(name) == 0) env.push_back(entry);
  }
  for (const auto& [name, value] : extra) env.push_back(name + "=" + value);
  return env;
}

// Forks and execs argv[0] with `fds[i]` as the child's descriptor i (i < 3). The child gets SIGKILL
// when this thread exits, closes every other descriptor, and runs in its own process group. Returns the
// pid, or -1 with errno set.
pid_t ForkExec(const std::vector<std::string>& argv, const std::vector<std::string>& env, const int fds[3]) {
  CStrings args(argv);
  CStrings envp(env);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid != 0) return pid;
  // The child: async-signal-safe calls only.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // the parent died before prctl
  for (int i = 0; i < 3; ++i) {
    if (dup2(fds[i], i) < 0) _exit(127);
  }
  close_range(3, ~0U, 0);
  setpgid(0, 0);
  execve(args.get()[0], args.get(), envp.get());
  _exit(127);
}

bool WaitForExit(pid_t pid, std::chrono::milliseconds timeout, int* status) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const pid_t done = waitpid(pid, status, WNOHANG);
    if (done == pid) return true;
    if (done < 0 && errno != EINTR) return true;  // not our child any more: treat as gone
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string ReadFd(int fd) {
  std::string text;
  lseek(fd, 0, SEEK_SET);
  char buffer[65536];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  return text;
}

}  // namespace

// ----- TempDir -----

TempDir::TempDir(const std::string& parent) {
  const char* base = std::getenv("TMPDIR");
  std::string pattern =
      (!parent.empty() ? parent : std::string(base != nullptr && *base != '\0' ? base : "/tmp")) +
      "/revkv-itest-XXXXXX";
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

const char* FlavorName(Flavor flavor) { return flavor == Flavor::kRevkv ? "revkv" : "etcd"; }

bool FlavorAvailable(Flavor flavor) {
  return access(flavor == Flavor::kRevkv ? REVKV_SERVER_BINARY : kEtcdBinary, X_OK) == 0;
}

std::string DescribeWaitStatus(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  }
  return "wait status " + std::to_string(status);
}

// ----- ServerProcess -----

ServerProcess::ServerProcess(ServerOptions options)
    : options_(std::move(options)),
      log_path_(dir_.path() + "/server.log"),
      port_(FreePort()),
      metrics_port_(FreePort()),
      peer_port_(FreePort()) {}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) (void)Kill();
  if (options_.flavor == Flavor::kRevkv) {
    if (const std::string report = test_support::FirstSanitizerReport(Log()); !report.empty()) {
      ADD_FAILURE() << "the server's log (" << log_path_ << ") holds a sanitizer report:\n" << report;
    }
  }
  if (::testing::Test::HasFailure()) {
    std::cerr << "---- " << FlavorName(options_.flavor) << " server log (" << log_path_ << ") ----\n"
              << Tail(Log(), kLogTailBytes) << "---- end of server log ----\n";
  }
}

std::string ServerProcess::address() const { return "127.0.0.1:" + std::to_string(port_); }

std::vector<std::string> ServerProcess::CommandLine() const {
  std::vector<std::string> argv;
  if (options_.flavor == Flavor::kRevkv) {
    argv = {REVKV_SERVER_BINARY, "--listen=" + options_.listen_host + ":" + std::to_string(port_),
            "--metrics-listen=127.0.0.1:" + std::to_string(metrics_port_), "--data-dir=" + data_dir()};
    if (options_.etcd_flag_names) {
      argv = {REVKV_SERVER_BINARY,
              "--listen-client-urls=http://" + options_.listen_host + ":" + std::to_string(port_),
              "--listen-metrics-urls=http://127.0.0.1:" + std::to_string(metrics_port_),
              "--data-dir=" + data_dir()};
    }
  } else {
    const std::string client_url = "http://" + address();
    const std::string peer_url = "http://127.0.0.1:" + std::to_string(peer_port_);
    argv = {kEtcdBinary,
            "--name=itest",
            "--data-dir=" + data_dir(),
            "--listen-client-urls=" + client_url,
            "--advertise-client-urls=" + client_url,
            "--listen-peer-urls=" + peer_url,
            "--initial-advertise-peer-urls=" + peer_url,
            "--initial-cluster=itest=" + peer_url,
            "--listen-metrics-urls=http://127.0.0.1:" + std::to_string(metrics_port_)};
  }
  argv.insert(argv.end(), options_.extra_flags.begin(), options_.extra_flags.end());
  return argv;
}

::testing::AssertionResult ServerProcess::Start() {
  // FreePort's ports were free when picked, but another test's server, or an outgoing connection's
  // ephemeral port, may take one before the server binds it. A revkv server's first start that fails
  // for that gets new ports, up to three tries (later starts keep the ports the test already uses).
  for (int attempt = 1;; ++attempt) {
    const size_t log_before = Log().size();
    if (::testing::AssertionResult spawned = Spawn(); !spawned) return spawned;
    ::testing::AssertionResult ready = WaitReady();
    const bool port_taken = options_.flavor == Flavor::kRevkv && starts_ == attempt && pid_ <= 0 &&
                            Log().find("Address already in use", log_before) != std::string::npos;
    if (ready || !port_taken || attempt == 3) return ready;
    port_ = FreePort();
    metrics_port_ = FreePort();
  }
}

::testing::AssertionResult ServerProcess::Spawn() {
  // As in Start: a revkv server's first start whose port another process took meanwhile gets new
  // ports, up to three tries. revkv binds its ports before recovery and logs each ("gRPC port ...
  // bound", then "serving /metrics ..."), so this waits only for those lines, not for recovery.
  for (int attempt = 1;; ++attempt) {
    const size_t log_before = Log().size();
    if (::testing::AssertionResult spawned = SpawnOnce(); !spawned) return spawned;
    if (options_.flavor != Flavor::kRevkv || starts_ != attempt || attempt == 3 || !PortTaken(log_before))
      return ::testing::AssertionSuccess();
    port_ = FreePort();
    metrics_port_ = FreePort();
  }
}

bool ServerProcess::PortTaken(size_t log_before) {
  const bool own_ops_flag =
      std::any_of(options_.extra_flags.begin(), options_.extra_flags.end(),
                  [](const std::string& flag) { return flag.rfind("--metrics-listen", 0) == 0; });
  const char* bound = own_ops_flag ? "gRPC port " : "serving /metrics";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    const bool running = Running();
    const std::string log = Log();
    if (log.find(bound, log_before) != std::string::npos) return false;
    if (!running) return log.find("Address already in use", log_before) != std::string::npos;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

::testing::AssertionResult ServerProcess::SpawnOnce() {
  if (pid_ > 0) return ::testing::AssertionFailure() << "the server is already running (pid " << pid_ << ")";
  const std::vector<std::string> argv = CommandLine();
  const int log = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  const int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (log < 0 || null < 0) return ::testing::AssertionFailure() << "cannot open " << log_path_;
  std::string banner = "==== start #" + std::to_string(++starts_) + ":";
  for (const std::string& a : argv) banner += " " + a;
  banner += "\n";
  (void)!write(log, banner.data(), banner.size());
  const int fds[3] = {null, log, log};
  pid_ = ForkExec(argv, Environment(options_.env), fds);
  const int fork_errno = errno;
  close(log);
  close(null);
  if (pid_ < 0) return ::testing::AssertionFailure() << "fork: " << std::strerror(fork_errno);
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult ServerProcess::WaitReady() {
  auto health = grpc::health::v1::Health::NewStub(NewChannel());
  const auto deadline = std::chrono::steady_clock::now() + options_.start_timeout;
  std::string last_error;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (WaitExit(std::chrono::milliseconds(0), &status)) {
      return ::testing::AssertionFailure() << FlavorName(options_.flavor) << " server "
                                           << DescribeWaitStatus(status) << " while starting; its log:\n"
                                           << Tail(Log(), kLogTailBytes);
    }
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
    context.set_wait_for_ready(true);
    grpc::health::v1::HealthCheckResponse response;
    const grpc::Status s = health->Check(&context, grpc::health::v1::HealthCheckRequest(), &response);
    if (s.ok() && response.status() == grpc::health::v1::HealthCheckResponse::SERVING) {
      // revkv-server's ops endpoint answers from the start, but /healthz says "recovering" until just
      // after gRPC answers SERVING: ready means both (unless the test moved or disabled the endpoint
      // with its own --metrics-listen).
      const bool own_ops_flag =
          std::any_of(options_.extra_flags.begin(), options_.extra_flags.end(),
                      [](const std::string& flag) { return flag.rfind("--metrics-listen", 0) == 0; });
      if (options_.flavor != Flavor::kRevkv || own_ops_flag) return ::testing::AssertionSuccess();
      const HttpResponse healthz = HttpGet(metrics_port_, "/healthz");
      if (healthz.status != 0 && healthz.body.rfind("recovering", 0) != 0)
        return ::testing::AssertionSuccess();
      last_error = "gRPC is SERVING, /healthz does not say so yet";
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    last_error = s.ok() ? "health status " +
                              grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status())
                        : s.error_message();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  (void)Kill();
  return ::testing::AssertionFailure()
         << FlavorName(options_.flavor) << " server not ready after " << options_.start_timeout.count()
         << " s (last: " << last_error << "); its log:\n"
         << Tail(Log(), kLogTailBytes);
}

bool ServerProcess::WaitExit(std::chrono::milliseconds timeout, int* status) {
  if (pid_ <= 0) return true;
  if (!WaitForExit(pid_, timeout, status)) return false;
  pid_ = -1;
  return true;
}

::testing::AssertionResult ServerProcess::Stop() {
  if (pid_ <= 0) return ::testing::AssertionFailure() << "the server is not running";
  const pid_t pid = pid_;
  if (kill(pid, SIGTERM) != 0) return ::testing::AssertionFailure() << "kill: " << std::strerror(errno);
  int status = 0;
  if (!WaitExit(options_.stop_timeout, &status)) {
    (void)Kill();
    return ::testing::AssertionFailure() << "the server (pid " << pid << ") did not exit within "
                                         << options_.stop_timeout.count() << " s of SIGTERM; killed";
  }
  // etcd re-raises SIGTERM once it has shut down cleanly; revkv must exit with status 0.
  const bool clean = (WIFEXITED(status) && WEXITSTATUS(status) == 0) ||
                     (options_.flavor == Flavor::kEtcd && WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
  if (!clean) {
    return ::testing::AssertionFailure()
           << "after SIGTERM the server " << DescribeWaitStatus(status) << " (expected exit status 0)";
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult ServerProcess::Kill() {
  if (pid_ <= 0) return ::testing::AssertionFailure() << "the server is not running";
  kill(pid_, SIGKILL);
  int status = 0;
  if (!WaitExit(std::chrono::seconds(30), &status)) {
    return ::testing::AssertionFailure() << "the server (pid " << pid_ << ") survived SIGKILL for 30 s";
  }
  return ::testing::AssertionSuccess();
}

bool ServerProcess::Running() {
  int status = 0;
  return !WaitExit(std::chrono::milliseconds(0), &status);
}

std::string ServerProcess::Log() const { return ReadWholeFile(log_path_); }

std::shared_ptr<grpc::Channel> ServerProcess::NewChannel(
    std::shared_ptr<grpc::ChannelCredentials> credentials) const {
  if (credentials == nullptr) credentials = options_.channel_credentials;
  if (credentials == nullptr) credentials = grpc::InsecureChannelCredentials();
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 200);
  args.SetMaxReceiveMessageSize(64 << 20);
  return grpc::CreateCustomChannel(address(), credentials, args);
}

// ----- RunCommand -----

std::string CommandResult::Describe() const {
  std::ostringstream s;
  if (timed_out) {
    s << "timed out";
  } else {
    s << "exit code " << exit_code;
  }
  s << "\n--- stdout ---\n" << out << "\n--- stderr ---\n" << err;
  return s.str();
}

CommandResult RunCommand(const std::vector<std::string>& argv, const std::string& stdin_text,
                         const std::map<std::string, std::string>& env, std::chrono::seconds timeout) {
  CommandResult result;
  // Memory files for the three standard streams: nothing to pump while the child runs.
  const int in = memfd_create("stdin", MFD_CLOEXEC);
  const int out = memfd_create("stdout", MFD_CLOEXEC);
  const int err = memfd_create("stderr", MFD_CLOEXEC);
  if (in < 0 || out < 0 || err < 0) {
    result.err = std::string("memfd_create: ") + std::strerror(errno);
    return result;
  }
  // Appending: the command and every process it starts share these file descriptions, and a memfd's
  // offset is not locked across them, so two writes at once could land at one offset, the later
  // overwriting the earlier. With O_APPEND each write goes to the end, under the file's lock.
  for (const int fd : {out, err}) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_APPEND);
  (void)!write(in, stdin_text.data(), stdin_text.size());
  lseek(in, 0, SEEK_SET);
  const int fds[3] = {in, out, err};
  const pid_t pid = ForkExec(argv, Environment(env), fds);
  if (pid < 0) {
    result.err = std::string("fork: ") + std::strerror(errno);
  } else {
    int status = 0;
    if (!WaitForExit(pid, timeout, &status)) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      result.timed_out = true;
    } else if (WIFEXITED(status)) {
      result.exit_code = WEXITSTATUS(status);
    }
    result.out = ReadFd(out);
    result.err = ReadFd(err);
  }
  close(in);
  close(out);
  close(err);
  return result;
}

// ----- HttpGet -----

HttpResponse HttpGet(int port, const std::string& target) {
  HttpResponse response;
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval timeout{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    response.error = std::string("connect: ") + std::strerror(errno);
    close(fd);
    return response;
  }
  const std::string request = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                              "\r\nConnection: close\r\n\r\n";
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) {
    response.error = std::string("send: ") + std::strerror(errno);
    close(fd);
    return response;
  }
  std::string raw;
  char buffer[65536];
  for (;;) {
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      response.error = std::string("recv: ") + std::strerror(errno);
      close(fd);
      return response;
    }
    if (n == 0) break;
    raw.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  const size_t header_end = raw.find("\r\n\r\n");
  if (header_end == std::string::npos || raw.compare(0, 9, "HTTP/1.1 ") != 0) {
    response.error = "not an HTTP/1.1 response: " + raw.substr(0, 200);
    return response;
  }
  response.status = std::atoi(raw.c_str() + 9);
  std::istringstream lines(raw.substr(0, header_end));
  std::string line;
  std::getline(lines, line);  // the status line
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    response.headers[name] = value;
  }
  response.body = raw.substr(header_end + 4);
  if (auto it = response.headers.find("content-length"); it != response.headers.end()) {
    const size_t length = std::strtoull(it->second.c_str(), nullptr, 10);
    if (response.body.size() != length) {
      response.error =
          "body of " + std::to_string(response.body.size()) + " bytes, Content-Length " + it->second;
    }
  }
  return response;
}

}  // namespace revkv::integration
