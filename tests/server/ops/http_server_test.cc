// Tests of the ops HTTP endpoint over real TCP connections (plain blocking sockets with receive
// timeouts, so a broken server fails a test instead of hanging it).
#include "server/ops/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "server/ops/metrics.h"

namespace revkv::server {
namespace {

using Clock = std::chrono::steady_clock;

struct Response {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;

  std::string Header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

// A blocking HTTP client on a plain socket. Every read gives up after `timeout`.
class TestClient {
 public:
  explicit TestClient(int port, std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{};
    tv.tv_sec = timeout.count() / 1000;
    tv.tv_usec = (timeout.count() % 1000) * 1000;
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~TestClient() { close(fd_); }
  TestClient(const TestClient&) = delete;
  TestClient& operator=(const TestClient&) = delete;

  bool connected() const { return connected_; }

  // Sends all of `data`; false if the peer closed or reset.
  bool Send(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Reads one response; nullopt on EOF, reset or timeout before a full response.
  std::optional<Response> ReadResponse(bool head_request = false) {
    size_t head_end;
    while ((head_end = buffer_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill()) return std::nullopt;
    }
    Response response;
    const std::string head = buffer_.substr(0, head_end);
    buffer_.erase(0, head_end + 4);
    size_t line_end = head.find("\r\n");
    const std::string status_line = head.substr(0, line_end);
    if (status_line.rfind("HTTP/1.1 ", 0) != 0) return std::nullopt;
    response.status = std::stoi(status_line.substr(9, 3));
    while (line_end != std::string::npos) {
      const size_t start = line_end + 2;
      line_end = head.find("\r\n", start);
      const std::string line =
          head.substr(start, line_end == std::string::npos ? std::string::npos : line_end - start);
      const size_t colon = line.find(':');
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      response.headers[name] = line.substr(colon + 2);
    }
    size_t length = 0;
    if (auto it = response.headers.find("content-length"); it != response.headers.end() && !head_request) {
      length = std::stoul(it->second);
    }
    while (buffer_.size() < length) {
      if (!Fill()) return std::nullopt;
    }
    response.body = buffer_.substr(0, length);
    buffer_.erase(0, length);
    return response;
  }

  // True if the server closes the connection (EOF or reset) within the receive timeout; bytes that
  // arrive first are appended to `rest`.
  bool WaitForClose(std::string* rest = nullptr) {
    while (true) {
      char buf[4096];
      const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET;  // EAGAIN: timed out, still open
      if (rest != nullptr) rest->append(buf, static_cast<size_t>(n));
    }
  }

 private:
  bool Fill() {
    char buf[4096];
    const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) return false;
    buffer_.append(buf, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool connected_ = false;
  std::string buffer_;
};

std::string Get(std::string_view target, std::string_view extra_headers = "") {
  return std::string("GET ") + std::string(target) + " HTTP/1.1\r\nHost: localhost\r\n" +
         std::string(extra_headers) + "\r\n";
}

HttpServer::Options LocalOptions() {
  HttpServer::Options options;
  options.bind_address = "127.0.0.1:0";
  return options;
}

// A server on an ephemeral port with /metrics (a real registry), /echo (path and query) and /throw.
class HttpServerTest : public testing::Test {
 protected:
  void StartServer(HttpServer::Options options = LocalOptions()) {
    server_ = std::make_unique<HttpServer>(options);
    requests_ = &registry_.AddCounter("revkv_test_requests_total", "Requests seen by the test handlers.");
    server_->Handle("/metrics", [this](const HttpRequest&) {
      requests_->Increment();
      return HttpResponse::Make(200, MetricsRegistry::kContentType, registry_.Render());
    });
    server_->Handle("/echo", [](const HttpRequest& request) {
      return HttpResponse::Json(200, "{\"path\":\"" + request.path + "\",\"format\":\"" +
                                         std::string(request.Query("format", "text")) + "\"}");
    });
    server_->Handle("/throw", [](const HttpRequest&) -> HttpResponse { throw std::runtime_error("boom"); });
    const absl::Status status = server_->Start();
    ASSERT_TRUE(status.ok()) << status;
    ASSERT_GT(server_->port(), 0);
  }

  int port() const { return server_->port(); }

  // A fresh connection serves a request: the server is still healthy.
  void ExpectServing() {
    TestClient client(port());
    ASSERT_TRUE(client.connected());
    ASSERT_TRUE(client.Send(Get("/echo")));
    const std::optional<Response> response = client.ReadResponse();
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->status, 200);
  }

  MetricsRegistry registry_;
  Counter* requests_ = nullptr;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerTest, ServesMetricsOnAnEphemeralPort) {
  StartServer();
  TestClient client(port());
  ASSERT_TRUE(client.connected());
  ASSERT_TRUE(client.Send(Get("/metrics")));
  const std::optional<Response> response = client.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->Header("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(response->Header("content-length"), std::to_string(response->body.size()));
  EXPECT_FALSE(response->Header("date").empty());
  EXPECT_NE(response->body.find("# TYPE revkv_test_requests_total counter\nrevkv_test_requests_total 1\n"),
            std::string::npos)
      << response->body;
}

TEST_F(HttpServerTest, UnknownPathIs404) {
  StartServer();
  TestClient client(port());
  ASSERT_TRUE(client.Send(Get("/nope")));
  const std::optional<Response> response = client.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 404);
  EXPECT_EQ(response->Header("content-type"), "text/plain; charset=utf-8");
  // The connection stays usable after a 404.
  ASSERT_TRUE(client.Send(Get("/echo")));
  ASSERT_TRUE(client.ReadResponse().has_value());
}

TEST_F(HttpServerTest, OtherMethodsAre405WithAllow) {
  StartServer();
  for (const char* method : {"PUT", "DELETE", "OPTIONS", "PATCH"}) {
    TestClient client(port());
    ASSERT_TRUE(client.Send(std::string(method) + " /metrics HTTP/1.1\r\nHost: x\r\n\r\n"));
    const std::optional<Response> response = client.ReadResponse();
    ASSERT_TRUE(response.has_value()) << method;
    EXPECT_EQ(response->status, 405) << method;
    EXPECT_EQ(response->Header("allow"), "GET, HEAD");
  }
  // A POST with a body is answered, then the connection is closed (the body is never read).
  TestClient client(port());
  ASSERT_TRUE(client.Send("POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"));
  const std::optional<Response> response = client.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 405);
  EXPECT_EQ(response->Header("connection"), "close");
  EXPECT_TRUE(client.WaitForClose());
}

TEST_F(HttpServerTest, HeadSendsHeadersWithoutBody) {
  StartServer();
  TestClient client(port());
  ASSERT_TRUE(client.Send(Get("/echo?format=json")));
  const std::optional<Response> get = client.ReadResponse();
  ASSERT_TRUE(get.has_value());
  ASSERT_TRUE(client.Send("HEAD /echo?format=json HTTP/1.1\r\nHost: x\r\n\r\n"));
  const std::optional<Response> head = client.ReadResponse(/*head_request=*/true);
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->Header("content-length"), std::to_string(get->body.size()));
  EXPECT_EQ(head->body, "");
  // No body bytes follow: the next response starts right away.
  ASSERT_TRUE(client.Send(Get("/echo")));
  const std::optional<Response> next = client.ReadResponse();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->status, 200);
}

TEST_F(HttpServerTest, QueryStringReachesTheHandler) {
  StartServer();
  TestClient client(port());
  ASSERT_TRUE(client.Send(Get("/echo?format=json&other=1")));
  const std::optional<Response> response = client.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->Header("content-type"), "application/json");
  EXPECT_EQ(response->body, "{\"path\":\"/echo\",\"format\":\"json\"}");
}

TEST_F(HttpServerTest, KeepAliveServesTwoRequestsOnOneConnection) {
  StartServer();
  TestClient client(port());
  ASSERT_TRUE(client.Send(Get("/metrics")));
  const std::optional<Response> first = client.ReadResponse();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->headers.count("connection"), 0u);  // HTTP/1.1 keep-alive is implicit
  ASSERT_TRUE(client.Send(Get("/metrics")));
  const std::optional<Response> second = client.ReadResponse();
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->status, 200);
  EXPECT_NE(second->body.find("revkv_test_requests_total 2\n"), std::string::npos);
}

