// The ops HTTP endpoint on Boost.Beast over Boost.Asio: listening socket, I/O threads, one session per
// connection, routing and shutdown.
//
// Beast parses each request head (http::request_parser, header_limit = max_header_bytes) and writes
// each response; what remains here is policy: timeouts, limits, routing, keep-alive and shutdown.
//
// A session's life: (1) wait for the first byte of a request (idle_timeout); (2) read the head until its
// blank line (request_timeout from its first byte; more than max_header_bytes without one is 431), refuse
// obsolete line folding (which Beast would accept), and let Beast's parser take it; (3) answer it
// (write_timeout); (4) back to (1), unless the request or the answer closes the connection. A request that
// carries a body is answered and the connection closed without reading the body. After an answer that closes
// the connection the session stops sending (shutdown of the write side) and reads and discards what the
// client still sends, for a moment (the "lingering close"): closing with unread data would reset the
// connection and could destroy the answer before the client read it.
//
// Threads: one io_context run by `threads` threads. The acceptor and every session have a strand of
// their own, so a session's handlers never run concurrently while different sessions proceed in
// parallel. The server keeps a weak_ptr to each live session (to shut them down in Stop, and to find
// an idle one to close when a new connection arrives at max_connections); a session removes itself in
// its destructor.
//
// Stop: (1) under conns_mu_, mark stopping (no session is registered afterwards) and take the live
// sessions; (2) close the acceptor on its strand; (3) ask every session to shut down (an idle one closes
// at once, one writing an answer closes after it); (4) wait, at most shutdown_grace, until every session
// is gone and the accept loop has ended; (5) stop the io_context and join the threads; (6) destroy the
// io_context, which destroys the handlers that never ran and with them the last sessions. Members used by
// session destructors (conns_mu_, conns_) are declared before io_ so that they outlive it.
#include "server/ops/http_server.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "fmt/format.h"
#include "runtime/port/diagnostics.h"
#include "server/ops/http_message.h"
#include "server/ops/http_target.h"
#include "spdlog/spdlog.h"

namespace revkv::server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

constexpr int kMaxThreads = 64;
constexpr auto kAcceptRetryDelay = std::chrono::milliseconds(100);
constexpr auto kMaxLinger = std::chrono::seconds(2);
constexpr size_t kMaxDrainBytes = size_t{64} * 1024;  // read and thrown away while lingering, at most

std::chrono::steady_clock::duration ToChrono(absl::Duration d) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(absl::ToChronoNanoseconds(d));
}

// Splits "host:port" ("[v6]:port" for IPv6). An empty host means every IPv4 interface.
absl::Status SplitAddress(std::string_view address, std::string* host, std::string* port) {
  const size_t colon = address.rfind(':');
  const std::string_view digits = colon == std::string_view::npos ? "" : address.substr(colon + 1);
  uint32_t number = 0;
  for (char c : digits) number = c >= '0' && c <= '9' && number <= 65535 ? number * 10 + (c - '0') : 65536;
  if (digits.empty() || number > 65535) {
    return absl::InvalidArgumentError(
        fmt::format("ops endpoint: invalid address '{}': expected host:port with a port 0-65535", address));
  }
  std::string_view h = address.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  *host = h.empty() ? "0.0.0.0" : std::string(h);
  *port = std::to_string(number);
  return absl::OkStatus();
}

std::string HttpDate() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[64];
  const size_t n = std::strftime(buf, sizeof(buf), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return std::string(buf, n);
}

// Header names and values must not carry CR or LF (response splitting); they become spaces.
std::string Sanitized(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c == '\r' || c == '\n') c = ' ';
  }
  return out;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// 1xx, 204 and 304 responses never have a body (RFC 9110 section 6.4.1).
bool StatusHasBody(int status) { return status >= 200 && status != 204 && status != 304; }

struct AnswerOptions {
  bool head_only = false;      // HEAD: headers only, Content-Length as for GET
  bool close = false;          // send "Connection: close"
  bool keep_alive_10 = false;  // an HTTP/1.0 client asked for keep-alive: send "Connection: keep-alive"
};

