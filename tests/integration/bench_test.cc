// revkv-bench against a real revkv-server: what the load generator reports agrees with what the server
// counted. For each workload (put, a read/write mix, transfer transactions, and puts over the Pipeline
// stream) the increase of the server's revkv_requests_total{method=...} over the run equals the report's
// `requests` for every method, and those requests are exactly the operations of every phase: the
// preload, the warm-up (which the server serves and counts, but the report's `ops` and throughput
// leave out) and the measured part. A rate-limited run lands within 10% of its rate, and the server saw
// the requests the report claims.
//
// tests/clients/bench holds the same checks against the in-process null server; these prove them
// against the real thing, whose answers take real work (and, for writes, an fsync).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/integration/prometheus_scrape.h"
#include "tests/integration/server_process.h"

namespace revkv::integration {
namespace {

using Counts = std::map<std::string, double>;  // method -> requests

constexpr char kRequestsPrefix[] = "revkv_requests_total{method=\"";

class BenchAgainstRevkv : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.extra_flags = ServerFlags();
    server_ = std::make_unique<ServerProcess>(options);
    ASSERT_TRUE(server_->Start());
  }
  // Flags for the server beyond the fixture's: its defaults (fsync always) unless a test says otherwise.
  virtual std::vector<std::string> ServerFlags() const { return {}; }

  // The server's revkv_requests_total by method, from a scrape that must follow the text format.
  Counts ServerCounts() {
    const PrometheusScrape scrape = ScrapeMetrics(server_->metrics_port());
    Counts counts;
    for (const auto& [series, value] : scrape.samples) {
      if (series.rfind(kRequestsPrefix, 0) != 0) continue;
      const size_t start = sizeof(kRequestsPrefix) - 1;
      counts[series.substr(start, series.find('"', start) - start)] = value;
    }
    EXPECT_FALSE(counts.empty()) << "no revkv_requests_total in /metrics";
    return counts;
  }

