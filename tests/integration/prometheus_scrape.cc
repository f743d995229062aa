// The strict Prometheus text reader (prometheus_scrape.h).
#include "tests/integration/prometheus_scrape.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>
#include <sstream>
#include <string_view>
#include <utility>

#include "tests/integration/server_process.h"

namespace revkv::integration {
namespace {

bool IsLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool IsMetricName(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (!(IsLetter(c) || c == '_' || c == ':' || (i > 0 && IsDigit(c)))) return false;
  }
  return true;
}

bool IsLabelName(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (!(IsLetter(c) || c == '_' || (i > 0 && IsDigit(c)))) return false;
  }
  return true;
}

// A Go ParseFloat value as the format writes it: a decimal or exponent number, or +Inf, -Inf, Inf, NaN.
bool ParseValue(std::string_view s, double* value) {
  if (s == "+Inf" || s == "Inf") {
    *value = std::numeric_limits<double>::infinity();
    return true;
  }
  if (s == "-Inf") {
    *value = -std::numeric_limits<double>::infinity();
    return true;
  }
  if (s == "NaN") {
    *value = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (s.empty()) return false;
  for (char c : s) {  // strtod would also take hex, "inf", "nan(...)" and leading blanks
    if (!(IsDigit(c) || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-')) return false;
  }
  const std::string copy(s);
  char* end = nullptr;
  errno = 0;
  *value = std::strtod(copy.c_str(), &end);
  return end == copy.c_str() + copy.size() && errno != ERANGE;
}

bool ParseTimestamp(std::string_view s) {
  if (!s.empty() && s[0] == '-') s.remove_prefix(1);
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsDigit(c)) return false;
  }
  return true;
}

// Unescapes HELP text (\\ and \n only); false on any other backslash sequence.
bool UnescapeHelp(std::string_view s, std::string* out) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      out->push_back(s[i]);
      continue;
    }
    if (++i == s.size()) return false;
    if (s[i] == '\\') {
      out->push_back('\\');
    } else if (s[i] == 'n') {
      out->push_back('\n');
    } else {
      return false;
    }
  }
  return true;
}

struct Sample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;  // as written, values unescaped
  std::string series;                                       // name and labels as written
  double value = 0;
};

// Parses a sample line; on failure returns the reason.
std::string ParseSample(std::string_view line, Sample* sample) {
  size_t i = 0;
  while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
  sample->name = std::string(line.substr(0, i));
  if (!IsMetricName(sample->name)) return "invalid metric name '" + sample->name + "'";
  if (i < line.size() && line[i] == '{') {
    ++i;
    for (;;) {
      if (i < line.size() && line[i] == '}') {
        ++i;
        break;
      }
      const size_t name_start = i;
      while (i < line.size() && line[i] != '=') ++i;
      const std::string label(line.substr(name_start, i - name_start));
      if (!IsLabelName(label)) return "invalid label name '" + label + "'";
      if (i + 1 >= line.size() || line[i + 1] != '"') return "label " + label + ": no quoted value";
      i += 2;
      std::string value;
      bool closed = false;
      while (i < line.size()) {
        const char c = line[i++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c != '\\') {
          value.push_back(c);
          continue;
        }
        if (i == line.size()) break;
        const char e = line[i++];
        if (e == '\\') {
          value.push_back('\\');
        } else if (e == '"') {
          value.push_back('"');
        } else if (e == 'n') {
          value.push_back('\n');
        } else {
          return "label " + label + ": invalid escape \\" + std::string(1, e);
        }
      }
      if (!closed) return "label " + label + ": unterminated value";
      for (const auto& [seen, unused] : sample->labels) {
        if (seen == label) return "label " + label + " given twice";
      }
      sample->labels.emplace_back(label, std::move(value));
      if (i < line.size() && line[i] == ',') {
        ++i;  // a trailing comma before '}' is allowed by the format
      } else if (i >= line.size() || line[i] != '}') {
        return "expected ',' or '}' after label " + label;
      }
    }
  }
  sample->series = std::string(line.substr(0, i));
  if (i >= line.size() || line[i] != ' ') return "no value";
  std::string_view rest = line.substr(i + 1);
  const size_t space = rest.find(' ');
  const std::string_view value = rest.substr(0, space);
  if (!ParseValue(value, &sample->value)) return "invalid value '" + std::string(value) + "'";
  if (space != std::string_view::npos && !ParseTimestamp(rest.substr(space + 1))) {
    return "invalid timestamp '" + std::string(rest.substr(space + 1)) + "'";
  }
  return "";
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// True if a sample named `name` belongs to `family`, whose TYPE is `type`.
bool BelongsTo(const std::string& name, const std::string& family, const std::string& type) {
  if (name == family) return type != "histogram";
  if (type == "histogram") {
    return name == family + "_bucket" || name == family + "_sum" || name == family + "_count";
  }
  if (type == "summary") return name == family + "_sum" || name == family + "_count";
  return false;
}

// The label set without `le`, sorted, as a key.
std::string LabelKey(const std::vector<std::pair<std::string, std::string>>& labels, bool drop_le) {
  std::vector<std::pair<std::string, std::string>> sorted;
  for (const auto& label : labels) {
    if (!(drop_le && label.first == "le")) sorted.push_back(label);
  }
  std::sort(sorted.begin(), sorted.end());
  std::string key;
  for (const auto& [name, value] : sorted) key += name + "=\"" + value + "\"\x1f";
  return key;
}

struct HistogramSeries {
  std::vector<std::pair<double, double>> buckets;  // (le, count) in the order written
  bool has_count = false;
  bool has_sum = false;
  double count = 0;
  int first_line = 0;
};

}  // namespace

