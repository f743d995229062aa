// Tests of the metrics registry and its Prometheus text output: exact text for every kind of metric,
// escaping, ordering, collectors, lock-free concurrent updates and the programmer-error checks.
#include "server/ops/metrics.h"

#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace revkv::server {
namespace {

TEST(MetricsRegistry, CounterRendersHelpTypeAndSample) {
  MetricsRegistry registry;
  Counter& requests = registry.AddCounter("revkv_test_requests_total", "Requests served.");
  requests.Increment();
  requests.Increment(2);
  EXPECT_EQ(requests.Value(), 3u);
  EXPECT_EQ(registry.Render(),
            "# HELP revkv_test_requests_total Requests served.\n"
            "# TYPE revkv_test_requests_total counter\n"
            "revkv_test_requests_total 3\n");
}

TEST(MetricsRegistry, LabelledChildrenAreSortedByLabelValues) {
  MetricsRegistry registry;
  CounterFamily& family =
      registry.AddCounterFamily("revkv_test_rpc_total", "RPCs by method and code.", {"method", "code"});
  family.WithLabels({"Range", "OK"}).Increment(5);
  family.WithLabels({"Put", "OK"}).Increment(2);
  family.WithLabels({"Put", "Aborted"}).Increment();
  // The same values give the same child.
  EXPECT_EQ(&family.WithLabels({"Put", "OK"}), &family.WithLabels({"Put", "OK"}));
  EXPECT_EQ(registry.Render(),
            "# HELP revkv_test_rpc_total RPCs by method and code.\n"
            "# TYPE revkv_test_rpc_total counter\n"
            "revkv_test_rpc_total{method=\"Put\",code=\"Aborted\"} 1\n"
            "revkv_test_rpc_total{method=\"Put\",code=\"OK\"} 2\n"
            "revkv_test_rpc_total{method=\"Range\",code=\"OK\"} 5\n");
}

TEST(MetricsRegistry, GaugeSetAndAdd) {
  MetricsRegistry registry;
  Gauge& heap = registry.AddGauge("revkv_test_heap_bytes", "Heap bytes.");
  heap.Set(1024);
  heap.Add(-24.5);
  GaugeFamily& temps = registry.AddGaugeFamily("revkv_test_ratio", "A ratio.", {"kind"});
  temps.WithLabels({"a"}).Set(0.1);
  temps.WithLabels({"b"}).Set(-3);
  EXPECT_EQ(registry.Render(),
            "# HELP revkv_test_heap_bytes Heap bytes.\n"
            "# TYPE revkv_test_heap_bytes gauge\n"
            "revkv_test_heap_bytes 999.5\n"
            "# HELP revkv_test_ratio A ratio.\n"
            "# TYPE revkv_test_ratio gauge\n"
            "revkv_test_ratio{kind=\"a\"} 0.1\n"
            "revkv_test_ratio{kind=\"b\"} -3\n");
}

TEST(MetricsRegistry, HistogramBucketsAreCumulativeWithInfSumAndCount) {
  MetricsRegistry registry;
  Histogram& latency = registry.AddHistogram("revkv_test_latency_seconds", "Latency.", {0.001, 0.01, 0.1});
  latency.Observe(0.0005);
  latency.Observe(0.001);  // on a bound: counted in that bucket (le is "less or equal")
  latency.Observe(0.05);
  latency.Observe(2);
  latency.Observe(std::nan(""));  // ignored
  EXPECT_EQ(registry.Render(),
            "# HELP revkv_test_latency_seconds Latency.\n"
            "# TYPE revkv_test_latency_seconds histogram\n"
            "revkv_test_latency_seconds_bucket{le=\"0.001\"} 2\n"
            "revkv_test_latency_seconds_bucket{le=\"0.01\"} 2\n"
            "revkv_test_latency_seconds_bucket{le=\"0.1\"} 3\n"
            "revkv_test_latency_seconds_bucket{le=\"+Inf\"} 4\n"
            "revkv_test_latency_seconds_sum 2.0515\n"
            "revkv_test_latency_seconds_count 4\n");
}

TEST(MetricsRegistry, HistogramFamilyPutsLeLastAmongLabels) {
  MetricsRegistry registry;
  HistogramFamily& family =
      registry.AddHistogramFamily("revkv_test_rpc_seconds", "RPC latency.", {"method"}, {0.5, 1, 2, 4});
  family.WithLabels({"Txn"}).Observe(3);
  EXPECT_EQ(registry.Render(),
            "# HELP revkv_test_rpc_seconds RPC latency.\n"
            "# TYPE revkv_test_rpc_seconds histogram\n"
            "revkv_test_rpc_seconds_bucket{method=\"Txn\",le=\"0.5\"} 0\n"
            "revkv_test_rpc_seconds_bucket{method=\"Txn\",le=\"1\"} 0\n"
            "revkv_test_rpc_seconds_bucket{method=\"Txn\",le=\"2\"} 0\n"
            "revkv_test_rpc_seconds_bucket{method=\"Txn\",le=\"4\"} 1\n"
            "revkv_test_rpc_seconds_bucket{method=\"Txn\",le=\"+Inf\"} 1\n"
            "revkv_test_rpc_seconds_sum{method=\"Txn\"} 3\n"
            "revkv_test_rpc_seconds_count{method=\"Txn\"} 1\n");
}

TEST(MetricsRegistry, FamilyWithoutChildrenRendersNothing) {
  MetricsRegistry registry;
  registry.AddCounterFamily("revkv_test_unused_total", "Never used.", {"method"});
  EXPECT_EQ(registry.Render(), "");
}

TEST(MetricsRegistry, LabelValuesAndHelpAreEscaped) {
  MetricsRegistry registry;
  registry.AddGaugeFamily("revkv_test_escape", "Help with \\ backslash,\nnewline and \"quotes\".", {"v"})
      .WithLabels({"a\\b\"c\nd"})
      .Set(1);
  EXPECT_EQ(registry.Render(),
            "# HELP revkv_test_escape Help with \\\\ backslash,\\nnewline and \"quotes\".\n"
            "# TYPE revkv_test_escape gauge\n"
            "revkv_test_escape{v=\"a\\\\b\\\"c\\nd\"} 1\n");
}

TEST(MetricsRegistry, FamiliesAreSortedByNameAcrossRegistryAndCollectors) {
  MetricsRegistry registry;
  registry.AddCounter("revkv_zeta_total", "Last.").Increment();
  registry.AddCollector([](MetricWriter& out) { out.WriteGauge("revkv_middle", "Middle.", 2); });
  registry.AddCounter("revkv_alpha_total", "First.").Increment();
  const std::string text = registry.Render();
  const size_t alpha = text.find("# HELP revkv_alpha_total");
  const size_t middle = text.find("# HELP revkv_middle");
  const size_t zeta = text.find("# HELP revkv_zeta_total");
  ASSERT_NE(alpha, std::string::npos);
  ASSERT_NE(middle, std::string::npos);
  ASSERT_NE(zeta, std::string::npos);
  EXPECT_LT(alpha, middle);
  EXPECT_LT(middle, zeta);
}

TEST(MetricWriter, SamplesOfOneNameAreGroupedUnderOneHeader) {
  MetricsRegistry registry;
  registry.AddCollector([](MetricWriter& out) {
    out.WriteCounter("revkv_gc_collections_total", "Collections by kind.", 7, {{"kind", "minor"}});
    out.WriteGauge("revkv_heap_bytes", "Heap.", 4096);
    out.WriteCounter("revkv_gc_collections_total", "ignored: the first help wins", 2, {{"kind", "major"}});
  });
  EXPECT_EQ(registry.Render(),
            "# HELP revkv_gc_collections_total Collections by kind.\n"
            "# TYPE revkv_gc_collections_total counter\n"
            "revkv_gc_collections_total{kind=\"minor\"} 7\n"
            "revkv_gc_collections_total{kind=\"major\"} 2\n"
            "# HELP revkv_heap_bytes Heap.\n"
            "# TYPE revkv_heap_bytes gauge\n"
            "revkv_heap_bytes 4096\n");
}

TEST(MetricWriter, HistogramFromNanosConvertsBoundsToSeconds) {
  // A fake nanosecond histogram: values 1000, 5000, 5000, 2000000 ns.
  const std::vector<uint64_t> values = {1000, 5000, 5000, 2000000};
  auto at_or_below = [&](uint64_t nanos) {
    uint64_t n = 0;
    for (uint64_t v : values) n += v <= nanos ? 1 : 0;
    return n;
  };
  const CumulativeHistogram h =
      CumulativeHistogram::FromNanos({0.000001, 0.000005, 0.001, 1}, at_or_below, 4, 2011000);
  EXPECT_EQ(h.cumulative_counts, (std::vector<uint64_t>{1, 3, 3, 4}));
  EXPECT_EQ(h.count, 4u);
  EXPECT_DOUBLE_EQ(h.sum, 0.002011);

  MetricWriter out;
  out.WriteHistogram("revkv_gc_pause_seconds", "Pauses.", h, {{"kind", "minor"}});
  EXPECT_EQ(out.Text(),
            "# HELP revkv_gc_pause_seconds Pauses.\n"
            "# TYPE revkv_gc_pause_seconds histogram\n"
            "revkv_gc_pause_seconds_bucket{kind=\"minor\",le=\"1e-06\"} 1\n"
            "revkv_gc_pause_seconds_bucket{kind=\"minor\",le=\"5e-06\"} 3\n"
            "revkv_gc_pause_seconds_bucket{kind=\"minor\",le=\"0.001\"} 3\n"
            "revkv_gc_pause_seconds_bucket{kind=\"minor\",le=\"1\"} 4\n"
            "revkv_gc_pause_seconds_bucket{kind=\"minor\",le=\"+Inf\"} 4\n"
            "revkv_gc_pause_seconds_sum{kind=\"minor\"} 0.002011\n"
            "revkv_gc_pause_seconds_count{kind=\"minor\"} 4\n");
}

TEST(MetricWriter, RacySnapshotIsMadeCumulativeAndConsistent) {
  CumulativeHistogram h;
  h.upper_bounds = {1, 2, 3};
  h.cumulative_counts = {5, 4, 6};  // a racy snapshot: bucket 2 read before bucket 1 grew
  h.count = 5;                      // and the total read before the last bucket
  h.sum = 9;
  MetricWriter out;
  out.WriteHistogram("revkv_test_seconds", "Racy.", h);
  EXPECT_EQ(out.Text(),
            "# HELP revkv_test_seconds Racy.\n"
            "# TYPE revkv_test_seconds histogram\n"
            "revkv_test_seconds_bucket{le=\"1\"} 5\n"
            "revkv_test_seconds_bucket{le=\"2\"} 5\n"
            "revkv_test_seconds_bucket{le=\"3\"} 6\n"
            "revkv_test_seconds_bucket{le=\"+Inf\"} 6\n"
            "revkv_test_seconds_sum 9\n"
            "revkv_test_seconds_count 6\n");
}

TEST(MetricWriter, TrailingInfBoundIsTheInfBucket) {
  CumulativeHistogram h;
  h.upper_bounds = {1, std::numeric_limits<double>::infinity()};
  h.cumulative_counts = {1, 3};
  h.count = 3;
  h.sum = 4;
  MetricWriter out;
  out.WriteHistogram("revkv_test_seconds", "Inf.", h);
  EXPECT_EQ(out.Text(),
            "# HELP revkv_test_seconds Inf.\n"
            "# TYPE revkv_test_seconds histogram\n"
            "revkv_test_seconds_bucket{le=\"1\"} 1\n"
            "revkv_test_seconds_bucket{le=\"+Inf\"} 3\n"
            "revkv_test_seconds_sum 4\n"
            "revkv_test_seconds_count 3\n");
}

TEST(MetricWriter, SpecialValues) {
  MetricWriter out;
  out.WriteGauge("revkv_test_value", "Values.", std::nan(""), {{"v", "nan"}});
  out.WriteGauge("revkv_test_value", "Values.", std::numeric_limits<double>::infinity(), {{"v", "inf"}});
  out.WriteGauge("revkv_test_value", "Values.", -std::numeric_limits<double>::infinity(), {{"v", "ninf"}});
  out.WriteGauge("revkv_test_value", "Values.", 1e-5, {{"v", "small"}});
  out.WriteGauge("revkv_test_value", "Values.", 9007199254740991.0, {{"v", "max_exact"}});
  out.WriteGauge("revkv_test_value", "Values.", 1e300, {{"v", "huge"}});
  EXPECT_EQ(out.Text(),
            "# HELP revkv_test_value Values.\n"
            "# TYPE revkv_test_value gauge\n"
            "revkv_test_value{v=\"nan\"} NaN\n"
            "revkv_test_value{v=\"inf\"} +Inf\n"
            "revkv_test_value{v=\"ninf\"} -Inf\n"
            "revkv_test_value{v=\"small\"} 1e-05\n"
            "revkv_test_value{v=\"max_exact\"} 9007199254740991\n"
            "revkv_test_value{v=\"huge\"} 1e+300\n");
}

TEST(MetricsRegistry, RemovedCollectorIsNotCalled) {
  MetricsRegistry registry;
  int calls = 0;
  const int id = registry.AddCollector([&](MetricWriter& out) {
    ++calls;
    out.WriteGauge("revkv_test_collected", "Collected.", 1);
  });
  EXPECT_NE(registry.Render().find("revkv_test_collected 1"), std::string::npos);
  registry.RemoveCollector(id);
  EXPECT_EQ(registry.Render(), "");
  EXPECT_EQ(calls, 1);
}

TEST(MetricsRegistry, ConcurrentUpdatesFromFourThreadsSumExactly) {
  MetricsRegistry registry;
  HistogramFamily& latency =
      registry.AddHistogramFamily("revkv_test_seconds", "Latency.", {"method"}, {0.25, 0.5, 1});
  CounterFamily& requests = registry.AddCounterFamily("revkv_test_requests_total", "Requests.", {"method"});
  Gauge& in_flight = registry.AddGauge("revkv_test_in_flight", "In flight.");
  constexpr int kThreads = 4;
  constexpr int kIterations = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Children looked up concurrently too; the first lookup of "Put" races with the others.
      Histogram& h = latency.WithLabels({t % 2 == 0 ? "Put" : "Range"});
      Histogram& shared = latency.WithLabels({"All"});
      Counter& c = requests.WithLabels({"All"});
      for (int i = 0; i < kIterations; ++i) {
        // Dyadic values: their sums are exact in any order.
        const double v = (i % 4) * 0.25;  // 0, 0.25, 0.5, 0.75
        h.Observe(v);
        shared.Observe(v);
        c.Increment();
        in_flight.Add(1);
        in_flight.Add(-1);
        if (i % 1000 == 0) (void)registry.Render();  // scrapes race with updates
      }
    });
  }
  for (std::thread& thread : threads) thread.join();

  const CumulativeHistogram all = latency.WithLabels({"All"}).Snapshot();
  const uint64_t total = uint64_t{kThreads} * kIterations;
  EXPECT_EQ(all.count, total);
  EXPECT_EQ(all.cumulative_counts, (std::vector<uint64_t>{total / 2, total * 3 / 4, total}));
  EXPECT_DOUBLE_EQ(all.sum, total / 4 * (0 + 0.25 + 0.5 + 0.75));
  EXPECT_EQ(latency.WithLabels({"Put"}).Snapshot().count, total / 2);
  EXPECT_EQ(requests.WithLabels({"All"}).Value(), total);
  EXPECT_EQ(in_flight.Value(), 0);
  EXPECT_NE(registry.Render().find("revkv_test_requests_total{method=\"All\"} 80000\n"), std::string::npos);
}

