// One client connection of the ops endpoint: read, parse, dispatch, write, repeat (see
// http_connection.h for the states and invariants).
#include "server/ops/http_connection.h"

#include <utility>

#include "server/ops/http_message.h"

namespace revkv::server::http {
namespace {
// While lingering, at most this much is read and thrown away before the socket is closed regardless.
constexpr size_t kMaxDrainBytes = size_t{64} * 1024;
}  // namespace

Connection::Connection(uint64_t id, asio::ip::tcp::socket socket, const ConnectionLimits& limits,
                       ConnectionHost* host)
    : id_(id), limits_(limits), host_(host), socket_(std::move(socket)), watchdog_(socket_.get_executor()) {}

Connection::~Connection() { host_->ConnectionClosed(id_); }

void Connection::Start() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    asio::error_code ignored;
    self->socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
    self->SetDeadline(Clock::now() + self->limits_.idle_timeout);
    self->Process();
  });
}

void Connection::Shutdown() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    self->stopping_ = true;
    // A response in flight is finished first (OnWritten closes); anything else ends now.
    if (self->state_ != State::kWriting) self->Close();
  });
}

// Parses what has arrived: answers a complete request, an error, or reads more.
void Connection::Process() {
  if (state_ != State::kReading) return;
  if (stopping_) {
    Close();
    return;
  }
  ParsedRequest parsed = ParseRequestHead(in_, limits_.parse);
  switch (parsed.status) {
    case ParsedRequest::Status::kIncomplete:
      if (!in_.empty() && !request_started_) {
        request_started_ = true;
        SetDeadline(Clock::now() + limits_.request_timeout);
      }
      ReadMore();
      return;
    case ParsedRequest::Status::kError:
      in_.clear();
      Send(SerializeResponse(ErrorResponse(parsed.error_status, parsed.error_message), {.close = true}),
           /*close_after=*/true);
      return;
    case ParsedRequest::Status::kComplete:
      break;
  }
  in_.erase(0, parsed.head_bytes);
  request_started_ = false;
  const HttpResponse response = host_->Dispatch(parsed.request);
  const bool close = !parsed.keep_alive || stopping_;
  SerializeOptions options;
  options.head_only = parsed.request.method == "HEAD";
  options.close = close;
  options.keep_alive_10 = !close && parsed.request.version_minor == 0;
  Send(SerializeResponse(response, options), close);
}

void Connection::ReadMore() {
  socket_.async_read_some(asio::buffer(read_buffer_),
                          [self = shared_from_this()](const asio::error_code& error, size_t bytes) {
                            self->OnRead(error, bytes);
                          });
}

void Connection::OnRead(const asio::error_code& error, size_t bytes) {
  if (state_ != State::kReading) return;  // closed meanwhile
  if (error) {                            // EOF from the client, a reset, or cancellation by Close
    Close();
    return;
  }
  in_.append(read_buffer_.data(), bytes);
  Process();
}

void Connection::Send(std::string bytes, bool close_after) {
  state_ = State::kWriting;
  close_after_write_ = close_after;
  out_ = std::move(bytes);
  SetDeadline(Clock::now() + limits_.write_timeout);
  asio::async_write(socket_, asio::buffer(out_),
                    [self = shared_from_this()](const asio::error_code& error, size_t /*bytes*/) {
                      self->OnWritten(error);
                    });
}

void Connection::OnWritten(const asio::error_code& error) {
  if (state_ != State::kWriting) return;  // closed meanwhile
  out_.clear();
  if (error || stopping_) {
    Close();
    return;
  }
  if (close_after_write_) {
    BeginLingeringClose();
    return;
  }
  state_ = State::kReading;
  SetDeadline(Clock::now() + limits_.idle_timeout);
  Process();  // a pipelined request may already be buffered
}

// Invariant 3: stop sending, then read and discard until the client closes, a limit, or the deadline.
void Connection::BeginLingeringClose() {
  state_ = State::kLingering;
  asio::error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  SetDeadline(Clock::now() + limits_.linger_timeout);
  Drain();
}

void Connection::Drain() {
  socket_.async_read_some(asio::buffer(read_buffer_),
                          [self = shared_from_this()](const asio::error_code& error, size_t bytes) {
                            if (self->state_ != State::kLingering) return;
                            self->drained_ += bytes;
                            if (error || self->stopping_ || self->drained_ > kMaxDrainBytes) {
                              self->Close();
                            } else {
                              self->Drain();
                            }
                          });
}

void Connection::Close() {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  asio::error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);  // completes the outstanding read or write with operation_aborted
  watchdog_.cancel();
}

// Invariant 2: one outstanding wait, never later than the deadline.
void Connection::SetDeadline(Clock::time_point deadline) {
  deadline_ = deadline;
  if (!watchdog_pending_) {
    ArmWatchdog();
  } else if (deadline_ < armed_for_) {
    watchdog_.cancel();  // OnWatchdog runs soon and re-arms for the earlier deadline
  }
}

void Connection::ArmWatchdog() {
  watchdog_pending_ = true;
  armed_for_ = deadline_;
  watchdog_.expires_at(deadline_);
  watchdog_.async_wait(
      [self = shared_from_this()](const asio::error_code& /*error*/) { self->OnWatchdog(); });
}

void Connection::OnWatchdog() {
  watchdog_pending_ = false;
  if (state_ == State::kClosed) return;
  if (Clock::now() >= deadline_) {
    Close();  // timed out: idle, slow request, slow reader or a lingering client
    return;
  }
  ArmWatchdog();
}

}  // namespace revkv::server::http
