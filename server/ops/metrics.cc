// Owned metrics (Histogram), families and the MetricsRegistry.
//
// Counter and Gauge are header-only atomics. A Histogram keeps one relaxed atomic count per bucket
// (not cumulative, so an observation touches one bucket) and an atomic double sum; its snapshot makes the
// counts cumulative. The registry maps family names to families and runs collectors; both render
// through one MetricWriter, which checks names and produces the text.
#include "server/ops/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "fmt/format.h"
#include "server/ops/prometheus_text.h"

namespace revkv::server {
namespace {

// Checks and normalizes histogram bounds: finite, strictly increasing; a trailing +Inf is dropped.
std::vector<double> CheckedBounds(std::vector<double> bounds) {
  if (!bounds.empty() && std::isinf(bounds.back()) && bounds.back() > 0) bounds.pop_back();
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i]) || (i > 0 && !(bounds[i] > bounds[i - 1]))) {
      prometheus::Fatal(
          fmt::format("histogram bucket bounds must be finite and strictly increasing, got [{}]",
                      fmt::join(bounds, ", ")));
    }
  }
  return bounds;
}

Labels ChildLabels(const internal::FamilyInfo& info, const std::vector<std::string>& values) {
  Labels labels;
  labels.reserve(values.size());
  for (size_t i = 0; i < values.size(); ++i) labels.push_back({info.label_names[i], values[i]});
  return labels;
}

}  // namespace

// ---------------------------------------------------------------------------------------------------
// Buckets
// ---------------------------------------------------------------------------------------------------

CumulativeHistogram CumulativeHistogram::FromNanos(
    const std::vector<double>& upper_bounds_seconds,
    const std::function<uint64_t(uint64_t)>& count_at_or_below_nanos, uint64_t count, uint64_t sum_nanos) {
  CumulativeHistogram out;
  out.upper_bounds = upper_bounds_seconds;
  out.cumulative_counts.reserve(upper_bounds_seconds.size());
  for (double bound : upper_bounds_seconds) {
    const double nanos = std::round(bound * 1e9);
    uint64_t at_or_below;
    if (!(nanos >= 0)) {
      at_or_below = 0;
    } else if (nanos >= 1.8e19) {
      at_or_below = count;
    } else {
      at_or_below = count_at_or_below_nanos(static_cast<uint64_t>(nanos));
    }
    out.cumulative_counts.push_back(at_or_below);
  }
  out.count = count;
  out.sum = static_cast<double>(sum_nanos) * 1e-9;
  return out;
}

const std::vector<double>& LatencyBuckets() {
  static const std::vector<double> kBuckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                               0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
  return kBuckets;
}

const std::vector<double>& PauseBuckets() {
  static const std::vector<double> kBuckets = {0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005,
                                               0.001,   0.0025,   0.005,   0.01,   0.025,   0.05,
                                               0.1,     0.25,     0.5,     1};
  return kBuckets;
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  if (!(start > 0) || !(factor > 1) || count < 1) {
    prometheus::Fatal(fmt::format("ExponentialBuckets({}, {}, {}): needs start > 0, factor > 1, count >= 1",
                                  start, factor, count));
  }
  std::vector<double> bounds;
  bounds.reserve(count);
  double bound = start;
  for (int i = 0; i < count; ++i, bound *= factor) bounds.push_back(bound);
  return bounds;
}

// ---------------------------------------------------------------------------------------------------
// Histogram
// ---------------------------------------------------------------------------------------------------

