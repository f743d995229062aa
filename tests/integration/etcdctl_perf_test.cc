// `etcdctl check perf --load=s` against a real revkv-server: etcd's own 60-second performance check
// (50 clients writing 150 puts a second, then latency and throughput limits) passes. Serial: it measures
// throughput and latency.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "tests/integration/etcdctl_support.h"
#include "tests/integration/server_process.h"
#include "tests/support/external_tools.h"

namespace revkv::integration {
namespace {

TEST(EtcdctlCheckPerf, TheSmallLoadPasses) {
  REVKV_NEED_TOOL(kEtcdctl, "etcd-client");
  ServerProcess server;
  ASSERT_TRUE(server.Start());
  const CommandResult r = Etcdctl(server, {"check", "perf", "--load=s"}, "", std::chrono::seconds(200));
  ASSERT_FALSE(r.timed_out) << r.Describe();
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  for (const char* line :
       {"PASS: Throughput is", "PASS: Slowest request took", "PASS: Stddev is", "\nPASS\n"}) {
    EXPECT_NE(r.out.find(line), std::string::npos) << "no \"" << line << "\" in:\n"
                                                   << r.out.substr(r.out.rfind('%') + 1);
  }
  EXPECT_EQ(r.out.find("FAIL"), std::string::npos) << r.out.substr(r.out.rfind('%') + 1);
  EXPECT_TRUE(server.Stop());
}

}  // namespace
}  // namespace revkv::integration