// The HTTP/1.1 response for a handler's HttpResponse.
bhttp::response<bhttp::string_body> ToBeast(const HttpResponse& response, const AnswerOptions& options) {
  const int status = response.status >= 100 && response.status <= 999 ? response.status : 500;
  bhttp::response<bhttp::string_body> out;
  out.version(11);
  out.result(static_cast<unsigned>(status));
  out.reason(std::string(http::ReasonPhrase(status)));
  for (const auto& [name, value] : response.headers) {
    // The server owns framing headers; a handler's copy would contradict them.
    if (EqualsIgnoreCase(name, "content-length") || EqualsIgnoreCase(name, "connection") ||
        EqualsIgnoreCase(name, "transfer-encoding") || EqualsIgnoreCase(name, "date")) {
      continue;
    }
    out.insert(Sanitized(name), Sanitized(value));
  }
  if (StatusHasBody(status)) {
    out.set(bhttp::field::content_type, Sanitized(response.content_type));
    out.content_length(response.body.size());
    if (!options.head_only) out.body() = response.body;
  }
  out.set(bhttp::field::date, HttpDate());
  if (options.close) {
    out.set(bhttp::field::connection, "close");
  } else if (options.keep_alive_10) {
    out.set(bhttp::field::connection, "keep-alive");
  }
  return out;
}

class Session;

// What a session needs from the server.
class SessionHost {
 public:
  virtual ~SessionHost() = default;
  virtual HttpResponse Dispatch(const HttpRequest& request) = 0;
  virtual void SessionClosed(uint64_t id) = 0;
};

struct SessionLimits {
  size_t max_header_bytes;
  int max_headers;
  std::chrono::steady_clock::duration idle_timeout, request_timeout, write_timeout, linger_timeout;
};

// One client connection. Owner: itself (shared_ptr held by its pending operations). Runs on its strand.
class Session final : public std::enable_shared_from_this<Session> {
 public:
  Session(uint64_t id, tcp::socket socket, const SessionLimits& limits, SessionHost* host)
      : id_(id), limits_(limits), host_(host), stream_(std::move(socket)) {}
  ~Session() { host_->SessionClosed(id_); }