TEST(Metrics, ExponentialBuckets) {
  EXPECT_EQ(ExponentialBuckets(0.25, 2, 4), (std::vector<double>{0.25, 0.5, 1, 2}));
  EXPECT_EQ(LatencyBuckets().front(), 0.0001);
  EXPECT_EQ(PauseBuckets().back(), 1);
}

// Programmer errors abort with a message naming the problem.
class MetricsDeathTest : public testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(MetricsDeathTest, InvalidMetricName) {
  MetricsRegistry registry;
  EXPECT_DEATH(registry.AddGauge("revkv-bad", "x"), "invalid metric name 'revkv-bad'");
  EXPECT_DEATH(registry.AddGauge("9revkv", "x"), "invalid metric name");
}

TEST_F(MetricsDeathTest, CounterWithoutTotalSuffix) {
  MetricsRegistry registry;
  EXPECT_DEATH(registry.AddCounter("revkv_requests", "x"), "suffix _total");
  EXPECT_DEATH(registry.AddGauge("revkv_requests_total", "x"), "must not end in _total");
  EXPECT_DEATH(registry.AddGauge("revkv_segments_count", "x"), "must not end in _count");
}

TEST_F(MetricsDeathTest, InvalidOrReservedLabelName) {
  MetricsRegistry registry;
  EXPECT_DEATH(registry.AddCounterFamily("revkv_a_total", "x", {"bad-label"}),
               "invalid label name 'bad-label'");
  EXPECT_DEATH(registry.AddCounterFamily("revkv_a_total", "x", {"__reserved"}), "invalid label name");
  EXPECT_DEATH(registry.AddHistogramFamily("revkv_a_seconds", "x", {"le"}, {1}), "'le' is reserved");
  EXPECT_DEATH(registry.AddCounterFamily("revkv_a_total", "x", {"m", "m"}), "listed twice");
}

