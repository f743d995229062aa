// The ops HTTP endpoint of a real revkv-server: /metrics is Prometheus text with revkv_ families whose
// values follow what the test did (requests by method, store revision, collections), consistent
// histograms, and passes `promtool check metrics`; /healthz answers 200 "ok"; /debug/gc is JSON.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "revkv/v1/admin.grpc.pb.h"
#include "tests/integration/etcd_calls.h"
#include "tests/integration/server_process.h"
#include "tests/support/external_tools.h"

namespace revkv::integration {
namespace {

constexpr char kPromtool[] = "/usr/bin/promtool";

// One scrape: every sample, keyed by its name with labels exactly as written ("a_total{k=\"v\"}"),
// and the # TYPE of every family.
struct Scrape {
  std::map<std::string, double> samples;
  std::map<std::string, std::string> types;
  std::string text;

  bool Has(const std::string& series) const { return samples.count(series) != 0; }
  double Value(const std::string& series) const {
    auto it = samples.find(series);
    if (it == samples.end()) {
      ADD_FAILURE() << "no sample " << series;
      return -1;
    }
    return it->second;
  }
};

Scrape Parse(const std::string& text) {
  Scrape s;
  s.text = text;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream words(line.substr(7));
      std::string name, type;
      words >> name >> type;
      s.types[name] = type;
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    s.samples[line.substr(0, space)] = std::strtod(line.c_str() + space + 1, nullptr);
  }
  return s;
}

class OpsEndpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start());
    channel_ = server_.NewChannel();
    kv_ = etcdserverpb::KV::NewStub(channel_);
  }

  Scrape ScrapeMetrics() {
    const HttpResponse r = HttpGet(server_.metrics_port(), "/metrics");
    EXPECT_EQ(r.status, 200) << r.error;
    return Parse(r.body);
  }

  // Scrapes until `series` reaches `value` (a request is counted when its call completes on the server,
  // just after the client has its answer), at most 5 s; returns the last scrape.
  Scrape ScrapeUntil(const std::string& series, double value) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    Scrape s = ScrapeMetrics();
    while ((!s.Has(series) || s.samples[series] < value) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      s = ScrapeMetrics();
    }
    return s;
  }

  ServerProcess server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<etcdserverpb::KV::Stub> kv_;
};