  void Start() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      error_code ignored;
      self->stream_.socket().set_option(tcp::no_delay(true), ignored);
      self->WaitForRequest();
    });
  }

  // Whether the session waits for the first byte of a request (a silent new connection, or a kept-alive
  // one between requests): what the acceptor may close to make room at max_connections. A hint
  // (relaxed: written on the strand, read by the acceptor; nothing is published through it): GiveWay
  // decides again on the strand, so a stale hint at worst closes a connection after the answer to the
  // request it has just begun.
  bool Idle() const { return idle_.load(std::memory_order_relaxed); }

  // Makes room for a new connection: closes now if still idle, else after answering the request it has
  // begun.
  void GiveWay() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
      self->stopping_ = true;
      if (self->idle_.load(std::memory_order_relaxed)) self->Close();
    });
  }

  // Stop: an idle session closes now, one writing an answer after it.
  void Shutdown() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
      self->stopping_ = true;
      if (!self->writing_) self->Close();
    });
  }

 private:
  // (1): the next request's first byte, unless it is buffered already (pipelining).
  void WaitForRequest() {
    if (stopping_) return Close();
    if (buffer_.size() > 0) return ReadHead();
    stream_.expires_after(limits_.idle_timeout);
    idle_.store(true, std::memory_order_relaxed);  // a hint (see Idle)
    stream_.async_read_some(buffer_.prepare(4096),
                            [self = shared_from_this()](const error_code& error, size_t bytes) {
                              self->idle_.store(false, std::memory_order_relaxed);
                              if (error) return self->Close();  // EOF, reset, idle timeout, Close
                              self->buffer_.commit(bytes);
                              self->ReadHead();
                            });
  }

  // (2): the rest of the head: read until its blank line is buffered (or the limit is passed), then
  // Beast's parser takes it. Having the whole head before parsing lets the raw bytes be checked for what
  // Beast tolerates (obsolete line folding).
  void ReadHead() {
    stream_.expires_after(limits_.request_timeout);
    ContinueHead();
  }

  void ContinueHead() {
    const std::string_view data(static_cast<const char*>(buffer_.data().data()), buffer_.size());
    const size_t end = HeadEnd(data);
    if (end == std::string_view::npos && !PlausibleStart(data)) {
      return OnHead(bhttp::error::bad_method);  // garbage, or a TLS handshake: answered now, not at a limit
    }
    if (end == std::string_view::npos && data.size() <= limits_.max_header_bytes) {
      stream_.async_read_some(buffer_.prepare(4096),
                              [self = shared_from_this()](const error_code& error, size_t bytes) {
                                if (error) return self->Close();  // EOF, reset, the request timeout, Close
                                self->buffer_.commit(bytes);
                                self->ContinueHead();
                              });
      return;
    }
    if (end != std::string_view::npos && HasObsoleteFolding(data.substr(0, end))) {
      return Answer(http::ErrorResponse(400, "obsolete line folding in a header"), {.close = true});
    }
    size_t blank = 0;  // empty lines before the request line: skipped (Beast's parser would refuse them)
    while (blank < data.size() && (data[blank] == '\r' || data[blank] == '\n')) ++blank;
    buffer_.consume(blank);
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(limits_.max_header_bytes));
    parser_->eager(false);  // the head only: a body is never read
    error_code error;
    const size_t used = parser_->put(buffer_.data(), error);
    buffer_.consume(used);
    if (!error && !parser_->is_header_done())
      error = bhttp::error::need_more;  // cannot happen: head is whole
    if (error == bhttp::error::need_more && end == std::string_view::npos) error = bhttp::error::header_limit;
    OnHead(error);
  }

  // Where the head in `data` ends (after its blank line), or npos if it has not arrived yet. Empty lines
  // before the request line are part of it (RFC 9112 section 2.2).
  static size_t HeadEnd(std::string_view data) {
    size_t start = 0;
    while (start < data.size() && (data[start] == '\r' || data[start] == '\n')) ++start;
    const size_t crlf = data.find("\r\n\r\n", start);
    const size_t lf = data.find("\n\n", start);  // bare line feeds: Beast refuses them, at once
    if (lf != std::string_view::npos && (crlf == std::string_view::npos || lf < crlf)) return lf + 2;
    return crlf == std::string_view::npos ? crlf : crlf + 4;
  }

  // Whether `data` can still become a request head: a method of token characters then a space, and no
  // control byte other than CR, LF and tab (Beast's parser looks at a head only once it is whole).
  static bool PlausibleStart(std::string_view data) {
    size_t start = 0;
    while (start < data.size() && (data[start] == '\r' || data[start] == '\n')) ++start;
    const std::string_view method = data.substr(start, data.find(' ', start) - start);
    for (unsigned char c : method) {
      if (!(std::isalnum(c) ||
            std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos)) {
        return false;
      }
    }
    if (method.empty() && data.size() > start) return false;  // a space first
    for (unsigned char c : data) {
      if ((c < 0x20 && c != '\r' && c != '\n' && c != '\t') || c == 0x7f) return false;
    }
    return true;
  }

  // A header line that starts with a space or a tab continues the previous one (obs-fold).
  static bool HasObsoleteFolding(std::string_view head) {
    for (size_t at = head.find('\n'); at != std::string_view::npos && at + 1 < head.size();
         at = head.find('\n', at + 1)) {
      if (head[at + 1] == ' ' || head[at + 1] == '\t') return true;
    }
    return false;
  }

  void OnHead(const error_code& error) {
    if (error == bhttp::error::header_limit) {
      return Answer(http::ErrorResponse(431, "request head too large"), {.close = true});
    }
    if (error) {
      if (error == bhttp::error::bad_version && OtherHttpVersion()) {
        return Answer(http::ErrorResponse(505, "only HTTP/1.0 and HTTP/1.1 are spoken here"),
                      {.close = true});
      }
      return Answer(http::ErrorResponse(400, error.message()), {.close = true});  // Beast's parser refused it
    }
    const bhttp::request<bhttp::empty_body>& head = parser_->get();
    if (head.version() / 10 != 1) {
      return Answer(http::ErrorResponse(505, "only HTTP/1.0 and HTTP/1.1 are spoken here"), {.close = true});
    }
    HttpRequest request;
    request.method = std::string(head.method_string());
    request.target = std::string(head.target());
    request.version_minor = static_cast<int>(head.version() % 10);
    int hosts = 0, fields = 0;
    for (const auto& field : head) {
      std::string name(field.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (name == "host") ++hosts;
      request.headers.emplace_back(std::move(name), std::string(field.value()));
      ++fields;
    }
    if (fields > limits_.max_headers) {
      return Answer(http::ErrorResponse(431, fmt::format("more than {} header fields", limits_.max_headers)),
                    {.close = true});
    }
    if (request.version_minor >= 1 && hosts != 1) {
      return Answer(
          http::ErrorResponse(400, hosts == 0 ? "missing Host header" : "more than one Host header"),
          {.close = true});
    }
    if (std::optional<std::string> refused = http::ParseTarget(request.target, &request)) {
      return Answer(http::ErrorResponse(400, *refused), {.close = true});
    }
    // A body is never read: the connection cannot carry another request after it.
    const bool has_body = parser_->chunked() || parser_->content_length().value_or(0) > 0;
    const bool close = !head.keep_alive() || has_body || stopping_;
    const HttpResponse response = host_->Dispatch(request);
    Answer(response, {.head_only = request.method == "HEAD",
                      .close = close,
                      .keep_alive_10 = !close && request.version_minor == 0});
  }

  // Beast reads only HTTP/1.x: whether the refused request line is well formed but of another version
  // ("GET / HTTP/2.0"), which deserves 505 rather than 400.
  bool OtherHttpVersion() const {
    const std::string_view data(static_cast<const char*>(buffer_.data().data()), buffer_.size());
    const std::string_view line = data.substr(0, data.find_first_of("\r\n"));
    const size_t space = line.rfind(' ');
    if (space == std::string_view::npos) return false;
    const std::string_view version = line.substr(space + 1);
    return version.size() == 8 && version.starts_with("HTTP/") &&
           std::isdigit(static_cast<unsigned char>(version[5])) && version[6] == '.' &&
           std::isdigit(static_cast<unsigned char>(version[7])) && version[5] != '1';
  }

  // (3): writes the answer; then (4).
  void Answer(const HttpResponse& response, const AnswerOptions& options) {
    writing_ = true;
    close_after_write_ = options.close;
    out_ = ToBeast(response, options);
    stream_.expires_after(limits_.write_timeout);
    bhttp::async_write(stream_, out_, [self = shared_from_this()](const error_code& error, size_t /*bytes*/) {
      self->writing_ = false;
      if (error || self->stopping_) return self->Close();
      if (self->close_after_write_) return self->LingeringClose();
      self->WaitForRequest();
    });
  }

  // Stops sending, then reads and discards until the client closes, a limit or the deadline.
  void LingeringClose() {
    error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(limits_.linger_timeout);
    Drain();
  }

  void Drain() {
    stream_.async_read_some(asio::buffer(drain_),
                            [self = shared_from_this()](const error_code& error, size_t bytes) {
                              self->drained_ += bytes;
                              if (error || self->stopping_ || self->drained_ > kMaxDrainBytes)
                                return self->Close();
                              self->Drain();
                            });
  }

  void Close() {
    if (closed_) return;
    closed_ = true;
    error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();  // completes an outstanding read or write with operation_aborted
  }

  const uint64_t id_;
  const SessionLimits limits_;
  SessionHost* const host_;
  beast::tcp_stream stream_;  // its executor is the session's strand
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::empty_body>> parser_;
  bhttp::response<bhttp::string_body> out_;
  std::array<char, 4096> drain_{};
  size_t drained_ = 0;
  bool writing_ = false;
  bool close_after_write_ = false;
  bool stopping_ = false;
  bool closed_ = false;
  std::atomic<bool> idle_{false};  // see Idle
};

}  // namespace