TEST_F(MetricsDeathTest, DuplicateOrClashingRegistration) {
  MetricsRegistry registry;
  registry.AddCounter("revkv_a_total", "x");
  EXPECT_DEATH(registry.AddCounter("revkv_a_total", "x"), "registered twice");
  registry.AddHistogram("revkv_b_seconds", "x", {1});
  EXPECT_DEATH(registry.AddGauge("revkv_b_seconds_bucket", "x"), "must not end in _bucket");
  EXPECT_DEATH(registry.AddHistogram("revkv_b_seconds", "x", {1}), "registered twice");
}

TEST_F(MetricsDeathTest, MissingHelp) {
  MetricsRegistry registry;
  EXPECT_DEATH(registry.AddGauge("revkv_a", ""), "no help text");
}

TEST_F(MetricsDeathTest, WrongNumberOfLabelValues) {
  MetricsRegistry registry;
  CounterFamily& family = registry.AddCounterFamily("revkv_a_total", "x", {"method", "code"});
  EXPECT_DEATH(family.WithLabels({"Put"}), "has 2 label\\(s\\) \\(method, code\\) but 1 value\\(s\\)");
}

TEST_F(MetricsDeathTest, BadBucketBounds) {
  MetricsRegistry registry;
  EXPECT_DEATH(registry.AddHistogram("revkv_a_seconds", "x", {1, 1}), "strictly increasing");
  EXPECT_DEATH(registry.AddHistogram("revkv_a_seconds", "x", {2, 1}), "strictly increasing");
  EXPECT_DEATH(registry.AddHistogram("revkv_a_seconds", "x", {std::nan("")}), "strictly increasing");
}

TEST_F(MetricsDeathTest, CollectorWritingOneNameWithTwoTypes) {
  MetricWriter out;
  out.WriteGauge("revkv_a", "x", 1);
  EXPECT_DEATH(out.WriteHistogram("revkv_a", "x", CumulativeHistogram{}),
               "written as gauge and as histogram");
  EXPECT_DEATH(out.WriteGauge("revkv_b", "x", 1, {{"k", "1"}, {"k", "2"}}), "given twice");
}

}  // namespace
}  // namespace revkv::server
