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
#include "tests/integration/prometheus_scrape.h"
#include "tests/integration/server_process.h"
#include "tests/support/external_tools.h"

namespace revkv::integration {
namespace {

constexpr char kPromtool[] = "/usr/bin/promtool";

using Scrape = PrometheusScrape;

class OpsEndpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start());
    channel_ = server_.NewChannel();
    kv_ = etcdserverpb::KV::NewStub(channel_);
  }

  // One scrape, which must follow the text format strictly (prometheus_scrape.h).
  Scrape ScrapeMetrics() { return ::revkv::integration::ScrapeMetrics(server_.metrics_port()); }

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
  // Errors by status code (gRPC's names, as etcd's grpc_server_handled_total has them).
  EXPECT_EQ(s.Value("revkv_request_errors_total{method=\"Put\",code=\"InvalidArgument\"}"), 1);
  EXPECT_EQ(s.Value("revkv_requests_total{method=\"Range\"}"), 3);
  EXPECT_FALSE(s.Has("revkv_request_errors_total{method=\"Range\",code=\"InvalidArgument\"}"));
  EXPECT_EQ(s.Value("revkv_requests_total{method=\"DeleteRange\"}"), 0);
  EXPECT_EQ(s.Value("revkv_request_duration_seconds_count{method=\"Put\"}"), 8);
  EXPECT_EQ(s.Value("revkv_store_revision"), 8);
  EXPECT_EQ(s.Value("revkv_store_keys"), 7);
  EXPECT_EQ(s.Value("revkv_store_read_only"), 0);
  EXPECT_EQ(s.Value("revkv_watch_history_revisions"), 8);  // the empty store's revision 1, then 7 puts
  EXPECT_GT(s.Value("revkv_watch_history_bytes"), 0);
  EXPECT_EQ(s.Value("revkv_watch_watchers"), 0);
  EXPECT_EQ(s.Value("revkv_watch_unsynced_watchers"), 0);
  EXPECT_EQ(s.Value("revkv_heap_max_bytes"), 2147483648.0);
  EXPECT_GT(s.Value("revkv_heap_committed_bytes"), 0);
  EXPECT_GE(s.Value("revkv_heap_bytes{space=\"retained\"}"), 0);
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
      {"revkv_gc_time_to_safepoint_seconds", "histogram"},
      {"revkv_heap_pinned_bytes", "gauge"},
      {"revkv_stm_live_snapshots", "gauge"},
  };
  for (const auto& [family, type] : types) {
    auto it = s.types.find(family);
    ASSERT_NE(it, s.types.end()) << "no # TYPE for " << family;
    EXPECT_EQ(it->second, type) << family;
  }
  for (const auto& [family, type] : s.types) {
    EXPECT_TRUE(family.rfind("revkv_", 0) == 0 || family.rfind("process_", 0) == 0)
        << family << ": every family has the revkv_ prefix, or is one of the standard process_ ones";
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

TEST_F(OpsEndpoint, MetricsFollowTheTextFormatStrictly) {
  // Something in every kind of family: requests and an error, a write (WAL), collections of each kind
  // the client can cause.
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(
        IsOk(Call(kv_.get(), &etcdserverpb::KV::Stub::Put, PutOf("k" + std::to_string(i), "v")).status));
  }
  ASSERT_TRUE(IsOk(Call(kv_.get(), &etcdserverpb::KV::Stub::Range, RangeOf("k", "l")).status));
  ASSERT_FALSE(Call(kv_.get(), &etcdserverpb::KV::Stub::Put, PutOf("", "v")).status.ok());
  auto admin = ::revkv::v1::Admin::NewStub(channel_);
  ASSERT_TRUE(
      IsOk(Call(admin.get(), &::revkv::v1::Admin::Stub::Collect, ::revkv::v1::CollectRequest()).status));

  const HttpResponse r = HttpGet(server_.metrics_port(), "/metrics");
  ASSERT_EQ(r.status, 200) << r.error;
  const Scrape s = ParsePrometheusText(r.body);
  ASSERT_TRUE(s.Valid()) << r.body;
  EXPECT_GE(s.families.size(), 30u);
  for (const std::string& family : s.families) {
    EXPECT_EQ(s.help.count(family), 1u) << family << " has no # HELP";
    EXPECT_FALSE(s.help.count(family) != 0 && s.help.at(family).empty()) << family << ": empty # HELP";
  }
  // Histograms carry samples (so the bucket rules were really applied), at least one with labels.
  EXPECT_TRUE(s.Has("revkv_request_duration_seconds_bucket{method=\"Put\",le=\"+Inf\"}")) << r.body;
  EXPECT_TRUE(s.Has("revkv_gc_time_to_safepoint_seconds_bucket{le=\"+Inf\"}")) << r.body;
}

