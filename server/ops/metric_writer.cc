// MetricWriter: groups samples into families and renders text format 0.0.4.
//
// Every sample, owned or collected, goes through here, so there is one renderer and one place where
// names are checked. A family is created by its first sample; its text is appended sample by sample and
// the families are concatenated in name order by Text().
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "fmt/format.h"
#include "server/ops/metrics.h"
#include "server/ops/prometheus_text.h"

namespace revkv::server {

struct MetricWriter::FamilyText {
  MetricType type;
  std::string help;
  std::string body;  // sample lines, each ending in '\n'
};

namespace {

std::string_view TypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Appends `name``suffix`{labels[,le="bound"]} value\n.
void AppendSample(std::string* out, std::string_view name, std::string_view suffix, const Labels& labels,
                  const double* le, double value) {
  out->append(name);
  out->append(suffix);
  if (!labels.empty() || le != nullptr) {
    out->push_back('{');
    bool first = true;
    for (const Label& label : labels) {
      if (!first) out->push_back(',');
      first = false;
      out->append(label.name);
      out->append("=\"");
      prometheus::AppendLabelValue(out, label.value);
      out->push_back('"');
    }
    if (le != nullptr) {
      if (!first) out->push_back(',');
      out->append("le=\"");
      prometheus::AppendValue(out, *le);
      out->push_back('"');
    }
    out->push_back('}');
  }
  out->push_back(' ');
  prometheus::AppendValue(out, value);
  out->push_back('\n');
}

void CheckLabels(std::string_view family, const Labels& labels) {
  for (size_t i = 0; i < labels.size(); ++i) {
    internal::CheckLabelName(family, labels[i].name);
    for (size_t j = 0; j < i; ++j) {
      if (labels[j].name == labels[i].name) {
        prometheus::Fatal(fmt::format("metric {}: label '{}' given twice", family, labels[i].name));
      }
    }
  }
}

}  // namespace

namespace internal {

void CheckFamilyName(std::string_view name, MetricType type) {
  if (!prometheus::IsValidMetricName(name)) {
    prometheus::Fatal(fmt::format("invalid metric name '{}' (must match [a-zA-Z_:][a-zA-Z0-9_:]*)", name));
  }
  const bool total = EndsWith(name, "_total");
  if (type == MetricType::kCounter && !total) {
    prometheus::Fatal(fmt::format("counter '{}' must be named with the suffix _total", name));
  }
  if (type != MetricType::kCounter && total) {
    prometheus::Fatal(fmt::format("{} '{}' must not end in _total (counters only)", TypeName(type), name));
  }
  if (type != MetricType::kHistogram) {
    for (std::string_view suffix : {"_bucket", "_count", "_sum"}) {
      if (EndsWith(name, suffix)) {
        prometheus::Fatal(
            fmt::format("{} '{}' must not end in {} (histogram samples only)", TypeName(type), name, suffix));
      }
    }
  }
}

void CheckLabelName(std::string_view family, std::string_view label) {
  if (!prometheus::IsValidLabelName(label)) {
    prometheus::Fatal(fmt::format(
        "metric {}: invalid label name '{}' (must match [a-zA-Z_][a-zA-Z0-9_]* and not start with __)",
        family, label));
  }
  if (label == "le" || label == "quantile") {
    prometheus::Fatal(
        fmt::format("metric {}: label name '{}' is reserved (histogram and summary buckets)", family, label));
  }
}

std::vector<std::string> SampleNames(std::string_view name, MetricType type) {
  if (type != MetricType::kHistogram) return {std::string(name)};
  return {fmt::format("{}_bucket", name), fmt::format("{}_sum", name), fmt::format("{}_count", name)};
}

}  // namespace internal

MetricWriter::MetricWriter() = default;
MetricWriter::~MetricWriter() = default;

MetricWriter::FamilyText& MetricWriter::FamilyFor(std::string_view name, std::string_view help,
                                                  MetricType type) {
  auto it = families_.find(name);
  if (it != families_.end()) {
    if (it->second.type != type) {
      prometheus::Fatal(
          fmt::format("metric {} written as {} and as {}", name, TypeName(it->second.type), TypeName(type)));
    }
    return it->second;
  }
  internal::CheckFamilyName(name, type);
  if (help.empty()) prometheus::Fatal(fmt::format("metric {} has no help text", name));
  // No two families may produce the same sample name (a gauge "x_count" next to a histogram "x").
  std::vector<std::string> samples = internal::SampleNames(name, type);
  for (const std::string& sample : samples) {
    auto owner = sample_names_.find(sample);
    if (owner != sample_names_.end()) {
      prometheus::Fatal(
          fmt::format("metric {}: sample name {} clashes with metric {}", name, sample, owner->second));
    }
  }
  for (std::string& sample : samples) sample_names_.emplace(std::move(sample), std::string(name));
  return families_.emplace(std::string(name), FamilyText{type, std::string(help), {}}).first->second;
}

void MetricWriter::WriteCounter(std::string_view name, std::string_view help, double value,
                                const Labels& labels) {
  FamilyText& family = FamilyFor(name, help, MetricType::kCounter);
  CheckLabels(name, labels);
  AppendSample(&family.body, name, "", labels, nullptr, value);
}

void MetricWriter::WriteGauge(std::string_view name, std::string_view help, double value,
                              const Labels& labels) {
  FamilyText& family = FamilyFor(name, help, MetricType::kGauge);
  CheckLabels(name, labels);
  AppendSample(&family.body, name, "", labels, nullptr, value);
}

void MetricWriter::WriteHistogram(std::string_view name, std::string_view help,
                                  const CumulativeHistogram& histogram, const Labels& labels) {
  FamilyText& family = FamilyFor(name, help, MetricType::kHistogram);
  CheckLabels(name, labels);
  const std::vector<double>& bounds = histogram.upper_bounds;
  if (bounds.size() != histogram.cumulative_counts.size()) {
    prometheus::Fatal(fmt::format("histogram {}: {} bounds but {} bucket counts", name, bounds.size(),
                                  histogram.cumulative_counts.size()));
  }
  uint64_t running = 0;  // cumulative counts never decrease, even from a racy snapshot
  for (size_t i = 0; i < bounds.size(); ++i) {
    const bool last_is_inf = i + 1 == bounds.size() && std::isinf(bounds[i]) && bounds[i] > 0;
    if (!last_is_inf && (!std::isfinite(bounds[i]) || (i > 0 && !(bounds[i] > bounds[i - 1])))) {
      prometheus::Fatal(fmt::format("histogram {}: bucket bounds must be finite and increasing", name));
    }
    running = std::max(running, histogram.cumulative_counts[i]);
    if (last_is_inf) break;  // written below, as the +Inf bucket every histogram has
    AppendSample(&family.body, name, "_bucket", labels, &bounds[i], static_cast<double>(running));
  }
  const uint64_t count = std::max(running, histogram.count);
  const double inf = std::numeric_limits<double>::infinity();
  AppendSample(&family.body, name, "_bucket", labels, &inf, static_cast<double>(count));
  AppendSample(&family.body, name, "_sum", labels, nullptr, histogram.sum);
  AppendSample(&family.body, name, "_count", labels, nullptr, static_cast<double>(count));
}

std::string MetricWriter::Text() const {
  std::string out;
  for (const auto& [name, family] : families_) {
    out.append("# HELP ").append(name).push_back(' ');
    prometheus::AppendHelp(&out, family.help);
    out.append("\n# TYPE ").append(name).push_back(' ');
    out.append(TypeName(family.type)).push_back('\n');
    out.append(family.body);
  }
  return out;
}

}  // namespace revkv::server
