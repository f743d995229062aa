// The ops HTTP endpoint: listening socket, I/O threads, routing and shutdown.
//
// One asio::io_context is run by `threads` threads. The acceptor and every connection have a strand
// of their own, so a connection's handlers never run concurrently while different connections proceed
// in parallel. The server keeps a weak_ptr to each live connection (to shut them down in Stop); a
// connection removes itself from that map in its destructor.
//
// Stop: (1) under conns_mu_, mark stopping (no connection is registered afterwards) and take the live
// connections; (2) close the acceptor on its strand; (3) ask every connection to shut down; (4) wait,
// at most shutdown_grace, until every connection is gone and the accept loop has ended; (5) stop the
// io_context and join the threads; (6) destroy the io_context, which destroys the handlers that never
// ran and with them the last connections. Members used by connection destructors (conns_mu_, conns_)
// are declared before io_ so that they outlive it.
#include "server/ops/http_server.h"

#include <asio.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "fmt/format.h"
#include "server/ops/http_connection.h"
#include "server/ops/http_message.h"
#include "spdlog/spdlog.h"

namespace revkv::server {
namespace {

constexpr int kMaxThreads = 64;
constexpr auto kAcceptRetryDelay = std::chrono::milliseconds(100);
constexpr auto kMaxLinger = std::chrono::seconds(2);

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

}  // namespace

class HttpServer::Impl final : public http::ConnectionHost {
 public:
  explicit Impl(Options options) : options_(std::move(options)) {}
  ~Impl() { Stop(); }

  void Handle(std::string path, HttpHandler handler) {
    if (path.empty() || path.front() != '/') {
      std::fprintf(stderr, "revkv ops: handler path '%s' must start with '/'\n", path.c_str());
      std::abort();
    }
    auto shared = std::make_shared<const HttpHandler>(std::move(handler));
    std::lock_guard<std::mutex> lock(handlers_mu_);
    handlers_[std::move(path)] = std::move(shared);
  }

  absl::Status Start();
  void Stop();
  int port() const { return port_.load(std::memory_order_acquire); }

  HttpResponse Dispatch(const HttpRequest& request) override;
  void ConnectionClosed(uint64_t id) override {
    std::lock_guard<std::mutex> lock(conns_mu_);
    conns_.erase(id);
    if (conns_.empty()) conns_cv_.notify_all();
  }

 private:
  enum class Phase { kNew, kRunning, kStopped };

  absl::Status Listen(const std::string& host, const std::string& port);
  void Accept();
  void OnAccept(const asio::error_code& error, asio::ip::tcp::socket socket);
  void AcceptLoopEnded() {
    std::lock_guard<std::mutex> lock(conns_mu_);
    accepting_ = false;
    conns_cv_.notify_all();
  }

  const Options options_;
  http::ConnectionLimits limits_{};
  Phase phase_ = Phase::kNew;  // owner thread only
  std::atomic<int> port_{0};   // release on Start, acquire in port(): the bound port, 0 before

  std::mutex handlers_mu_;
  std::map<std::string, std::shared_ptr<const HttpHandler>, std::less<>> handlers_
      ABSL_GUARDED_BY(handlers_mu_);

  std::mutex conns_mu_;
  std::condition_variable conns_cv_;
  std::map<uint64_t, std::weak_ptr<http::Connection>> conns_ ABSL_GUARDED_BY(conns_mu_);
  uint64_t next_connection_id_ ABSL_GUARDED_BY(conns_mu_) = 1;
  bool stopping_ ABSL_GUARDED_BY(conns_mu_) = false;
  bool accepting_ ABSL_GUARDED_BY(conns_mu_) = false;

  // Destroyed first (explicitly in Stop): see the file comment.
  std::unique_ptr<asio::io_context> io_;
  std::unique_ptr<asio::ip::tcp::acceptor> acceptor_;  // its executor is a strand
  std::unique_ptr<asio::steady_timer> accept_retry_;   // on the acceptor's strand
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

