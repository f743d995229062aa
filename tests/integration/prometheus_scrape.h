// A strict reader of Prometheus text exposition format 0.0.4, for checking what a real server's
// /metrics serves. It is written from the format's specification and shares no code with the server's
// writer (server/ops), so a mistake in the writer is not repeated here. Everything the format allows
// but a well-made exposition never needs is refused as well:
//
// - every line is a `# HELP`, a `# TYPE` or a sample line (no blank lines, no other comments), and the
//   text ends with a newline;
// - names are valid metric and label names; label values use only the escapes \\ \" \n; HELP text only
//   \\ and \n; sample values are Go floats (+Inf, -Inf, NaN included); timestamps are integers;
// - a family has at most one HELP and one TYPE, its TYPE comes before its first sample, its samples
//   are contiguous (families are not interleaved or reopened), and every sample name belongs to the
//   family its TYPE declared (`x` for counter, gauge and untyped; `x_bucket`, `x_sum`, `x_count` for a
//   histogram; `x`, `x_sum`, `x_count` for a summary);
// - no series (name and label set, in any label order) appears twice;
// - a histogram's buckets per label set carry `le`, come in ascending `le` order with non-decreasing
//   counts, end with `le="+Inf"`, and that bucket equals the `_count` of the same label set, which
//   exists along with `_sum`.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace revkv::integration {

// One scrape: every sample, keyed by its name with labels exactly as written ("a_total{k=\"v\"}"), and
// the TYPE and HELP of every family. Thread-safety: const-safe only.
struct PrometheusScrape {
  std::string text;
  std::map<std::string, double> samples;
  std::map<std::string, std::string> types;  // family -> counter, gauge, histogram, summary, untyped
  std::map<std::string, std::string> help;   // family -> HELP text, unescaped
  std::vector<std::string> families;         // in the order they appear
  std::vector<std::string> errors;           // every rule broken, with its line number; empty if none

  bool Has(const std::string& series) const { return samples.count(series) != 0; }
  // The value of `series`; adds a test failure and returns -1 if there is no such sample.
  double Value(const std::string& series) const;
  // Success if the text broke no rule; else every error, one a line.
  ::testing::AssertionResult Valid() const;
};

// Parses `text` strictly (never fails: what is wrong goes to `errors`).
PrometheusScrape ParsePrometheusText(const std::string& text);

// Fetches /metrics from the server's metrics port and parses it; adds a test failure if the fetch fails
// or the text breaks a rule.
PrometheusScrape ScrapeMetrics(int metrics_port);

// The value of `series` in one scrape of the server's metrics port (-1 and a test failure if absent).
double ScrapeValue(int metrics_port, const std::string& series);

}  // namespace revkv::integration
