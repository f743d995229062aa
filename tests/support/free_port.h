// Loopback ports for the test servers the tests start.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <vector>

namespace revkv::test_support {

// A loopback TCP port that was free a moment ago (bound to port 0, read back, released), and never one
// this process was given before: a server needs distinct ports (gRPC, metrics, peer), each asked for in
// turn, and the kernel may hand out a port it has just seen released again at once. A port given before
// is kept bound while the kernel is asked again, so it picks another.
inline int FreePort() {
  static std::mutex mu;
  static std::set<int> given;  // under mu
  std::lock_guard<std::mutex> lock(mu);
  std::vector<int> held;
  int port = 0;
  for (int attempt = 0; attempt < 1000 && port == 0; ++attempt) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) break;
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    socklen_t length = sizeof(address);
    if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      close(fd);
      break;
    }
    const int candidate = ntohs(address.sin_port);
#ifndef REVKV_MUTATION_FREE_PORT_REPEATS  // mutation switch: a port may be given twice
    if (!given.insert(candidate).second) {
      held.push_back(fd);
      continue;
    }
#endif
    port = candidate;
    close(fd);
  }
  for (int fd : held) close(fd);
  if (port == 0) {
    std::perror("FreePort");
    std::abort();
  }
  return port;
}

}  // namespace revkv::test_support