class HttpServer::Impl final : public SessionHost {
 public:
  explicit Impl(Options options) : options_(std::move(options)) {}
  ~Impl() override { Stop(); }

  void Handle(std::string path, HttpHandler handler) {
    if (path.empty() || path.front() != '/') {
      runtime::port::Fatal("revkv ops: handler path '%s' must start with '/'", path.c_str());
    }
    auto shared = std::make_shared<const HttpHandler>(std::move(handler));
    std::lock_guard<std::mutex> lock(handlers_mu_);
    handlers_[std::move(path)] = std::move(shared);
  }

  absl::Status Start();
  void Stop();
  int port() const { return port_.load(std::memory_order_acquire); }

  HttpResponse Dispatch(const HttpRequest& request) override;
  void SessionClosed(uint64_t id) override {
    std::lock_guard<std::mutex> lock(conns_mu_);
    conns_.erase(id);
    evicting_.erase(id);
    if (conns_.empty()) conns_cv_.notify_all();
  }

 private:
  enum class Phase { kNew, kRunning, kStopped };

  absl::Status Listen(const std::string& host, const std::string& port);
  void Accept();
  void OnAccept(const error_code& error, tcp::socket socket);
  void AcceptLoopEnded() {
    std::lock_guard<std::mutex> lock(conns_mu_);
    accepting_ = false;
    conns_cv_.notify_all();
  }

