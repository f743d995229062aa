// Endpoint parsing: the spellings etcdctl accepts, and clear errors for the rest.
#include "clients/common/endpoint.h"

#include <gtest/gtest.h>

namespace revkv::client {
namespace {

TEST(ParseEndpoint, AcceptsHostPortWithOrWithoutScheme) {
  EXPECT_EQ(*ParseEndpoint("127.0.0.1:2379"), (Endpoint{"127.0.0.1:2379", false}));
  EXPECT_EQ(*ParseEndpoint("http://localhost:2379"), (Endpoint{"localhost:2379", false}));
  EXPECT_EQ(*ParseEndpoint("http://localhost:2379/"), (Endpoint{"localhost:2379", false}));
  EXPECT_EQ(*ParseEndpoint(" https://etcd.example:443 "), (Endpoint{"etcd.example:443", true}));
}

TEST(ParseEndpoint, AcceptsBracketedIpv6AndUnixSockets) {
  EXPECT_EQ(*ParseEndpoint("[::1]:2379"), (Endpoint{"[::1]:2379", false}));
  EXPECT_EQ(*ParseEndpoint("unix:///run/revkv.sock"), (Endpoint{"unix:/run/revkv.sock", false}));
  EXPECT_EQ(*ParseEndpoint("unix:revkv.sock"), (Endpoint{"unix:revkv.sock", false}));
}

TEST(ParseEndpoint, RejectsMalformedEndpointsNamingThem) {
  for (const char* bad : {"127.0.0.1", "127.0.0.1:0", "127.0.0.1:65536", "host:port", ":2379", "ftp://h:1",
                          "::1:2379", "http://h:1/path", "[::1:2379", "unix://"}) {
    absl::StatusOr<Endpoint> endpoint = ParseEndpoint(bad);
    ASSERT_FALSE(endpoint.ok()) << bad;
    EXPECT_EQ(endpoint.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(endpoint.status().message().find(bad), absl::string_view::npos) << endpoint.status();
  }
}

TEST(ParseEndpoints, SplitsOnCommasAndNeedsAtLeastOne) {
  absl::StatusOr<std::vector<Endpoint>> endpoints = ParseEndpoints("127.0.0.1:1, https://b:2,");
  ASSERT_TRUE(endpoints.ok()) << endpoints.status();
  ASSERT_EQ(endpoints->size(), 2u);
  EXPECT_EQ((*endpoints)[1], (Endpoint{"b:2", true}));
  EXPECT_FALSE(ParseEndpoints(" , ").ok());
  EXPECT_FALSE(ParseEndpoints("a:1,b").ok());
}

}  // namespace
}  // namespace revkv::client