TEST_F(HttpServerTest, PipelinedRequestsAreAnsweredInOrder) {
  StartServer();
  TestClient client(port());
  ASSERT_TRUE(
      client.Send(Get("/echo?format=a") + Get("/nope") + Get("/echo?format=c", "Connection: close\r\n")));
  const std::optional<Response> a = client.ReadResponse();
  const std::optional<Response> b = client.ReadResponse();
  const std::optional<Response> c = client.ReadResponse();
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a->body, "{\"path\":\"/echo\",\"format\":\"a\"}");
  EXPECT_EQ(b->status, 404);
  EXPECT_EQ(c->body, "{\"path\":\"/echo\",\"format\":\"c\"}");
  EXPECT_EQ(c->Header("connection"), "close");
  EXPECT_TRUE(client.WaitForClose());
}

TEST_F(HttpServerTest, Http10ClosesUnlessAskedToKeepAlive) {
  StartServer();
  {
    TestClient client(port());
    ASSERT_TRUE(client.Send("GET /echo HTTP/1.0\r\n\r\n"));
    const std::optional<Response> response = client.ReadResponse();
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->Header("connection"), "close");
    EXPECT_TRUE(client.WaitForClose());
  }
  TestClient client(port());
  ASSERT_TRUE(client.Send("GET /echo HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
  const std::optional<Response> response = client.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->Header("connection"), "keep-alive");
  ASSERT_TRUE(client.Send("GET /echo HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
  EXPECT_TRUE(client.ReadResponse().has_value());
}

TEST_F(HttpServerTest, GarbageGets400AndCloseWhileOthersAreServed) {
  StartServer();
  TestClient bystander(port());  // an open keep-alive connection, unaffected
  ASSERT_TRUE(bystander.Send(Get("/echo")));
  ASSERT_TRUE(bystander.ReadResponse().has_value());

  for (const std::string& garbage :
       {std::string("\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03", 11), std::string(100, '\0'),
        std::string("GET / HTTP/1.1\r\nHost: x\r\nBroken header\r\n\r\n"), std::string("\r\n\r\n\r\n")}) {
    TestClient client(port());
    ASSERT_TRUE(client.Send(garbage));
    std::string rest;
    if (garbage != "\r\n\r\n\r\n") {
      EXPECT_TRUE(client.WaitForClose(&rest));
      EXPECT_EQ(rest.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << rest;
      EXPECT_NE(rest.find("Connection: close\r\n"), std::string::npos);
    }
  }
  ASSERT_TRUE(bystander.Send(Get("/echo")));
  EXPECT_TRUE(bystander.ReadResponse().has_value());
  ExpectServing();
}

// Each malformed request head is answered with its status and the connection closed; the server goes on.
TEST_F(HttpServerTest, MalformedRequestsGetTheirStatusAndClose) {
  StartServer();
  struct BadCase {
    const char* name;
    std::string text;
    int status;
  };
  const BadCase cases[] = {
      {"no version", "GET /\r\n\r\n", 400},
      {"double space", "GET  / HTTP/1.1\r\nHost: x\r\n\r\n", 400},
      {"lower-case version", "GET / http/1.1\r\nHost: x\r\n\r\n", 400},
      {"HTTP/2", "GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505},
      {"relative target", "GET metrics HTTP/1.1\r\nHost: x\r\n\r\n", 400},
      {"asterisk target", "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", 400},
      {"missing host", "GET / HTTP/1.1\r\n\r\n", 400},
      {"two hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
      {"space before colon", "GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400},
      {"no colon", "GET / HTTP/1.1\r\nHost x\r\n\r\n", 400},
      {"obsolete folding", "GET / HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n  2\r\n\r\n", 400},
      {"NUL in header", std::string("GET / HTTP/1.1\r\nHost: x\0y\r\n\r\n", 29), 400},
      {"bad content length", "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1x\r\n\r\n", 400},
      {"conflicting lengths", "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
       400},
      {"bad percent escape", "GET /a%zz HTTP/1.1\r\nHost: x\r\n\r\n", 400},
      {"encoded NUL", "GET /a%00 HTTP/1.1\r\nHost: x\r\n\r\n", 400},
      {"bad query escape", "GET /a?x=%4 HTTP/1.1\r\nHost: x\r\n\r\n", 400},
  };
  for (const BadCase& c : cases) {
    TestClient client(port());
    ASSERT_TRUE(client.Send(c.text)) << c.name;
    std::string rest;
    EXPECT_TRUE(client.WaitForClose(&rest)) << c.name;
    EXPECT_EQ(rest.rfind("HTTP/1.1 " + std::to_string(c.status) + " ", 0), 0u) << c.name << ": " << rest;
    EXPECT_NE(rest.find("Connection: close\r\n"), std::string::npos) << c.name;
  }
  ExpectServing();
}

// Empty lines before a request line are skipped (RFC 9112 section 2.2); a head with bare line feeds is
// refused at once (Beast's parser requires CRLF; RFC 9112 lets a server do either), not left to time out.
TEST_F(HttpServerTest, LeadingEmptyLinesAreSkippedAndBareLineFeedsRefusedAtOnce) {
  StartServer();
  {
    TestClient client(port());
    ASSERT_TRUE(client.Send("\r\n\r\n" + Get("/echo")));
    const std::optional<Response> response = client.ReadResponse();
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->status, 200);
  }
  TestClient client(port(), std::chrono::milliseconds(2000));
  ASSERT_TRUE(client.Send("GET /echo HTTP/1.1\nHost: x\n\n"));
  std::string rest;
  EXPECT_TRUE(client.WaitForClose(&rest));
  EXPECT_EQ(rest.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << rest;
}

TEST_F(HttpServerTest, TooManyHeaderFieldsGet431) {
  HttpServer::Options options = LocalOptions();
  options.max_headers = 3;
  StartServer(options);
  {
    TestClient client(port());
    ASSERT_TRUE(client.Send(Get("/echo", "A: 1\r\nB: 2\r\n")));  // Host, A, B: three
    const std::optional<Response> response = client.ReadResponse();
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->status, 200);
  }
  TestClient client(port());
  ASSERT_TRUE(client.Send(Get("/echo", "A: 1\r\nB: 2\r\nC: 3\r\n")));
  std::string rest;
  EXPECT_TRUE(client.WaitForClose(&rest));
  EXPECT_EQ(rest.rfind("HTTP/1.1 431 Request Header Fields Too Large\r\n", 0), 0u) << rest;
}

// The body of a request is never read: the request is answered and the connection closed, so the body
// cannot be taken for the next request.
TEST_F(HttpServerTest, ARequestWithABodyIsAnsweredAndTheConnectionClosed) {
  StartServer();
  for (const std::string framing : {"Content-Length: 5\r\n", "Transfer-Encoding: chunked\r\n"}) {
    TestClient client(port());
    ASSERT_TRUE(client.Send("POST /echo HTTP/1.1\r\nHost: x\r\n" + framing + "\r\nGET /x HTTP/1.1\r\n"));
    const std::optional<Response> response = client.ReadResponse();
    ASSERT_TRUE(response.has_value()) << framing;
    EXPECT_EQ(response->status, 405) << framing;
    EXPECT_EQ(response->Header("connection"), "close") << framing;
    EXPECT_TRUE(client.WaitForClose()) << framing;
  }
  TestClient client(port());  // Content-Length: 0 is no body: the connection stays open
  ASSERT_TRUE(client.Send(Get("/echo", "Content-Length: 0\r\n")));
  ASSERT_TRUE(client.ReadResponse().has_value());
  ASSERT_TRUE(client.Send(Get("/echo", "Connection: close\r\n")));
  const std::optional<Response> last = client.ReadResponse();
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->Header("connection"), "close");
  EXPECT_TRUE(client.WaitForClose());
}

TEST_F(HttpServerTest, OversizedHeadersGet431AndClose) {
  HttpServer::Options options = LocalOptions();
  options.max_header_bytes = 4096;
  StartServer(options);
  TestClient client(port());
  // Sent in one go, larger than the limit; the server answers once it has seen 4 KiB.
  (void)client.Send("GET /metrics HTTP/1.1\r\nHost: x\r\nX-Filler: " + std::string(32 * 1024, 'a') +
                    "\r\n\r\n");
  std::string rest;
  EXPECT_TRUE(client.WaitForClose(&rest));
  EXPECT_EQ(rest.rfind("HTTP/1.1 431 Request Header Fields Too Large\r\n", 0), 0u) << rest.substr(0, 200);
  ExpectServing();
}

TEST_F(HttpServerTest, HandlerExceptionIs500) {
  StartServer();
  TestClient client(port());
  ASSERT_TRUE(client.Send(Get("/throw")));
  const std::optional<Response> response = client.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 500);
  ExpectServing();
}

TEST_F(HttpServerTest, IdleConnectionIsClosedAfterIdleTimeout) {
  HttpServer::Options options = LocalOptions();
  options.idle_timeout = absl::Milliseconds(200);
  StartServer(options);
  TestClient client(port());
  const auto start = Clock::now();
  EXPECT_TRUE(client.WaitForClose());
  const auto elapsed = Clock::now() - start;
  EXPECT_GE(elapsed, std::chrono::milliseconds(150));
  EXPECT_LT(elapsed, std::chrono::milliseconds(3000));
}

TEST_F(HttpServerTest, SlowRequestHeadIsCutOffAtRequestTimeout) {
  HttpServer::Options options = LocalOptions();
  options.request_timeout = absl::Milliseconds(300);
  StartServer(options);
  TestClient client(port());
  // A slowloris client: one byte every 50 ms keeps the connection busy but never finishes the head.
  const auto start = Clock::now();
  const std::string slow = "GET /metrics HTTP/1.1\r\nHost: localhost\r\nX-Slow: " + std::string(200, 'a');
  bool cut_off = false;
  for (char c : slow) {
    if (!client.Send(std::string(1, c))) {
      cut_off = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (Clock::now() - start > std::chrono::seconds(3)) break;
  }
  EXPECT_TRUE(cut_off || client.WaitForClose());
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
}

// Connections in the middle of a request (here: a head not finished) hold their places: one more is
// closed at once, until a place is free.
TEST_F(HttpServerTest, ExtraConnectionsBeyondTheLimitAreClosed) {
  HttpServer::Options options = LocalOptions();
  options.max_connections = 2;
  StartServer(options);
  auto a = std::make_unique<TestClient>(port());
  auto b = std::make_unique<TestClient>(port());
  ASSERT_TRUE(a->Send(Get("/echo")) && b->Send(Get("/echo")));
  ASSERT_TRUE(a->ReadResponse().has_value());
  ASSERT_TRUE(b->ReadResponse().has_value());
  const std::string unfinished = "GET /echo HTTP/1.1\r\nHost: localhost\r\n";
  ASSERT_TRUE(a->Send(unfinished) && b->Send(unfinished));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // both are reading a head now
  TestClient c(port());
  EXPECT_TRUE(c.WaitForClose());
  a.reset();  // frees a slot
  bool served = false;
  for (int attempt = 0; attempt < 50 && !served; ++attempt) {
    TestClient d(port(), std::chrono::milliseconds(500));
    served = d.Send(Get("/echo")) && d.ReadResponse().has_value();
    if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(served);
}

// At the limit, idle connections (silent since they connected, or kept alive between requests) give
// way to a new one, oldest first: a client that holds connections open without using them cannot lock
// health checks and scrapes out until the idle timeout.
TEST_F(HttpServerTest, IdleConnectionsGiveWayToANewOneAtTheLimit) {
  HttpServer::Options options = LocalOptions();
  options.max_connections = 2;
  StartServer(options);
  TestClient kept_alive(port());
  ASSERT_TRUE(kept_alive.Send(Get("/echo")));
  ASSERT_TRUE(kept_alive.ReadResponse().has_value());  // and now idle between requests
  TestClient silent(port());
  ASSERT_TRUE(silent.connected());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // both accepted, both idle
  // Each new client is served (and stays, kept alive); the oldest idle connection makes room for it.
  TestClient first(port());
  ASSERT_TRUE(first.Send(Get("/echo")));
  std::optional<Response> response = first.ReadResponse();
  ASSERT_TRUE(response.has_value()) << "a client was refused while two idle connections held the places";
  EXPECT_EQ(response->status, 200);
  EXPECT_TRUE(kept_alive.WaitForClose());
  TestClient second(port());
  ASSERT_TRUE(second.Send(Get("/echo")));
  response = second.ReadResponse();
  ASSERT_TRUE(response.has_value()) << "a client was refused while idle connections held the places";
  EXPECT_EQ(response->status, 200);
  EXPECT_TRUE(silent.WaitForClose());
  // The client served first is still connected and served.
  ASSERT_TRUE(first.Send(Get("/echo")));
  EXPECT_TRUE(first.ReadResponse().has_value());
}

TEST_F(HttpServerTest, ManyClientsOnSeveralThreads) {
  HttpServer::Options options = LocalOptions();
  options.threads = 4;
  StartServer(options);
  constexpr int kClients = 8;
  constexpr int kRequests = 50;
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      TestClient client(port());
      for (int r = 0; r < kRequests; ++r) {
        const std::string path = (i + r) % 2 == 0 ? "/metrics" : "/echo?format=" + std::to_string(r);
        if (!client.Send(Get(path))) return;
        const std::optional<Response> response = client.ReadResponse();
        if (response && response->status == 200) ok.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(ok.load(), kClients * kRequests);
}

TEST_F(HttpServerTest, HandlerRegisteredAfterStartIsServed) {
  StartServer();
  server_->Handle("/healthz", [](const HttpRequest&) { return HttpResponse::Text(200, "ok\n"); });
  TestClient client(port());
  ASSERT_TRUE(client.Send(Get("/healthz")));
  const std::optional<Response> response = client.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->body, "ok\n");
}

TEST_F(HttpServerTest, StopWithConnectedClientsReturnsPromptlyAndClosesThem) {
  HttpServer::Options options = LocalOptions();
  options.shutdown_grace = absl::Milliseconds(500);
  StartServer(options);
  TestClient idle(port());
  ASSERT_TRUE(idle.Send(Get("/echo")));
  ASSERT_TRUE(idle.ReadResponse().has_value());  // surely accepted and in keep-alive
  TestClient partial(port());
  ASSERT_TRUE(partial.Send("GET /metrics HTTP/1.1\r\nHo"));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));

  const auto start = Clock::now();
  server_->Stop();
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(450));  // nothing in flight: no grace wait
  EXPECT_TRUE(idle.WaitForClose());
  EXPECT_TRUE(partial.WaitForClose());
  TestClient late(port(), std::chrono::milliseconds(500));
  EXPECT_FALSE(late.connected());
  server_->Stop();  // idempotent
}

TEST_F(HttpServerTest, StopForceClosesASlowReaderAfterTheGrace) {
  HttpServer::Options options = LocalOptions();
  options.shutdown_grace = absl::Milliseconds(300);
  StartServer(options);
  const std::string big(16 * 1024 * 1024, 'x');
  server_->Handle("/big", [&big](const HttpRequest&) { return HttpResponse::Text(200, big); });
  TestClient client(port());
  ASSERT_TRUE(client.Send(Get("/big")));  // and never read: the server's write stays pending
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto start = Clock::now();
  server_->Stop();
  const auto elapsed = Clock::now() - start;
  EXPECT_GE(elapsed, std::chrono::milliseconds(250));
  EXPECT_LT(elapsed, std::chrono::milliseconds(3000));
}

TEST(HttpServerStart, TakenPortIsAClearError) {
  // Occupy a port with a plain listening socket.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int taken = ntohs(addr.sin_port);

  HttpServer::Options options;
  options.bind_address = "127.0.0.1:" + std::to_string(taken);
  HttpServer server(options);
  const absl::Status status = server.Start();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(std::string(status.message()),
            "ops endpoint: cannot listen on 127.0.0.1:" + std::to_string(taken) + ": Address already in use");
  EXPECT_EQ(server.port(), 0);
  server.Stop();  // harmless after a failed Start
  close(fd);
}

TEST(HttpServerStart, BadAddressesAreInvalidArgument) {
  for (const char* address :
       {"nonsense", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:http"}) {
    HttpServer::Options options;
    options.bind_address = address;
    HttpServer server(options);
    const absl::Status status = server.Start();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << address << ": " << status;
  }
  HttpServer::Options options = LocalOptions();
  options.threads = 0;
  EXPECT_EQ(HttpServer(options).Start().code(), absl::StatusCode::kInvalidArgument);
}

TEST(HttpServerStart, SecondStartFails) {
  HttpServer server({.bind_address = "127.0.0.1:0", .threads = 2});  // designated initializers work
  ASSERT_TRUE(server.Start().ok());
  EXPECT_EQ(server.Start().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(HttpServerStart, DestructorStopsARunningServer) {
  int port;
  {
    HttpServer server(LocalOptions());
    ASSERT_TRUE(server.Start().ok());
    port = server.port();
    TestClient client(port);
    ASSERT_TRUE(client.connected());
  }
  TestClient client(port, std::chrono::milliseconds(500));
  EXPECT_FALSE(client.connected());
}

}  // namespace
}  // namespace revkv::server