  const Options options_;
  SessionLimits limits_{};
  Phase phase_ = Phase::kNew;  // owner thread only
  std::atomic<int> port_{0};   // release on Start, acquire in port(): the bound port, 0 before

  std::mutex handlers_mu_;
  std::map<std::string, std::shared_ptr<const HttpHandler>, std::less<>> handlers_
      ABSL_GUARDED_BY(handlers_mu_);

  std::mutex conns_mu_;
  std::condition_variable conns_cv_;
  std::map<uint64_t, std::weak_ptr<Session>> conns_ ABSL_GUARDED_BY(conns_mu_);  // by age, oldest first
  std::set<uint64_t> evicting_ ABSL_GUARDED_BY(conns_mu_);  // of conns_: idle ones asked to make room
  uint64_t next_connection_id_ ABSL_GUARDED_BY(conns_mu_) = 1;
  bool stopping_ ABSL_GUARDED_BY(conns_mu_) = false;
  bool accepting_ ABSL_GUARDED_BY(conns_mu_) = false;

  // Destroyed first (explicitly in Stop): see the file comment.
  std::unique_ptr<asio::io_context> io_;
  std::unique_ptr<tcp::acceptor> acceptor_;           // its executor is a strand
  std::unique_ptr<asio::steady_timer> accept_retry_;  // on the acceptor's strand
  std::vector<std::thread> threads_;
};

