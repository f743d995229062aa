// etcd's own Go client library (go.etcd.io/etcd/clientv3 and clientv3/concurrency, Debian's
// golang-etcd-server-dev) driving watch, lease, lock and election against the real server, each scenario
// also against etcd 3.4 to show the expectations are etcd's. The scenarios are in
// tests/integration/clientv3_driver/main.go (built with Debian's Go, golang-go).
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "tests/integration/server_process.h"
#include "tests/support/external_tools.h"

namespace revkv::integration {
namespace {

class ClientV3 : public ::testing::TestWithParam<std::tuple<Flavor, std::string>> {};

// The scenario prints "ok" (and exits 0) when every expectation held, else what differed.
TEST_P(ClientV3, ScenarioBehavesAsAgainstEtcd) {
  const auto [flavor, scenario] = GetParam();
  if (!FlavorAvailable(flavor)) REVKV_MISSING_TOOL() << FlavorName(flavor) << " is not installed";
  REVKV_NEED_TOOL(REVKV_CLIENTV3_DRIVER, "golang-go (and golang-etcd-server-dev)");
  ServerOptions options;
  options.flavor = flavor;
  ServerProcess server(options);
  ASSERT_TRUE(server.Start());
  const CommandResult r =
      RunCommand({REVKV_CLIENTV3_DRIVER, server.address(), scenario}, "", {}, std::chrono::seconds(120));
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, "ok\n") << r.Describe();
}

INSTANTIATE_TEST_SUITE_P(Servers, ClientV3,
                         ::testing::Combine(::testing::Values(Flavor::kRevkv, Flavor::kEtcd),
                                            ::testing::Values(std::string("watch"), std::string("lease"),
                                                              std::string("lock"), std::string("election"))),
                         [](const ::testing::TestParamInfo<std::tuple<Flavor, std::string>>& p) {
                           return std::string(FlavorName(std::get<0>(p.param))) + "_" + std::get<1>(p.param);
                         });

}  // namespace
}  // namespace revkv::integration
