// revkv-bench against a real etcd 3.4 (Debian's etcd-server): the workloads run cleanly, and transfer
// transactions move amounts between keys without creating or losing any.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "clients/bench/balance.h"
#include "clients/bench/key_space.h"
#include "etcdserverpb/rpc.grpc.pb.h"
#include "tests/clients/bench/process.h"
#include "tests/support/external_tools.h"

namespace revkv::client {
namespace {

using testing::BackgroundProcess;
using testing::ProcessResult;
using testing::RunProcess;
using testing::TempDir;

constexpr char kEtcd[] = "/usr/bin/etcd";

// A single-member etcd on loopback ports, with its data in a temporary directory.
class EtcdProcess {
 public:
  EtcdProcess() : client_port_(testing::FreePort()), peer_port_(testing::FreePort()) {
    const std::string client_url = "http://127.0.0.1:" + std::to_string(client_port_);
    const std::string peer_url = "http://127.0.0.1:" + std::to_string(peer_port_);
    process_ = std::make_unique<BackgroundProcess>(
        std::vector<std::string>{kEtcd, "--name", "bench-test", "--data-dir", dir_.path() + "/data",
                                 "--listen-client-urls", client_url, "--advertise-client-urls", client_url,
                                 "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
                                 "--initial-cluster", "bench-test=" + peer_url},
        dir_.path() + "/etcd.log");
  }

  // Waits until etcd answers Maintenance/Status; false (with the log in `why`) if it does not in 30 s.
  bool WaitReady(std::string* why) {
    // Retry the connection every 100 ms rather than with gRPC's default backoff (1 s, growing).
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 200);
    auto channel = grpc::CreateCustomChannel(endpoint(), grpc::InsecureChannelCredentials(), args);
    auto stub = etcdserverpb::Maintenance::NewStub(channel);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      if (!process_->Running()) break;
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(1));
      context.set_wait_for_ready(true);
      etcdserverpb::StatusResponse response;
      if (stub->Status(&context, etcdserverpb::StatusRequest(), &response).ok()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    *why = "etcd did not become ready; its log:\n" + process_->Log();
    return false;
  }

  std::string endpoint() const { return "127.0.0.1:" + std::to_string(client_port_); }

 private:
  TempDir dir_;
  int client_port_;
  int peer_port_;
  std::unique_ptr<BackgroundProcess> process_;
};

nlohmann::json RunBench(std::vector<std::string> args, ProcessResult* result) {
  args.insert(args.begin(), REVKV_BENCH_BINARY);
  args.push_back("--json");
  args.push_back("--quiet");
  *result = RunProcess(args, std::chrono::seconds(120));
  EXPECT_FALSE(result->timed_out);
  nlohmann::json report = nlohmann::json::parse(result->out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(report.is_discarded()) << "stdout is not JSON:\n"
                                      << result->out << "\nstderr:\n"
                                      << result->err;
  return report;
}

TEST(BenchAgainstEtcd, PutAndGetRunsSucceed) {
  REVKV_NEED_TOOL(kEtcd, "etcd-server");
  EtcdProcess etcd;
  std::string why;
  ASSERT_TRUE(etcd.WaitReady(&why)) << why;
  for (const char* workload : {"put", "get", "mixed"}) {
    ProcessResult result;
    const nlohmann::json r =
        RunBench({workload, "--endpoints", etcd.endpoint(), "--duration", "1", "--warmup", "0.2", "--keys",
                  "200", "--preload", "--connections", "2", "--inflight", "4"},
                 &result);
    ASSERT_EQ(result.exit_code, 0) << workload << ": " << result.err;
    EXPECT_EQ(r["ok"], true) << workload;
    EXPECT_GT(r["ops"].get<uint64_t>(), 0u) << workload;
    EXPECT_EQ(r["errors"]["total"], 0) << workload;
    EXPECT_EQ(r["phases"]["preload"]["ops"], 200) << workload;
    EXPECT_NE(r["server_version"].get<std::string>(), "") << workload;  // etcd says its version
  }
}

TEST(BenchAgainstEtcd, TransfersKeepTheTotalOfAllBalances) {
  REVKV_NEED_TOOL(kEtcd, "etcd-server");
  EtcdProcess etcd;
  std::string why;
  ASSERT_TRUE(etcd.WaitReady(&why)) << why;
  constexpr int kKeys = 20;  // few keys: transfers collide, so compares fail and retries happen
  constexpr int64_t kInitialBalance = 1000;
  ProcessResult result;
  const nlohmann::json r =
      RunBench({"txn", "--endpoints", etcd.endpoint(), "--duration", "2", "--warmup", "0.2", "--keys",
                std::to_string(kKeys), "--preload", "--initial-balance", std::to_string(kInitialBalance),
                "--key-prefix", "acct/", "--connections", "2", "--inflight", "8"},
               &result);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_GT(r["ops"].get<uint64_t>(), 0u);
  EXPECT_EQ(r["errors"]["total"], 0);
  // Each transfer is two Ranges and a Txn per attempt.
  const uint64_t transfers = r["phases"]["warmup"]["ops"].get<uint64_t>() + r["ops"].get<uint64_t>();
  const uint64_t retries = r["phases"]["warmup"]["retries"].get<uint64_t>() + r["retries"].get<uint64_t>();
  EXPECT_EQ(r["requests"]["Txn"].get<uint64_t>(), transfers + retries);
  EXPECT_EQ(r["requests"]["Range"].get<uint64_t>(), 2 * (transfers + retries));
  std::printf("%llu transfers, %llu retries\n", static_cast<unsigned long long>(transfers),
              static_cast<unsigned long long>(retries));

  // Read every balance back: the transfers moved amounts around, so the total is what preload wrote.
  absl::StatusOr<KeySpace> keys = KeySpace::Create("acct/", 16, kKeys);
  ASSERT_TRUE(keys.ok());
  auto stub =
      etcdserverpb::KV::NewStub(grpc::CreateChannel(etcd.endpoint(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  etcdserverpb::RangeRequest request;
  request.set_key(keys->prefix());
  request.set_range_end(keys->PrefixEnd());
  etcdserverpb::RangeResponse response;
  ASSERT_TRUE(stub->Range(&context, request, &response).ok());
  ASSERT_EQ(response.kvs_size(), kKeys);
  int64_t total = 0;
  bool moved = false;
  for (const mvccpb::KeyValue& kv : response.kvs()) {
    const int64_t balance = DecodeBalance(kv.value());
    total += balance;
    moved = moved || balance != kInitialBalance;
  }
  EXPECT_EQ(total, kKeys * kInitialBalance);
  EXPECT_TRUE(moved);
}

}  // namespace
}  // namespace revkv::client
