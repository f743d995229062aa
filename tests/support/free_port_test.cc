// FreePort (free_port.h): distinct ports, each one free when given.
#include "tests/support/free_port.h"

#include <gtest/gtest.h>

#include <set>

namespace revkv::test_support {
namespace {

// The kernel hands a just-released port out again readily (a server once got the same port for --listen
// and --metrics-listen); FreePort never gives one twice.
TEST(FreePort, NeverGivesThePortItGaveBefore) {
  std::set<int> ports;
  for (int i = 0; i < 1000; ++i) {
    const int port = FreePort();
    EXPECT_GT(port, 0);
    EXPECT_TRUE(ports.insert(port).second)
        << "port " << port << " given twice, the second time at call " << i;
  }
}

// A port it gives can be bound (nothing else holds it, and the ports it kept bound while looking are
// released).
TEST(FreePort, ThePortItGivesCanBeBound) {
  for (int i = 0; i < 20; ++i) {
    const int port = FreePort();
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<uint16_t>(port));
    EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0) << "port " << port;
    close(fd);
  }
}

}  // namespace
}  // namespace revkv::test_support
