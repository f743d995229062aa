// Checks the rendered exposition with Prometheus's own linter, `promtool check metrics` (Debian package
// prometheus): a registry with every kind of metric, labelled and not, owned and collected, with label
// values and help text that need escaping, must pass. A deliberately broken text must fail, which shows
// that the check can fail at all.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>

#include "gtest/gtest.h"
#include "server/ops/metrics.h"
#include "tests/support/external_tools.h"

namespace revkv::server {
namespace {

constexpr const char* kPromtool = "/usr/bin/promtool";

struct PromtoolResult {
  int exit_code = -1;
  std::string output;
};

// Runs `promtool check metrics` with `text` on its standard input.
PromtoolResult RunPromtool(const std::string& text) {
  const std::string path = testing::TempDir() + "/revkv_metrics_" + std::to_string(getpid()) + ".txt";
  {
    std::ofstream file(path, std::ios::binary);
    file << text;
  }
  const std::string command = std::string(kPromtool) + " check metrics < '" + path + "' 2>&1";
  PromtoolResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::remove(path.c_str());
  return result;
}

// A registry with every kind of metric the server uses, including awkward label values.
std::string RenderEverything() {
  MetricsRegistry registry;
  registry.AddCounter("revkv_test_requests_total", "Requests served, all methods.").Increment(12);
  CounterFamily& by_method = registry.AddCounterFamily(
      "revkv_test_grpc_requests_total", "gRPC requests by method and status code.", {"method", "code"});
  by_method.WithLabels({"Put", "OK"}).Increment(3);
  by_method.WithLabels({"Range", "OK"}).Increment(9);
  by_method.WithLabels({"Txn", "FAILED_PRECONDITION"}).Increment();

  registry.AddGauge("revkv_test_heap_bytes", "Heap bytes in use.").Set(123456789);
  GaugeFamily& escaped = registry.AddGaugeFamily(
      "revkv_test_escaping", "Label values with a backslash \\, a quote \" and a\nnewline.", {"value"});
  escaped.WithLabels({"back\\slash"}).Set(1);
  escaped.WithLabels({"double\"quote"}).Set(2);
  escaped.WithLabels({"new\nline"}).Set(3);
  escaped.WithLabels({"all \\ \" \n three"}).Set(4);
  escaped.WithLabels({"utf-8 \xC3\xA9t\xC3\xA9 and a bad byte \xFF"}).Set(5);
  escaped.WithLabels({""}).Set(6);
  registry.AddGauge("revkv_test_negative", "A negative, fractional gauge.").Set(-0.125);

  Histogram& latency =
      registry.AddHistogram("revkv_test_request_duration_seconds", "Request latency.", LatencyBuckets());
  for (double v : {0.00005, 0.0003, 0.002, 0.002, 0.04, 0.7, 3.0, 30.0}) latency.Observe(v);
  HistogramFamily& by_method_latency = registry.AddHistogramFamily(
      "revkv_test_grpc_request_duration_seconds", "gRPC latency by method.", {"method"}, LatencyBuckets());
  by_method_latency.WithLabels({"Put"}).Observe(0.001);
  by_method_latency.WithLabels({"Range"}).Observe(0.0002);
  by_method_latency.WithLabels({"Range"}).Observe(0.02);

  registry.AddCollector([](MetricWriter& out) {
    out.WriteCounter("revkv_test_gc_collections_total", "Collections by kind.", 40, {{"kind", "minor"}});
    out.WriteCounter("revkv_test_gc_collections_total", "Collections by kind.", 2, {{"kind", "major"}});
    out.WriteCounter("revkv_test_gc_pause_seconds_total", "Total pause time.", 0.0123);
    out.WriteGauge("revkv_test_gc_heap_live_bytes", "Live bytes after the last major collection.", 5e7);
    out.WriteGauge("revkv_test_nan", "Not a number.", std::nan(""));
    out.WriteGauge("revkv_test_infinite", "Infinite.", std::numeric_limits<double>::infinity());
    auto at_or_below = [](uint64_t nanos) -> uint64_t {
      return nanos >= 100000 ? 3 : nanos >= 20000 ? 1 : 0;
    };
    out.WriteHistogram("revkv_test_gc_pause_seconds", "Pause by kind.",
                       CumulativeHistogram::FromNanos(PauseBuckets(), at_or_below, 3, 250000),
                       {{"kind", "minor"}});
    out.WriteHistogram("revkv_test_gc_pause_seconds", "Pause by kind.",
                       CumulativeHistogram::FromNanos(PauseBuckets(), at_or_below, 0, 0),
                       {{"kind", "major"}});
  });
  return registry.Render();
}

TEST(Promtool, AcceptsEveryKindOfMetricWithEscaping) {
  REVKV_NEED_TOOL(kPromtool, "prometheus");
  const std::string text = RenderEverything();
  // The escapes are really in the text.
  EXPECT_NE(text.find("value=\"back\\\\slash\""), std::string::npos);
  EXPECT_NE(text.find("value=\"double\\\"quote\""), std::string::npos);
  EXPECT_NE(text.find("value=\"new\\nline\""), std::string::npos);
  EXPECT_NE(text.find("bad byte \xEF\xBF\xBD\""), std::string::npos);
  const PromtoolResult result = RunPromtool(text);
  EXPECT_EQ(result.exit_code, 0) << "promtool check metrics failed:\n" << result.output << "\non:\n" << text;
}

TEST(Promtool, RejectsBrokenText) {
  REVKV_NEED_TOOL(kPromtool, "prometheus");
  // A counter without "_total" and a sample with an unterminated label value.
  EXPECT_NE(RunPromtool("# HELP revkv_x Bad.\n# TYPE revkv_x counter\nrevkv_x 1\n").exit_code, 0);
  EXPECT_NE(RunPromtool("# HELP revkv_y Bad.\n# TYPE revkv_y gauge\nrevkv_y{a=\"b} 1\n").exit_code, 0);
}

}  // namespace
}  // namespace revkv::server
