// The gRPC port's listening sockets and accepting thread (grpc_listener.h).
#include "server/rpc/grpc_listener.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace revkv::server {
namespace {

constexpr int kBacklog = 4096;  // the kernel caps it at net.core.somaxconn

struct HostPort {
  std::string host;  // without brackets
  std::string port;
};

absl::StatusOr<HostPort> Split(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return absl::InvalidArgumentError("no port");
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return HostPort{host, address.substr(colon + 1)};
}

// One listening socket on `addr`; -1 with errno set on failure.
int Listen(const sockaddr* addr, socklen_t len, bool dual_stack) {
  const int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const int one = 1, zero = 0;
  // SO_REUSEADDR: a restarted server binds although connections of the previous one linger in
  // TIME_WAIT. Never SO_REUSEPORT: a second server must fail to bind, not share the port.
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));  // inherited by accepted sockets
  if (addr->sa_family == AF_INET6)
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, dual_stack ? &zero : &one, sizeof(one));
  if (bind(fd, addr, len) != 0 || listen(fd, kBacklog) != 0) {
    const int saved = errno;
    close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

int BoundPort(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return 0;
  if (addr.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
}

void SetPort(sockaddr* addr, int port) {
  if (addr->sa_family == AF_INET) {
    reinterpret_cast<sockaddr_in*>(addr)->sin_port = htons(static_cast<uint16_t>(port));
  } else {
    reinterpret_cast<sockaddr_in6*>(addr)->sin6_port = htons(static_cast<uint16_t>(port));
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<GrpcListener>> GrpcListener::Bind(const std::string& address) {
  const auto fail = [&](const std::string& why) {
    return absl::UnavailableError(absl::StrCat("cannot listen for gRPC on ", address, ": ", why));
  };
  absl::StatusOr<HostPort> parts = Split(address);
  if (!parts.ok()) return fail(std::string(parts.status().message()));
  int port = 0;
  if (!absl::SimpleAtoi(parts->port, &port) || port < 0 || port > 65535) return fail("bad port");

  // The wildcard addresses bind the IPv6 wildcard with IPv4 mapped in (as gRPC does), or the IPv4 one
  // where IPv6 is off.
  std::vector<std::pair<sockaddr_storage, socklen_t>> addresses;
  const bool wildcard = parts->host == "0.0.0.0" || parts->host == "::";
  if (wildcard) {
    sockaddr_storage v6{};
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&v6);
    in6->sin6_family = AF_INET6;
    in6->sin6_addr = in6addr_any;
    addresses.emplace_back(v6, static_cast<socklen_t>(sizeof(sockaddr_in6)));
  } else {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* found = nullptr;
    if (const int rc = getaddrinfo(parts->host.c_str(), parts->port.c_str(), &hints, &found); rc != 0) {
      return fail(absl::StrCat("cannot resolve '", parts->host, "': ", gai_strerror(rc)));
    }
    for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
      sockaddr_storage s{};
      std::memcpy(&s, a->ai_addr, a->ai_addrlen);
      addresses.emplace_back(s, a->ai_addrlen);
    }
    freeaddrinfo(found);
  }

  std::vector<int> fds;
  std::string first_error;
  for (auto& [addr, len] : addresses) {
    auto* sa = reinterpret_cast<sockaddr*>(&addr);
    if (port != 0 || !fds.empty()) SetPort(sa, port);  // port 0: the first bind picks it for all
    int fd = Listen(sa, len, wildcard);
    if (fd < 0 && wildcard && (errno == EAFNOSUPPORT || errno == EADDRNOTAVAIL)) {
      sockaddr_in v4{};  // no IPv6 here: the IPv4 wildcard
      v4.sin_family = AF_INET;
      v4.sin_addr.s_addr = htonl(INADDR_ANY);
      v4.sin_port = htons(static_cast<uint16_t>(port));
      fd = Listen(reinterpret_cast<sockaddr*>(&v4), sizeof(v4), false);
    }
    if (fd < 0) {
      // Another address of the same name that this host cannot bind (::1 with IPv6 off) is skipped; a
      // port in use is not.
      if (errno == EADDRINUSE || first_error.empty()) first_error = std::strerror(errno);
      if (errno == EADDRINUSE) {
        for (int f : fds) close(f);
        return fail(first_error);
      }
      continue;
    }
    if (fds.empty()) port = BoundPort(fd);
    fds.push_back(fd);
  }
  if (fds.empty()) return fail(first_error.empty() ? "no address to bind" : first_error);
  const int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) {
    for (int f : fds) close(f);
    return fail(absl::StrCat("eventfd: ", std::strerror(errno)));
  }
  std::unique_ptr<GrpcListener> listener(new GrpcListener(std::move(fds), port, wake));
  listener->thread_ = std::thread([l = listener.get()] { l->AcceptLoop(); });
  return listener;
}

GrpcListener::GrpcListener(std::vector<int> fds, int port, int wake_fd)
    : fds_(std::move(fds)), port_(port), wake_fd_(wake_fd) {}

GrpcListener::~GrpcListener() { Close(); }

void GrpcListener::SetAcceptor(Acceptor* acceptor) {
  std::lock_guard<std::mutex> lock(mu_);
  acceptor_ = acceptor;
}

void GrpcListener::Release(Acceptor* acceptor) {
  std::lock_guard<std::mutex> lock(mu_);
  if (acceptor_ == acceptor) acceptor_ = nullptr;
}

void GrpcListener::Close() {
  std::call_once(closed_, [this] {
    const uint64_t one = 1;
    if (write(wake_fd_, &one, sizeof(one)) < 0) {
      spdlog::error("gRPC listener: cannot wake the accepting thread: {}", std::strerror(errno));
    }
    if (thread_.joinable()) thread_.join();
    for (int fd : fds_) close(fd);
    close(wake_fd_);
    std::lock_guard<std::mutex> lock(mu_);
    acceptor_ = nullptr;
  });
}

void GrpcListener::AcceptLoop() {
  std::vector<pollfd> polled;
  for (int fd : fds_) polled.push_back(pollfd{fd, POLLIN, 0});
  polled.push_back(pollfd{wake_fd_, POLLIN, 0});
  for (;;) {
    for (pollfd& p : polled) p.revents = 0;
    if (poll(polled.data(), polled.size(), -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("gRPC listener: poll: {}", std::strerror(errno));
      return;
    }
    if (polled.back().revents != 0) return;  // Close()
    for (size_t i = 0; i + 1 < polled.size(); ++i) {
      if (polled[i].revents == 0) continue;
      for (;;) {
        const int fd = accept4(polled[i].fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
          if (errno == EINTR || errno == ECONNABORTED) continue;
          if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
            // Out of descriptors: the connection waits in the backlog; try again shortly rather than spin.
            spdlog::error("gRPC listener: cannot accept a connection: {}", std::strerror(errno));
            poll(nullptr, 0, 100);
          }
          break;  // EAGAIN: the backlog is empty
        }
        std::lock_guard<std::mutex> lock(mu_);
        if (acceptor_ == nullptr) {
          close(fd);
          continue;
        }
        Acceptor::NewConnectionParameters connection;
        connection.listener_fd = polled[i].fd;
        connection.fd = fd;  // gRPC owns it from here (and closes it if its server is not running)
        acceptor_->HandleNewConnection(&connection);
      }
    }
  }
}

}  // namespace revkv::server
