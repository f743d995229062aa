// revkv server — the operations HTTP endpoint (public header).
//
// A small HTTP/1.1 server on Boost.Beast over Boost.Asio for operators and scrapers: GET and HEAD on
// exact paths registered with Handle() (/metrics, /healthz, /debug/gc, ...). It is not a general web
// server: no request bodies, no TLS, no chunked encoding, exact path matching only.
//
// Behaviour a client sees:
//  - keep-alive (HTTP/1.1 by default, HTTP/1.0 with "Connection: keep-alive"); pipelined requests are
//    answered in order;
//  - 404 for a path nobody handles, 405 (with "Allow: GET, HEAD") for any other method on a handled
//    path, 400 for a malformed request, 431 when the request head exceeds max_header_bytes, 505 for an
//    HTTP version other than 1.x; after 400/431/505 the connection is closed; empty lines before a
//    request line are skipped, a head with bare line feeds or obsolete line folding is a 400;
//  - a request that carries a body is answered and the connection closed (the body is never read);
//  - a connection that sends nothing for idle_timeout, takes longer than request_timeout to send a
//    request head, or does not read a response within write_timeout is closed;
//  - at max_connections, a new connection makes the oldest idle one (silent since it connected, or
//    kept alive between requests) close; when every connection is in the middle of a request, the new
//    one is closed at once.
// Handlers run on the server's I/O threads, one request at a time per connection; they should be quick
// (rendering metrics is fine; blocking on disk or on the store's writers is not).
//
// Typical use:
//   HttpServer ops({.bind_address = config.metrics_listen});
//   ops.Handle("/metrics", [&](const HttpRequest&) {
//     return HttpResponse::Make(200, MetricsRegistry::kContentType, registry.Render());
//   });
//   if (absl::Status s = ops.Start(); !s.ok()) return Fail(s);   // "ops endpoint: cannot listen on ..."
//   ...
//   ops.Stop();
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace revkv::server {

// A parsed request head. Names of headers are lower-case; values have surrounding blanks removed.
struct HttpRequest {
  std::string method;  // as sent, case-sensitive: "GET", "HEAD", ...
  std::string target;  // as sent: "/debug/gc?format=json"
  std::string path;    // percent-decoded path without the query: "/debug/gc"
  std::map<std::string, std::string, std::less<>> query;     // decoded ('+' is a space); last one wins
  std::vector<std::pair<std::string, std::string>> headers;  // in order received
  int version_minor = 1;                                     // HTTP/1.<version_minor>

  // The first header named `name` (any case), or "" when absent.
  std::string_view Header(std::string_view name) const;
  // The query parameter `name`, or `fallback` when absent.
  std::string_view Query(std::string_view name, std::string_view fallback = "") const;
};

// What a handler returns. Content-Length, Date and Connection are added by the server.
struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers, e.g. Cache-Control

  static HttpResponse Make(int status, std::string_view content_type, std::string body);
  static HttpResponse Text(int status, std::string body);  // text/plain; charset=utf-8
  static HttpResponse Json(int status, std::string body);  // application/json
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct HttpServerOptions {
  std::string bind_address = "127.0.0.1:2381";      // "host:port"; "[::1]:port" for IPv6; port 0 = any free
  int threads = 1;                                  // I/O threads running handlers, 1..64
  size_t max_header_bytes = size_t{16} * 1024;      // request line + headers; more is answered with 431
  int max_headers = 64;                             // header fields per request; more is answered with 431
  int max_connections = 128;                        // open connections; more are closed on accept
  absl::Duration idle_timeout = absl::Seconds(60);  // waiting for the next request on a connection
  absl::Duration request_timeout = absl::Seconds(10);  // from a request's first byte to its full head
  absl::Duration write_timeout = absl::Seconds(10);    // sending one response
  absl::Duration shutdown_grace = absl::Seconds(2);    // Stop() lets responses in flight finish this long
};

// The ops HTTP endpoint. Thread-safe: Handle and port may be called from any thread at any time;
// Start and Stop from one owner thread (never from a handler).
class HttpServer {
 public:
  using Options = HttpServerOptions;

  explicit HttpServer(Options options);
  // Stops the server (see Stop).
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Routes GET and HEAD requests for exactly `path` (which starts with '/') to `handler`, replacing any
  // previous handler of that path. Takes effect for requests parsed after it returns. A handler that
  // throws is answered with 500.
  void Handle(std::string path, HttpHandler handler);

  // Binds, listens and starts the I/O threads; returns when the server accepts connections. Fails with
  // InvalidArgument for bad options or address and Unavailable when the address cannot be bound, e.g.
  // "ops endpoint: cannot listen on 127.0.0.1:2381: Address already in use". Blocks for name
  // resolution. Call at most once.
  absl::Status Start();

  // Stops accepting, closes idle connections, lets responses in flight finish for up to shutdown_grace,
  // then closes the rest and joins the I/O threads. Idempotent; blocks for at most about shutdown_grace.
  void Stop();

  // The bound port (the actual one when bind_address asked for port 0); 0 before Start.
  int port() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace revkv::server