absl::Status HttpServer::Impl::Start() {
  if (phase_ != Phase::kNew) return absl::FailedPreconditionError("ops endpoint: Start called twice");
  if (options_.threads < 1 || options_.threads > kMaxThreads || options_.max_header_bytes < 256 ||
      options_.max_headers < 1 || options_.max_connections < 1 ||
      options_.idle_timeout <= absl::ZeroDuration() || options_.request_timeout <= absl::ZeroDuration() ||
      options_.write_timeout <= absl::ZeroDuration() || options_.shutdown_grace < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        fmt::format("ops endpoint: invalid options (threads 1-{}, max_header_bytes >= 256, max_headers >= 1, "
                    "max_connections >= 1, timeouts > 0)",
                    kMaxThreads));
  }
  std::string host, port;
  if (absl::Status status = SplitAddress(options_.bind_address, &host, &port); !status.ok()) return status;
  limits_.max_header_bytes = options_.max_header_bytes;
  limits_.max_headers = options_.max_headers;
  limits_.idle_timeout = ToChrono(options_.idle_timeout);
  limits_.request_timeout = ToChrono(options_.request_timeout);
  limits_.write_timeout = ToChrono(options_.write_timeout);
  limits_.linger_timeout = std::min<std::chrono::steady_clock::duration>(limits_.request_timeout, kMaxLinger);

  io_ = std::make_unique<asio::io_context>(options_.threads);
  if (absl::Status status = Listen(host, port); !status.ok()) {
    acceptor_.reset();
    io_.reset();
    return status;
  }
  accept_retry_ = std::make_unique<asio::steady_timer>(acceptor_->get_executor());
  {
    std::lock_guard<std::mutex> lock(conns_mu_);
    accepting_ = true;
  }
  asio::post(acceptor_->get_executor(), [this] { Accept(); });
  threads_.reserve(static_cast<size_t>(options_.threads));
  for (int i = 0; i < options_.threads; ++i) {
    threads_.emplace_back([this] { io_->run(); });
  }
  phase_ = Phase::kRunning;
  return absl::OkStatus();
}

absl::Status HttpServer::Impl::Listen(const std::string& host, const std::string& port) {
  error_code error;
  tcp::resolver resolver(*io_);
  const auto endpoints =
      resolver.resolve(host, port, tcp::resolver::passive | tcp::resolver::numeric_service, error);
  if (error) {
    return absl::InvalidArgumentError(
        fmt::format("ops endpoint: cannot resolve '{}': {}", options_.bind_address, error.message()));
  }
  // Try each address the name resolves to; the first that binds wins.
  for (const auto& entry : endpoints) {
    auto acceptor = std::make_unique<tcp::acceptor>(asio::make_strand(*io_));
    const tcp::endpoint endpoint = entry.endpoint();
    acceptor->open(endpoint.protocol(), error);
    // SO_REUSEADDR lets a restart bind while old connections linger in TIME_WAIT; a live listener on
    // the port still makes bind fail.
    if (!error) acceptor->set_option(tcp::acceptor::reuse_address(true), error);
    if (!error) acceptor->bind(endpoint, error);
    if (!error) acceptor->listen(asio::socket_base::max_listen_connections, error);
    if (!error) {
      acceptor_ = std::move(acceptor);
      port_.store(acceptor_->local_endpoint().port(), std::memory_order_release);
      return absl::OkStatus();
    }
  }
  if (!error) error = asio::error::host_not_found;
  return absl::UnavailableError(
      fmt::format("ops endpoint: cannot listen on {}: {}", options_.bind_address, error.message()));
}

void HttpServer::Impl::Accept() {
  acceptor_->async_accept(asio::make_strand(*io_), [this](const error_code& error, tcp::socket socket) {
    OnAccept(error, std::move(socket));
  });
}