double PrometheusScrape::Value(const std::string& series) const {
  auto it = samples.find(series);
  if (it == samples.end()) {
    ADD_FAILURE() << "no sample " << series;
    return -1;
  }
  return it->second;
}

::testing::AssertionResult PrometheusScrape::Valid() const {
  if (errors.empty()) return ::testing::AssertionSuccess();
  ::testing::AssertionResult failure = ::testing::AssertionFailure();
  failure << errors.size() << " format errors in /metrics:";
  for (const std::string& e : errors) failure << "\n  " << e;
  return failure;
}

PrometheusScrape ParsePrometheusText(const std::string& text) {
  PrometheusScrape s;
  s.text = text;
  auto error = [&](int line, const std::string& what) {
    s.errors.push_back("line " + std::to_string(line) + ": " + what);
  };
  if (!text.empty() && text.back() != '\n') error(0, "the text does not end with a newline");

  std::set<std::string> closed_families;  // families whose samples have ended
  std::set<std::string> helped;
  std::string current;  // the family of the latest TYPE, or of the latest sample
  std::set<std::string> seen_series;
  // Histograms: family -> label key (without le) -> what was seen.
  std::map<std::string, std::map<std::string, HistogramSeries>> histograms;

  auto open_family = [&](int number, const std::string& family) {
    if (family == current) return;
    if (!current.empty()) closed_families.insert(current);
    if (closed_families.count(family) != 0)
      error(number, "family " + family + " appears again after other families");
    current = family;
  };

  std::istringstream lines(text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    if (line.empty()) {
      error(number, "blank line");
      continue;
    }
    if (line[0] == '#') {
      const bool is_help = line.rfind("# HELP ", 0) == 0;
      const bool is_type = line.rfind("# TYPE ", 0) == 0;
      if (!is_help && !is_type) {
        error(number, "a comment that is neither # HELP nor # TYPE: " + line);
        continue;
      }
      const std::string rest = line.substr(7);
      const size_t space = rest.find(' ');
      const std::string family = rest.substr(0, space);
      if (!IsMetricName(family)) {
        error(number, "invalid metric name '" + family + "'");
        continue;
      }
      if (space == std::string::npos) {
        error(number, std::string(is_help ? "# HELP" : "# TYPE") + " without text: " + line);
        continue;
      }
      const std::string argument = rest.substr(space + 1);
      open_family(number, family);
      if (is_help) {
        if (!helped.insert(family).second) error(number, "a second # HELP for " + family);
        std::string unescaped;
        if (!UnescapeHelp(argument, &unescaped)) error(number, "invalid escape in # HELP of " + family);
        s.help[family] = unescaped;
      } else {
        if (s.types.count(family) != 0) error(number, "a second # TYPE for " + family);
        static const std::set<std::string> kTypes = {"counter", "gauge", "histogram", "summary", "untyped"};
        if (kTypes.count(argument) == 0) error(number, "unknown type '" + argument + "' for " + family);
        s.types[family] = argument;
        s.families.push_back(family);
      }
      continue;
    }

    Sample sample;
    if (std::string why = ParseSample(line, &sample); !why.empty()) {
      error(number, why + ": " + line);
      continue;
    }
    if (current.empty() || s.types.count(current) == 0 ||
        !BelongsTo(sample.name, current, s.types.at(current))) {
      // Not the family whose TYPE came last: either it has no TYPE, or families are interleaved.
      std::string owner;
      for (const auto& [family, type] : s.types) {
        if (BelongsTo(sample.name, family, type)) owner = family;
      }
      if (owner.empty()) {
        error(number, "sample " + sample.name + " before (or without) the # TYPE of its family");
      } else {
        error(number,
              "sample " + sample.name + " of family " + owner + " is not with the rest of its family");
      }
    }
    const std::string key = sample.name + "\x1e" + LabelKey(sample.labels, false);
    if (!seen_series.insert(key).second) error(number, "duplicate series " + sample.series);
    s.samples[sample.series] = sample.value;

    const auto type = s.types.find(current);
    if (type == s.types.end() || type->second != "histogram") continue;
    HistogramSeries& h = histograms[current][LabelKey(sample.labels, true)];
    if (h.first_line == 0) h.first_line = number;
    if (EndsWith(sample.name, "_bucket")) {
      std::string le;
      for (const auto& [name, value] : sample.labels) {
        if (name == "le") le = value;
      }
      double bound = 0;
      if (le.empty() || !ParseValue(le, &bound)) {
        error(number, "bucket without a valid le: " + line);
        continue;
      }
      if (!h.buckets.empty()) {
        if (bound <= h.buckets.back().first) error(number, "le not ascending: " + line);
        if (sample.value < h.buckets.back().second) error(number, "bucket count decreases: " + line);
      }
      h.buckets.emplace_back(bound, sample.value);
    } else if (EndsWith(sample.name, "_count")) {
      h.has_count = true;
      h.count = sample.value;
    } else {
      h.has_sum = true;
    }
  }

  for (const auto& [family, by_labels] : histograms) {
    for (const auto& [labels, h] : by_labels) {
      const std::string where =
          "histogram " + family + " (series from line " + std::to_string(h.first_line) + ")";
      if (h.buckets.empty()) {
        s.errors.push_back(where + ": no buckets");
        continue;
      }
      if (!std::isinf(h.buckets.back().first))
        s.errors.push_back(where + ": the last bucket is not le=\"+Inf\"");
      if (!h.has_count || !h.has_sum) s.errors.push_back(where + ": no _count or no _sum");
      if (h.has_count && h.buckets.back().second != h.count) {
        s.errors.push_back(where + ": the +Inf bucket (" + std::to_string(h.buckets.back().second) +
                           ") differs from _count (" + std::to_string(h.count) + ")");
      }
    }
  }
  return s;
}

PrometheusScrape ScrapeMetrics(int metrics_port) {
  const HttpResponse r = HttpGet(metrics_port, "/metrics");
  EXPECT_EQ(r.status, 200) << r.error;
  PrometheusScrape scrape = ParsePrometheusText(r.body);
  EXPECT_TRUE(scrape.Valid()) << r.body;
  return scrape;
}

double ScrapeValue(int metrics_port, const std::string& series) {
  return ScrapeMetrics(metrics_port).Value(series);
}

}  // namespace revkv::integration
