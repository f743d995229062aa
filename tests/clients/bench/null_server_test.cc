// revkv-bench against revkv-null-server (in this process): what the client reports is what the server
// served, pacing holds, reports are complete, and an unreachable endpoint fails loudly.
#include "bench/null_server/null_server.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "clients/bench/balance.h"
#include "etcdserverpb/rpc.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "tests/clients/bench/process.h"

namespace revkv::client {
namespace {

using bench::NullMethod;
using bench::NullServer;
using testing::ProcessResult;
using testing::RunProcess;

std::unique_ptr<NullServer> StartNullServer(bench::NullServerApi api = bench::NullServerApi::kCallback,
                                            bench::NullServerStore store = bench::NullServerStore::kNone) {
  bench::NullServerOptions options;
  options.listen = "127.0.0.1:0";
  options.workers = 2;
  options.api = api;
  options.store = store;
  absl::StatusOr<std::unique_ptr<NullServer>> server = NullServer::Start(options);
  if (!server.ok()) {
    ADD_FAILURE() << server.status();
    return nullptr;
  }
  return *std::move(server);
}

std::string Endpoint(const NullServer& server) { return "127.0.0.1:" + std::to_string(server.port()); }

// Runs revkv-bench with `args` (plus --json --quiet) and parses its report.
nlohmann::json RunBench(std::vector<std::string> args, ProcessResult* result_out = nullptr) {
  args.insert(args.begin(), REVKV_BENCH_BINARY);
  args.push_back("--json");
  args.push_back("--quiet");
  ProcessResult result = RunProcess(args, std::chrono::seconds(120));
  if (result_out != nullptr) *result_out = result;
  EXPECT_FALSE(result.timed_out);
  nlohmann::json report = nlohmann::json::parse(result.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(report.is_discarded()) << "stdout is not JSON:\n" << result.out << "\nstderr:\n" << result.err;
  return report;
}

uint64_t AllPhaseOps(const nlohmann::json& report) {
  uint64_t ops = 0;
  for (const auto& [name, phase] : report["phases"].items()) {
    if (name != "connect") ops += phase["ops"].get<uint64_t>();
  }
  return ops;
}

TEST(BenchAgainstNullServer, UnaryOperationsEqualTheRequestsTheServerCounted) {
  std::unique_ptr<NullServer> server = StartNullServer();
  ASSERT_NE(server, nullptr);
  ProcessResult result;
  const nlohmann::json report =
      RunBench({"mixed", "--endpoints", Endpoint(*server), "--duration", "2", "--warmup", "0.5", "--preload",
                "--keys", "500", "--read-ratio", "0.5"},
               &result);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  server->Shutdown();
  const bench::NullServerCounts counts = server->Counts();

  const uint64_t preload = report["phases"]["preload"]["ops"];
  const uint64_t warmup = report["phases"]["warmup"]["ops"];
  const uint64_t measured = report["ops"];
  EXPECT_EQ(preload, 500u);
  EXPECT_GT(warmup, 0u);
  EXPECT_GT(measured, 0u);
  EXPECT_EQ(report["phases"]["measured"]["ops"].get<uint64_t>(), measured);
  // Every operation of every phase is one request, and the server counted each exactly once.
  EXPECT_EQ(counts[NullMethod::kRange] + counts[NullMethod::kPut], preload + warmup + measured);
  EXPECT_EQ(counts[NullMethod::kRange], report["requests"]["Range"].get<uint64_t>());
  EXPECT_EQ(counts[NullMethod::kPut], report["requests"]["Put"].get<uint64_t>());
  EXPECT_EQ(counts[NullMethod::kStatus], report["load"]["connections"].get<uint64_t>());
  EXPECT_EQ(counts[NullMethod::kStatus], report["requests"]["Status"].get<uint64_t>());
  EXPECT_EQ(counts[NullMethod::kTxn] + counts[NullMethod::kPipeline], 0u);
  EXPECT_EQ(report["errors"]["total"].get<uint64_t>(), 0u);
  // Each connection probed Status once, each over its own TCP connection (its own client port).
  EXPECT_EQ(server->StatusPeers().size(), report["load"]["connections"].get<size_t>());
  // Half reads, half writes, give or take.
  const double reads = static_cast<double>(counts[NullMethod::kRange]);
  EXPECT_NEAR(reads / static_cast<double>(warmup + measured), 0.5, 0.05);
}

TEST(BenchAgainstNullServer, PipelineOperationsEqualTheMessagesTheServerCounted) {
  std::unique_ptr<NullServer> server = StartNullServer();
  ASSERT_NE(server, nullptr);
  ProcessResult result;
  const nlohmann::json report =
      RunBench({"put", "--endpoints", Endpoint(*server), "--mode", "pipeline", "--duration", "2", "--warmup",
                "0.5", "--preload", "--keys", "1000"},
               &result);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  server->Shutdown();
  const bench::NullServerCounts counts = server->Counts();
  EXPECT_EQ(report["load"]["mode"], "pipeline");
  EXPECT_GT(report["ops"].get<uint64_t>(), 0u);
  EXPECT_EQ(counts[NullMethod::kPipeline], AllPhaseOps(report));
  EXPECT_EQ(counts[NullMethod::kPipeline], report["requests"]["Pipeline"].get<uint64_t>());
  EXPECT_EQ(counts[NullMethod::kPut] + counts[NullMethod::kRange] + counts[NullMethod::kTxn], 0u);
  EXPECT_EQ(report["errors"]["total"].get<uint64_t>(), 0u);
  EXPECT_EQ(server->StatusPeers().size(), report["load"]["connections"].get<size_t>());
}

// --batch 16 with 64 in flight per connection: every message the server counts is one the client
// reported, and they carry several operations each (at most 16), on both APIs of the null server.
TEST(BenchAgainstNullServer, BatchModeSendsSeveralOperationsPerPipelineBatchMessage) {
  for (bench::NullServerApi api : {bench::NullServerApi::kCallback, bench::NullServerApi::kCompletionQueue}) {
    SCOPED_TRACE(api == bench::NullServerApi::kCallback ? "callback API" : "completion-queue API");
    std::unique_ptr<NullServer> server = StartNullServer(api);
    ASSERT_NE(server, nullptr);
    ProcessResult result;
    const nlohmann::json report = RunBench(
        {"get", "--endpoints", Endpoint(*server), "--mode", "pipeline", "--batch", "16", "--connections", "2",
         "--inflight", "64", "--duration", "1", "--warmup", "0.3", "--keys", "1000"},
        &result);
    ASSERT_EQ(result.exit_code, 0) << result.err;
    server->Shutdown();
    const bench::NullServerCounts counts = server->Counts();
    EXPECT_EQ(report["load"]["batch"], 16);
    const uint64_t messages = counts[NullMethod::kPipelineBatch];
    EXPECT_EQ(messages, report["requests"]["PipelineBatch"].get<uint64_t>());
    EXPECT_EQ(counts[NullMethod::kPipeline] + counts[NullMethod::kRange], 0u);
    EXPECT_EQ(report["errors"]["total"].get<uint64_t>(), 0u);
    const uint64_t ops = AllPhaseOps(report);
    ASSERT_GT(messages, 0u);
    EXPECT_GT(ops, 4 * messages) << ops << " operations in " << messages << " messages";
    EXPECT_LE(ops, 16 * messages) << ops << " operations in " << messages << " messages";
  }
}

TEST(BenchAgainstNullServer, ConnectionsAreSeparateTcpConnections) {
  std::unique_ptr<NullServer> server = StartNullServer();
  ASSERT_NE(server, nullptr);
  ProcessResult result;
  const nlohmann::json report = RunBench({"get", "--endpoints", Endpoint(*server), "--total", "100",
                                          "--warmup", "0", "--connections", "7", "--threads", "2"},
                                         &result);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(server->StatusPeers().size(), 7u);
}

TEST(BenchAgainstNullServer, EachTransferIsTwoRangesAndOneTxn) {
  std::unique_ptr<NullServer> server = StartNullServer();
  ASSERT_NE(server, nullptr);
  ProcessResult result;
  const nlohmann::json report =
      RunBench({"txn", "--endpoints", Endpoint(*server), "--duration", "1", "--warmup", "0.2"}, &result);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  server->Shutdown();
  const bench::NullServerCounts counts = server->Counts();
  // The null server commits every Txn, so no transfer retries.
  const uint64_t transfers = AllPhaseOps(report);
  EXPECT_GT(transfers, 0u);
  EXPECT_EQ(report["retries"].get<uint64_t>(), 0u);
  EXPECT_EQ(counts[NullMethod::kTxn], transfers);
  EXPECT_EQ(counts[NullMethod::kRange], 2 * transfers);
}

TEST(BenchAgainstNullServer, TotalMeasuresExactlyThatManyOperations) {
  std::unique_ptr<NullServer> server = StartNullServer();
  ASSERT_NE(server, nullptr);
  ProcessResult result;
  const nlohmann::json report = RunBench(
      {"get", "--endpoints", Endpoint(*server), "--total", "5003", "--warmup", "0", "--connections", "3"},
      &result);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  server->Shutdown();
  EXPECT_EQ(report["ops"].get<uint64_t>(), 5003u);
  EXPECT_EQ(report["latency_us"]["count"].get<uint64_t>(), 5003u);
  EXPECT_EQ(server->Counts()[NullMethod::kRange], 5003u);
}

TEST(BenchAgainstNullServer, RateLimitedRunLandsWithinTenPercentOfItsRate) {
  std::unique_ptr<NullServer> server = StartNullServer();
  ASSERT_NE(server, nullptr);
  ProcessResult result;
  const nlohmann::json report = RunBench(
      {"put", "--endpoints", Endpoint(*server), "--rate", "2000", "--duration", "2", "--warmup", "0.5"},
      &result);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const double throughput = report["throughput_ops_per_s"];
  EXPECT_NEAR(throughput, 2000, 200) << result.err;
  EXPECT_NEAR(report["ops"].get<double>(), 4000, 400);
}

TEST(BenchAgainstNullServer, JsonReportHasEveryFigure) {
  std::unique_ptr<NullServer> server = StartNullServer();
  ASSERT_NE(server, nullptr);
  ProcessResult result;
  const nlohmann::json r = RunBench({"range", "--endpoints", Endpoint(*server), "--duration", "1", "--warmup",
                                     "0.2", "--key-distribution", "zipfian", "--range-size", "5"},
                                    &result);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(r["workload"], "range");
  EXPECT_EQ(r["endpoints"], Endpoint(*server));
  EXPECT_EQ(r["ok"], true);
  for (const char* key : {"connections", "inflight", "mode", "rate", "duration_s", "warmup_s", "keys",
                          "key_size", "value_size", "key_distribution", "zipf_exponent", "range_size"}) {
    EXPECT_TRUE(r["load"].contains(key)) << key;
  }
  EXPECT_EQ(r["load"]["value_size"], 100);
  EXPECT_GT(r["measured_seconds"].get<double>(), 0.9);
  EXPECT_GT(r["throughput_ops_per_s"].get<double>(), 0);
  const nlohmann::json& latency = r["latency_us"];
  EXPECT_EQ(latency["count"], r["ops"]);
  EXPECT_LE(latency["p50"].get<uint64_t>(), latency["p90"].get<uint64_t>());
  EXPECT_LE(latency["p90"].get<uint64_t>(), latency["p99"].get<uint64_t>());
  EXPECT_LE(latency["p99"].get<uint64_t>(), latency["p99.9"].get<uint64_t>());
  EXPECT_LE(latency["p99.9"].get<uint64_t>(), latency["max"].get<uint64_t>());
  EXPECT_GT(latency["mean"].get<double>(), 0);
  EXPECT_TRUE(r["errors"]["by_code"].is_object());
  EXPECT_EQ(r["errors"]["total"], 0);
  EXPECT_EQ(r["retries"], 0);
  for (const char* phase : {"connect", "preload", "warmup", "measured"})
    EXPECT_TRUE(r["phases"].contains(phase));
  for (const char* method : {"Range", "Put", "Txn", "Pipeline", "Status"})
    EXPECT_TRUE(r["requests"].contains(method));
  // The text report goes to stderr when stdout carries the JSON.
  EXPECT_NE(result.err.find("throughput"), std::string::npos) << result.err;
}

// What a person reads and plots: a progress line saying how far the run is ("2.0s of 2.5s"), etcd's
// benchmark's latency histogram in the text report, HdrHistogram's percentile distribution (.hgrm) and
// an SVG of throughput and latency over time, each consistent with the JSON report.
TEST(BenchAgainstNullServer, ShowsProgressAHistogramAndWritesPercentilesAndAnSvg) {
  std::unique_ptr<NullServer> server = StartNullServer();
  ASSERT_NE(server, nullptr);
  testing::TempDir dir;
  const std::string hgrm = dir.path() + "/latency.hgrm";
  const std::string svg = dir.path() + "/timeline.svg";
  const ProcessResult result =
      RunProcess({REVKV_BENCH_BINARY, "put", "--endpoints", Endpoint(*server), "--duration", "3", "--warmup",
                  "0.5", "--json", "--percentiles-file", hgrm, "--svg", svg},
                 std::chrono::seconds(120));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json report = nlohmann::json::parse(result.out, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << result.out;
  const uint64_t ops = report["ops"];
  ASSERT_GT(ops, 0u);

  // Progress (stderr is not a terminal: one line a second), with the planned length.
  EXPECT_TRUE(
      std::regex_search(result.err, std::regex(R"(\[measure +[0-9]+\.[0-9]s of 3\.5s\] +[0-9]+ ops/s)")))
      << result.err;

  // The histogram: 11 lines whose counts add up to the measured operations.
  const size_t at = result.err.find("latency histogram (ms");
  ASSERT_NE(at, std::string::npos) << result.err;
  std::istringstream lines(result.err.substr(at));
  std::string line;
  std::getline(lines, line);
  uint64_t counted = 0;
  int buckets = 0;
  double previous_bound = -1;
  while (std::getline(lines, line) && line.find('[') != std::string::npos) {
    const double bound = std::stod(line);
    EXPECT_GE(bound, previous_bound) << line;
    previous_bound = bound;
    std::string count = line.substr(line.find('[') + 1, line.find(']') - line.find('[') - 1);
    count.erase(std::remove(count.begin(), count.end(), ','), count.end());
    counted += std::stoull(count);
    ++buckets;
  }
  EXPECT_EQ(buckets, 11);
  EXPECT_EQ(counted, ops);
  EXPECT_NE(result.err.find("\u220e"), std::string::npos);  // the bars

  // The .hgrm file: HdrHistogram's header, rising values and percentiles, ending at 100% with every
  // operation counted, and its footer.
  std::ifstream hgrm_file(hgrm);
  ASSERT_TRUE(hgrm_file.good()) << hgrm;
  std::string header;
  std::getline(hgrm_file, header);
  EXPECT_EQ(header, "       Value     Percentile TotalCount 1/(1-Percentile)");
  double last_value = 0, last_percentile = -1;
  uint64_t last_total = 0;
  int rows = 0;
  std::string footer;
  while (std::getline(hgrm_file, line)) {
    if (line.empty()) continue;
    if (line[0] == '#') {
      footer += line + "\n";
      continue;
    }
    std::istringstream fields(line);
    double value = 0, percentile = 0;
    uint64_t total = 0;
    ASSERT_TRUE(fields >> value >> percentile >> total) << line;
    EXPECT_GE(value, last_value) << line;
    EXPECT_GE(percentile, last_percentile) << line;
    EXPECT_GE(total, last_total) << line;
    last_value = value;
    last_percentile = percentile;
    last_total = total;
    ++rows;
  }
  EXPECT_GT(rows, 20);
  EXPECT_EQ(last_percentile, 1.0);
  EXPECT_EQ(last_total, ops);
  EXPECT_NEAR(last_value, report["latency_us"]["max"].get<double>() / 1000.0, 0.001);
  EXPECT_NE(footer.find("Total count    = " + absl::StrFormat("%12d", ops)), std::string::npos) << footer;

  // The SVG: well-formed XML (xmllint), one throughput point per measured second, p50 and p99 lines.
  const ProcessResult lint = RunProcess({"/usr/bin/xmllint", "--noout", svg}, std::chrono::seconds(30));
  EXPECT_EQ(lint.exit_code, 0) << lint.err;
  std::ifstream svg_file(svg);
  const std::string chart((std::istreambuf_iterator<char>(svg_file)), std::istreambuf_iterator<char>());
  for (const char* series : {"ops_per_second", "p50", "p99"}) {
    EXPECT_NE(chart.find(absl::StrCat("<polyline class=\"", series, "\"")), std::string::npos) << series;
  }
  const size_t points_at = chart.find("points=\"", chart.find("class=\"ops_per_second\""));
  const std::string points = chart.substr(points_at + 8, chart.find('"', points_at + 8) - points_at - 8);
  const size_t point_count = std::count(points.begin(), points.end(), ',');
  EXPECT_EQ(point_count, report["timeline"].size());
  EXPECT_GE(point_count, 3u) << points;
  EXPECT_LE(point_count, 5u) << points;
  double timeline_ops = 0;
  for (const auto& s : report["timeline"]) {
    EXPECT_LE(s["p50_us"].get<uint64_t>(), s["p99_us"].get<uint64_t>()) << s;
    timeline_ops += s["ops_per_second"].get<double>();
  }
  EXPECT_GT(timeline_ops, 0);
}

TEST(BenchOptions, PercentilesAndSvgDescribeOneRunNotAComparison) {
  const ProcessResult r = RunProcess(
      {REVKV_BENCH_BINARY, "put", "--compare", "127.0.0.1:1", "127.0.0.1:2", "--svg", "/tmp/never.svg"},
      std::chrono::seconds(30));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--percentiles-file and --svg describe one run: not with --compare"),
            std::string::npos)
      << r.err;
}

TEST(BenchAgainstNullServer, CompareRunsBothEndpointsInRoundsAndReportsRatios) {
  std::unique_ptr<NullServer> a = StartNullServer();
  std::unique_ptr<NullServer> b = StartNullServer();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ProcessResult result;
  const nlohmann::json r = RunBench({"put", "--compare", Endpoint(*a), Endpoint(*b), "--rounds", "2",
                                     "--duration", "0.5", "--warmup", "0.1", "--preload", "--keys", "100"},
                                    &result);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json& compare = r["compare"];
  EXPECT_EQ(compare["a"]["endpoints"], Endpoint(*a));
  EXPECT_EQ(compare["b"]["endpoints"], Endpoint(*b));
  ASSERT_EQ(compare["a"]["rounds"].size(), 2u);
  ASSERT_EQ(compare["b"]["rounds"].size(), 2u);
  EXPECT_EQ(compare["ratio"], "B/A of the medians");
  const double a_median = compare["a"]["median"]["throughput_ops_per_s"];
  const double b_median = compare["b"]["median"]["throughput_ops_per_s"];
  EXPECT_GT(a_median, 0);
  EXPECT_NEAR(compare["ratio_b_over_a"]["throughput_ops_per_s"].get<double>(), b_median / a_median, 1e-9);
  // Preload runs once per endpoint, before its first round.
  EXPECT_EQ(compare["a"]["rounds"][0]["phases"]["preload"]["ops"], 100);
  EXPECT_EQ(compare["a"]["rounds"][1]["phases"]["preload"]["ops"], 0);
  // Both servers served their rounds.
  a->Shutdown();
  b->Shutdown();
  EXPECT_GT(a->Counts()[NullMethod::kPut], 100u);
  EXPECT_GT(b->Counts()[NullMethod::kPut], 100u);
  EXPECT_NE(result.err.find("B/A"), std::string::npos);
}

TEST(BenchAgainstNullServer, CompareAlternatesWhichEndpointGoesFirst) {
  std::unique_ptr<NullServer> a = StartNullServer();
  std::unique_ptr<NullServer> b = StartNullServer();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ProcessResult result;
  const nlohmann::json r = RunBench({"get", "--compare", Endpoint(*a), Endpoint(*b), "--rounds", "4",
                                     "--total", "50", "--warmup", "0", "--connections", "1"},
                                    &result);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  // ABBA: A B, B A, A B, B A, so neither side always runs first (or always last) as the machine drifts.
  std::vector<int> a_order, b_order;
  for (const auto& round : r["compare"]["a"]["rounds"]) a_order.push_back(round.value("run_order", 0));
  for (const auto& round : r["compare"]["b"]["rounds"]) b_order.push_back(round.value("run_order", 0));
  EXPECT_EQ(a_order, (std::vector<int>{1, 4, 5, 8}));
  EXPECT_EQ(b_order, (std::vector<int>{2, 3, 6, 7}));
}

// The completion-queue null server (the other way of serving measured for the ceiling) counts each
// request once too, unary and Pipeline.
TEST(BenchAgainstNullServer, CompletionQueueApiCountsEveryRequest) {
  std::unique_ptr<NullServer> server = StartNullServer(bench::NullServerApi::kCompletionQueue);
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->workers(), 2);
  ProcessResult result;
  const nlohmann::json unary = RunBench(
      {"txn", "--endpoints", Endpoint(*server), "--duration", "1", "--warmup", "0.2", "--connections", "2"},
      &result);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json pipeline = RunBench({"put", "--endpoints", Endpoint(*server), "--mode", "pipeline",
                                            "--duration", "1", "--warmup", "0.2", "--connections", "2"},
                                           &result);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  server->Shutdown();
  const bench::NullServerCounts counts = server->Counts();
  EXPECT_EQ(counts[NullMethod::kTxn], AllPhaseOps(unary));
  EXPECT_EQ(counts[NullMethod::kRange], 2 * AllPhaseOps(unary));
  EXPECT_EQ(counts[NullMethod::kPipeline], AllPhaseOps(pipeline));
  EXPECT_EQ(counts[NullMethod::kStatus], 4u);
}

TEST(BenchAgainstNullServer, TheMapStoreNeedsTheCallbackApi) {
  bench::NullServerOptions options;
  options.listen = "127.0.0.1:0";
  options.api = bench::NullServerApi::kCompletionQueue;
  options.store = bench::NullServerStore::kMap;
  EXPECT_EQ(NullServer::Start(options).status().code(), absl::StatusCode::kInvalidArgument);
}

// Reads every bench key's balance from `server` and adds them up.
int64_t TotalBalance(const NullServer& server, int* keys_found) {
  auto kv =
      etcdserverpb::KV::NewStub(grpc::CreateChannel(Endpoint(server), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  etcdserverpb::RangeRequest request;
  request.set_key("bench/");
  request.set_range_end("bench0");  // the prefix "bench/"
  etcdserverpb::RangeResponse response;
  const grpc::Status s = kv->Range(&context, request, &response);
  EXPECT_TRUE(s.ok()) << s.error_message();
  int64_t total = 0;
  for (const auto& kv_pair : response.kvs()) total += DecodeBalance(kv_pair.value());
  *keys_found = response.kvs_size();
  return total;
}

// The naive map server is a real store: transfers between few keys (so that they conflict) retry on a
// compare failure and never lose or make money; the null server, which commits every Txn and stores
// nothing, would end with no keys at all.
TEST(BenchAgainstMapServer, TransfersConserveTheTotalBalance) {
  std::unique_ptr<NullServer> server =
      StartNullServer(bench::NullServerApi::kCallback, bench::NullServerStore::kMap);
  ASSERT_NE(server, nullptr);
  ProcessResult result;
  const nlohmann::json report =
      RunBench({"txn", "--endpoints", Endpoint(*server), "--duration", "2", "--warmup", "0.2", "--preload",
                "--keys", "8", "--connections", "4", "--inflight", "8", "--initial-balance", "1000"},
               &result);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  int keys = 0;
  EXPECT_EQ(TotalBalance(*server, &keys), 8 * 1000);
  EXPECT_EQ(keys, 8);
  server->Shutdown();
  const bench::NullServerCounts counts = server->Counts();
  const uint64_t transfers =
      report["phases"]["warmup"]["ops"].get<uint64_t>() + report["ops"].get<uint64_t>();
  uint64_t retries = 0;
  for (const auto& [name, phase] : report["phases"].items()) retries += phase["retries"].get<uint64_t>();
  EXPECT_GT(transfers, 0u);
  // 8 keys, 32 transfers in flight: compares fail, and each failure is one more Txn (and two more Ranges).
  EXPECT_GT(retries, 0u);
  EXPECT_EQ(counts[NullMethod::kTxn], transfers + retries);
}

TEST(BenchAgainstMapServer, GetsReadWhatPutsWrote) {
  std::unique_ptr<NullServer> server =
      StartNullServer(bench::NullServerApi::kCallback, bench::NullServerStore::kMap);
  ASSERT_NE(server, nullptr);
  ProcessResult result;
  RunBench({"put", "--endpoints", Endpoint(*server), "--total", "200", "--warmup", "0", "--keys", "50",
            "--value-size", "7"},
           &result);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto kv =
      etcdserverpb::KV::NewStub(grpc::CreateChannel(Endpoint(*server), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  etcdserverpb::RangeRequest request;
  request.set_key("bench/");
  request.set_range_end("bench0");
  request.set_count_only(true);
  etcdserverpb::RangeResponse response;
  ASSERT_TRUE(kv->Range(&context, request, &response).ok());
  EXPECT_EQ(response.count(), 50);               // 200 puts over 50 keys: every key was written
  EXPECT_EQ(response.header().revision(), 201);  // one revision per put, after the empty store's 1
}

// Three sides: each round runs them in order, the next in reverse, and every side has ratios against A
// and the client's CPU use next to its figures.
TEST(BenchAgainstNullServer, CompareOfThreeEndpointsAlternatesOrderAndReportsClientCpu) {
  std::unique_ptr<NullServer> a = StartNullServer();
  std::unique_ptr<NullServer> b =
      StartNullServer(bench::NullServerApi::kCallback, bench::NullServerStore::kMap);
  std::unique_ptr<NullServer> c = StartNullServer(bench::NullServerApi::kCompletionQueue);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_NE(c, nullptr);
  ProcessResult result;
  const nlohmann::json r = RunBench({"get", "--compare", Endpoint(*a), Endpoint(*b), Endpoint(*c), "--rounds",
                                     "3", "--duration", "0.3", "--warmup", "0.1", "--connections", "1"},
                                    &result);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json& compare = r["compare"];
  std::vector<std::vector<int>> orders(3);
  for (int side = 0; side < 3; ++side) {
    const std::string name(1, static_cast<char>('a' + side));
    EXPECT_EQ(compare[name]["endpoints"], Endpoint(side == 0 ? *a : side == 1 ? *b : *c));
    for (const auto& round : compare[name]["rounds"]) {
      orders[side].push_back(round.value("run_order", 0));
      EXPECT_GT(round["client_cpu_percent"].get<double>(), 0);
    }
    EXPECT_GT(compare[name]["median"]["client_cpu_percent"].get<double>(), 0);
  }
  EXPECT_EQ(orders[0], (std::vector<int>{1, 6, 7}));
  EXPECT_EQ(orders[1], (std::vector<int>{2, 5, 8}));
  EXPECT_EQ(orders[2], (std::vector<int>{3, 4, 9}));
  for (const char* ratio : {"ratio_b_over_a", "ratio_c_over_a"}) {
    EXPECT_TRUE(compare[ratio]["throughput_ops_per_s"].is_number()) << ratio;
  }
  EXPECT_EQ(compare["ratio"], "B/A, C/A of the medians");
  EXPECT_NE(result.err.find("client CPU %"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("C/A"), std::string::npos) << result.err;
}

// Not load, but what etcd clients and probes ask before their load: the member list (this one member;
// the membership changes are UNIMPLEMENTED) and grpc.health.v1 (SERVING).
TEST(NullServer, AnswersMemberListAndHealthChecks) {
  std::unique_ptr<NullServer> server = StartNullServer();
  ASSERT_NE(server, nullptr);
  auto channel = grpc::CreateChannel(Endpoint(*server), grpc::InsecureChannelCredentials());
  auto deadline = [] { return std::chrono::system_clock::now() + std::chrono::seconds(10); };

  auto cluster = etcdserverpb::Cluster::NewStub(channel);
  grpc::ClientContext list_context;
  list_context.set_deadline(deadline());
  etcdserverpb::MemberListResponse members;
  const grpc::Status listed = cluster->MemberList(&list_context, etcdserverpb::MemberListRequest(), &members);
  ASSERT_TRUE(listed.ok()) << listed.error_message();
  ASSERT_EQ(members.members_size(), 1);
  EXPECT_NE(members.members(0).id(), 0u);
  EXPECT_EQ(members.members(0).id(), members.header().member_id());
  grpc::ClientContext add_context;
  add_context.set_deadline(deadline());
  etcdserverpb::MemberAddResponse added;
  EXPECT_EQ(cluster->MemberAdd(&add_context, etcdserverpb::MemberAddRequest(), &added).error_code(),
            grpc::StatusCode::UNIMPLEMENTED);

  auto health = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext health_context;
  health_context.set_deadline(deadline());
  grpc::health::v1::HealthCheckResponse checked;
  const grpc::Status check = health->Check(&health_context, grpc::health::v1::HealthCheckRequest(), &checked);
  ASSERT_TRUE(check.ok()) << check.error_message();
  EXPECT_EQ(checked.status(), grpc::health::v1::HealthCheckResponse::SERVING);

  server->Shutdown();
  EXPECT_EQ(server->Counts()[NullMethod::kMemberList], 1u);
  EXPECT_EQ(server->Counts()[NullMethod::kUnimplemented], 1u);
}

TEST(BenchAgainstUnreachableEndpoint, CountsErrorsByCodeAndExitsNonZero) {
  const std::string endpoint = "127.0.0.1:" + std::to_string(testing::FreePort());  // nobody listens
  ProcessResult result;
  const nlohmann::json r = RunBench(
      {"put", "--endpoints", endpoint, "--duration", "1", "--dial-timeout", "0.5", "--connections", "3"},
      &result);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("cannot reach " + endpoint), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("UNAVAILABLE"), std::string::npos) << result.err;
  EXPECT_EQ(r["ok"], false);
  EXPECT_TRUE(r.contains("failure"));
  EXPECT_EQ(r["errors"]["total"], 3);
  EXPECT_EQ(r["errors"]["by_code"]["UNAVAILABLE"]["count"], 3);
  EXPECT_EQ(r["phases"]["connect"]["errors"], 3);
  EXPECT_EQ(r["ops"], 0);
}

TEST(BenchOptions, BadOptionsExitWithUsageStatus) {
  for (std::vector<std::string> args :
       {std::vector<std::string>{"nosuchworkload"},
        std::vector<std::string>{"range", "--keys", "5", "--range-size", "10"},
        std::vector<std::string>{"put", "--endpoints", "nohostport"},
        std::vector<std::string>{"put", "--duration", "ten"}}) {
    args.insert(args.begin(), REVKV_BENCH_BINARY);
    const ProcessResult result = RunProcess(args, std::chrono::seconds(30));
    EXPECT_EQ(result.exit_code, 2) << args[1] << ": " << result.err;
  }
}

}  // namespace
}  // namespace revkv::client
