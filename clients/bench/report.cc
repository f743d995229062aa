// Text and JSON reports.
#include "clients/bench/report.h"

#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "clients/common/grpc_status.h"

namespace revkv::client {
namespace {

std::string Grouped(uint64_t value) {
  std::string digits = absl::StrCat(value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string GroupedDouble(double value) {
  return Grouped(static_cast<uint64_t>(std::llround(std::max(value, 0.0))));
}

double Seconds(absl::Duration d) { return absl::ToDoubleSeconds(d); }

// The figures a comparison puts side by side, in display order.
struct Figure {
  const char* json_name;
  const char* text_name;
  std::function<double(const RunReport&)> get;
  bool integral;
};

const std::vector<Figure>& Figures() {
  static const std::vector<Figure> figures = {
      {"throughput_ops_per_s", "throughput ops/s", [](const RunReport& r) { return r.throughput; }, true},
      {"p50_us", "latency p50 us", [](const RunReport& r) { return double(r.latency.p50); }, true},
      {"p90_us", "latency p90 us", [](const RunReport& r) { return double(r.latency.p90); }, true},
      {"p99_us", "latency p99 us", [](const RunReport& r) { return double(r.latency.p99); }, true},
      {"p99.9_us", "latency p99.9 us", [](const RunReport& r) { return double(r.latency.p999); }, true},
      {"max_us", "latency max us", [](const RunReport& r) { return double(r.latency.max); }, true},
      {"mean_us", "latency mean us", [](const RunReport& r) { return r.latency.mean; }, false},
      {"errors", "errors", [](const RunReport& r) { return double(r.errors_total); }, true},
      {"retries", "retries", [](const RunReport& r) { return double(r.phase(Phase::kMeasured).retries); },
       true},
      {"client_cpu_percent", "client CPU %", [](const RunReport& r) { return r.client_cpu_percent; }, true},
  };
  return figures;
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

double MedianOf(const std::vector<RunReport>& rounds, const Figure& figure) {
  std::vector<double> values;
  values.reserve(rounds.size());
  for (const RunReport& r : rounds) values.push_back(figure.get(r));
  return Median(std::move(values));
}

// B/A, or null in JSON (and "-" in text) when A is 0.
nlohmann::json Ratio(double a, double b) {
  if (a == 0) return nullptr;
  return b / a;
}

std::string FormatFigure(double value, bool integral) {
  return integral ? GroupedDouble(value) : absl::StrFormat("%.1f", value);
}

nlohmann::json LoadJson(const BenchOptions& o) {
  nlohmann::json load = {
      {"connections", o.connections},
      {"inflight", o.inflight},
      {"threads", o.threads},
      {"mode", SendModeName(o.mode)},
      {"batch", o.batch},
      {"rate", o.rate},
      {"duration_s", Seconds(o.duration)},
      {"total", o.total},
      {"warmup_s", Seconds(o.warmup)},
      {"keys", o.keys},
      {"key_size", o.key_size},
      {"value_size", o.value_size},
      {"key_distribution", KeyDistributionName(o.key_distribution)},
      {"preload", o.preload},
  };
  if (o.key_distribution == KeyDistribution::kZipfian) load["zipf_exponent"] = o.zipf_exponent;
  if (o.workload == Workload::kMixed) load["read_ratio"] = o.read_ratio;
  if (o.workload == Workload::kRange) load["range_size"] = o.range_size;
  load["consistency"] = o.serializable ? "serializable" : "linearizable";
  return load;
}

nlohmann::json FiguresJson(const std::function<double(const Figure&)>& value) {
  nlohmann::json json = nlohmann::json::object();
  for (const Figure& f : Figures()) json[f.json_name] = value(f);
  return json;
}

std::string ErrorSummary(const RunReport& r) {
  if (r.errors_total == 0) return "none";
  std::vector<std::pair<uint64_t, std::string>> lines;
  for (const auto& [key, count] : r.errors) {
    lines.emplace_back(count,
                       absl::StrCat(StatusCodeName(key.first), " x", Grouped(count), ": ", key.second));
  }
  std::sort(lines.begin(), lines.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  std::string text = absl::StrCat(Grouped(r.errors_total), " (", Grouped(r.phase(Phase::kMeasured).errors),
                                  " while measuring)");
  for (const auto& line : lines) absl::StrAppend(&text, "\n              ", line.second);
  return text;
}

}  // namespace

double ProcessCpuSeconds() {
  struct rusage usage {};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double HostLoadAverage() {
  std::FILE* file = std::fopen("/proc/loadavg", "r");
  if (file == nullptr) return -1;
  double load = -1;
  if (std::fscanf(file, "%lf", &load) != 1) load = -1;
  std::fclose(file);
  return load;
}

RunReport MakeRunReport(std::string endpoints, const WorkerStats& stats, Clock::time_point measure_start,
                        double planned_seconds) {
  RunReport r;
  r.endpoints = std::move(endpoints);
  r.phases = stats.phases;
  r.errors = stats.errors;
  for (const PhaseCounts& p : stats.phases) r.errors_total += p.errors;
  r.requests = stats.requests;
  r.ops = stats.phase(Phase::kMeasured).ops;
  // The measured interval runs from the end of the warm-up to the last measured completion (operations
  // started before the end finish after it); with nothing measured, the planned length.
  r.measured_seconds = planned_seconds;
  if (r.ops > 0 && stats.last_measured_completion > measure_start) {
    r.measured_seconds =
        std::chrono::duration<double>(stats.last_measured_completion - measure_start).count();
  }
  r.throughput = r.measured_seconds > 0 ? static_cast<double>(r.ops) / r.measured_seconds : 0;
  const runtime::HistogramSnapshot h = stats.latency.Snapshot();
  r.latency = {h.count,
               h.mean(),
               h.ValueAtPercentile(50),
               h.ValueAtPercentile(90),
               h.ValueAtPercentile(99),
               h.ValueAtPercentile(99.9),
               h.max};
  r.latency_histogram = h;
  return r;
}

bool CompareReport::ok() const {
  return std::all_of(rounds.begin(), rounds.end(), [](const std::vector<RunReport>& side) {
    return std::all_of(side.begin(), side.end(), [](const RunReport& r) { return r.ok(); });
  });
}

std::string DescribeLoad(const BenchOptions& o) {
  std::string text = absl::StrCat(WorkloadName(o.workload), ", ", o.connections, " connections x ",
                                  o.inflight, " in flight, ", SendModeName(o.mode),
                                  o.batch > 0 ? absl::StrCat(" (batches of up to ", o.batch, ")") : "", ", ",
                                  Grouped(o.keys), " keys ", KeyDistributionName(o.key_distribution));
  if (o.key_distribution == KeyDistribution::kZipfian) {
    absl::StrAppend(&text, " (theta ", o.zipf_exponent, ")");
  }
  absl::StrAppend(&text, ", ", o.key_size, "-byte keys, ", o.value_size, "-byte values");
  if (o.workload == Workload::kMixed) absl::StrAppend(&text, ", read ratio ", o.read_ratio);
  if (o.workload == Workload::kRange) absl::StrAppend(&text, ", ", o.range_size, " keys per range");
  if (o.serializable) absl::StrAppend(&text, ", serializable reads");
  if (o.rate > 0) absl::StrAppend(&text, ", rate limit ", GroupedDouble(o.rate), " ops/s");
  if (o.preload) absl::StrAppend(&text, ", preloaded");
  return text;
}

nlohmann::json ToJson(const RunReport& r, const BenchOptions& o) {
  nlohmann::json by_code = nlohmann::json::object();
  for (const auto& [key, count] : r.errors) {
    nlohmann::json& entry = by_code[StatusCodeName(key.first)];
    if (entry.is_null()) entry = {{"count", uint64_t{0}}, {"messages", nlohmann::json::object()}};
    entry["count"] = entry["count"].get<uint64_t>() + count;
    entry["messages"][key.second] = count;
  }
  nlohmann::json phases = nlohmann::json::object();
  for (int i = 0; i < kPhaseCount; ++i) {
    const PhaseCounts& p = r.phases[i];
    phases[std::string(PhaseName(static_cast<Phase>(i)))] = {
        {"ops", p.ops}, {"errors", p.errors}, {"retries", p.retries}};
  }
  nlohmann::json requests = nlohmann::json::object();
  for (int i = 0; i < kMethodCount; ++i) {
    requests[MethodName(static_cast<Method>(i))] = r.requests[i];
  }
  nlohmann::json json = {
      {"workload", WorkloadName(o.workload)},
      {"endpoints", r.endpoints},
      {"server_version", r.server_version},
      {"load", LoadJson(o)},
      {"ok", r.ok()},
      {"measured_seconds", r.measured_seconds},
      {"ops", r.ops},
      {"throughput_ops_per_s", r.throughput},
      {"latency_us",
       {{"count", r.latency.count},
        {"mean", r.latency.mean},
        {"p50", r.latency.p50},
        {"p90", r.latency.p90},
        {"p99", r.latency.p99},
        {"p99.9", r.latency.p999},
        {"max", r.latency.max}}},
      {"retries", r.phase(Phase::kMeasured).retries},
      {"errors",
       {{"total", r.errors_total}, {"measured", r.phase(Phase::kMeasured).errors}, {"by_code", by_code}}},
      {"phases", phases},
      {"requests", requests},
  };
  if (!r.failure.empty()) json["failure"] = r.failure;
  if (r.interrupted) json["interrupted"] = true;
  if (r.run_order > 0) json["run_order"] = r.run_order;
  json["host_load_average"] = {{"start", r.load_average_start}, {"end", r.load_average_end}};
  json["client_cpu_percent"] = r.client_cpu_percent;
  if (r.measure_start_unix_us > 0) json["measure_start_unix_us"] = r.measure_start_unix_us;
  nlohmann::json timeline = nlohmann::json::array();
  for (const TimelineSample& s : r.timeline) {
    timeline.push_back({{"seconds", s.seconds},
                        {"ops_per_second", s.ops_per_second},
                        {"p50_us", s.p50_us},
                        {"p99_us", s.p99_us},
                        {"p999_us", s.p999_us}});
  }
  json["timeline"] = std::move(timeline);
  return json;
}

nlohmann::json ToJson(const CompareReport& c, const BenchOptions& o) {
  std::vector<std::string> ratios;
  for (size_t i = 1; i < c.rounds.size(); ++i)
    ratios.push_back(std::string(1, static_cast<char>('A' + i)) + "/A");
  nlohmann::json compare = {{"rounds", c.rounds.empty() ? 0 : c.rounds[0].size()},
                            {"ratio", absl::StrCat(absl::StrJoin(ratios, ", "), " of the medians")}};
  for (size_t i = 0; i < c.rounds.size(); ++i) {
    const std::string name(1, static_cast<char>('a' + i));
    nlohmann::json runs = nlohmann::json::array();
    for (const RunReport& r : c.rounds[i]) runs.push_back(ToJson(r, o));
    compare[name] = {{"endpoints", c.endpoints[i]},
                     {"median", FiguresJson([&](const Figure& f) { return MedianOf(c.rounds[i], f); })},
                     {"rounds", runs}};
    if (i == 0) continue;
    nlohmann::json ratio = nlohmann::json::object();
    for (const Figure& f : Figures()) {
      ratio[f.json_name] = Ratio(MedianOf(c.rounds[0], f), MedianOf(c.rounds[i], f));
    }
    compare["ratio_" + name + "_over_a"] = ratio;
  }
  return {
      {"workload", WorkloadName(o.workload)}, {"load", LoadJson(o)}, {"ok", c.ok()}, {"compare", compare}};
}

void PrintText(std::FILE* out, const RunReport& r, const BenchOptions& o) {
  std::string server = r.server_version.empty() ? "" : absl::StrCat(" (server ", r.server_version, ")");
  absl::FPrintF(out, "revkv-bench: %s against %s%s\n", WorkloadName(o.workload), r.endpoints, server);
  absl::FPrintF(out, "  load        %s\n", DescribeLoad(o));
  if (!r.failure.empty()) absl::FPrintF(out, "  FAILED      %s\n", r.failure);
  if (r.interrupted) {
    absl::FPrintF(out, "  note        interrupted (SIGINT): the figures cover the time it ran\n");
  }
  std::string excluded = absl::StrCat("warm-up ", Grouped(r.phase(Phase::kWarmup).ops), " ops");
  if (r.phase(Phase::kPreload).ops > 0 || r.phase(Phase::kPreload).errors > 0) {
    absl::StrAppend(&excluded, ", preload ", Grouped(r.phase(Phase::kPreload).ops), " ops");
  }
  absl::FPrintF(out, "  measured    %s ops in %.2f s (%s excluded)\n", Grouped(r.ops), r.measured_seconds,
                excluded);
  absl::FPrintF(out, "  throughput  %s ops/s\n", GroupedDouble(r.throughput));
  if (r.load_average_start >= 0) {
    absl::FPrintF(out, "  host load   %.2f at the start, %.2f at the end (1-minute load average)\n",
                  r.load_average_start, r.load_average_end);
  }
  if (r.client_cpu_percent >= 0) {
    absl::FPrintF(out, "  client CPU  %.0f%% of one core (warm-up and measured phase)\n",
                  r.client_cpu_percent);
  }
  absl::FPrintF(out, "  latency us  p50 %s  p90 %s  p99 %s  p99.9 %s  max %s  mean %.1f\n",
                Grouped(r.latency.p50), Grouped(r.latency.p90), Grouped(r.latency.p99),
                Grouped(r.latency.p999), Grouped(r.latency.max), r.latency.mean);
  if (o.workload == Workload::kTxn) {
    absl::FPrintF(out, "  retries     %s (compare failures while measuring)\n",
                  Grouped(r.phase(Phase::kMeasured).retries));
  }
  absl::FPrintF(out, "  errors      %s\n", ErrorSummary(r));
  std::vector<std::string> requests;
  for (int i = 0; i < kMethodCount; ++i) {
    if (r.requests[i] > 0) {
      requests.push_back(absl::StrCat(MethodName(static_cast<Method>(i)), " ", Grouped(r.requests[i])));
    }
  }
  absl::FPrintF(out, "  requests    %s\n", requests.empty() ? "none" : absl::StrJoin(requests, "  "));
  PrintLatencyHistogram(out, r.latency_histogram);
}

void PrintLatencyHistogram(std::FILE* out, const runtime::HistogramSnapshot& h) {
  if (h.count == 0) return;
  constexpr int kBuckets = 10;
  std::array<double, kBuckets + 1> bounds{};  // microseconds
  const double fastest = static_cast<double>(h.min);
  const double step = (static_cast<double>(h.max) - fastest) / kBuckets;
  for (int i = 0; i < kBuckets; ++i) bounds[i] = fastest + step * i;
  bounds[kBuckets] = static_cast<double>(h.max);
  std::array<uint64_t, kBuckets + 1> counts{};
  uint64_t below = 0;
  for (int i = 0; i <= kBuckets; ++i) {
    const uint64_t at_or_below =
        i == kBuckets ? h.count : h.CountAtOrBelow(static_cast<uint64_t>(std::floor(bounds[i])));
    counts[i] = at_or_below > below ? at_or_below - below : 0;
    below = std::max(below, at_or_below);
  }
  const uint64_t largest = *std::max_element(counts.begin(), counts.end());
  absl::FPrintF(out, "  latency histogram (ms, as etcd's benchmark draws it):\n");
  for (int i = 0; i <= kBuckets; ++i) {
    const int bar = largest == 0 ? 0 : static_cast<int>(counts[i] * 40 / largest);
    std::string bars;
    for (int b = 0; b < bar; ++b) bars += "\u220e";  // ∎
    absl::FPrintF(out, "    %10.4f [%s]\t|%s\n", bounds[i] / 1000.0, Grouped(counts[i]), bars);
  }
}

std::string PercentileDistribution(const runtime::HistogramSnapshot& h) {
  std::string out =
      absl::StrFormat("%12s %14s %10s %14s\n\n", "Value", "Percentile", "TotalCount", "1/(1-Percentile)");
  const auto ms = [](uint64_t us) { return static_cast<double>(us) / 1000.0; };
  uint64_t total = 0;
  for (uint64_t b : h.buckets) total += b;
  constexpr int kTicksPerHalfDistance = 5;
  double level = 0;  // percent
  uint64_t cumulative = 0;
  double sum_squares = 0;
  for (size_t i = 0; i < h.buckets.size() && total > 0; ++i) {
    if (h.buckets[i] == 0) continue;
    cumulative += h.buckets[i];
    const uint64_t value = std::min(h.layout.UpperBound(i), h.max);
    const double deviation = ms(value) - h.mean() / 1000.0;
    sum_squares += deviation * deviation * static_cast<double>(h.buckets[i]);
    // HdrHistogram's PercentileIterator: a line each time the cumulative count reaches the next level;
    // levels come closer as they approach 100% (ticks per half of the remaining distance).
    while (100.0 * static_cast<double>(cumulative) / static_cast<double>(total) >= level) {
      absl::StrAppendFormat(&out, "%12.3f %2.12f %10d %14.2f\n", ms(value), level / 100.0, cumulative,
                            1.0 / (1.0 - level / 100.0));
      const double half_distances = std::floor(std::log2(100.0 / (100.0 - level))) + 1;
      level += 100.0 / (kTicksPerHalfDistance * std::pow(2.0, half_distances));
      if (cumulative == total) break;
    }
    if (cumulative == total) break;
  }
  if (total > 0) absl::StrAppendFormat(&out, "%12.3f %2.12f %10d\n", ms(h.max), 1.0, total);
  const double stddev = total > 0 ? std::sqrt(sum_squares / static_cast<double>(total)) : 0;
  absl::StrAppendFormat(&out, "#[Mean    = %12.3f, StdDeviation   = %12.3f]\n", h.mean() / 1000.0, stddev);
  absl::StrAppendFormat(&out, "#[Max     = %12.3f, Total count    = %12d]\n", ms(h.max), total);
  // The latency layout (histogram.h) is HdrHistogram's with 2048 sub-buckets: 2048 exact values, then
  // 1024 buckets per power of two.
  absl::StrAppendFormat(&out, "#[Buckets = %12d, SubBuckets     = %12d]\n",
                        (h.layout.bucket_count() - 2048) / 1024 + 1, 2048);
  return out;
}

namespace {

std::string XmlEscaped(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

std::string TimelineSvg(const RunReport& r, const BenchOptions& o) {
  constexpr double kWidth = 800, kLeft = 70, kRight = 20, kPanel = 170, kTop = 40, kGap = 50;
  const double plot_width = kWidth - kLeft - kRight;
  const double height = kTop + 2 * kPanel + kGap + 40;
  double last_second = 1;
  double top_rate = 1;
  double top_latency = 0.001;  // ms
  for (const TimelineSample& s : r.timeline) {
    last_second = std::max(last_second, s.seconds);
    top_rate = std::max(top_rate, s.ops_per_second);
    top_latency = std::max(top_latency, static_cast<double>(s.p999_us) / 1000.0);
  }
  top_rate *= 1.1;
  top_latency *= 1.1;
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
      "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
      kWidth, height, kWidth, height);
  absl::StrAppendFormat(
      &svg, "<text x=\"%.0f\" y=\"20\" font-size=\"14\">revkv-bench %s against %s: %s</text>\n", kLeft,
      WorkloadName(o.workload), XmlEscaped(r.endpoints), XmlEscaped(DescribeLoad(o)));
  const auto x_of = [&](double seconds) { return kLeft + plot_width * seconds / last_second; };
  const auto panel =
      [&](double top, double max_value, const std::string& unit,
          const std::vector<std::pair<std::string, std::function<double(const TimelineSample&)>>>& series,
          const std::vector<std::string>& colours) {
        const auto y_of = [&](double v) {
          return top + kPanel - kPanel * std::min(v, max_value) / max_value;
        };
        absl::StrAppendFormat(&svg,
                              "<g class=\"panel\"><rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" "
                              "fill=\"none\" stroke=\"#999\"/>\n",
                              kLeft, top, plot_width, kPanel);
        for (int tick = 0; tick <= 4; ++tick) {
          const double v = max_value * tick / 4;
          absl::StrAppendFormat(&svg,
                                "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>"
                                "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                                kLeft, kLeft + plot_width, y_of(v), y_of(v), kLeft - 4, y_of(v) + 4,
                                absl::StrFormat(max_value >= 100 ? "%.0f" : "%.3g", v));
        }
        absl::StrAppendFormat(&svg, "<text x=\"%.0f\" y=\"%.0f\">%s</text>\n", kLeft, top - 6, unit);
        for (size_t k = 0; k < series.size(); ++k) {
          std::string points;
          for (const TimelineSample& s : r.timeline) {
            absl::StrAppendFormat(&points, "%s%.1f,%.1f", points.empty() ? "" : " ", x_of(s.seconds),
                                  y_of(series[k].second(s)));
          }
          absl::StrAppendFormat(&svg,
                                "<polyline class=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" "
                                "points=\"%s\"/>\n<text x=\"%.0f\" y=\"%.0f\" fill=\"%s\">%s</text>\n",
                                series[k].first, colours[k], points,
                                kLeft + plot_width - 60.0 * (series.size() - k), top - 6, colours[k],
                                series[k].first);
        }
        svg += "</g>\n";
      };
  panel(kTop, top_rate, "throughput (ops/s)",
        {{"ops_per_second", [](const TimelineSample& s) { return s.ops_per_second; }}}, {"#1f77b4"});
  panel(kTop + kPanel + kGap, top_latency, "latency (ms)",
        {{"p50", [](const TimelineSample& s) { return static_cast<double>(s.p50_us) / 1000.0; }},
         {"p99", [](const TimelineSample& s) { return static_cast<double>(s.p99_us) / 1000.0; }},
         {"p99.9", [](const TimelineSample& s) { return static_cast<double>(s.p999_us) / 1000.0; }}},
        {"#2ca02c", "#d62728", "#9467bd"});
  for (int tick = 0; tick <= 5; ++tick) {
    const double seconds = last_second * tick / 5;
    absl::StrAppendFormat(&svg, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%.1f s</text>\n",
                          x_of(seconds), kTop + 2 * kPanel + kGap + 18, seconds);
  }
  svg += "</svg>\n";
  return svg;
}

void PrintText(std::FILE* out, const CompareReport& c, const BenchOptions& o) {
  auto name = [](size_t i) { return std::string(1, static_cast<char>('A' + i)); };
  std::string sides;
  for (size_t i = 0; i < c.rounds.size(); ++i) {
    std::string described = c.endpoints[i];
    for (const RunReport& r : c.rounds[i]) {
      if (!r.server_version.empty()) {
        described = absl::StrCat(c.endpoints[i], " (server ", r.server_version, ")");
        break;
      }
    }
    absl::StrAppend(&sides, i == 0 ? "" : ", ", name(i), " = ", described);
  }
  absl::FPrintF(out, "revkv-bench: %s, %s\n", WorkloadName(o.workload), sides);
  absl::FPrintF(out, "  load        %s\n", DescribeLoad(o));
  const std::string order = c.rounds.size() == 2 ? "A then B, then B then A" : "in order, then reversed";
  absl::FPrintF(out, "  rounds      %d, %s, %.1f s measured per run; ratio = side/A of the medians\n",
                c.rounds.empty() ? 0 : static_cast<int>(c.rounds[0].size()), order, Seconds(o.duration));
  for (size_t side = 0; side < c.rounds.size(); ++side) {
    for (size_t i = 0; i < c.rounds[side].size(); ++i) {
      const RunReport& r = c.rounds[side][i];
      if (!r.failure.empty())
        absl::FPrintF(out, "  FAILED      %s round %d: %s\n", name(side), i + 1, r.failure);
    }
  }
  std::string header = absl::StrFormat("  %-18s", "");
  for (size_t i = 0; i < c.rounds.size(); ++i)
    absl::StrAppend(&header, absl::StrFormat(" %12s", name(i) + " median"));
  for (size_t i = 1; i < c.rounds.size(); ++i)
    absl::StrAppend(&header, absl::StrFormat(" %7s", name(i) + "/A"));
  for (size_t i = 0; i < c.rounds.size(); ++i) absl::StrAppend(&header, "   ", name(i), " rounds");
  absl::FPrintF(out, "%s\n", header);
  for (const Figure& f : Figures()) {
    std::string line = absl::StrFormat("  %-18s", f.text_name);
    std::vector<double> medians;
    for (const auto& rounds : c.rounds) medians.push_back(MedianOf(rounds, f));
    for (double m : medians) absl::StrAppend(&line, absl::StrFormat(" %12s", FormatFigure(m, f.integral)));
    for (size_t i = 1; i < medians.size(); ++i) {
      absl::StrAppend(
          &line,
          absl::StrFormat(" %7s", medians[0] == 0 ? "-" : absl::StrFormat("%.2f", medians[i] / medians[0])));
    }
    for (const auto& rounds : c.rounds) {
      std::vector<std::string> values;
      for (const RunReport& r : rounds) values.push_back(FormatFigure(f.get(r), f.integral));
      absl::StrAppend(&line, "   ", absl::StrJoin(values, " "));
    }
    absl::FPrintF(out, "%s\n", line);
  }
  std::string load = absl::StrFormat("  %-18s", "host load at start");
  for (const auto& rounds : c.rounds) {
    std::vector<std::string> values;
    for (const RunReport& r : rounds) values.push_back(absl::StrFormat("%.2f", r.load_average_start));
    absl::StrAppend(&load, "   ", name(&rounds - c.rounds.data()), ": ", absl::StrJoin(values, " "));
  }
  absl::FPrintF(out, "%s\n", load);
  for (size_t side = 0; side < c.rounds.size(); ++side) {
    for (size_t i = 0; i < c.rounds[side].size(); ++i) {
      const RunReport& r = c.rounds[side][i];
      if (r.errors_total > 0)
        absl::FPrintF(out, "  errors %s round %d: %s\n", name(side), i + 1, ErrorSummary(r));
    }
  }
}

}  // namespace revkv::client
