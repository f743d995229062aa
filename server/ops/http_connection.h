// One client connection of the ops endpoint (internal to server/ops).
//
// A connection is a small state machine driven by Asio completions, all on the connection's strand (the
// socket's executor), so its fields need no lock:
//
//   kReading --complete head--> handler runs --> kWriting --written, keep-alive--> kReading
//      |                                            |
//      +--malformed / too large--> kWriting --------+--written, close--> kLingering --> kClosed
//
// Invariants:
//  1. At most one read, one write and one watchdog wait are outstanding; reads happen only in kReading
//     and kLingering, so pipelined requests are parsed one at a time and answered in order.
//  2. `deadline_` is when the current phase times out: idle_timeout while no byte of the next request
//     has arrived, request_timeout from its first byte, write_timeout while a response is sent,
//     linger_timeout while draining before close. The watchdog wait fires no later than `deadline_`
//     and closes the socket if it has passed; moving the deadline earlier cancels and re-arms it.
//  3. After an error response (400/431/505) or "Connection: close", the connection shuts down its send
//     side and drains what the client still sends for a short while before closing, so the client reads
//     the response instead of a reset.
//  4. The server holds only a weak_ptr; completion handlers hold the shared_ptr. When the last handler
//     is done the connection is destroyed and tells its host.
#pragma once

#include <array>
#include <asio.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "server/ops/http_parser.h"
#include "server/ops/http_server.h"

namespace revkv::server::http {

// What a connection needs from the server that accepted it. The host outlives its connections.
class ConnectionHost {
 public:
  // Answers a parsed request (routing, 404/405, handler exceptions). Thread-safe; never throws.
  virtual HttpResponse Dispatch(const HttpRequest& request) = 0;
  // Called from the connection's destructor. Thread-safe.
  virtual void ConnectionClosed(uint64_t id) = 0;

 protected:
  ~ConnectionHost() = default;
};

struct ConnectionLimits {
  ParseLimits parse;
  std::chrono::steady_clock::duration idle_timeout;
  std::chrono::steady_clock::duration request_timeout;
  std::chrono::steady_clock::duration write_timeout;
  std::chrono::steady_clock::duration linger_timeout;
};

// Thread-safe entry points (Start, Shutdown); everything else runs on the strand.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // `socket` must have a strand as its executor. `host` must outlive the connection.
  Connection(uint64_t id, asio::ip::tcp::socket socket, const ConnectionLimits& limits, ConnectionHost* host);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Begins serving requests. Call once, right after construction.
  void Start();
  // Asks the connection to close: at once when it is waiting for a request, after the response in
  // flight otherwise. Non-blocking.
  void Shutdown();

 private:
  enum class State { kReading, kWriting, kLingering, kClosed };
  using Clock = std::chrono::steady_clock;

  void Process();
  void ReadMore();
  void OnRead(const asio::error_code& error, size_t bytes);
  void Send(std::string bytes, bool close_after);
  void OnWritten(const asio::error_code& error);
  void BeginLingeringClose();
  void Drain();
  void Close();
  void SetDeadline(Clock::time_point deadline);
  void ArmWatchdog();
  void OnWatchdog();

  const uint64_t id_;
  const ConnectionLimits limits_;
  ConnectionHost* const host_;
  asio::ip::tcp::socket socket_;
  asio::steady_timer watchdog_;
  State state_ = State::kReading;
  bool stopping_ = false;  // Shutdown() was called
  bool close_after_write_ = false;
  bool request_started_ = false;   // a byte of the next request has arrived
  bool watchdog_pending_ = false;  // an async_wait is outstanding (invariant 2)
  Clock::time_point deadline_;
  Clock::time_point armed_for_;  // expiry of the outstanding wait
  size_t drained_ = 0;           // bytes discarded while lingering
  std::string in_;               // received bytes not yet parsed as a request head
  std::string out_;              // the response being written
  std::array<char, 4096> read_buffer_{};
};

}  // namespace revkv::server::http
