// redis-server child, and the client over hiredis (redis.h).
#include "bench/store/redis.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "hiredis/hiredis.h"

extern char** environ;

namespace revkv::bench::store {

namespace {

absl::Status Errno(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

sockaddr_in Loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

// A port no one listens on right now (the kernel's choice for an ephemeral bind). Another process may
// take it before redis-server does; Start then fails and says so.
absl::StatusOr<int> FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Errno("socket");
  sockaddr_in a = Loopback(0);
  socklen_t len = sizeof(a);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    const absl::Status s = Errno("bind");
    close(fd);
    return s;
  }
  close(fd);
  return ntohs(a.sin_port);
}

std::string Tail(const std::string& path, size_t bytes) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string all = ss.str();
  return all.size() > bytes ? all.substr(all.size() - bytes) : all;
}

}  // namespace

// ----- RedisServer ----------------------------------------------------------------------------------

absl::StatusOr<std::string> RedisServer::FindBinary() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/redis-server";
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return absl::NotFoundError("redis-server is not on PATH");
}

absl::StatusOr<std::unique_ptr<RedisServer>> RedisServer::Start(const std::string& binary,
                                                                const std::string& dir) {
  absl::StatusOr<int> port = FreePort();
  if (!port.ok()) return port.status();
  const std::string log = dir + "/redis.log";
  std::vector<std::string> args = {
      binary,  "--port", std::to_string(*port), "--bind", "127.0.0.1",  "--save", "", "--appendonly", "no",
      "--dir", dir,      "--logfile",           log,      "--loglevel", "warning"};
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (const int e = posix_spawn(&pid, binary.c_str(), nullptr, nullptr, argv.data(), environ); e != 0) {
    return absl::InternalError(absl::StrCat("cannot start ", binary, ": ", std::strerror(e)));
  }
  std::unique_ptr<RedisServer> server(new RedisServer(pid, *port));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      server->pid_ = 0;
      return absl::InternalError(
          absl::StrCat(binary, " exited at start; ", log, " ends with:\n", Tail(log, 2000)));
    }
    if (RespClient::Connect(*port).ok()) return server;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::DeadlineExceededError(absl::StrCat(binary, " did not accept connections on port ", *port,
                                                  " within 10 s; ", log, " ends with:\n", Tail(log, 2000)));
}

void RedisServer::Stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  pid_ = 0;
}

// ----- RespClient: hiredis ---------------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<RespClient>> RespClient::Connect(int port) {
  redisContext* context = redisConnect("127.0.0.1", port);
  if (context == nullptr) return absl::ResourceExhaustedError("hiredis: cannot allocate a context");
  if (context->err != 0) {
    const absl::Status s =
        absl::UnavailableError(absl::StrCat("connect to redis at 127.0.0.1:", port, ": ", context->errstr));
    redisFree(context);
    return s;
  }
  return std::unique_ptr<RespClient>(new RespClient(context));
}

RespClient::~RespClient() { redisFree(context_); }

void RespClient::Queue(std::initializer_list<std::string_view> args) {
  std::vector<const char*> argv;
  std::vector<size_t> lengths;
  for (std::string_view a : args) {
    argv.push_back(a.data());
    lengths.push_back(a.size());
  }
  // Only fails when out of memory, which Exec then reports through the context's error.
  (void)redisAppendCommandArgv(context_, static_cast<int>(argv.size()), argv.data(), lengths.data());
  ++queued_;
}

absl::StatusOr<std::vector<std::string>> RespClient::Exec() {
  const size_t expected = queued_;
  queued_ = 0;
  std::vector<std::string> replies;
  absl::Status first_error;
  for (size_t i = 0; i < expected; ++i) {
    void* raw = nullptr;
    // The first call writes the whole batch, then each reads one reply (hiredis buffers both ways).
    if (redisGetReply(context_, &raw) != REDIS_OK || raw == nullptr) {
      return absl::UnavailableError(absl::StrCat("redis: ", context_->errstr));
    }
    std::unique_ptr<redisReply, void (*)(void*)> reply(static_cast<redisReply*>(raw), freeReplyObject);
    switch (reply->type) {
      case REDIS_REPLY_STATUS:
      case REDIS_REPLY_STRING:
        replies.emplace_back(reply->str, reply->len);
        break;
      case REDIS_REPLY_INTEGER:
        replies.push_back(std::to_string(reply->integer));
        break;
      case REDIS_REPLY_NIL:
        replies.emplace_back();
        break;
      case REDIS_REPLY_ERROR:
        if (first_error.ok())
          first_error = absl::InternalError(absl::StrCat("redis: ", std::string(reply->str, reply->len)));
        replies.emplace_back();
        break;
      default:
        return absl::UnimplementedError(absl::StrCat("redis reply type ", reply->type));
    }
  }
  if (!first_error.ok()) return first_error;
  return replies;
}

// ----- INFO -----------------------------------------------------------------------------------------

std::string InfoText(const std::string& info, std::string_view field) {
  const std::string key = std::string(field) + ":";
  for (size_t at = 0; at < info.size();) {
    const size_t end = std::min(info.find("\r\n", at), info.size());
    if (info.compare(at, key.size(), key) == 0) return info.substr(at + key.size(), end - at - key.size());
    at = end + 2;
  }
  return "";
}

uint64_t InfoField(const std::string& info, std::string_view field) {
  return std::strtoull(InfoText(info, field).c_str(), nullptr, 10);
}

}  // namespace revkv::bench::store