  // Runs revkv-bench against the server with `args` plus --json --quiet; expects a clean run and returns
  // its report.
  nlohmann::json RunBench(std::vector<std::string> args) {
    std::vector<std::string> argv = {REVKV_BENCH_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--endpoints", server_->address(), "--json", "--quiet"});
    const CommandResult result = RunCommand(argv, "", {}, std::chrono::seconds(60));
    EXPECT_EQ(result.exit_code, 0) << result.Describe();
    nlohmann::json report = nlohmann::json::parse(result.out, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(report.is_discarded()) << result.Describe();
    if (report.is_discarded()) return nlohmann::json::object();
    EXPECT_EQ(report["ok"], true) << result.err;
    EXPECT_EQ(report["errors"]["total"], 0) << report["errors"].dump();
    return report;
  }

  // Runs revkv-bench and expects the server's counters to have grown by exactly the report's requests,
  // method by method. The server counts a call when it completes on its side, a moment after the client
  // has the answer, so the counters are read until they match (at most 5 s); any difference left then
  // is a failure. Returns the report.
  nlohmann::json RunAndCompareWithServer(const std::vector<std::string>& args) {
    const Counts before = ServerCounts();
    const nlohmann::json report = RunBench(args);
    if (!report.contains("requests")) return report;
    Counts reported;
    for (const auto& [method, count] : report["requests"].items()) reported[method] = count.get<double>();
    std::set<std::string> methods;
    for (const auto& [method, unused] : before) methods.insert(method);
    for (const auto& [method, unused] : reported) methods.insert(method);

    Counts increase;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (;;) {
      const Counts after = ServerCounts();
      bool equal = true;
      for (const std::string& m : methods) {
        increase[m] = (after.count(m) ? after.at(m) : 0) - (before.count(m) ? before.at(m) : 0);
        equal = equal && increase[m] == (reported.count(m) ? reported.at(m) : 0);
      }
      if (equal || std::chrono::steady_clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    for (const std::string& m : methods) {
      EXPECT_EQ(increase[m], reported.count(m) ? reported.at(m) : 0)
          << "method " << m << ": the server's revkv_requests_total grew by " << increase[m]
          << ", revkv-bench reports " << (reported.count(m) ? reported.at(m) : 0) << " requests";
    }
    // Every connection asked Maintenance/Status once before its load.
    EXPECT_EQ(increase["Status"], report["load"]["connections"].get<double>());
    return report;
  }

  std::unique_ptr<ServerProcess> server_;
};

// The rate-limited run measures revkv-bench's pacing, not the disk: without fsyncs the server answers
// in well under a millisecond even on a busy machine, so the requests in flight never cap the rate.
class RateLimitedBenchAgainstRevkv : public BenchAgainstRevkv {
 protected:
  std::vector<std::string> ServerFlags() const override { return {"--fsync=none"}; }
};

uint64_t PhaseOps(const nlohmann::json& report, const char* phase) {
  return report["phases"][phase]["ops"].get<uint64_t>();
}
uint64_t PhaseRetries(const nlohmann::json& report, const char* phase) {
  return report["phases"][phase]["retries"].get<uint64_t>();
}
uint64_t Requests(const nlohmann::json& report, const char* method) {
  return report["requests"][method].get<uint64_t>();
}

// Checks that the warm-up ran, was served, and stayed out of the measured figures.
void ExpectWarmupExcluded(const nlohmann::json& report) {
  EXPECT_GT(PhaseOps(report, "warmup"), 0u) << "no warm-up operations";
  EXPECT_GT(report["ops"].get<uint64_t>(), 0u) << "no measured operations";
  EXPECT_EQ(report["ops"].get<uint64_t>(), PhaseOps(report, "measured"));
  EXPECT_EQ(report["latency_us"]["count"].get<uint64_t>(), report["ops"].get<uint64_t>());
}

const std::vector<std::string> kShortRun = {"--duration",    "1.5", "--warmup",   "0.5",
                                            "--connections", "2",   "--inflight", "8"};

std::vector<std::string> With(std::vector<std::string> args) {
  args.insert(args.end(), kShortRun.begin(), kShortRun.end());
  return args;
}

TEST_F(BenchAgainstRevkv, PutRequestsEqualTheServersCountIncludingWarmupAndPreload) {
  const nlohmann::json r = RunAndCompareWithServer(With({"put", "--preload", "--keys", "500"}));
  ASSERT_TRUE(r.contains("phases"));
  ExpectWarmupExcluded(r);
  EXPECT_EQ(PhaseOps(r, "preload"), 500u);
  // The server served preload + warm-up + measured puts; the report's ops are only the measured ones.
  EXPECT_EQ(Requests(r, "Put"), PhaseOps(r, "preload") + PhaseOps(r, "warmup") + PhaseOps(r, "measured"));
  EXPECT_EQ(Requests(r, "Range") + Requests(r, "Txn") + Requests(r, "Pipeline"), 0u);
}

TEST_F(BenchAgainstRevkv, MixedRequestsEqualTheServersCount) {
  const nlohmann::json r =
      RunAndCompareWithServer(With({"mixed", "--preload", "--keys", "500", "--read-ratio", "0.7"}));
  ASSERT_TRUE(r.contains("phases"));
  ExpectWarmupExcluded(r);
  EXPECT_EQ(Requests(r, "Range") + Requests(r, "Put"),
            PhaseOps(r, "preload") + PhaseOps(r, "warmup") + PhaseOps(r, "measured"));
  // 70% of the warm-up and measured operations were reads, give or take.
  const double reads = static_cast<double>(Requests(r, "Range"));
  EXPECT_NEAR(reads / static_cast<double>(PhaseOps(r, "warmup") + PhaseOps(r, "measured")), 0.7, 0.05);
}

TEST_F(BenchAgainstRevkv, TransferTransactionsEqualTheServersCountRetriesIncluded) {
  // Few keys: transfers collide, compares fail and are retried, and every attempt is requests too.
  const nlohmann::json r = RunAndCompareWithServer(
      With({"txn", "--preload", "--keys", "20", "--initial-balance", "1000", "--key-prefix", "acct/"}));
  ASSERT_TRUE(r.contains("phases"));
  ExpectWarmupExcluded(r);
  const uint64_t attempts = PhaseOps(r, "warmup") + PhaseOps(r, "measured") + PhaseRetries(r, "warmup") +
                            PhaseRetries(r, "measured");
  EXPECT_EQ(Requests(r, "Txn"), attempts);                // one Txn per attempt
  EXPECT_EQ(Requests(r, "Range"), 2 * attempts);          // after reading both balances
  EXPECT_EQ(Requests(r, "Put"), PhaseOps(r, "preload"));  // the preload wrote the balances
  std::printf("%llu transfers, %llu retries\n",
              static_cast<unsigned long long>(PhaseOps(r, "warmup") + PhaseOps(r, "measured")),
              static_cast<unsigned long long>(PhaseRetries(r, "warmup") + PhaseRetries(r, "measured")));
}

TEST_F(BenchAgainstRevkv, PipelineMessagesEqualTheServersCount) {
  const nlohmann::json r =
      RunAndCompareWithServer(With({"put", "--mode", "pipeline", "--preload", "--keys", "500"}));
  ASSERT_TRUE(r.contains("phases"));
  EXPECT_EQ(r["load"]["mode"], "pipeline");
  ExpectWarmupExcluded(r);
  // Each operation is one message on a Pipeline stream, which the server counts as method Pipeline.
  EXPECT_EQ(Requests(r, "Pipeline"),
            PhaseOps(r, "preload") + PhaseOps(r, "warmup") + PhaseOps(r, "measured"));
  EXPECT_EQ(Requests(r, "Put") + Requests(r, "Range") + Requests(r, "Txn"), 0u);
}

TEST_F(RateLimitedBenchAgainstRevkv, ARateLimitedRunStaysWithinTenPercentOfItsRate) {
  constexpr double kRate = 1000;
  constexpr double kSeconds = 3;
  // 4 x 32 in flight: a pause of the server (or of this machine) of up to 0.128 s is caught up after it
  // (each connection banks one token per slot) instead of lowering the rate.
  const nlohmann::json r = RunAndCompareWithServer({"put", "--rate", "1000", "--duration", "3", "--warmup",
                                                    "0.5", "--connections", "4", "--inflight", "32"});
  ASSERT_TRUE(r.contains("phases"));
  EXPECT_NEAR(r["throughput_ops_per_s"].get<double>(), kRate, kRate / 10) << r.dump();
  EXPECT_NEAR(r["ops"].get<double>(), kRate * kSeconds, kRate * kSeconds / 10) << r.dump();
  // The server's count (equal to the report's requests, checked above) covers the paced warm-up as well.
  EXPECT_NEAR(static_cast<double>(Requests(r, "Put")), kRate * (kSeconds + 0.5),
              kRate * (kSeconds + 0.5) / 10);
}

// Open-loop pacing through a stall of the server (SIGSTOP for 0.8 s in the middle of a 3 s run at
// 2,000 puts/s). With --rate-backlog longer than the stall, every start the stall delayed is still made
// and timed from its scheduled start: the run keeps its rate and the stall shows in the worst latency.
// Without it (one banked start per slot) most of those starts are never made, and the percentiles never
// see them: coordinated omission, which the --rate-backlog runs must not have.
TEST_F(RateLimitedBenchAgainstRevkv, AServerStallShorterThanTheRateBacklogIsMeasuredInFull) {
  constexpr double kRate = 2000;
  constexpr double kSeconds = 3;
  const auto run_with_stall = [&](const std::string& backlog) {
    nlohmann::json report;
    std::thread bench([&] {
      report = RunBench({"put", "--rate", "2000", "--rate-backlog", backlog, "--duration", "3", "--warmup",
                         "0.5", "--connections", "4", "--inflight", "16"});
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    EXPECT_EQ(kill(server_->pid(), SIGSTOP), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    EXPECT_EQ(kill(server_->pid(), SIGCONT), 0);
    bench.join();
    return report;
  };
  const nlohmann::json full = run_with_stall("5s");
  ASSERT_TRUE(full.contains("ops")) << full.dump();
  EXPECT_NEAR(full["ops"].get<double>(), kRate * kSeconds, kRate * kSeconds / 10) << full.dump();
  EXPECT_GE(full["latency_us"]["max"].get<double>(), 700'000) << full.dump();
  EXPECT_GE(full["latency_us"]["p99"].get<double>(), 100'000) << "the stall delayed ~27% of the starts";

  const nlohmann::json omitted = run_with_stall("0");
  ASSERT_TRUE(omitted.contains("ops")) << omitted.dump();
  EXPECT_LT(omitted["ops"].get<double>(), 0.85 * kRate * kSeconds)
      << "without a backlog the starts a stall delays are dropped" << omitted.dump();
}

// revkv-lease-bench against a real server: a grant round's leases are all revoked after it (the
// server counted as many LeaseRevoke calls as LeaseGrant calls, and no lease is left), and a keep-alive
// round exits 0 only if every answer carried the granted TTL.
TEST_F(BenchAgainstRevkv, LeaseBenchRevokesWhatItGrantsAndKeepsItsLeasesAlive) {
  auto count = [](const Counts& c, const char* method) {
    auto it = c.find(method);
    return it == c.end() ? 0.0 : it->second;
  };
  const Counts before = ServerCounts();
  CommandResult grant = RunCommand({REVKV_LEASE_BENCH_BINARY, "grant", "--endpoints", server_->address(),
                                    "--duration", "1", "--clients", "2"},
                                   "", {}, std::chrono::seconds(60));
  ASSERT_EQ(grant.exit_code, 0) << grant.Describe();
  EXPECT_NE(grant.out.find("grants/s"), std::string::npos) << grant.Describe();
  Counts after = ServerCounts();
  const double grants = count(after, "LeaseGrant") - count(before, "LeaseGrant");
  EXPECT_GT(grants, 0);
  EXPECT_EQ(count(after, "LeaseRevoke") - count(before, "LeaseRevoke"), grants);

  CommandResult keepalive =
      RunCommand({REVKV_LEASE_BENCH_BINARY, "keepalive", "--endpoints", server_->address(), "--duration", "1",
                  "--leases", "50", "--streams", "2", "--inflight", "4"},
                 "", {}, std::chrono::seconds(60));
  ASSERT_EQ(keepalive.exit_code, 0) << keepalive.Describe();
  EXPECT_NE(keepalive.out.find("keep-alives/s"), std::string::npos) << keepalive.Describe();
  after = ServerCounts();
  EXPECT_EQ(count(after, "LeaseGrant") - count(before, "LeaseGrant"), grants + 50);
  EXPECT_EQ(count(after, "LeaseRevoke") - count(before, "LeaseRevoke"), grants + 50);
}

}  // namespace
}  // namespace revkv::integration