void HttpServer::Impl::OnAccept(const error_code& error, tcp::socket socket) {
  if (error == asio::error::operation_aborted || !acceptor_->is_open()) {
    AcceptLoopEnded();
    return;
  }
  if (error) {
    // Out of descriptors or a transient network error: back off instead of spinning.
    spdlog::warn("ops endpoint: accept failed: {}; retrying in {} ms", error.message(),
                 std::chrono::duration_cast<std::chrono::milliseconds>(kAcceptRetryDelay).count());
    accept_retry_->expires_after(kAcceptRetryDelay);
    accept_retry_->async_wait([this](const error_code& wait_error) {
      if (wait_error || !acceptor_->is_open()) {
        AcceptLoopEnded();
      } else {
        Accept();
      }
    });
    return;
  }
  // At max_connections the oldest idle connection gives way to the new one (those already giving way
  // count as gone): silent or kept-alive connections must not lock health checks and scrapes out until
  // their idle timeout. Only when every connection is busy with a request is the new one closed.
  std::shared_ptr<Session> session;
  std::shared_ptr<Session> evicted;
  std::vector<std::shared_ptr<Session>>
      looked_at;  // released after the lock: a session's destructor takes it
  {
    std::lock_guard<std::mutex> lock(conns_mu_);
    const auto max = static_cast<size_t>(options_.max_connections);
    if (!stopping_ && conns_.size() - evicting_.size() >= max) {
      for (const auto& [id, weak] : conns_) {
        if (evicting_.count(id) != 0) continue;
        std::shared_ptr<Session> candidate = weak.lock();
        if (candidate != nullptr && candidate->Idle()) {
          evicted = std::move(candidate);
          evicting_.insert(id);
          break;
        }
        looked_at.push_back(std::move(candidate));
      }
    }
    if (!stopping_ && conns_.size() - evicting_.size() < max) {
      const uint64_t id = next_connection_id_++;
      session = std::make_shared<Session>(id, std::move(socket), limits_, this);
      conns_.emplace(id, session);
    }
  }
  if (evicted) evicted->GiveWay();
  if (session) {
    session->Start();
  } else {
    error_code ignored;
    // NOLINTNEXTLINE(bugprone-use-after-move): the socket was moved only when a session was made.
    socket.close(ignored);  // over max_connections, or stopping
  }
  Accept();
}

HttpResponse HttpServer::Impl::Dispatch(const HttpRequest& request) {
  std::shared_ptr<const HttpHandler> handler;
  {
    std::lock_guard<std::mutex> lock(handlers_mu_);
    auto it = handlers_.find(request.path);
    if (it != handlers_.end()) handler = it->second;
  }
  if (handler == nullptr) return http::ErrorResponse(404, fmt::format("no handler for {}", request.path));
  if (request.method != "GET" && request.method != "HEAD") {
    HttpResponse response = http::ErrorResponse(405, fmt::format("method {} not allowed", request.method));
    response.headers.emplace_back("Allow", "GET, HEAD");
    return response;
  }
  try {
    return (*handler)(request);
  } catch (const std::exception& e) {
    spdlog::error("ops endpoint: handler for {} failed: {}", request.path, e.what());
  } catch (...) {
    spdlog::error("ops endpoint: handler for {} failed with an unknown exception", request.path);
  }
  return http::ErrorResponse(500);
}

void HttpServer::Impl::Stop() {
  if (phase_ != Phase::kRunning) {
    phase_ = Phase::kStopped;
    return;
  }
  std::vector<std::weak_ptr<Session>> live;
  {
    std::lock_guard<std::mutex> lock(conns_mu_);
    stopping_ = true;
    for (const auto& [id, session] : conns_) live.push_back(session);
  }
  asio::post(acceptor_->get_executor(), [this] {
    error_code ignored;
    acceptor_->close(ignored);  // the pending accept completes with operation_aborted
    accept_retry_->cancel();
  });
  for (const std::weak_ptr<Session>& weak : live) {
    if (std::shared_ptr<Session> session = weak.lock()) session->Shutdown();
  }
  {
    std::unique_lock<std::mutex> lock(conns_mu_);
    conns_cv_.wait_for(lock, ToChrono(options_.shutdown_grace),
                       [this] { return conns_.empty() && !accepting_; });
  }
  io_->stop();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  accept_retry_.reset();
  acceptor_.reset();
  io_.reset();  // destroys the handlers that never ran, and with them the remaining sessions
  phase_ = Phase::kStopped;
}

HttpServer::HttpServer(Options options) : impl_(std::make_unique<Impl>(std::move(options))) {}
HttpServer::~HttpServer() = default;
void HttpServer::Handle(std::string path, HttpHandler handler) {
  impl_->Handle(std::move(path), std::move(handler));
}
absl::Status HttpServer::Start() { return impl_->Start(); }
void HttpServer::Stop() { impl_->Stop(); }
int HttpServer::port() const { return impl_->port(); }

}  // namespace revkv::server
