// A redis-server child process and a client for it over hiredis: what the memory sub-benchmark needs to
// load the same keys into Redis (pipelined SETs) and read INFO, over 127.0.0.1.
#pragma once

#include <sys/types.h>

#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

struct redisContext;  // hiredis/hiredis.h

namespace revkv::bench::store {

// Owner thread only. Destroying it stops the server.
class RedisServer {
 public:
  // The path of redis-server on PATH; NotFound if there is none.
  static absl::StatusOr<std::string> FindBinary();

  // Starts `binary` on a free port of 127.0.0.1 with persistence off (--save '' --appendonly no), its
  // working directory and log file (redis.log) in `dir` (which must exist), and waits until it accepts
  // connections. Fails with the log's tail if it exits or is not ready within 10 s.
  static absl::StatusOr<std::unique_ptr<RedisServer>> Start(const std::string& binary,
                                                            const std::string& dir);

  ~RedisServer() { Stop(); }
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  // SIGTERM, SIGKILL if it has not exited 5 s later; waits for it. Idempotent.
  void Stop();
  int port() const { return port_; }

 private:
  RedisServer(pid_t pid, int port) : pid_(pid), port_(port) {}

  pid_t pid_;
  int port_;
};

// A blocking connection to Redis over hiredis (Debian libhiredis-dev), pipelining the commands queued
// before Exec. Owner thread only.
class RespClient {
 public:
  static absl::StatusOr<std::unique_ptr<RespClient>> Connect(int port);
  ~RespClient();
  RespClient(const RespClient&) = delete;
  RespClient& operator=(const RespClient&) = delete;

  // Adds a command to the batch; nothing is sent yet.
  void Queue(std::initializer_list<std::string_view> args);
  // Sends the batch in one go and reads one reply per command, in order: simple strings, integers and
  // bulk strings as their text (a null bulk string as ""). Fails at an error reply (after reading the
  // rest), an array reply or an I/O error.
  absl::StatusOr<std::vector<std::string>> Exec();

 private:
  explicit RespClient(redisContext* context) : context_(context) {}

  redisContext* const context_;  // owned: hiredis's connection and buffers
  size_t queued_ = 0;
};

// The value of `field` ("used_memory") in an INFO reply; 0 if absent.
uint64_t InfoField(const std::string& info, std::string_view field);
// The value of a textual `field` ("redis_version") in an INFO reply; "" if absent.
std::string InfoText(const std::string& info, std::string_view field);

}  // namespace revkv::bench::store