namespace {

uint64_t ToNanos(double seconds) {
  if (!(seconds > 0)) return 0;
  if (seconds >= 1.8e10) return UINT64_MAX;  // beyond uint64_t nanoseconds
  return static_cast<uint64_t>(std::llround(seconds * 1e9));
}

std::vector<uint64_t> NanosBounds(const std::vector<double>& seconds) {
  std::vector<uint64_t> nanos;
  for (double bound : seconds) {
    if (bound < 0 || (!nanos.empty() && ToNanos(bound) <= nanos.back())) {
      prometheus::Fatal(
          fmt::format("histogram bucket bounds must be at least 0 and differ by at least 1 ns, got [{}]",
                      fmt::join(seconds, ", ")));
    }
    nanos.push_back(ToNanos(bound));
  }
  return nanos;
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : upper_bounds_(CheckedBounds(std::move(upper_bounds))),
      histogram_(runtime::HistogramLayout::Bounds(NanosBounds(upper_bounds_))) {}

void Histogram::Observe(double seconds) {
  if (std::isnan(seconds)) return;
  // The first bound >= the value: buckets are "less than or equal" (le).
  histogram_.Record(ToNanos(seconds));
}

CumulativeHistogram Histogram::Snapshot() const {
  const runtime::HistogramSnapshot h = histogram_.Snapshot();
  CumulativeHistogram out;
  out.upper_bounds = upper_bounds_;
  out.cumulative_counts.reserve(upper_bounds_.size());
  uint64_t running = 0;
  for (size_t i = 0; i < upper_bounds_.size(); ++i) {
    running += h.buckets[i];
    out.cumulative_counts.push_back(running);
  }
  out.count = running + h.buckets.back();
  out.sum = static_cast<double>(h.sum) / 1e9;  // divided, so whole-nanosecond sums print as written
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Family children
// ---------------------------------------------------------------------------------------------------

namespace internal {

void WriteChild(MetricWriter& out, const FamilyInfo& info, const std::vector<std::string>& values,
                const Counter& metric) {
  out.WriteCounter(info.name, info.help, static_cast<double>(metric.Value()), ChildLabels(info, values));
}

void WriteChild(MetricWriter& out, const FamilyInfo& info, const std::vector<std::string>& values,
                const Gauge& metric) {
  out.WriteGauge(info.name, info.help, metric.Value(), ChildLabels(info, values));
}

void WriteChild(MetricWriter& out, const FamilyInfo& info, const std::vector<std::string>& values,
                const Histogram& metric) {
  out.WriteHistogram(info.name, info.help, metric.Snapshot(), ChildLabels(info, values));
}

void LabelCountMismatch(const FamilyInfo& info, size_t given) {
  prometheus::Fatal(fmt::format("metric {} has {} label(s) ({}) but {} value(s) were given", info.name,
                                info.label_names.size(), fmt::join(info.label_names, ", "), given));
}

}  // namespace internal

// ---------------------------------------------------------------------------------------------------
// MetricsRegistry
// ---------------------------------------------------------------------------------------------------

MetricsRegistry::MetricsRegistry() = default;
MetricsRegistry::~MetricsRegistry() = default;

template <class Metric>
Family<Metric>& MetricsRegistry::AddFamily(std::string_view name, std::string_view help,
                                           std::vector<std::string> label_names, MetricType type,
                                           std::function<std::unique_ptr<Metric>()> make) {
  internal::CheckFamilyName(name, type);
  if (help.empty()) prometheus::Fatal(fmt::format("metric {} has no help text", name));
  std::set<std::string_view> seen;
  for (const std::string& label : label_names) {
    internal::CheckLabelName(name, label);
    if (!seen.insert(label).second) {
      prometheus::Fatal(fmt::format("metric {}: label '{}' listed twice", name, label));
    }
  }
  auto family = std::make_unique<Family<Metric>>(
      internal::FamilyInfo{std::string(name), std::string(help), std::move(label_names)}, std::move(make));
  Family<Metric>* result = family.get();
  std::lock_guard<std::mutex> lock(mu_);
  // A family name must be new, and no two families may produce the same sample name (a gauge
  // "x_count" next to a histogram "x").
  if (families_.count(name) != 0) prometheus::Fatal(fmt::format("metric {} registered twice", name));
  std::vector<std::string> samples = internal::SampleNames(name, type);
  for (const std::string& sample : samples) {
    auto owner = sample_names_.find(sample);
    if (owner != sample_names_.end()) {
      prometheus::Fatal(
          fmt::format("metric {}: sample name {} clashes with metric {}", name, sample, owner->second));
    }
  }
  for (std::string& sample : samples) sample_names_.emplace(std::move(sample), std::string(name));
  families_.emplace(std::string(name), std::move(family));
  return *result;
}

Counter& MetricsRegistry::AddCounter(std::string_view name, std::string_view help) {
  return AddCounterFamily(name, help, {}).WithLabels({});
}

Gauge& MetricsRegistry::AddGauge(std::string_view name, std::string_view help) {
  return AddGaugeFamily(name, help, {}).WithLabels({});
}

Histogram& MetricsRegistry::AddHistogram(std::string_view name, std::string_view help,
                                         std::vector<double> upper_bounds) {
  return AddHistogramFamily(name, help, {}, std::move(upper_bounds)).WithLabels({});
}

CounterFamily& MetricsRegistry::AddCounterFamily(std::string_view name, std::string_view help,
                                                 std::vector<std::string> label_names) {
  return AddFamily<Counter>(name, help, std::move(label_names), MetricType::kCounter,
                            [] { return std::make_unique<Counter>(); });
}

GaugeFamily& MetricsRegistry::AddGaugeFamily(std::string_view name, std::string_view help,
                                             std::vector<std::string> label_names) {
  return AddFamily<Gauge>(name, help, std::move(label_names), MetricType::kGauge,
                          [] { return std::make_unique<Gauge>(); });
}

HistogramFamily& MetricsRegistry::AddHistogramFamily(std::string_view name, std::string_view help,
                                                     std::vector<std::string> label_names,
                                                     std::vector<double> upper_bounds) {
  // Checked once here, so a bad bound fails at registration rather than at the first child.
  auto bounds = std::make_shared<const std::vector<double>>(CheckedBounds(std::move(upper_bounds)));
  return AddFamily<Histogram>(name, help, std::move(label_names), MetricType::kHistogram,
                              [bounds] { return std::make_unique<Histogram>(*bounds); });
}

int MetricsRegistry::AddCollector(std::function<void(MetricWriter&)> collector) {
  std::lock_guard<std::mutex> lock(mu_);
  const int id = next_collector_id_++;
  collectors_.emplace(id, std::move(collector));
  return id;
}

void MetricsRegistry::RemoveCollector(int id) {
  std::lock_guard<std::mutex> lock(mu_);
  collectors_.erase(id);
}

std::string MetricsRegistry::Render() const {
  MetricWriter writer;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, family] : families_) family->Write(writer);
  for (const auto& [id, collector] : collectors_) collector(writer);
  return writer.Text();
}

}  // namespace revkv::server