TEST_F(OpsEndpoint, MetricsCountTheRequestsMadeAndReportTheStore) {
  for (int i = 0; i < 7; ++i) {
    ASSERT_TRUE(
        IsOk(Call(kv_.get(), &etcdserverpb::KV::Stub::Put, PutOf("k" + std::to_string(i), "v")).status));
  }
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(IsOk(Call(kv_.get(), &etcdserverpb::KV::Stub::Range, RangeOf("k1")).status));
  ASSERT_FALSE(Call(kv_.get(), &etcdserverpb::KV::Stub::Put, PutOf("", "v")).status.ok());  // an error

  const HttpResponse r = HttpGet(server_.metrics_port(), "/metrics");
  ASSERT_EQ(r.status, 200) << r.error;
  EXPECT_EQ(r.Header("content-type").rfind("text/plain; version=0.0.4", 0), 0u) << r.Header("content-type");

  const Scrape s = ScrapeUntil("revkv_requests_total{method=\"Range\"}", 3);
  EXPECT_EQ(s.Value("revkv_requests_total{method=\"Put\"}"), 8);  // 7 puts and the refused one
  EXPECT_EQ(s.Value("revkv_request_errors_total{method=\"Put\"}"), 1);
  EXPECT_EQ(s.Value("revkv_requests_total{method=\"Range\"}"), 3);
  EXPECT_EQ(s.Value("revkv_request_errors_total{method=\"Range\"}"), 0);
  EXPECT_EQ(s.Value("revkv_requests_total{method=\"DeleteRange\"}"), 0);
  EXPECT_EQ(s.Value("revkv_request_duration_seconds_count{method=\"Put\"}"), 8);
  EXPECT_EQ(s.Value("revkv_store_revision"), 8);
  EXPECT_EQ(s.Value("revkv_store_keys"), 7);
  EXPECT_EQ(s.Value("revkv_store_read_only"), 0);
  EXPECT_EQ(s.Value("revkv_heap_bytes{space=\"max\"}"), 2147483648.0);
  EXPECT_GT(s.Value("revkv_heap_bytes{space=\"committed\"}"), 0);
  EXPECT_GE(s.Value("revkv_wal_fsyncs_total"), 1);
  EXPECT_EQ(s.Value("revkv_wal_records_total"), 7);
  for (const char* kind : {"minor", "local", "major"}) {
    EXPECT_TRUE(s.Has(std::string("revkv_gc_collections_total{kind=\"") + kind + "\"}")) << kind;
  }

  const std::map<std::string, std::string> types = {
      {"revkv_requests_total", "counter"},
      {"revkv_request_errors_total", "counter"},
      {"revkv_request_duration_seconds", "histogram"},
      {"revkv_gc_collections_total", "counter"},
      {"revkv_gc_pause_seconds", "histogram"},
      {"revkv_heap_bytes", "gauge"},
      {"revkv_store_revision", "gauge"},
      {"revkv_wal_fsync_duration_seconds", "histogram"},
  };
  for (const auto& [family, type] : types) {
    auto it = s.types.find(family);
    ASSERT_NE(it, s.types.end()) << "no # TYPE for " << family;
    EXPECT_EQ(it->second, type) << family;
  }
  for (const auto& [family, type] : s.types) {
    EXPECT_EQ(family.rfind("revkv_", 0), 0u) << family << ": every family has the revkv_ prefix";
    if (type == "counter") {
      EXPECT_EQ(family.substr(family.size() - 6), "_total") << family;
    }
  }
}

TEST_F(OpsEndpoint, PauseHistogramsAreCumulativeAndFollowCollections) {
  const Scrape before = ScrapeMetrics();
  auto admin = ::revkv::v1::Admin::NewStub(channel_);
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(
        IsOk(Call(admin.get(), &::revkv::v1::Admin::Stub::Collect, ::revkv::v1::CollectRequest()).status));
  }
  const Scrape after = ScrapeMetrics();
  EXPECT_GE(after.Value("revkv_gc_collections_total{kind=\"major\"}"),
            before.Value("revkv_gc_collections_total{kind=\"major\"}") + 2);
  EXPECT_GE(after.Value("revkv_gc_pause_seconds_count{kind=\"major\"}"),
            before.Value("revkv_gc_pause_seconds_count{kind=\"major\"}") + 2);
  EXPECT_GT(after.Value("revkv_gc_pause_seconds_sum{kind=\"major\"}"), 0);

  // Every bucket series of every histogram: counts never decrease as le grows; +Inf equals _count.
  std::map<std::string, std::vector<std::pair<double, double>>> buckets;  // _count series -> (le, count)
  for (const auto& [series, value] : after.samples) {
    const size_t at = series.find("_bucket{");
    if (at == std::string::npos) continue;
    const size_t le = series.find("le=\"", at);
    ASSERT_NE(le, std::string::npos) << series;
    const size_t end = series.find('"', le + 4);
    const std::string bound = series.substr(le + 4, end - le - 4);
    // The _count series: the same name with _count for _bucket, the same labels without le.
    std::string count = series;
    count.erase(le, end + 1 - le);
    if (count[le - 1] == ',') {
      count.erase(le - 1, 1);
    } else if (count[le] == ',') {
      count.erase(le, 1);
    }
    if (count.substr(count.size() - 2) == "{}") count.resize(count.size() - 2);
    count.replace(at, 7, "_count");
    const double upper =
        bound == "+Inf" ? std::numeric_limits<double>::infinity() : std::strtod(bound.c_str(), nullptr);
    buckets[count].emplace_back(upper, value);
  }
  ASSERT_FALSE(buckets.empty());
  for (auto& [count, points] : buckets) {
    std::sort(points.begin(), points.end());
    for (size_t i = 1; i < points.size(); ++i) {
      EXPECT_GE(points[i].second, points[i - 1].second) << count << " le=" << points[i].first;
    }
    ASSERT_TRUE(std::isinf(points.back().first)) << count << ": no +Inf bucket";
    EXPECT_EQ(points.back().second, after.Value(count)) << count << ": the +Inf bucket";
  }
}