  limits_.parse.max_header_bytes = options_.max_header_bytes;
  limits_.parse.max_headers = options_.max_headers;
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
  threads_.reserve(options_.threads);
  for (int i = 0; i < options_.threads; ++i) {
    threads_.emplace_back([this] { io_->run(); });
  }
  phase_ = Phase::kRunning;
  return absl::OkStatus();
}

absl::Status HttpServer::Impl::Listen(const std::string& host, const std::string& port) {
  asio::error_code error;
  asio::ip::tcp::resolver resolver(*io_);
  const auto endpoints = resolver.resolve(
      host, port, asio::ip::resolver_base::passive | asio::ip::resolver_base::numeric_service, error);
  if (error) {
    return absl::InvalidArgumentError(
        fmt::format("ops endpoint: cannot resolve '{}': {}", options_.bind_address, error.message()));
  }
  // Try each address the name resolves to; the first that binds wins.
  for (const auto& entry : endpoints) {
    auto acceptor = std::make_unique<asio::ip::tcp::acceptor>(asio::make_strand(*io_));
    const asio::ip::tcp::endpoint endpoint = entry.endpoint();
    acceptor->open(endpoint.protocol(), error);
    // SO_REUSEADDR lets a restart bind while old connections linger in TIME_WAIT; a live listener on
    // the port still makes bind fail.
    if (!error) acceptor->set_option(asio::ip::tcp::acceptor::reuse_address(true), error);
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
  acceptor_->async_accept(asio::make_strand(*io_),
                          [this](const asio::error_code& error, asio::ip::tcp::socket socket) {
                            OnAccept(error, std::move(socket));
                          });
}

void HttpServer::Impl::OnAccept(const asio::error_code& error, asio::ip::tcp::socket socket) {
  if (error == asio::error::operation_aborted || !acceptor_->is_open()) {
    AcceptLoopEnded();
    return;
  }
  if (error) {
    // Out of descriptors or a transient network error: back off instead of spinning.
    spdlog::warn("ops endpoint: accept failed: {}; retrying in {} ms", error.message(),
                 std::chrono::duration_cast<std::chrono::milliseconds>(kAcceptRetryDelay).count());
    accept_retry_->expires_after(kAcceptRetryDelay);
    accept_retry_->async_wait([this](const asio::error_code& wait_error) {
      if (wait_error || !acceptor_->is_open()) {
        AcceptLoopEnded();
      } else {
        Accept();
      }
    });
    return;
  }
  std::shared_ptr<http::Connection> connection;
  {
    std::lock_guard<std::mutex> lock(conns_mu_);
    if (!stopping_ && conns_.size() < static_cast<size_t>(options_.max_connections)) {
      const uint64_t id = next_connection_id_++;
      connection = std::make_shared<http::Connection>(id, std::move(socket), limits_, this);
      conns_.emplace(id, connection);
    }
  }
  if (connection) {
    connection->Start();
  } else {
    asio::error_code ignored;
    // NOLINTNEXTLINE(bugprone-use-after-move): the socket was moved only when a connection was made.
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
  std::vector<std::weak_ptr<http::Connection>> live;
  {
    std::lock_guard<std::mutex> lock(conns_mu_);
    stopping_ = true;
    for (const auto& [id, connection] : conns_) live.push_back(connection);
  }
  asio::post(acceptor_->get_executor(), [this] {
    asio::error_code ignored;
    acceptor_->close(ignored);  // the pending accept completes with operation_aborted
    accept_retry_->cancel();
  });
  for (const auto& weak : live) {
    if (auto connection = weak.lock()) connection->Shutdown();
  }
  {
    std::unique_lock<std::mutex> lock(conns_mu_);
    conns_cv_.wait_for(lock, ToChrono(options_.shutdown_grace),
                       [this] { return conns_.empty() && !accepting_; });
  }
  io_->stop();
  for (std::thread& thread : threads_) thread.join();
  threads_.clear();
  accept_retry_.reset();
  acceptor_.reset();
  io_.reset();  // destroys handlers that never ran, and with them the remaining connections
  phase_ = Phase::kStopped;
}

// ---------------------------------------------------------------------------------------------------

HttpServer::HttpServer(Options options) : impl_(std::make_unique<Impl>(std::move(options))) {}
HttpServer::~HttpServer() = default;
void HttpServer::Handle(std::string path, HttpHandler handler) {
  impl_->Handle(std::move(path), std::move(handler));
}
absl::Status HttpServer::Start() { return impl_->Start(); }
void HttpServer::Stop() { impl_->Stop(); }
int HttpServer::port() const { return impl_->port(); }

}  // namespace revkv::server