TEST_F(OpsEndpoint, SafepointPinnedBytesAndLiveSnapshotMetricsAreExported) {
  auto admin = ::revkv::v1::Admin::NewStub(channel_);
  ASSERT_TRUE(
      IsOk(Call(admin.get(), &::revkv::v1::Admin::Stub::Collect, ::revkv::v1::CollectRequest()).status));
  const Scrape s = ScrapeMetrics();
  // Time to safepoint: a histogram in seconds; the major collection just requested stopped the world.
  ASSERT_EQ(s.types.count("revkv_gc_time_to_safepoint_seconds"), 1u);
  EXPECT_EQ(s.types.at("revkv_gc_time_to_safepoint_seconds"), "histogram");
  EXPECT_GE(s.Value("revkv_gc_time_to_safepoint_seconds_count"), 1);
  EXPECT_EQ(s.Value("revkv_gc_time_to_safepoint_seconds_bucket{le=\"+Inf\"}"),
            s.Value("revkv_gc_time_to_safepoint_seconds_count"));
  EXPECT_GE(s.Value("revkv_gc_time_to_safepoint_seconds_sum"), 0);
  // Pinned bytes and chunks, and live snapshots: gauges holding whole, non-negative numbers.
  for (const char* gauge :
       {"revkv_heap_pinned_bytes", "revkv_heap_pinned_chunks", "revkv_stm_live_snapshots"}) {
    ASSERT_EQ(s.types.count(gauge), 1u) << gauge;
    EXPECT_EQ(s.types.at(gauge), "gauge") << gauge;
    const double value = s.Value(gauge);
    EXPECT_GE(value, 0) << gauge;
    EXPECT_EQ(value, std::floor(value)) << gauge;
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

// The standard process_* families (Prometheus' client libraries, and so etcd, export them) and
// revkv_build_info, with plausible values for this very process.
TEST_F(OpsEndpoint, ProcessAndBuildInfoMetricsAreExported) {
  const Scrape s = ScrapeMetrics();
  EXPECT_GT(s.Value("process_cpu_seconds_total"), 0);
  EXPECT_GT(s.Value("process_resident_memory_bytes"), 1 << 20);
  EXPECT_GT(s.Value("process_virtual_memory_bytes"), s.Value("process_resident_memory_bytes"));
  EXPECT_GE(s.Value("process_open_fds"), 5);  // stdio, the listening sockets, the log, ...
  EXPECT_GE(s.Value("process_max_fds"), s.Value("process_open_fds"));
  const double now = static_cast<double>(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
  EXPECT_GT(s.Value("process_start_time_seconds"), now - 300);
  EXPECT_LT(s.Value("process_start_time_seconds"), now + 5);
  EXPECT_EQ(s.types.at("process_cpu_seconds_total"), "counter");
  EXPECT_EQ(s.Value("revkv_build_info{version=\"3.4.0+revkv.0.1.0\",revkv_version=\"0.1.0\","
                    "etcd_api_version=\"3.4.0\"}"),
            1);
}

// revkv_heap_bytes holds parts only, so that sum() over space means something: the parts but
// "retained" add up to the committed heap exactly.
TEST_F(OpsEndpoint, HeapPartsSumToTheCommittedHeap) {
  auto admin = ::revkv::v1::Admin::NewStub(channel_);
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(
        IsOk(Call(kv_.get(), &etcdserverpb::KV::Stub::Put, PutOf("k" + std::to_string(i), "v")).status));
  }
  ASSERT_TRUE(
      IsOk(Call(admin.get(), &::revkv::v1::Admin::Stub::Collect, ::revkv::v1::CollectRequest()).status));
  const Scrape s = ScrapeMetrics();
  double parts = 0;
  int spaces = 0;
  for (const auto& [series, value] : s.samples) {
    if (series.rfind("revkv_heap_bytes{", 0) != 0) continue;
    ++spaces;
    if (series.find("space=\"retained\"") == std::string::npos) parts += value;
  }
  EXPECT_EQ(spaces, 6);
  EXPECT_GT(s.Value("revkv_heap_bytes{space=\"old\"}"), 0);
  EXPECT_EQ(parts, s.Value("revkv_heap_committed_bytes"));
  EXPECT_FALSE(s.Has("revkv_heap_bytes{space=\"committed\"}")) << "a total among the parts";
  EXPECT_FALSE(s.Has("revkv_heap_bytes{space=\"max\"}")) << "a total among the parts";
}

// etcd's health endpoints on the metrics port: /health with etcd 3.4's body (checked against a real
// etcd), /livez and /readyz (etcd 3.5's) and /version.
TEST_F(OpsEndpoint, EtcdsHealthEndpointsAnswerAsEtcdDoes) {
  const HttpResponse health = HttpGet(server_.metrics_port(), "/health");
  ASSERT_EQ(health.status, 200) << health.error;
  EXPECT_EQ(health.body, R"({"health":"true"})");
  EXPECT_EQ(health.Header("content-type"), "application/json");
  const HttpResponse livez = HttpGet(server_.metrics_port(), "/livez");
  EXPECT_EQ(livez.status, 200);
  EXPECT_EQ(livez.body, "ok");
  const HttpResponse readyz = HttpGet(server_.metrics_port(), "/readyz");
  EXPECT_EQ(readyz.status, 200);
  EXPECT_EQ(readyz.body, "ok");
  const HttpResponse version = HttpGet(server_.metrics_port(), "/version");
  ASSERT_EQ(version.status, 200);
  const nlohmann::json v = nlohmann::json::parse(version.body);
  EXPECT_EQ(v, nlohmann::json({{"etcdserver", "3.4.0+revkv.0.1.0"}, {"etcdcluster", "3.4.0"}}));

  if (!FlavorAvailable(Flavor::kEtcd)) REVKV_MISSING_TOOL() << "etcd is not installed";
  ServerOptions options;
  options.flavor = Flavor::kEtcd;
  ServerProcess etcd(options);
  ASSERT_TRUE(etcd.Start());
  const HttpResponse etcd_health = HttpGet(etcd.metrics_port(), "/health");
  ASSERT_EQ(etcd_health.status, 200) << etcd_health.error;
  EXPECT_EQ(nlohmann::json::parse(etcd_health.body), nlohmann::json::parse(health.body));
  const HttpResponse etcd_version = HttpGet(etcd.port(), "/version");
  ASSERT_EQ(etcd_version.status, 200) << etcd_version.error;
  const nlohmann::json ev = nlohmann::json::parse(etcd_version.body);
  EXPECT_EQ(ev["etcdcluster"], "3.4.0");
  EXPECT_EQ(ev.size(), v.size()) << ev;
}

// etcd 3.4's /health is unhealthy (503, {"health":"false"}) while any alarm is active, unless the query
// excludes it (?exclude=NOSPACE); healthy again once it is deactivated. Checked against a real etcd too.
// /readyz (etcd 3.5's) fails under CORRUPT, not under NOSPACE.
class HealthUnderAlarms : public ::testing::TestWithParam<Flavor> {};

TEST_P(HealthUnderAlarms, HealthIsFalseWhileAnAlarmIsActiveUnlessExcluded) {
  if (!FlavorAvailable(GetParam())) REVKV_MISSING_TOOL() << FlavorName(GetParam()) << " is not installed";
  ServerOptions options;
  options.flavor = GetParam();
  ServerProcess server(options);
  ASSERT_TRUE(server.Start());
  auto maintenance = etcdserverpb::Maintenance::NewStub(server.NewChannel());
  auto alarm = [&](etcdserverpb::AlarmRequest::AlarmAction action, etcdserverpb::AlarmType type) {
    etcdserverpb::AlarmRequest r;
    r.set_action(action);
    r.set_memberid(77);
    r.set_alarm(type);
    return IsOk(Call(maintenance.get(), &etcdserverpb::Maintenance::Stub::Alarm, r).status);
  };
  auto health = [&](const std::string& target) {
    const HttpResponse r = HttpGet(server.metrics_port(), target);
    const nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
    return std::make_pair(r.status, j.is_object() ? j.value("health", std::string("?")) : r.body);
  };
  using A = etcdserverpb::AlarmRequest;
  using Answer = std::pair<int, std::string>;
  EXPECT_EQ(health("/health"), Answer(200, "true"));

  ASSERT_TRUE(alarm(A::ACTIVATE, etcdserverpb::NOSPACE));
  EXPECT_EQ(health("/health"), Answer(503, "false"));
  EXPECT_EQ(health("/health?exclude=NOSPACE"), Answer(200, "true"));
  EXPECT_EQ(health("/health?exclude=CORRUPT"), Answer(503, "false"));
  if (GetParam() == Flavor::kRevkv) {
    EXPECT_EQ(HttpGet(server.metrics_port(), "/readyz").status, 200);
  }

  ASSERT_TRUE(alarm(A::ACTIVATE, etcdserverpb::CORRUPT));
  EXPECT_EQ(health("/health?exclude=NOSPACE"), Answer(503, "false"));
  EXPECT_EQ(health("/health?exclude=NOSPACE&exclude=CORRUPT"), Answer(200, "true"));
  if (GetParam() == Flavor::kRevkv) {
    const HttpResponse readyz = HttpGet(server.metrics_port(), "/readyz");
    EXPECT_EQ(readyz.status, 503);
    EXPECT_NE(readyz.body.find("CORRUPT"), std::string::npos) << readyz.body;
  }

  ASSERT_TRUE(alarm(A::DEACTIVATE, etcdserverpb::CORRUPT));
  ASSERT_TRUE(alarm(A::DEACTIVATE, etcdserverpb::NOSPACE));
  EXPECT_EQ(health("/health"), Answer(200, "true"));
  if (GetParam() == Flavor::kRevkv) {
    EXPECT_EQ(HttpGet(server.metrics_port(), "/readyz").status, 200);
  }
}

INSTANTIATE_TEST_SUITE_P(Flavors, HealthUnderAlarms, ::testing::Values(Flavor::kRevkv, Flavor::kEtcd),
                         [](const ::testing::TestParamInfo<Flavor>& p) { return FlavorName(p.param); });

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
  // revkv's JSON style (proto/json/proto_json.h): snake_case names, 64-bit integers as numbers.
  EXPECT_GE(j["gc"]["pauses"][2]["collections"].get<uint64_t>(), 3u);
  EXPECT_EQ(j["heap"]["max_bytes"], 2147483648u);
  EXPECT_EQ(j["store"]["revision"], 2);
  EXPECT_EQ(j["store"]["keys"], 1);
  EXPECT_GE(j["recent"].size(), 3u);

  const HttpResponse two = HttpGet(server_.metrics_port(), "/debug/gc?recent=2");
  ASSERT_EQ(two.status, 200) << two.error;
  const nlohmann::json j2 = nlohmann::json::parse(two.body, nullptr, false);
  ASSERT_FALSE(j2.is_discarded());
  EXPECT_EQ(j2["recent"].size(), 2u);

  EXPECT_EQ(HttpGet(server_.metrics_port(), "/debug/gc?recent=abc").status, 400);
  EXPECT_EQ(HttpGet(server_.metrics_port(), "/debug/gc?recent=-1").status, 400);
}

TEST_F(OpsEndpoint, AnUnknownPathIsNotFound) {
  EXPECT_EQ(HttpGet(server_.metrics_port(), "/nope").status, 404);
  EXPECT_EQ(HttpGet(server_.metrics_port(), "/metricsx").status, 404);
}

// ----- the strict reader itself: each rule it checks catches a text that breaks it -----

// The errors of `text`, joined, for failure messages.
std::string Errors(const Scrape& s) {
  std::string all;
  for (const std::string& e : s.errors) all += e + "\n";
  return all;
}

const char kGoodText[] =
    "# HELP a_total Requests.\n"
    "# TYPE a_total counter\n"
    "a_total{method=\"Put\"} 3\n"
    "a_total{method=\"quote\\\" back\\\\ nl\\n\"} 1\n"
    "# HELP h_seconds Latency \\\\ with\\nescapes.\n"
    "# TYPE h_seconds histogram\n"
    "h_seconds_bucket{le=\"0.1\"} 1\n"
    "h_seconds_bucket{le=\"1\"} 2\n"
    "h_seconds_bucket{le=\"+Inf\"} 2\n"
    "h_seconds_sum 0.6\n"
    "h_seconds_count 2\n"
    "# TYPE g gauge\n"
    "g NaN\n";

TEST(StrictPrometheusText, AcceptsAWellFormedText) {
  const Scrape s = ParsePrometheusText(kGoodText);
  EXPECT_TRUE(s.Valid());
  EXPECT_EQ(s.Value("a_total{method=\"Put\"}"), 3);
  EXPECT_EQ(s.help.at("h_seconds"), "Latency \\ with\nescapes.");
  EXPECT_EQ(s.families, (std::vector<std::string>{"a_total", "h_seconds", "g"}));
}

TEST(StrictPrometheusText, RejectsEveryBrokenRule) {
  const std::string good = kGoodText;
  // Each case breaks one rule of the good text.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a blank line", good + "\n"},
      {"another comment", "# just a comment\n" + good},
      {"no final newline", good.substr(0, good.size() - 1)},
      {"a sample before its TYPE", "x 1\n# TYPE x gauge\n"},
      {"a sample without TYPE", good + "untyped_thing 1\n"},
      {"an unknown type", "# TYPE x gauges\nx 1\n"},
      {"two TYPEs", "# TYPE x gauge\n# TYPE x gauge\nx 1\n"},
      {"two HELPs", "# HELP x a\n# HELP x b\n# TYPE x gauge\nx 1\n"},
      {"interleaved families", "# TYPE x gauge\nx 1\n# TYPE y gauge\ny 1\nx{a=\"b\"} 2\n"},
      {"a reopened family", "# TYPE x gauge\nx 1\n# TYPE y gauge\ny 1\n# HELP x again\n"},
      {"a duplicate series", "# TYPE x gauge\nx{a=\"1\",b=\"2\"} 1\nx{b=\"2\",a=\"1\"} 1\n"},
      {"a label given twice", "# TYPE x gauge\nx{a=\"1\",a=\"2\"} 1\n"},
      {"a bad escape in a label value", "# TYPE x gauge\nx{a=\"\\t\"} 1\n"},
      {"an unterminated label value", "# TYPE x gauge\nx{a=\"1} 1\n"},
      {"a bad escape in HELP", "# HELP x a\\tb\n# TYPE x gauge\nx 1\n"},
      {"a bad label name", "# TYPE x gauge\nx{1a=\"1\"} 1\n"},
      {"a bad metric name", "# TYPE 1x gauge\n1x 1\n"},
      {"a bad value", "# TYPE x gauge\nx 0x10\n"},
      {"a bad timestamp", "# TYPE x gauge\nx 1 12.5\n"},
      {"a counter sample named otherwise", "# TYPE x_total counter\nx 1\n"},
      {"decreasing buckets",
       "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"2\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\n"
       "h_count 2\n"},
      {"buckets out of le order",
       "# TYPE h histogram\nh_bucket{le=\"2\"} 1\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\n"
       "h_count 1\n"},
      {"no +Inf bucket", "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n"},
      {"+Inf differing from _count",
       "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 2\n"},
      {"no _count", "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\n"},
      {"a bucket without le", "# TYPE h histogram\nh_bucket 1\nh_sum 1\nh_count 1\n"},
      {"a histogram sample named as the family", "# TYPE h histogram\nh 1\n"},
  };
  for (const auto& [what, text] : cases) {
    const Scrape s = ParsePrometheusText(text);
    EXPECT_FALSE(s.errors.empty()) << what << " was accepted:\n" << text;
  }
  // And the good text's own histogram, once per label set: a second label set is checked on its own.
  const Scrape two = ParsePrometheusText(
      "# TYPE h histogram\nh_bucket{k=\"a\",le=\"+Inf\"} 1\nh_sum{k=\"a\"} 1\nh_count{k=\"a\"} 1\n"
      "h_bucket{k=\"b\",le=\"+Inf\"} 3\nh_sum{k=\"b\"} 1\nh_count{k=\"b\"} 2\n");
  EXPECT_EQ(two.errors.size(), 1u) << Errors(two);
}

}  // namespace
}  // namespace revkv::integration