TEST_F(OpsEndpoint, PromtoolAcceptsTheMetrics) {
  REVKV_NEED_TOOL(kPromtool, "prometheus");
  ASSERT_TRUE(IsOk(Call(kv_.get(), &etcdserverpb::KV::Stub::Put, PutOf("k", "v")).status));
  const HttpResponse r = HttpGet(server_.metrics_port(), "/metrics");
  ASSERT_EQ(r.status, 200) << r.error;
  const CommandResult check = RunCommand({kPromtool, "check", "metrics"}, r.body);
  EXPECT_EQ(check.exit_code, 0) << check.Describe();
  EXPECT_EQ(check.out + check.err, "") << "promtool's lint findings";
}

TEST_F(OpsEndpoint, HealthzAnswersOk) {
  const HttpResponse r = HttpGet(server_.metrics_port(), "/healthz");
  ASSERT_EQ(r.status, 200) << r.error;
  EXPECT_EQ(r.body, "ok\n");
  EXPECT_EQ(r.Header("content-type").rfind("text/plain", 0), 0u) << r.Header("content-type");
}

TEST_F(OpsEndpoint, DebugGcIsJsonWithTheCollectorFigures) {
  auto admin = ::revkv::v1::Admin::NewStub(channel_);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(
        IsOk(Call(admin.get(), &::revkv::v1::Admin::Stub::Collect, ::revkv::v1::CollectRequest()).status));
  }
  ASSERT_TRUE(IsOk(Call(kv_.get(), &etcdserverpb::KV::Stub::Put, PutOf("k", "v")).status));

  const HttpResponse r = HttpGet(server_.metrics_port(), "/debug/gc");
  ASSERT_EQ(r.status, 200) << r.error;
  EXPECT_EQ(r.Header("content-type").rfind("application/json", 0), 0u) << r.Header("content-type");
  const nlohmann::json j = nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << r.body;
  ASSERT_TRUE(j.contains("gc") && j["gc"].contains("pauses")) << r.body;
  ASSERT_EQ(j["gc"]["pauses"].size(), 3u);
  EXPECT_EQ(j["gc"]["pauses"][2]["kind"], "MAJOR");
  // proto3 JSON writes 64-bit integers as strings.
  EXPECT_GE(std::stoull(j["gc"]["pauses"][2]["collections"].get<std::string>()), 3u);
  EXPECT_EQ(j["heap"]["maxBytes"], "2147483648");
  EXPECT_EQ(j["store"]["revision"], "2");
  EXPECT_EQ(j["store"]["keys"], "1");
  EXPECT_GE(j["recent"].size(), 3u);

  const HttpResponse two = HttpGet(server_.metrics_port(), "/debug/gc?recent=2");
  ASSERT_EQ(two.status, 200) << two.error;
  const nlohmann::json j2 = nlohmann::json::parse(two.body, nullptr, false);
  ASSERT_FALSE(j2.is_discarded());
  EXPECT_EQ(j2["recent"].size(), 2u);
}

TEST_F(OpsEndpoint, AnUnknownPathIsNotFound) {
  EXPECT_EQ(HttpGet(server_.metrics_port(), "/nope").status, 404);
  EXPECT_EQ(HttpGet(server_.metrics_port(), "/metricsx").status, 404);
}

}  // namespace
}  // namespace revkv::integration
