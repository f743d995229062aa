// A real revkv-server run the way an etcd operator runs etcd: etcd's flag names and ETCD_* variables
// (and revkv's REVKV_*) start it and take effect; MemberList advertises a URL clients can connect to,
// never a wildcard address, and etcdctl sees it.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "tests/integration/etcd_calls.h"
#include "tests/integration/etcdctl_support.h"
#include "tests/integration/server_process.h"
#include "tests/support/external_tools.h"

namespace revkv::integration {
namespace {

using etcdserverpb::KV;

etcdserverpb::MemberListResponse Members(ServerProcess& server) {
  auto cluster = etcdserverpb::Cluster::NewStub(server.NewChannel());
  const Reply<etcdserverpb::MemberListResponse> r =
      Call(cluster.get(), &etcdserverpb::Cluster::Stub::MemberList, etcdserverpb::MemberListRequest());
  EXPECT_TRUE(IsOk(r.status));
  return r.response;
}

std::string HostName() {
  char name[256] = {};
  EXPECT_EQ(gethostname(name, sizeof(name) - 1), 0);
  return name;
}

TEST(EtcdConventions, MemberListAdvertisesTheHostsNameForAWildcardListenAddress) {
  ServerOptions options;
  options.listen_host = "0.0.0.0";
  ServerProcess server(options);
  ASSERT_TRUE(server.Start());
  const etcdserverpb::MemberListResponse members = Members(server);
  ASSERT_EQ(members.members_size(), 1);
  ASSERT_EQ(members.members(0).clienturls_size(), 1);
  EXPECT_EQ(members.members(0).clienturls(0), "http://" + HostName() + ":" + std::to_string(server.port()));

  if (!std::filesystem::exists(kEtcdctl)) REVKV_MISSING_TOOL() << kEtcdctl << " is not installed";
  const CommandResult listed = Etcdctl(server, {"member", "list", "-w", "simple"});
  ASSERT_EQ(listed.exit_code, 0) << listed.Describe();
  EXPECT_NE(listed.out.find("http://" + HostName() + ":" + std::to_string(server.port())), std::string::npos)
      << listed.out;
  EXPECT_EQ(listed.out.find("0.0.0.0"), std::string::npos) << listed.out;
}

TEST(EtcdConventions, MemberListAdvertisesTheAdvertiseClientUrls) {
  ServerOptions options;
  options.extra_flags = {"--advertise-client-urls=http://db-1.example:2379,http://10.0.0.5:2379"};
  ServerProcess server(options);
  ASSERT_TRUE(server.Start());
  const etcdserverpb::MemberListResponse members = Members(server);
  ASSERT_EQ(members.members_size(), 1);
  ASSERT_EQ(members.members(0).clienturls_size(), 2);
  EXPECT_EQ(members.members(0).clienturls(0), "http://db-1.example:2379");
  EXPECT_EQ(members.members(0).clienturls(1), "http://10.0.0.5:2379");
}

// etcd's flags for the ports, ETCD_* for the name and auto-compaction, REVKV_* for a revkv flag: the
// server starts and each takes effect.
TEST(EtcdConventions, AnEtcdStyleCommandLineAndEnvironmentRunTheServer) {
  ServerOptions options;
  options.etcd_flag_names = true;
  options.env = {{"ETCD_NAME", "etcd-style"},
                 {"ETCD_AUTO_COMPACTION_MODE", "revision"},
                 {"ETCD_AUTO_COMPACTION_RETENTION", "3"},
                 {"REVKV_MAX_TXN_OPS", "2"}};
  ServerProcess server(options);
  ASSERT_TRUE(server.Start());
  EXPECT_NE(server.Log().find("--listen-client-urls=http://127.0.0.1:"), std::string::npos);
  EXPECT_EQ(Members(server).members(0).name(), "etcd-style");

  auto kv = KV::NewStub(server.NewChannel());
  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(IsOk(Call(kv.get(), &KV::Stub::Put, PutOf("k", std::to_string(i))).status));
  // Revision 11 is the newest; with 3 revisions of history, revision 5 is compacted away.
  etcdserverpb::RangeRequest old = RangeOf("k");
  old.set_revision(5);
  EXPECT_EQ(Call(kv.get(), &KV::Stub::Range, old).status.error_code(), grpc::StatusCode::OUT_OF_RANGE);
  old.set_revision(10);
  EXPECT_TRUE(IsOk(Call(kv.get(), &KV::Stub::Range, old).status));
  etcdserverpb::TxnRequest three;
  for (int i = 0; i < 3; ++i)
    *three.add_success()->mutable_request_put() = PutOf("t" + std::to_string(i), "v");
  EXPECT_EQ(Call(kv.get(), &KV::Stub::Txn, three).status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // The ops endpoint came from --listen-metrics-urls.
  EXPECT_EQ(HttpGet(server.metrics_port(), "/healthz").status, 200);
}

}  // namespace
}  // namespace revkv::integration
